//go:build !linux

package bench_test

import "syscall"

// competitorSysProcAttr: without Pdeathsig the competitor still ends when its standard input
// closes, which the test process's exit does.
func competitorSysProcAttr() *syscall.SysProcAttr { return nil }
