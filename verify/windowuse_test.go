package verify

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/limitbench/limitbench/algorithms"
)

// useGrid returns a start, bin and bin count covering every event of log, on the log's clock.
func useGrid(t *rapid.T, log *Log) (start int64, bin time.Duration, bins int) {
	lo, hi := int64(0), int64(1)
	for i, e := range log.Events {
		if i == 0 || e.Lo() < lo {
			lo = e.Lo()
		}
		hi = max(hi, e.Hi())
	}
	n := rapid.Int64Range(1, 200).Draw(t, "bins")
	b := (hi - lo + 6 + n - 1) / n
	return log.Base + lo - 3, us(b), int(n) + 1
}

// TestWindowUseOfCorrectLimiterUnderAllowance: the use NewWindowUse measures of a history from an
// exact reference limiter (one or two limits, deciding on a clock of the contract's granularity,
// the logged intervals widened around the true times) never exceeds its allowance: the accuracy
// plot never shows a correct limiter over its line.
func TestWindowUseOfCorrectLimiterUnderAllowance(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genScaledContract(t, "")
		if rapid.Bool().Draw(t, "two") {
			a := genScaledContract(t, "also")
			a.Granularity = c.Granularity
			c.Also = []algorithms.Contract{a}
		}
		maxGap := max(c.Window, c.RefillPer).Microseconds()/3 + 1
		h := genArrivals(t, rapid.IntRange(1, 200).Draw(t, "n"), 1_700_000_000_000_000, maxGap)
		h.decide(t, newRefLimiter(c), c.Granularity.Microseconds())
		log := h.log(t, rapid.SampledFrom([]int64{0, 1, maxGap, 10 * maxGap}).Draw(t, "spread"))
		start, bin, bins := useGrid(t, log)
		for _, u := range NewWindowUse(c, log, nil, start, bin, bins) {
			for i, v := range u.Held {
				if v > u.Allowance {
					t.Fatalf("%s: bin %d holds %g > allowance %g (%s)", u.Contract, i, v, u.Allowance, u.Measure)
				}
			}
		}
	})
}

// TestWindowUseOverAllowanceIsDefinite: for window limits, a bin whose use exceeds the allowance
// is a definite violation by Check's rules, on any log: the line is crossed only by what the
// verifier proves.
func TestWindowUseOverAllowanceIsDefinite(t *testing.T) {
	crossings := 0
	rapid.Check(t, func(t *rapid.T) {
		c := genContract(t, "")
		if c.Kind == algorithms.TokenBucket {
			c = algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: c.Capacity, Window: c.RefillPer, Scope: c.Scope, Granularity: c.Granularity}
		}
		log := genLog(t, 30)
		start, bin, bins := useGrid(t, log)
		uses := NewWindowUse(c, cloneLog(log), nil, start, bin, bins)
		crossed := false
		for _, u := range uses {
			crossed = crossed || slices.ContainsFunc(u.Held, func(v float64) bool { return v > u.Allowance })
		}
		rep, err := Check(c, cloneLog(log))
		if err != nil {
			t.Fatal(err)
		}
		if crossed && rep.Definite() == 0 {
			t.Fatalf("%s: the use crosses the allowance (%+v) but Check finds no definite violation", c, uses)
		}
		if crossed {
			crossings++
		}
	})
	if crossings == 0 {
		t.Error("no drawn log crossed an allowance: the test proved nothing")
	}
	t.Logf("%d logs crossed an allowance", crossings)
}

