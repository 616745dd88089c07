//go:build unix

package redisenv

import (
	"errors"
	"syscall"
)

// procSignal is a signal the process backend sends to a server.
type procSignal = syscall.Signal

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
	sigStop = syscall.SIGSTOP
	sigCont = syscall.SIGCONT
)

// signalGroup sends sig to the process group that pid leads (each server leads its own:
// sysProcAttr sets Setpgid).
func signalGroup(pid int, sig procSignal) error { return syscall.Kill(-pid, sig) }

// signalPID sends sig to the process pid alone.
func signalPID(pid int, sig procSignal) error { return syscall.Kill(pid, sig) }

// pidExists reports whether a process pid exists (a zombie too), also one this user may not
// signal.
func pidExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
