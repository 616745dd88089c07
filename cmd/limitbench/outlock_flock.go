//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package main

import (
	"errors"
	"os"
	"syscall"
)

// openLocked opens (creating it) the lock file at path and tries to lock it, without waiting;
// held says another process (or another open file of this one) holds it.
func openLocked(path string) (f *os.File, held bool, err error) {
	f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, false, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return f, true, nil
		}
		_ = f.Close()
		return nil, false, err
	}
	return f, false, nil
}

// staleHint is what a refusal adds: nothing, since a lock dies with its process.
func staleHint(string) string { return "" }
