package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// lockName is the file, inside a results directory, that says a command is writing there (see
// lockDir). It goes when the command ends.
const lockName = ".limitbench.lock"

// dirLock is a results directory's lock, held by this process until release.
type dirLock struct {
	f    *os.File
	path string
}

// lockDir takes the lock of the results directory dir (flag names it in messages), so that two
// commands never write one directory at once: the second is refused, as bad input, before it
// starts, naming the command that holds the lock. The lock is an exclusive flock(2) on dir's
// lockName file, so it dies with its process: a lock file left by a process that no longer runs
// (killed) is taken over, and notes is told whose it was. The file holds the holder's command,
// pid and start time, for the messages. On systems without flock a lock file is never taken
// over: the message says to remove it.
func lockDir(flag, dir string, notes io.Writer) (*dirLock, error) {
	path := filepath.Join(dir, lockName)
	for range 3 {
		f, held, err := openLocked(path)
		if err != nil {
			return nil, badInput(fmt.Errorf("%s %s cannot be locked: %w", flag, dir, pathErr(err)))
		}
		if held {
			holder := readHolder(f)
			_ = f.Close()
			return nil, badInput(fmt.Errorf("%s %s is in use by another command (%s): two commands writing one directory would overwrite each other's results; wait for it to end or choose another directory%s",
				flag, dir, holder, staleHint(path)))
		}
		if !samePathFile(f, path) {
			_ = f.Close() // its holder removed it while releasing: lock the new one
			continue
		}
		if prev := readHolder(f); prev != "" && notes != nil {
			fmt.Fprintf(notes, "%s %s: taking over the lock left by %s, which no longer runs\n", flag, dir, prev)
		}
		if err := writeHolder(f); err != nil {
			_ = f.Close()
			return nil, badInput(fmt.Errorf("%s %s cannot be written: %w", flag, dir, pathErr(err)))
		}
		return &dirLock{f: f, path: path}, nil
	}
	return nil, badInput(fmt.Errorf("%s %s: its lock %s keeps changing hands; try again", flag, dir, path))
}

// release removes the lock file and lets the lock go; safe on nil.
func (l *dirLock) release() {
	if l == nil {
		return
	}
	_ = os.Remove(l.path) // while still held, so nobody locks the file that goes
	_ = l.f.Close()
}

// readHolder returns what the lock file f says of its holder, on one line; "" for an empty file.
func readHolder(f *os.File) string {
	b := make([]byte, 512)
	n, _ := f.ReadAt(b, 0)
	return strings.Join(strings.Fields(string(b[:n])), " ")
}

// writeHolder writes this process's command, pid and start time into the lock file f.
func writeHolder(f *os.File) error {
	command := "limitbench"
	if len(os.Args) > 1 {
		command += " " + os.Args[1] // the subcommand; never the flags, which may hold a password
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt(fmt.Appendf(nil, "%s, pid %d, since %s\n", command, os.Getpid(),
		time.Now().UTC().Format(time.RFC3339)), 0)
	return err
}

// samePathFile reports whether f is still the file at path.
func samePathFile(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}
