package hunt

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/limitbench/limitbench/internal/trace"
)

// countingPredicate wraps a pure condition on a trace as a Predicate that counts its calls.
func countingPredicate(cond func(*trace.Trace) bool, calls *int) Predicate {
	return func(_ context.Context, batch []*trace.Trace) ([]Answer, error) {
		out := make([]Answer, len(batch))
		for i, t := range batch {
			*calls++
			if err := t.Validate(); err != nil {
				return nil, fmt.Errorf("asked about an invalid trace: %w", err)
			}
			out[i] = AnswerOf(cond(t))
		}
		return out, nil
	}
}

// burstCond holds when some instant window [t, t+w] holds at least k permits of one subject
// from clients whose offsets differ by at least d: a stand-in for a violation.
func burstCond(k int64, w, d time.Duration) func(*trace.Trace) bool {
	return func(t *trace.Trace) bool {
		for i, a := range t.Rows {
			var sum int64
			lo, hi := t.SkewOf(a.Client), t.SkewOf(a.Client)
			for _, b := range t.Rows[i:] {
				if b.At-a.At > w {
					break
				}
				if b.Subject != a.Subject {
					continue
				}
				sum += int64(b.Cost)
				lo, hi = min(lo, t.SkewOf(b.Client)), max(hi, t.SkewOf(b.Client))
			}
			if sum >= k && hi-lo >= d {
				return true
			}
		}
		return false
	}
}

// messyTrace is a trace that holds burstCond(5, 1ms, 2s) among a lot of noise.
func messyTrace() *trace.Trace {
	tr := &trace.Trace{Clients: []string{"a", "b", "c", "d"}, Subjects: []string{"s", "t", "u"},
		Skew: []time.Duration{0, 2 * time.Second, -2 * time.Second, 0}}
	at := time.Duration(0)
	for i := range 300 {
		at += time.Duration(1+i%7) * 1234567
		tr.Rows = append(tr.Rows, trace.Row{At: at, Client: uint16(i % 4), Subject: uint32(i % 3), Cost: uint16(1 + i%3)})
		if i == 150 {
			// The planted burst: 9 permits of s within 0.9 ms from clients 2 s and 4 s apart,
			// among rows of other subjects.
			for k, c := range []uint16{1, 0, 2, 3, 1} {
				at += 150 * time.Microsecond
				tr.Rows = append(tr.Rows, trace.Row{At: at, Client: c, Subject: 0, Cost: uint16(1 + k%3)},
					trace.Row{At: at, Client: c, Subject: 1, Cost: 3})
			}
		}
	}
	return tr
}

// TestShrinkSynthetic: a violation that needs 5 permits of one subject within 1 ms from clients
// 2 s apart shrinks to its essence: few rows, two clients, one subject, no spread in time.
func TestShrinkSynthetic(t *testing.T) {
	cond := burstCond(5, time.Millisecond, 2*time.Second)
	tr := messyTrace()
	if !cond(tr) {
		t.Fatal("the test trace does not hold the condition")
	}
	calls := 0
	res, err := Shrink(context.Background(), tr, countingPredicate(cond, &calls), ShrinkOptions{Calls: 5000})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Trace
	if !cond(got) || got.Validate() != nil {
		t.Fatalf("the shrunk trace does not hold: %+v", got)
	}
	if res.Calls != calls || !res.Minimal {
		t.Errorf("Calls %d (predicate saw %d), Minimal %v", res.Calls, calls, res.Minimal)
	}
	// Two rows of costs 3 and 2 (or 3 and 3 lowered), two clients with offsets 2 s apart, one
	// subject, one instant.
	want := Size{Rows: 2, Clients: 2, Subjects: 1, Permits: 5, Skew: 2 * time.Second}
	if res.To.Rows != want.Rows || res.To.Clients != want.Clients || res.To.Subjects != want.Subjects ||
		res.To.Permits != want.Permits || res.To.Skew != want.Skew || res.To.Extent != 0 {
		t.Errorf("shrunk to %s; want %s", res.To, want)
	}
	if res.From != SizeOf(tr.Canonical()) || res.To != SizeOf(got) {
		t.Errorf("From %s, To %s do not describe the traces", res.From, res.To)
	}
	t.Logf("%s -> %s in %d calls, %d steps", res.From, res.To, res.Calls, res.Steps)
}

