package load

import (
	"time"

	"golang.org/x/sys/unix"
)

// sleepPrecise sleeps for d with the kernel's resolution (nanosleep), not the Go runtime's
// millisecond one; d <= 0 returns at once.
func sleepPrecise(d time.Duration) {
	if d <= 0 {
		return
	}
	ts := unix.NsecToTimespec(int64(d))
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
}
