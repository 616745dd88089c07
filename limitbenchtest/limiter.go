package limitbenchtest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/verify"
)

// Limiter is a rate limiter under test: asked for n permits (n >= 1) for subject, it reports
// whether it admitted them. An error means the outcome is unknown (the permits may or may not
// have been taken). It is called from several goroutines at once.
type Limiter func(ctx context.Context, subject string, n int64) (bool, error)

// Recorder records the decisions of a limiter, as httptest.ResponseRecorder records a handler's
// response: call Allow instead of the limiter, from any number of goroutines, then Check. The
// zero Recorder is not usable; build one with NewRecorder.
type Recorder struct {
	l       Limiter
	clock   clock
	rec     verify.Recorder
	dropped atomic.Uint64 // decisions the log could not hold
}

// NewRecorder returns a Recorder of l with nothing recorded.
func NewRecorder(l Limiter) *Recorder {
	return &Recorder{l: l, clock: newClock()}
}

// Allow asks the limiter for n permits for subject on behalf of client, records the decision
// with the interval it was made in, and returns what the limiter returned.
func (r *Recorder) Allow(ctx context.Context, client, subject string, n int64) (bool, error) {
	sent := time.Now()
	ok, err := r.l(ctx, subject, n)
	received := time.Now()
	k := verify.Denied
	switch {
	case err != nil:
		k = verify.Unknown
	case ok:
		k = verify.Admitted
	}
	lo, hi := r.clock.interval(sent, received)
	if r.rec.Record(subject, client, n, lo, hi, k) != nil {
		// Only an n outside [1, 65535] or more names than the log holds get here. The request
		// may have been admitted: counted, it keeps the check from passing (Warnings.Dropped).
		r.dropped.Add(1)
	}
	return ok, err
}

// Log returns a copy of the log recorded so far.
func (r *Recorder) Log() *verify.Log { return r.rec.Log() }

// Check checks what was recorded against contract c and fails t (with t.Errorf) when the
// limiter broke c, or when the log cannot show that it kept it, with the finding in words.
// It returns the verification as limitbench reports it.
func (r *Recorder) Check(t testing.TB, c algorithms.Contract) verify.Summary {
	t.Helper()
	s := judge(c, r.Log(), r.dropped.Load())
	if s.Verdict != verify.Pass {
		t.Errorf("limitbenchtest: %s", message(s))
	}
	return s
}

// clock reads this process's time for decision intervals: a wall-clock reading and one derived
// from the monotonic clock, which drift apart when the wall clock is slewed or stepped. A
// limiter may read either (time.Now's Sub and Since use the monotonic one, Unix the wall), so
// an interval covers both.
type clock struct {
	anchor time.Time // with a monotonic reading
	wall   time.Time // anchor's wall reading alone
}

func newClock() clock {
	now := time.Now()
	return clock{anchor: now, wall: now.Round(0)}
}

// interval returns the widest of the wall and monotonic readings of [sent, received], both with
// monotonic readings, as wall times.
func (c clock) interval(sent, received time.Time) (lo, hi time.Time) {
	lo, hi = sent.Round(0), received.Round(0)
	if m := c.wall.Add(sent.Sub(c.anchor)); m.Before(lo) {
		lo = m
	}
	if m := c.wall.Add(received.Sub(c.anchor)); m.After(hi) {
		hi = m
	}
	return lo, hi
}