// TestShrinkProperties: for random traces and conditions, the shrunk trace holds, is no bigger,
// is 1-minimal for row deletion when Minimal says so, and is the same whatever the batch size;
// the call budget is kept.
func TestShrinkProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		tr := &trace.Trace{Clients: []string{"a", "b", "c"}, Subjects: []string{"s", "t"}, Skew: []time.Duration{0, time.Second, -time.Second}}
		at := time.Duration(0)
		for i := range rapid.IntRange(1, 60).Draw(rt, "rows") {
			at += time.Duration(rapid.Int64Range(0, 3e6).Draw(rt, fmt.Sprint("gap", i)))
			tr.Rows = append(tr.Rows, trace.Row{At: at,
				Client:  uint16(rapid.IntRange(0, 2).Draw(rt, fmt.Sprint("c", i))),
				Subject: uint32(rapid.IntRange(0, 1).Draw(rt, fmt.Sprint("s", i))),
				Cost:    uint16(rapid.IntRange(1, 3).Draw(rt, fmt.Sprint("cost", i)))})
		}
		cond := burstCond(rapid.Int64Range(1, 8).Draw(rt, "k"),
			time.Duration(rapid.Int64Range(0, 5e6).Draw(rt, "w")),
			rapid.SampledFrom([]time.Duration{0, time.Second, 2 * time.Second}).Draw(rt, "d"))
		if !cond(tr) {
			rt.Skip("the trace does not hold the condition")
		}
		budget := rapid.IntRange(1, 400).Draw(rt, "calls")
		calls := 0
		res, err := Shrink(context.Background(), tr, countingPredicate(cond, &calls), ShrinkOptions{Calls: budget})
		if err != nil {
			rt.Fatal(err)
		}
		if !cond(res.Trace) {
			rt.Fatal("the shrunk trace does not hold the condition")
		}
		if res.From.Less(res.To) {
			rt.Fatalf("grew from %s to %s", res.From, res.To)
		}
		if calls > budget || res.Calls != calls {
			rt.Fatalf("%d calls (reported %d), budget %d", calls, res.Calls, budget)
		}
		if res.Minimal {
			for i := range res.Trace.Rows {
				c := res.Trace.Clone()
				c.Rows = append(c.Rows[:i], c.Rows[i+1:]...)
				if len(c.Rows) > 0 && cond(c.Canonical()) {
					rt.Fatalf("Minimal, but deleting row %d still holds", i)
				}
			}
		}
		batched, err := Shrink(context.Background(), tr, countingPredicate(cond, new(int)), ShrinkOptions{Calls: 1 << 20, Batch: 5})
		if err != nil {
			rt.Fatal(err)
		}
		one, err := Shrink(context.Background(), tr, countingPredicate(cond, new(int)), ShrinkOptions{Calls: 1 << 20})
		if err != nil {
			rt.Fatal(err)
		}
		if !one.Minimal || !batched.Minimal {
			rt.Fatal("an unbounded shrink did not reach 1-minimality")
		}
		if diff := cmp.Diff(one.Trace, batched.Trace); diff != "" {
			rt.Fatalf("batch 5 shrank to another trace:\n%s", diff)
		}
	})
}

// TestShrinkBounds: the deadline (on the injected clock) and cancellation end shrinking with
// the smallest trace so far; a predicate's error is returned with it.
func TestShrinkBounds(t *testing.T) {
	cond := burstCond(5, time.Millisecond, 2*time.Second)
	tr := messyTrace()
	clock := &fakeClock{t: simEpoch}
	calls := 0
	pred := func(ctx context.Context, b []*trace.Trace) ([]Answer, error) {
		clock.t = clock.t.Add(time.Second)
		return countingPredicate(cond, &calls)(ctx, b)
	}
	res, err := Shrink(context.Background(), tr, pred, ShrinkOptions{Deadline: simEpoch.Add(10 * time.Second), Now: clock.now, Calls: 1000})
	if err != nil || calls != 10 || res.Minimal || !cond(res.Trace) {
		t.Errorf("deadline: %d calls, Minimal %v, %v; want 10 calls", calls, res.Minimal, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls = 0
	res, err = Shrink(ctx, tr, func(ctx context.Context, b []*trace.Trace) ([]Answer, error) {
		if calls == 3 {
			cancel()
			return nil, ctx.Err()
		}
		return countingPredicate(cond, &calls)(ctx, b)
	}, ShrinkOptions{})
	if err != nil || calls != 3 || res.Minimal || !cond(res.Trace) {
		t.Errorf("canceled: %d calls, Minimal %v, %v; want nil after 3", calls, res.Minimal, err)
	}
	res, err = Shrink(context.Background(), tr, func(context.Context, []*trace.Trace) ([]Answer, error) {
		return nil, fmt.Errorf("redis lost")
	}, ShrinkOptions{})
	if err == nil || res == nil || res.Trace == nil {
		t.Errorf("predicate error: %+v, %v; want the error and the input", res, err)
	}
}

// TestSizeOrder: the order of sizes, field by field.
func TestSizeOrder(t *testing.T) {
	base := Size{Rows: 5, Clients: 2, Subjects: 2, Permits: 7, Skew: time.Second, Extent: time.Second, Roughness: 9}
	smaller := []func(*Size){
		func(s *Size) { s.Rows--; s.Clients += 5 },
		func(s *Size) { s.Clients--; s.Subjects += 5 },
		func(s *Size) { s.Subjects--; s.Permits += 5 },
		func(s *Size) { s.Permits--; s.Skew += time.Hour },
		func(s *Size) { s.Skew--; s.Extent += time.Hour },
		func(s *Size) { s.Extent--; s.Roughness += 100 },
		func(s *Size) { s.Roughness-- },
	}
	for i, f := range smaller {
		s := base
		f(&s)
		if !s.Less(base) || base.Less(s) {
			t.Errorf("edit %d: %s should be smaller than %s", i, s, base)
		}
	}
	if base.Less(base) {
		t.Error("a size is smaller than itself")
	}
	for d, want := range map[time.Duration]int{0: 0, 1500 * time.Microsecond: 2, time.Second: 1, 1234567: 7, -20: 1} {
		if got := digits(d); got != want {
			t.Errorf("digits(%d) = %d; want %d", d, got, want)
		}
	}
}
