package hunt

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/trace"
	"github.com/limitbench/limitbench/verify"
)

// fakeClock is a clock that advances only when told, for budgets measured in wall time.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// huntSim hunts tg with the simulated trial of mk, seed and the given trial budget.
func huntSim(t *testing.T, tg Target, mk func() limiter, seed uint64, trials int) (*Result, int) {
	t.Helper()
	calls := 0
	clock := &fakeClock{t: simEpoch}
	res, err := Hunt(context.Background(), Config{
		Target: tg,
		Budget: Budget{Trials: trials, Shrink: 300},
		Seed:   seed,
		Trial:  simTrial(tg, FrameOf(tg, Bounds{}), mk, &calls),
		Now:    clock.now,
	})
	if err != nil {
		t.Fatalf("Hunt: %v", err)
	}
	return res, calls
}

// TestHuntFindsAndShrinksFlaws: the search finds a definite violation of each flawed limiter
// within 300 trials and the shrinker makes it smaller, 1-minimal, and still violating.
func TestHuntFindsAndShrinksFlaws(t *testing.T) {
	for _, c := range flawedCases(t) {
		t.Run(c.name, func(t *testing.T) {
			res, _ := huntSim(t, c.target, c.mk, 1, 300)
			v := res.Violation
			if v == nil {
				t.Fatalf("no violation in %d trials (stop %s); best %.3f from %s", res.Trials, res.Stop, res.Best.Score(), res.Best.Family)
			}
			if res.Stop != StopViolation || v.Report.Definite() == 0 || v.Score() <= 1 || res.Best.Trial != v.Trial || v.Log == nil {
				t.Fatalf("stop %s, %d definite, score %v", res.Stop, v.Report.Definite(), v.Score())
			}
			sr := v.Shrunk
			if sr == nil {
				t.Fatal("not shrunk")
			}
			if !sr.To.Less(sr.From) || sr.To.Rows >= sr.From.Rows && sr.From.Rows > 2 {
				t.Errorf("shrunk from %s to %s", sr.From, sr.To)
			}
			if !sr.Minimal {
				t.Errorf("not 1-minimal after %d replays", sr.Calls)
			}
			if sr.To.Rows != c.rows || sr.To.Subjects != 1 {
				t.Errorf("shrunk to %s; the fewest rows that break it are %d, of one subject", sr.To, c.rows)
			}
			// The shrunk trace still breaks the contract when replayed.
			logs, err := simTrial(c.target, res.Frame, c.mk, nil)(context.Background(), []*trace.Trace{sr.Trace})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := verify.Check(c.target.Contract, logs[0].Log)
			if err != nil || rep.Definite() == 0 {
				t.Fatalf("shrunk trace replayed: %d definite, %v", rep.Definite(), err)
			}
			t.Logf("trial %d (%s, %d mutations): score %.3f; shrunk in %d replays from %s to %s",
				v.Trial, v.Family, v.Mutations, v.Score(), sr.Calls, sr.From, sr.To)
		})
	}
}

// TestHuntMutationsFind: the Poisson family never sends four requests at one microsecond, so
// alone it never breaks a sliding log that admits the fourth of a same-instant streak; the
// search does, by mutating (copying rows of) the candidates it kept.
func TestHuntMutationsFind(t *testing.T) {
	l := demoLimit
	c := subjectCase{name: "same-instant leak",
		target: Target{Algorithm: "same-instant-leak", Contract: algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: l.Limit, Window: l.Window}, Clock: algorithms.ClockServer},
		mk:     func() limiter { return newSameInstantLeak(l) }}
	poisson, _ := FamilyNamed("poisson")
	trial := simTrial(c.target, FrameOf(c.target, Bounds{}), c.mk, nil)
	for seed := range uint64(100) {
		logs, err := trial(context.Background(), []*trace.Trace{poisson.Make(c.target, Bounds{}, seed)})
		if err != nil {
			t.Fatal(err)
		}
		if ap, err := verify.ApproachOf(c.target.Contract, logs[0].Log); err != nil || ap.Score > 1 {
			t.Fatalf("a Poisson schedule alone broke the leak (seed %d): %v %v", seed, ap.Score, err)
		}
	}
	found := 0
	for seed := range uint64(10) {
		clock := &fakeClock{t: simEpoch}
		res, err := Hunt(context.Background(), Config{
			Target: c.target, Families: []string{"poisson"}, Budget: Budget{Trials: 300, Shrink: -1}, Seed: seed,
			Trial: simTrial(c.target, FrameOf(c.target, Bounds{}), c.mk, nil), Now: clock.now,
		})
		if err != nil {
			t.Fatal(err)
		}
		if v := res.Violation; v != nil && v.Mutations > 0 {
			found++
			t.Logf("seed %d: trial %d after %d mutations of a %s schedule", seed, v.Trial, v.Mutations, v.Family)
		}
	}
	if found < 8 {
		t.Fatalf("mutations found the flaw with %d seeds of 10; want at least 8", found)
	}
}

