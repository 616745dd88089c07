package load

import (
	"testing"
	"time"
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
		r := keeperRunner(NewProfile(Segment{From: 0, To: 0, Duration: time.Hour}, Segment{From: 1, To: 1, Duration: time.Hour}), 3*time.Hour)
		time.AfterFunc(10*time.Millisecond, func() { close(finished) })
		waitReturn(t, "finished", func() { r.keepTime(finished) })
	})
	t.Run("schedule ends", func(t *testing.T) {
		// 200 ticks over the first 20 ms, then none: keepTime serves them and returns.
		r := keeperRunner(NewProfile(Segment{From: 10_000, To: 10_000, Duration: 20 * time.Millisecond}, Segment{From: 0, To: 0, Duration: time.Second}), time.Hour)
		waitReturn(t, "schedule end", func() { r.keepTime(make(chan struct{})) })
	})
	t.Run("run ends", func(t *testing.T) {
		r := keeperRunner(Constant(10_000), 20*time.Millisecond)
		waitReturn(t, "run end", func() { r.keepTime(make(chan struct{})) })
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
