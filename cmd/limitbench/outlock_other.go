//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package main

import (
	"errors"
	"io/fs"
	"os"
)

// openLocked creates the lock file at path; held says it exists already (without flock, a lock
// file is taken to be held for as long as it is there).
func openLocked(path string) (f *os.File, held bool, err error) {
	f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		if f, err = os.Open(path); err != nil {
			return nil, false, err
		}
		return f, true, nil
	}
	return f, false, err
}

// staleHint is what a refusal adds: how to clear a lock left by a command that was killed.
func staleHint(path string) string {
	return "; if no command runs there (this system has no flock to tell), remove " + path
}
