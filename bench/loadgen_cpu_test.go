//go:build linux || darwin

package bench_test

import (
	"syscall"
	"time"
)

// cpuUsed returns the CPU time, user and system, used so far by this process (self) and by
// its children that have ended and been waited for (children: each redis-benchmark run).
// ok is false when the system cannot tell.
func cpuUsed() (self, children time.Duration, ok bool) {
	var s, c syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &s) != nil || syscall.Getrusage(syscall.RUSAGE_CHILDREN, &c) != nil {
		return 0, 0, false
	}
	sum := func(r *syscall.Rusage) time.Duration { return time.Duration(r.Utime.Nano() + r.Stime.Nano()) }
	return sum(&s), sum(&c), true
}
