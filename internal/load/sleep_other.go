//go:build !linux

package load

import "time"

// preciseTimer sleeps for a duration; elsewhere than Linux it is time.Sleep, with the Go
// runtime's resolution.
type preciseTimer struct{}

func newPreciseTimer() *preciseTimer { return &preciseTimer{} }

// sleep sleeps for d; d <= 0 returns at once.
func (*preciseTimer) sleep(d time.Duration) {
	if d > 0 {
		time.Sleep(d)
	}
}

// Close does nothing.
func (*preciseTimer) Close() error { return nil }