// TestWindowUseExamples pins the measure of each kind on a small exact history.
func TestWindowUseExamples(t *testing.T) {
	const base = 1_000_000_000 // µs; a multiple of every window below
	ev := func(lo, hi int64, subject uint32) Event { return mustEvent(lo, hi, subject, 0, 1, Admitted) }
	log := &Log{Subjects: []string{"a", "b"}, Clients: []string{"x"}, Base: base, Events: []Event{
		ev(0, 0, 0), ev(10, 10, 0), ev(20, 20, 0), ev(95, 95, 0), ev(105, 105, 0), ev(15, 15, 1),
		ev(30, 90, 1), // wide: counts nowhere in a window of 50 µs
	}}
	tests := []struct {
		name string
		c    algorithms.Contract
		want []float64
		al   float64
	}{
		// Bins of 25 µs from base: [0, 25), [25, 50), [50, 75), [75, 100), [100, 125).
		// (0, 50] at 50 still holds 10 and 20; the wide admission never counts.
		{"sliding", algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 3, Window: us(50)}, []float64{3, 3, 2, 1, 2}, 3},
		// [0, 100) holds 0, 10, 20 and 95 of a (over the limit) and the wide one of b; 105 starts
		// the next window.
		{"fixed", algorithms.Contract{Kind: algorithms.FixedWindow, Limit: 3, Window: us(100)}, []float64{3, 3, 3, 4, 1}, 3},
		{"first-hit", algorithms.Contract{Kind: algorithms.FirstHitWindow, Limit: 3, Window: us(50)}, []float64{3, 3, 2, 1, 2}, 6},
		// 1 token per 100 µs: a draws 2.8 by 20, refills 0.25 by 75, draws 3.05 at 95 and 3.95
		// at 105; the wide admission [30, 90] of b counts at 90 and widens the allowance to
		// 3 + 60/100.
		{"token", algorithms.Contract{Kind: algorithms.TokenBucket, Capacity: 3, RefillPermits: 1, RefillPer: us(100)}, []float64{2.8, 2.75, 2.5, 3.05, 3.95}, 3.6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NewWindowUse(tt.c, cloneLog(log), nil, base, us(25), 5)
			if len(got) != 1 {
				t.Fatalf("NewWindowUse = %d uses; want 1", len(got))
			}
			if diff := cmp.Diff(tt.want, got[0].Held); diff != "" {
				t.Errorf("Held (-want +got):\n%s\nmeasure: %s", diff, got[0].Measure)
			}
			if got[0].Allowance != tt.al {
				t.Errorf("Allowance = %g; want %g", got[0].Allowance, tt.al)
			}
		})
	}
}

// TestWindowUseGranularity: with a granularity of one window, the sliding measure spans K = 3
// windows against 3L, as the checker takes such a contract.
func TestWindowUseGranularity(t *testing.T) {
	c := algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 2, Window: time.Second, Granularity: time.Second}
	log := &Log{Subjects: []string{"a"}, Clients: []string{"x"}}
	for _, at := range []int64{0, 100_000, 200_000, 900_000} {
		log.Events = append(log.Events, mustEvent(at, at, 0, 0, 1, Admitted))
	}
	got := NewWindowUse(c, log, nil, 0, time.Second, 4)
	if len(got) != 1 || got[0].Allowance != 6 {
		t.Fatalf("NewWindowUse = %+v; want one use with allowance 6", got)
	}
	if diff := cmp.Diff([]float64{0, 4, 3, 0}, got[0].Held); diff != "" {
		t.Errorf("Held (-want +got):\n%s", diff)
	}
}

// TestWindowUseCountsTheWarmup: the warmup's admissions before the measured part fill the window
// and the bucket it starts with; one that a skewed clock dates after the start does not count.
func TestWindowUseCountsTheWarmup(t *testing.T) {
	log := &Log{Subjects: []string{"a"}, Clients: []string{"x"}, Base: 1000,
		Events: []Event{mustEvent(10, 10, 0, 0, 1, Admitted)}}
	warmup := &Log{Subjects: []string{"a"}, Clients: []string{"x"}, Base: 900, Events: []Event{
		mustEvent(80, 80, 0, 0, 2, Admitted),   // 980: before the start at 1000
		mustEvent(95, 95, 0, 0, 1, Denied),     // denied: not counted
		mustEvent(150, 150, 0, 0, 5, Admitted), // 1050: after the start
	}}
	sliding := algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 10, Window: us(100)}
	got := NewWindowUse(sliding, log, warmup, 1000, us(50), 2)
	if diff := cmp.Diff([]float64{3, 3}, got[0].Held); diff != "" {
		t.Errorf("Held (-want +got):\n%s", diff)
	}
}
