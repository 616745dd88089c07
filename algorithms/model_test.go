package algorithms

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// step is one request to a model at T µs and the decision it must make.
type step struct {
	t    int64
	cost int64
	want bool
}

func runSteps(t *testing.T, m Model, steps []step) {
	t.Helper()
	for i, s := range steps {
		cost := s.cost
		if cost == 0 {
			cost = 1
		}
		if got := m.Decide("k", "", cost, s.t); got != s.want {
			t.Fatalf("step %d: Decide(t=%d, cost %d) = %v; want %v", i, s.t, cost, got, s.want)
		}
	}
}

func TestModels(t *testing.T) {
	const ms = 1000
	tests := []struct {
		name  string
		model Model
		steps []step
	}{
		{"fixed-window", newFixedWindowModel(Limit{Limit: 2, Window: time.Millisecond}), []step{
			{t: 0, want: true}, {t: 1, want: true}, {t: 999, want: false},
			{t: ms, want: true}, {t: ms, cost: 2, want: false}, {t: ms, want: true},
			{t: 3 * ms, cost: 3, want: false}, {t: 3 * ms, cost: 2, want: true},
			{t: 2 * ms, want: true}, // the clock went back a window: counted in that window
			{t: 2 * ms, want: true}, {t: 2 * ms, want: false},
			{t: 3 * ms, want: false}, // window 3 still holds 2
			{t: 4 * ms, cost: 2, want: true}, {t: 3 * ms, want: false},
		}},
		{"sliding-log", newSlidingLogModel(Limit{Limit: 2, Window: time.Millisecond}), []step{
			{t: 0, want: true}, {t: 500, want: true}, {t: 999, want: false},
			{t: ms, want: true}, // the entry at 0 left at exactly W
			{t: ms + 499, want: false}, {t: ms + 500, want: true},
			{t: 5 * ms, cost: 2, want: true}, {t: 6*ms - 1, want: false},
		}},
		{"token-bucket", newTokenBucketModel(Limit{Limit: 3, Window: time.Second, Burst: 2}), []step{
			// 3 permits per second: one every 333333.33 µs.
			{t: 0, want: true}, {t: 0, want: true}, {t: 0, want: false},
			{t: 333_333, want: false}, {t: 333_334, want: true},
			{t: 10_000_000, cost: 2, want: true}, {t: 10_000_000, cost: 3, want: false},
		}},
		{"gcra", newGCRAModel(Limit{Limit: 3, Window: time.Second, Burst: 2}), []step{
			// T = ⌈10^6/3⌉ = 333334 µs. redis_rate's floor(x+0.5) admitted at 333333.
			{t: 0, want: true}, {t: 0, want: true}, {t: 0, want: false},
			{t: 333_333, want: false}, {t: 333_334, want: true}, {t: 333_334, want: false},
			{t: 10_000_000, cost: 2, want: true}, {t: 10_000_000, cost: 3, want: false},
		}},
		{"sliding-counter", newSlidingCounterModel(Limit{Limit: 4, Window: time.Millisecond}), []step{
			{t: 0, cost: 4, want: true}, {t: 999, want: false},
			// Next window: prev 4 weighs 4·(1000−e)/1000; one more fits when e >= 250.
			{t: ms + 249, want: false}, {t: ms + 250, want: true},
			{t: ms + 500, want: true}, {t: ms + 500, want: false},
			{t: 3 * ms, cost: 4, want: true}, // two windows later both counters are gone
			// The clock steps back a window: window 2 holds nothing, window 1 two permits.
			{t: 2*ms + 900, cost: 3, want: true}, {t: 2*ms + 900, want: false},
			{t: 3*ms + 1, want: false}, // window 3 holds 4
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runSteps(t, tt.model, tt.steps) })
	}
}

// TestModelsKeepContracts: whatever the sequence of non-decreasing times, the admissions of each
// reference model obey the algorithm's contract (checked by brute force).
func TestModelsKeepContracts(t *testing.T) {
	for _, name := range []string{"fixed-window", "sliding-log", "token-bucket", "gcra", "sliding-counter"} {
		a, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, rapid.MakeCheck(func(rt *rapid.T) {
			l := Limit{
				Limit:  rapid.Int64Range(1, 6).Draw(rt, "limit"),
				Window: time.Duration(rapid.Int64Range(1, 5).Draw(rt, "window_ms")) * time.Millisecond,
				Burst:  rapid.Int64Range(0, 6).Draw(rt, "burst"),
			}
			c, err := a.Contract(l)
			if err != nil {
				rt.Fatal(err)
			}
			m := a.Model(l)
			gaps := rapid.SliceOfN(rapid.Int64Range(0, 1500), 1, 80).Draw(rt, "gaps_us")
			var times []int64
			now := int64(1_700_000_000_000_000)
			for _, g := range gaps {
				now += g
				if m.Decide("k", "", 1, now) {
					times = append(times, now)
				}
			}
			if v := violation(c, times); v != "" {
				rt.Fatalf("%s: %s (admissions %v)", c, v, times)
			}
		}))
	}
}

func ExampleGCRA_Model() {
	l := Limit{Limit: 2, Window: time.Second}
	m := GCRA{}.Model(l)
	for _, t := range []int64{0, 0, 0, 500_000, 500_000} {
		fmt.Println(t, m.Decide("user-1", "", 1, t))
	}
	// Output:
	// 0 true
	// 0 true
	// 0 false
	// 500000 true
	// 500000 false
}
