package load

import (
	"math"
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
		var at time.Duration
		var ok bool
		next, at, ok = firstDue(r.p.Arrival, next, from)
		if !ok || at >= r.end {
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

// keeperSteps is how many ticks firstDue steps over one by one before it searches.
const keeperSteps = 8

// firstDue returns the first tick n >= next that p schedules at or after from, with its time,
// and false when the schedule ends first. It steps over the first keeperSteps ticks one by one
// (a wake usually finds the next tick a few ticks on, so the cursor moves about once per tick
// in all) and then gallops and bisects, so that however many ticks a wake passes over (a
// billion per second at a rate no plan allows, or a keeper that was not scheduled for a while)
// it calls At O(log n) times, and the keeper never stops looking at the end of the run.
func firstDue(p Pacer, next uint64, from time.Duration) (uint64, time.Duration, bool) {
	for range keeperSteps {
		at, ok := p.At(next)
		if !ok || at >= from {
			return next, at, ok
		}
		next++
	}
	// At(next-1) < from. Gallop: find hi with At(hi) >= from (or no tick hi).
	due := func(n uint64) bool {
		at, ok := p.At(n)
		return ok && at < from
	}
	lo, step := next-1, uint64(1)
	hi := next
	for due(hi) {
		lo = hi
		if step > math.MaxUint64/4 || hi > math.MaxUint64-step {
			return 0, 0, false
		}
		hi += step
		step *= 2
	}
	for hi-lo > 1 { // due(lo), !due(hi)
		mid := lo + (hi-lo)/2
		if due(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	at, ok := p.At(hi)
	return hi, at, ok
}
