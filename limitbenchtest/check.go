package limitbenchtest

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/hunt"
	"github.com/limitbench/limitbench/internal/trace"
	"github.com/limitbench/limitbench/verify"
)

// MaxLiteral is the most requests a reproducer is shown of as a Go literal; a longer one is
// written to a trace file that the failure names.
const MaxLiteral = 60

// Check plays s against l in real time, checks the decisions against contract c, and fails t
// (t.Errorf) with the finding and the schedule as a reproducer when l broke c or the log cannot
// show that it kept it. It calls t.Fatalf when s is not a valid schedule. l may hold state
// from before (Check assumes nothing about it). It returns the verification as limitbench
// reports it.
func Check(t testing.TB, c algorithms.Contract, l Limiter, s Schedule) verify.Summary {
	t.Helper()
	if _, err := s.trace(); err != nil {
		t.Fatalf("limitbenchtest: invalid schedule: %v", err)
	}
	r := NewRecorder(l)
	if err := s.play(context.Background(), r); err != nil {
		t.Fatalf("limitbenchtest: %v", err)
	}
	sum := judge(c, r.Log(), r.dropped.Load())
	if sum.Verdict != verify.Pass {
		t.Errorf("limitbenchtest: %s\n%s", message(sum), reproducer(s))
	}
	return sum
}

// HuntOptions bound a Hunt. Zero fields take the defaults.
type HuntOptions struct {
	// Time is how long the search may take (default 3 s); shrinking the schedule it finds may
	// take as long again, and each trial lasts about Span and waits up to one period of the
	// contract for its time zero.
	Time time.Duration
	// Trials is the most schedules the search tries (0: bounded by Time only).
	Trials int
	// Span is the length of one schedule (default 1 s).
	Span time.Duration
	// Seed seeds every choice of the search: the same seed tries the same schedules.
	Seed uint64
	// Cost: the limiter takes requests of more than one permit, so the search may send them.
	Cost bool
	// Skews are clock offsets the search may give clients (the limiter reads them with
	// ClientNow); none by default.
	Skews []time.Duration
}

// Hunt searches, within o's budget, for a schedule that makes a limiter break contract c, with
// limitbench's schedule families aimed at c's weak points (those of `limitbench hunt`); when
// one does, it shrinks it to a small schedule that still does and fails t (t.Errorf) with the
// finding and that reproducer. Every trial plays against a limiter of its own from newLimiter,
// which must hold no state (the check of a first-hit window relies on it); trials may run at
// the same time. It calls t.Fatalf when c cannot be hunted.
func Hunt(t testing.TB, c algorithms.Contract, newLimiter func() Limiter, o HuntOptions) {
	t.Helper()
	target, err := targetOf(c, o.Cost, o.Skews)
	if err != nil {
		t.Fatalf("%v", err)
	}
	bounds := hunt.Bounds{Span: cmp.Or(o.Span, time.Second), Rows: 1000, Clients: 16}
	budget := hunt.Budget{Time: cmp.Or(o.Time, 3*time.Second), Trials: o.Trials, Batch: 4, Shrink: 40, Replays: 1, Confirm: 2}
	frame := hunt.FrameOf(target, bounds)
	trial := func(ctx context.Context, batch []*trace.Trace) ([]verify.Measurement, error) {
		logs := make([]verify.Measurement, len(batch))
		var wg sync.WaitGroup
		for i, tr := range batch {
			wg.Go(func() {
				r := NewRecorder(newLimiter())
				_ = fromTrace(tr, frame).play(ctx, r) // canceled: the hunt stops on ctx itself
				logs[i].Log = r.Log()
				logs[i].Log.Fresh = true
			})
		}
		wg.Wait()
		return logs, nil
	}
	res, err := hunt.Hunt(context.Background(), hunt.Config{Target: target, Bounds: bounds, Budget: budget, Seed: o.Seed, Trial: trial})
	if err != nil {
		t.Fatalf("limitbenchtest: %v", err)
	}
	v := res.Violation
	if res.Best == nil {
		t.Errorf("limitbenchtest: hunt of %s ran no trial within %v: it checked nothing", c, budget.Time)
		return
	}
	if v == nil {
		t.Logf("limitbenchtest: hunt of %s: %d schedules in %v broke nothing (best came to %.0f%% of the contract)",
			c, res.Trials, res.Elapsed.Round(time.Millisecond), 100*res.Best.Score())
		return
	}
	repro := v.Trace
	note := "as found"
	if v.Shrunk != nil {
		repro = v.Shrunk.Trace
		note = fmt.Sprintf("shrunk from %d to %d requests", len(v.Trace.Rows), len(repro.Rows))
		if cf := v.Confirmation; cf != nil {
			note += fmt.Sprintf(", broke the contract again in %d of %d replays", cf.Broke, cf.Replays)
		}
	}
	sum := judge(c, v.Log, 0)
	t.Errorf("limitbenchtest: hunt: trial %d of %d (%s family) broke the contract: %s\nreproducer (%s):\n%s",
		v.Trial, res.Trials, v.Family, message(sum), note, reproducer(fromTrace(repro, frame)))
}

// judge checks log against c as limitbench does, dropped being the decisions the log could not
// hold.
func judge(c algorithms.Contract, log *verify.Log, dropped uint64) verify.Summary {
	return verify.Summarize(c, log, verify.Warnings{Dropped: dropped}, log.Base)
}

// message says in words what the verification s found.
func message(s verify.Summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", s.Contract, s.Verdict)
	if s.Finding != "" {
		fmt.Fprintf(&b, ": %s", s.Finding)
	}
	for _, r := range s.Reasons {
		fmt.Fprintf(&b, "\n\t%s", r)
	}
	return b.String()
}

// reproducer returns how to replay s: its Go literal when it is short, else the name of a trace
// file it writes s to (kept after the test, for a test to read with ReadSchedule).
func reproducer(s Schedule) string {
	if len(s.Requests) <= MaxLiteral {
		return "limitbenchtest.Check(t, contract, limiter, " + s.GoString() + ")"
	}
	tr, err := s.trace()
	if err == nil {
		var f *os.File
		if f, err = os.CreateTemp("", "limitbenchtest-*.csv"); err == nil {
			err = tr.WriteCSV(f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				return fmt.Sprintf("%d requests written to %s: replay them with ReadSchedule and Check, with Every: %d, Offset: %d",
					len(s.Requests), filepath.Clean(f.Name()), s.Every, s.Offset)
			}
		}
	}
	return fmt.Sprintf("%d requests (the trace file could not be written: %v)", len(s.Requests), err)
}
