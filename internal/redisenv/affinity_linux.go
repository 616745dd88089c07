package redisenv

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// PinProcess restricts every thread of process pid to the CPUs in cpus, with sched_setaffinity on
// each thread listed in /proc/<pid>/task (the call itself moves one thread only). Threads the
// process starts afterwards inherit the mask of the thread that starts them. A thread that exits
// meanwhile is skipped. Library code calls it for servers it started; a command may call it with
// os.Getpid() to move the harness itself.
func PinProcess(pid int, cpus []int) error {
	if len(cpus) == 0 {
		return fmt.Errorf("%w: no CPUs given", ErrBadConfig)
	}
	var set unix.CPUSet
	for _, c := range cpus {
		if c < 0 || c >= len(set)*64 {
			return fmt.Errorf("%w: CPU %d out of range", ErrBadConfig, c)
		}
		set.Set(c)
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return fmt.Errorf("%w: process %d: %w", ErrCannotPin, pid, err)
	}
	pinned := 0
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil {
			if errors.Is(err, unix.ESRCH) {
				continue // the thread exited
			}
			return fmt.Errorf("%w: sched_setaffinity(thread %d of process %d, CPUs %v): %w", ErrCannotPin, tid, pid, cpus, err)
		}
		pinned++
	}
	if pinned == 0 {
		return fmt.Errorf("%w: process %d has no threads left", ErrCannotPin, pid)
	}
	return nil
}

// ProcessCPUs returns, in increasing order, the CPUs the main thread of process pid may run on
// (its sched_getaffinity mask). Use os.Getpid() for this process.
func ProcessCPUs(pid int) ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &set); err != nil {
		return nil, fmt.Errorf("%w: sched_getaffinity(%d): %w", ErrCannotPin, pid, err)
	}
	var cpus []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// ownChild returns nil when pid is a live child process of this process.
func ownChild(pid int) error {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return fmt.Errorf("process %d: %w", pid, err)
	}
	// The fields after the command name, which is in parentheses and may hold anything.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return fmt.Errorf("process %d: unreadable /proc/%d/stat", pid, pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return fmt.Errorf("process %d: unreadable /proc/%d/stat", pid, pid)
	}
	if slices.Contains([]string{"Z", "X", "x"}, f[0]) {
		return fmt.Errorf("process %d has exited", pid)
	}
	if ppid, err := strconv.Atoi(f[1]); err != nil || ppid != os.Getpid() {
		return fmt.Errorf("process %d is not a child of this process (parent %s)", pid, f[1])
	}
	return nil
}
