//go:build linux

package bench_test

import "syscall"

// competitorSysProcAttr makes the competitor die with the test process.
func competitorSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
