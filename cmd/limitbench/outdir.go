package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// The results directories of the commands that write one (run, report, capacity), checked and
// reserved before anything starts, so that a --out that is a file or cannot be written is bad
// input found at once (not after the whole run), and a result is never overwritten:
//
//   - The default directory is new: results/<name>-<UTC time>, or with -2, -3, ... appended
//     when that exists. os.Mkdir is atomic, so two commands started in the same second never
//     share one.
//   - An explicit --out may exist (a directory) or not (it is created); it must be writable,
//     and unless --force it must not hold a result of the command's kind already (the file
//     that marks one: result.json, capacity.json, comparison.md).
//   - Either is locked for as long as the command runs (lockDir): a second command given the
//     same directory is refused before it starts, even with --force.
//
// A directory the command created and left empty (bad input found later, a run that measured
// nothing) is removed when it ends.

// forceUsage is the help of every command's --force flag.
const forceUsage = "write into an --out directory that already holds a result, replacing its files of the same names"

// outDir is a command's results directory, reserved by newOutDir or explicitOutDir.
type outDir struct {
	path    string
	created bool   // the command created it: release removes it while empty
	top     string // the outermost directory the command created for it (path or a parent)
	lock    *dirLock
}

// timeStamp is the UTC time of a default results directory's name.
func timeStamp(t time.Time) string { return t.UTC().Format("20060102T150405Z") }

// newOutDir creates and returns a new directory parent/base, or parent/base-2, base-3, ... when
// that exists; parent is created as needed. Errors are bad input.
func newOutDir(parent, base string) (*outDir, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, badInput(fmt.Errorf("results directory: %w", err))
	}
	for i := 1; ; i++ {
		path := filepath.Join(parent, base)
		if i > 1 {
			path += "-" + strconv.Itoa(i)
		}
		err := os.Mkdir(path, 0o755)
		switch {
		case err == nil:
			o := &outDir{path: path, created: true, top: path}
			if o.lock, err = lockDir("results directory", path, nil); err != nil {
				o.release()
				return nil, err
			}
			return o, nil
		case errors.Is(err, fs.ErrExist) && i < 1000:
			continue
		}
		return nil, badInput(fmt.Errorf("results directory: %w", err))
	}
}

// explicitOutDir checks dir, given by --out (flag names it in messages): a directory or
// nothing (then it is created, with its parents), writable, not in use by another command (it
// takes the lock: see lockDir, which tells notes when it takes over a dead command's lock) and,
// unless force, without marker, the file of a result of the command's kind. Errors are bad input.
func explicitOutDir(flag, dir, marker string, force bool, notes io.Writer) (*outDir, error) {
	o := &outDir{path: dir}
	switch st, err := os.Stat(dir); {
	case err != nil:
		top := missingTop(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, badInput(fmt.Errorf("%s %s cannot be created: %w", flag, dir, pathErr(err)))
		}
		o.created, o.top = true, top
	case !st.IsDir():
		return nil, badInput(fmt.Errorf("%s %s is a file, not a directory", flag, dir))
	}
	probe, err := os.CreateTemp(dir, ".limitbench-write-check-*")
	if err != nil {
		o.release()
		return nil, badInput(fmt.Errorf("%s %s cannot be written: %w", flag, dir, pathErr(err)))
	}
	name := probe.Name()
	cerr := probe.Close()
	if rerr := os.Remove(name); cerr != nil || rerr != nil {
		o.release()
		return nil, badInput(fmt.Errorf("%s %s cannot be written: %w", flag, dir, errors.Join(cerr, rerr)))
	}
	if o.lock, err = lockDir(flag, dir, notes); err != nil {
		o.release()
		return nil, err
	}
	if force || marker == "" {
		return o, nil
	}
	switch _, err := os.Stat(filepath.Join(dir, marker)); {
	case err == nil:
		o.release()
		return nil, badInput(fmt.Errorf("%s %s already holds a result (%s); choose another directory, or add --force to replace it",
			flag, dir, marker))
	case !errors.Is(err, fs.ErrNotExist):
		o.release()
		return nil, badInput(fmt.Errorf("%s %s: %w", flag, dir, pathErr(err)))
	}
	return o, nil
}

// pathErr is err without the path an *fs.PathError repeats (messages name the directory).
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// missingTop returns the outermost of dir and its parents that does not exist (dir itself when
// its parent exists).
func missingTop(dir string) string {
	top := filepath.Clean(dir)
	for {
		parent := filepath.Dir(top)
		if parent == top {
			return top
		}
		if _, err := os.Lstat(parent); err == nil {
			return top
		}
		top = parent
	}
}

// release lets the directory's lock go, and removes the directory, and the parents the command
// created for it, when the command created it and they are still empty; it is safe on nil.
func (o *outDir) release() {
	if o == nil {
		return
	}
	o.lock.release()
	o.lock = nil
	if !o.created {
		return
	}
	for d := filepath.Clean(o.path); ; d = filepath.Dir(d) {
		if os.Remove(d) != nil || d == filepath.Clean(o.top) || d == filepath.Dir(d) {
			return // fails, as it should, when anything was written
		}
	}
}
