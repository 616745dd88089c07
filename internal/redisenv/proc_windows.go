package redisenv

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// sysProcAttr starts the server in a process group of its own. Windows has no Pdeathsig: the
// servers of a killed harness are removed by the next start's sweep.
func sysProcAttr(bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// procSignal is what the process backend asks of a server. Windows can only end a process:
// sigTerm and sigKill both terminate it at once, and sigStop and sigCont (the pause and resume
// faults) are not supported.
type procSignal int

const (
	sigTerm procSignal = iota + 1
	sigKill
	sigStop
	sigCont
)

func (s procSignal) String() string {
	switch s {
	case sigTerm:
		return "terminate"
	case sigKill:
		return "kill"
	case sigStop:
		return "stop"
	case sigCont:
		return "continue"
	}
	return fmt.Sprintf("signal %d", int(s))
}

// signalGroup does sig to the process pid (its process group is not signalled on Windows).
func signalGroup(pid int, sig procSignal) error { return signalPID(pid, sig) }

// signalPID does sig to the process pid: terminates it for sigTerm and sigKill.
func signalPID(pid int, sig procSignal) error {
	if sig != sigTerm && sig != sigKill {
		return fmt.Errorf("%s: %w on Windows", sig, errors.ErrUnsupported)
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	defer p.Release()
	return p.Kill()
}

// pidExists reports whether a process pid exists.
func pidExists(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}