// TestHuntNeverFlagsCorrectModels: the same search never finds a violation of a registered
// reference model, and reports its closest approach, at most 1.
func TestHuntNeverFlagsCorrectModels(t *testing.T) {
	for _, c := range correctCases(t) {
		t.Run(c.name, func(t *testing.T) {
			res, _ := huntSim(t, c.target, c.mk, 1, 300)
			if res.Violation != nil {
				t.Fatalf("violation of a correct model: trial %d (%s), score %v, worst %+v",
					res.Violation.Trial, res.Violation.Family, res.Violation.Score(), res.Violation.Report.Limits)
			}
			if res.Stop != StopTrials || res.Trials != 300 {
				t.Errorf("stop %s after %d trials; want trials after 300", res.Stop, res.Trials)
			}
			if s := res.Best.Score(); s > 1 || s <= 0 {
				t.Errorf("closest approach %v; want (0, 1]", s)
			}
			t.Logf("closest approach %.3f (%s)", res.Best.Score(), res.Best.Family)
		})
	}
}

// TestHuntDeterministic: the same seed explores the same candidates (with a deterministic trial,
// the whole hunt repeats); another seed explores others.
func TestHuntDeterministic(t *testing.T) {
	c := correctCases(t)[0]
	record := func(seed uint64) []uint64 {
		var seen []uint64
		clock := &fakeClock{t: simEpoch}
		trial := simTrial(c.target, FrameOf(c.target, Bounds{}), c.mk, nil)
		_, err := Hunt(context.Background(), Config{
			Target: c.target, Budget: Budget{Trials: 60, Batch: 3}, Seed: seed, Now: clock.now,
			Trial: func(ctx context.Context, b []*trace.Trace) ([]verify.Measurement, error) {
				for _, tr := range b {
					seen = append(seen, traceHash(tr))
				}
				return trial(ctx, b)
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return seen
	}
	a, b, other := record(7), record(7), record(8)
	if len(a) != 60 {
		t.Fatalf("%d trials; want 60", len(a))
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("two hunts with seed 7 differ:\n%s", diff)
	}
	if cmp.Equal(a, other) {
		t.Fatal("seeds 7 and 8 explored the same candidates")
	}
	seen := map[uint64]bool{}
	for _, h := range a {
		if seen[h] {
			t.Fatal("a schedule was run twice")
		}
		seen[h] = true
	}
}

// TestHuntBudget: the wall-time budget, read from the injected clock, ends the search; so does
// cancellation, with what was found so far; a failing trial ends it with the error.
func TestHuntBudget(t *testing.T) {
	c := correctCases(t)[0]
	frame := FrameOf(c.target, Bounds{})
	t.Run("time", func(t *testing.T) {
		clock := &fakeClock{t: simEpoch}
		trial := simTrial(c.target, frame, c.mk, nil)
		res, err := Hunt(context.Background(), Config{Target: c.target, Budget: Budget{Time: 10 * time.Second}, Now: clock.now,
			Trial: func(ctx context.Context, b []*trace.Trace) ([]verify.Measurement, error) {
				clock.t = clock.t.Add(time.Second) // each trial takes a second
				return trial(ctx, b)
			}})
		if err != nil || res.Stop != StopTime || res.Trials != 10 || res.Elapsed != 10*time.Second {
			t.Fatalf("Hunt = stop %s after %d trials in %s, %v; want time after 10 in 10s", res.Stop, res.Trials, res.Elapsed, err)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		clock := &fakeClock{t: simEpoch}
		trial := simTrial(c.target, frame, c.mk, nil)
		n := 0
		res, err := Hunt(ctx, Config{Target: c.target, Now: clock.now,
			Trial: func(ctx context.Context, b []*trace.Trace) ([]verify.Measurement, error) {
				if n++; n == 5 {
					cancel()
				}
				return trial(ctx, b)
			}})
		if err != nil || res.Stop != StopCanceled || res.Trials != 4 || res.Best == nil {
			t.Fatalf("Hunt = stop %s after %d trials, best %v, %v; want canceled after 4 with a best", res.Stop, res.Trials, res.Best, err)
		}
	})
	t.Run("trial error", func(t *testing.T) {
		boom := errors.New("redis lost")
		res, err := Hunt(context.Background(), Config{Target: c.target,
			Trial: func(context.Context, []*trace.Trace) ([]verify.Measurement, error) { return nil, boom }})
		if !errors.Is(err, boom) || res == nil || res.Trials != 0 {
			t.Fatalf("Hunt = %+v, %v; want the trial's error", res, err)
		}
	})
	t.Run("bad config", func(t *testing.T) {
		if _, err := Hunt(context.Background(), Config{Target: c.target}); !errors.Is(err, ErrBadConfig) {
			t.Errorf("no trial: %v", err)
		}
		unknown := Target{Algorithm: "leaky", Contract: algorithms.Contract{Kind: "leaky-window", Limit: demoLimit.Limit, Window: demoLimit.Window}}
		if _, err := Hunt(context.Background(), Config{Target: unknown, Trial: simTrial(unknown, frame, c.mk, nil)}); !errors.Is(err, ErrBadTarget) ||
			!strings.Contains(err.Error(), "leaky-window") {
			t.Errorf("a contract the verifier cannot score: %v", err)
		}
		if _, err := Hunt(context.Background(), Config{Target: c.target, Families: []string{"nope"}, Trial: simTrial(c.target, frame, c.mk, nil)}); !errors.Is(err, ErrBadConfig) {
			t.Errorf("unknown family: %v", err)
		}
		if _, err := Hunt(context.Background(), Config{Target: c.target, Families: []string{"skew-alternation"}, Trial: simTrial(c.target, frame, c.mk, nil)}); !errors.Is(err, ErrBadConfig) {
			t.Errorf("a family that does not apply: %v", err)
		}
		none := c.target
		none.Contract = algorithms.Contract{Kind: algorithms.NoContract}
		if _, err := Hunt(context.Background(), Config{Target: none, Trial: simTrial(none, frame, c.mk, nil)}); !errors.Is(err, ErrBadTarget) {
			t.Errorf("no contract: %v", err)
		}
	})
}

// TestHuntBatchShrinkSameResult: batching trials and shrink replays changes how many traces are
// run together, not what the shrinker returns for a given violation.
func TestHuntBatchShrinkSameResult(t *testing.T) {
	c := flawedCases(t)[2] // first-hit held to sliding
	res, _ := huntSim(t, c.target, c.mk, 3, 300)
	if res.Violation == nil {
		t.Fatal("no violation")
	}
	pred := predicateOf(c.target, res.Frame, c.mk)
	one, err := Shrink(context.Background(), res.Violation.Trace, pred, ShrinkOptions{Calls: 1000})
	if err != nil {
		t.Fatal(err)
	}
	four, err := Shrink(context.Background(), res.Violation.Trace, pred, ShrinkOptions{Calls: 1000, Batch: 4})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(one.Trace, four.Trace, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("batch 4 shrank to another trace:\n%s", diff)
	}
	if four.Calls < one.Calls {
		t.Errorf("batch 4 asked about %d traces, batch 1 about %d", four.Calls, one.Calls)
	}
}

// predicateOf is the hunt's predicate with the simulated trial: one replay scores above 1.
func predicateOf(tg Target, frame arrival.Align, mk func() limiter) Predicate {
	trial := simTrial(tg, frame, mk, nil)
	return func(ctx context.Context, batch []*trace.Trace) ([]Answer, error) {
		logs, err := trial(ctx, batch)
		if err != nil {
			return nil, err
		}
		out := make([]Answer, len(batch))
		for i, l := range logs {
			ap, err := verify.ApproachOf(tg.Contract, l.Log)
			if err != nil {
				return nil, err
			}
			out[i] = AnswerOf(ap.Score > 1)
			out[i].Score = ap.Score
		}
		return out, nil
	}
}

// TestHuntShrinksOffByOne: a fixed window that admits one request too many (21 where 20 are
// allowed, a score of 1.05) is shrunk however small its excess: to the 21 requests of one window,
// 1-minimal, which the test checks by deleting each row in turn and replaying. The progress of
// the shrink reports the kept violation's score, never 0.
func TestHuntShrinksOffByOne(t *testing.T) {
	l := demoLimit
	tg := Target{Algorithm: "over-by-one", Contract: algorithms.Contract{Kind: algorithms.FixedWindow, Limit: l.Limit, Window: l.Window},
		Clock: algorithms.ClockServer}
	mk := func() limiter { return &overByOne{*newSnapshotRace(l)} }
	clock := &fakeClock{t: simEpoch}
	var shrinkBest []float64
	res, err := Hunt(context.Background(), Config{
		Target: tg, Budget: Budget{Trials: 300, Shrink: 400, Replays: 2, Confirm: 3}, Seed: 1,
		Trial: simTrial(tg, FrameOf(tg, Bounds{}), mk, nil), Now: clock.now,
		Progress: func(p Progress) {
			if p.Phase == "shrink" {
				shrinkBest = append(shrinkBest, p.Best)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	v := res.Violation
	if v == nil || v.Shrunk == nil || v.Confirmation == nil {
		t.Fatalf("violation %+v; want one shrunk and confirmed", v)
	}
	sr := v.Shrunk
	if sr.To.Rows != 21 || sr.To.Rows >= sr.From.Rows || !sr.Minimal || !v.Confirmation.Confirmed() || sr.Score <= 1 {
		t.Fatalf("shrunk from %s to %s (score %.3f), minimal %v, confirmation %+v; want 21 rows, 1-minimal, confirmed",
			sr.From, sr.To, sr.Score, sr.Minimal, *v.Confirmation)
	}
	if len(shrinkBest) == 0 || slices.ContainsFunc(shrinkBest, func(b float64) bool { return b <= 1 }) {
		t.Errorf("shrink progress best scores %v; want the kept violation's score (above 1) every time", shrinkBest)
	}
	trial := simTrial(tg, res.Frame, mk, nil)
	for i := range sr.Trace.Rows {
		c := sr.Trace.Clone()
		c.Rows = slices.Delete(c.Rows, i, i+1)
		logs, err := trial(context.Background(), []*trace.Trace{c.Canonical()})
		if err != nil {
			t.Fatal(err)
		}
		if ap, err := verify.ApproachOf(tg.Contract, logs[0].Log); err != nil || ap.Score > 1 {
			t.Errorf("claimed 1-minimal, but without row %d it still scores %.3f (%v)", i, ap.Score, err)
		}
	}
}

// TestShrinkMinimalOnlyWhenLost: a row deletion that breaks the contract in some of its replays
// but not all is neither kept nor counted as lost, so the result is not claimed 1-minimal.
func TestShrinkMinimalOnlyWhenLost(t *testing.T) {
	cond := burstCond(5, time.Millisecond, 2*time.Second)
	tr := messyTrace()
	res, err := Shrink(context.Background(), tr, countingPredicate(cond, new(int)), ShrinkOptions{Calls: 5000})
	if err != nil || !res.Minimal {
		t.Fatalf("deterministic: minimal %v, %v", res.Minimal, err)
	}
	// The same, but a trace smaller than the reproducer breaks it in one replay of two.
	floor := res.To.Rows
	mixed := func(ctx context.Context, batch []*trace.Trace) ([]Answer, error) {
		out := make([]Answer, len(batch))
		for i, t := range batch {
			out[i] = AnswerOf(cond(t))
			out[i].Replays = 2
			switch {
			case out[i].Broke == 1:
				out[i].Broke = 2
			case len(t.Rows) < floor:
				out[i].Broke = 1
			}
		}
		return out, nil
	}
	got, err := Shrink(context.Background(), tr, mixed, ShrinkOptions{Calls: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if got.Minimal || got.To != res.To {
		t.Errorf("with timing-dependent deletions: %s, minimal %v; want %s, not minimal", got.To, got.Minimal, res.To)
	}
}

// flakyTrial wraps trial so that a schedule of fewer than minRows rows breaks the contract only
// in every other replay of it (the others replay its first row alone, which cannot): a stand-in
// for a violation that depends on timing.
func flakyTrial(trial Trial, minRows int) Trial {
	replays := map[uint64]int{}
	return func(ctx context.Context, batch []*trace.Trace) ([]verify.Measurement, error) {
		run := make([]*trace.Trace, len(batch))
		for i, tr := range batch {
			run[i] = tr
			if len(tr.Rows) < minRows {
				h := traceHash(tr)
				replays[h]++
				if replays[h]%2 == 0 {
					one := *tr
					one.Rows = tr.Rows[:1]
					run[i] = &one
				}
			}
		}
		return trial(ctx, run)
	}
}

// TestHuntConfirm: the reproducer must break the contract in every one of Budget.Confirm replays
// at the end. Shrinking with one replay per step keeps schedules that break it only every other
// time; the confirmation rejects them and walks back to the smallest kept schedule that breaks
// it every time, or to the violation as found, saying how often that broke it. Without the
// flakiness the smallest schedule is confirmed as it is.
func TestHuntConfirm(t *testing.T) {
	const confirm = 4
	walkedBack := false
	for _, c := range flawedCases(t) {
		t.Run(c.name, func(t *testing.T) {
			minRows := c.rows + 10
			for _, flaky := range []bool{false, true} {
				clock := &fakeClock{t: simEpoch}
				trial := simTrial(c.target, FrameOf(c.target, Bounds{}), c.mk, nil)
				if flaky {
					trial = flakyTrial(trial, minRows)
				}
				res, err := Hunt(context.Background(), Config{
					Target: c.target,
					Budget: Budget{Trials: 300, Shrink: 300, Confirm: confirm},
					Seed:   1,
					Trial:  trial,
					Now:    clock.now,
				})
				if err != nil {
					t.Fatal(err)
				}
				v := res.Violation
				if v == nil || v.Shrunk == nil || v.Confirmation == nil {
					t.Fatalf("flaky %v: violation %v; want one shrunk and confirmed", flaky, v)
				}
				sr, cf := v.Shrunk, v.Confirmation
				if len(sr.Path) != sr.Steps+1 || sr.Path[0] != v.Trace.Canonical() && SizeOf(sr.Path[0]) != SizeOf(v.Trace) {
					t.Errorf("flaky %v: path of %d traces for %d steps; want the input first and each step after", flaky, len(sr.Path), sr.Steps)
				}
				want := sr.Path[len(sr.Path)-1-cf.Back]
				if sr.Trace != want || sr.To != SizeOf(want) {
					t.Errorf("flaky %v: the reproducer is not the schedule %d steps back along the path", flaky, cf.Back)
				}
				switch {
				case !flaky && (cf.Back != 0 || !cf.Confirmed()):
					t.Errorf("reliable limiter: confirmation %+v; want the smallest schedule confirmed", *cf)
				case flaky && len(sr.Trace.Rows) < minRows && (cf.Confirmed() || cf.Back != sr.Steps):
					t.Errorf("flaky: %d-row reproducer (< %d) with confirmation %+v; want it unconfirmed and the violation as found", len(sr.Trace.Rows), minRows, *cf)
				case flaky && len(sr.Trace.Rows) >= minRows && !cf.Confirmed():
					t.Errorf("flaky: %d-row reproducer (>= %d) unconfirmed: %+v", len(sr.Trace.Rows), minRows, *cf)
				}
				if flaky && cf.Back > 0 {
					walkedBack = true
				}
				t.Logf("flaky %v: %s shrunk to %s, reproducer %d rows, %+v", flaky, sr.From, SizeOf(sr.Path[len(sr.Path)-1]), len(sr.Trace.Rows), *cf)
			}
		})
	}
	if !walkedBack {
		t.Error("no flaky hunt walked back from its smallest schedule: the test shows nothing")
	}
}
