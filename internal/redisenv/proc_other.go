//go:build unix && !linux

package redisenv

import "syscall"

// sysProcAttr puts the server in its own process group. Outside Linux there is no Pdeathsig:
// servers of a killed harness are removed by the next start's sweep.
func sysProcAttr(bool) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
