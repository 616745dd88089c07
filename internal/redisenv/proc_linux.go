package redisenv

import "syscall"

// sysProcAttr puts the server in its own process group and, with deathSig, has the kernel kill it
// when the harness dies.
func sysProcAttr(deathSig bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	if deathSig {
		a.Pdeathsig = syscall.SIGKILL
	}
	return a
}
