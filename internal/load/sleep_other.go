//go:build !linux

package load

import "time"

// sleepPrecise sleeps for d; elsewhere than Linux it is time.Sleep, with the Go runtime's
// resolution.
func sleepPrecise(d time.Duration) {
	if d > 0 {
		time.Sleep(d)
	}
}
