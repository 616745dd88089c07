package load

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// keeperRunner returns a runner for keepTime with arrival a, started now, ending after end.
func keeperRunner(a Pacer, end time.Duration) *runner {
	return &runner{p: Plan{Arrival: a}, start: time.Now(), end: end}
}

// waitReturn fails t when f does not return within a minute (a liveness check, not a timing
// one: keepTime must not hang).
func waitReturn(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		f()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s: keepTime did not return", what)
	}
}

func TestKeepTimeReturns(t *testing.T) {
	t.Run("finished while waiting for a far tick", func(t *testing.T) {
		finished := make(chan struct{})
		r := keeperRunner(NewProfile(Piece{From: 0, To: 0, Duration: time.Hour}, Piece{From: 1, To: 1, Duration: time.Hour}), 3*time.Hour)
		time.AfterFunc(10*time.Millisecond, func() { close(finished) })
		waitReturn(t, "finished", func() { r.keepTime(finished) })
	})
	t.Run("schedule ends", func(t *testing.T) {
		// 200 ticks over the first 20 ms, then none: keepTime serves them and returns.
		r := keeperRunner(NewProfile(Piece{From: 10_000, To: 10_000, Duration: 20 * time.Millisecond}, Piece{From: 0, To: 0, Duration: time.Second}), time.Hour)
		waitReturn(t, "schedule end", func() { r.keepTime(make(chan struct{})) })
	})
	t.Run("run ends", func(t *testing.T) {
		r := keeperRunner(Constant(10_000), 20*time.Millisecond)
		waitReturn(t, "run end", func() { r.keepTime(make(chan struct{})) })
	})
}

// unchecked is a constant-rate Pacer that no plan would allow (NewProfile bounds the rate at
// MaxRate): hit n is due at n/rate seconds.
type unchecked float64

func (u unchecked) At(n uint64) (time.Duration, bool) {
	return time.Duration(float64(n) / float64(u) * 1e9), true
}
func (u unchecked) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	return paceFromAt(u, elapsed, hits)
}
func (u unchecked) Rate(time.Duration) float64 { return float64(u) }

// TestKeepTimeStopsAtAnyRate is the regression test of a run at 1e15 requests per second that
// spun at 100% CPU and ignored the signal to stop: the timekeeper stepped over the ticks one at
// a time (a million per nanosecond) without ever looking at finished or at the end of the run.
func TestKeepTimeStopsAtAnyRate(t *testing.T) {
	for _, rate := range []float64{MaxRate, 1e15, 1e18} {
		t.Run(fmt.Sprintf("finished at %g/s", rate), func(t *testing.T) {
			finished := make(chan struct{})
			r := keeperRunner(unchecked(rate), time.Hour)
			time.AfterFunc(20*time.Millisecond, func() { close(finished) })
			waitReturn(t, "finished", func() { r.keepTime(finished) })
		})
		t.Run(fmt.Sprintf("run ends at %g/s", rate), func(t *testing.T) {
			r := keeperRunner(unchecked(rate), 20*time.Millisecond)
			waitReturn(t, "run end", func() { r.keepTime(make(chan struct{})) })
		})
	}
}

// TestFirstDue: firstDue finds the tick Scheduled finds (the first due at or after from), from
// any cursor at or before it, for schedules that end, pause and run at rates from a few per
// second to far above any plan's.
func TestFirstDue(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var p Pacer
		switch rapid.IntRange(0, 2).Draw(rt, "kind") {
		case 0:
			p = unchecked(rapid.Float64Range(1, 1e15).Draw(rt, "rate"))
		case 1:
			p = NewProfile(
				Piece{From: rapid.Float64Range(0, 1e6).Draw(rt, "a"), To: rapid.Float64Range(0, 1e6).Draw(rt, "b"), Duration: time.Duration(rapid.Int64Range(1, 1e8).Draw(rt, "d1"))},
				Piece{From: 0, To: 0, Duration: time.Duration(rapid.Int64Range(1, 1e8).Draw(rt, "d2"))},
				Piece{From: rapid.Float64Range(1, 1e6).Draw(rt, "c"), To: 0, Duration: time.Duration(rapid.Int64Range(1, 1e8).Draw(rt, "d3"))})
		default:
			p = Constant(rapid.Float64Range(1, MaxRate).Draw(rt, "rate"))
		}
		from := time.Duration(rapid.Int64Range(0, 3e8).Draw(rt, "from"))
		want := Scheduled(p, from)
		wantAt, wantOK := p.At(want)
		// The cursor is at most want: near it (a wake a few ticks on) or anywhere before.
		back := rapid.OneOf(rapid.Uint64Range(0, 16), rapid.Uint64Range(0, want)).Draw(rt, "back")
		next := want - min(back, want)
		n, at, ok := firstDue(p, next, from)
		switch {
		case ok != wantOK:
			rt.Fatalf("firstDue(%d, %s) ok = %v; want %v (At(%d) = %s)", next, from, ok, wantOK, want, wantAt)
		case ok && (n != want || at != wantAt):
			rt.Fatalf("firstDue(%d, %s) = (%d, %s); want (%d, %s)", next, from, n, at, want, wantAt)
		}
	})
}

func TestPreciseTimer(t *testing.T) {
	p := newPreciseTimer()
	defer func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	for _, d := range []time.Duration{-time.Second, 0, time.Microsecond, 200 * time.Microsecond, 3 * time.Millisecond} {
		start := time.Now()
		p.sleep(d)
		if got := time.Since(start); got < d {
			t.Errorf("sleep(%s) returned after %s", d, got)
		}
	}
}
