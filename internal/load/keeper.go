package load

import (
	"runtime"
	"time"
)

// Why an open-loop run needs a timekeeper.
//
// Workers wait for a tick's intended time with a Go timer. When every goroutine is asleep, the Go
// runtime waits for its next timer in epoll_wait, whose timeout has millisecond resolution (a
// wait under 1 ms becomes 1 ms), so a timer fires up to a millisecond late: measured on a 2-core
// machine, half a millisecond late at the median and 1.1 ms at p99, at any rate from 1,000 to
// 50,000 per second. Latency is measured from the intended time, so that lateness, the
// generator's own, would be reported as the limiter's latency (a p50 of 0.7 ms against Redis on
// loopback, where a round trip takes 0.1 ms).
//
// The timekeeper is one goroutine that sleeps on a timerfd (microsecond resolution, within the
// kernel's timer slack of 50 µs; see preciseTimer) until the next tick's intended time and then
// yields, so the scheduler runs the timers that are due; the worker sends on time. It wakes at most once per
// keeperGap, which bounds its cost (about one short system call per keeperGap, a few percent of
// a core at 100 µs); ticks closer together than that are served by the same wake. Far from the
// next tick it waits on a Go timer instead, so it stops promptly at the end of the run.

// keeperGap is the shortest time between two wakes of the timekeeper.
const keeperGap = 100 * time.Microsecond

// keeperCoarse is how far ahead of a tick the timekeeper switches from a Go timer (which may fire
// a millisecond late) to its precise timer.
const keeperCoarse = 2 * time.Millisecond

// keepTime runs the timekeeper of an open-loop run until finished is closed or the schedule
// ends.
func (r *runner) keepTime(finished <-chan struct{}) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	precise := newPreciseTimer()
	defer precise.Close()
	last := -keeperGap
	var next uint64 // first tick not yet known to be due before the last wake; only grows
	for {
		select {
		case <-finished:
			return
		default:
		}
		now := time.Since(r.start)
		from := max(now, last+keeperGap)
		// The first tick due at or after from: the cursor moves once per tick in all, where a
		// search per wake would cost O(log n) calls of At.
		at, ok := r.p.Arrival.At(next)
		for ok && at < from {
			next++
			at, ok = r.p.Arrival.At(next)
		}
		if !ok || at >= r.end+endGrace {
			return
		}
		d := at - now
		if d > keeperCoarse {
			t.Reset(d - keeperCoarse/2)
			select {
			case <-finished:
				return
			case <-t.C:
			}
			continue
		}
		precise.sleep(d)
		last = time.Since(r.start)
		runtime.Gosched()
	}
}
