package algorithms

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestFirstHitModel(t *testing.T) {
	const ms = 1000
	m := NewFirstHitModel(Limit{Limit: 2, Window: time.Millisecond})
	runSteps(t, m, []step{
		{t: 100, want: true}, // opens [100, 1100)
		{t: 100, want: true},
		{t: 999, want: false},
		{t: ms + 99, want: false}, // still the first window
		{t: ms + 100, want: true}, // exactly W after the first hit: a new window [1100, 2100)
		{t: ms + 100, cost: 2, want: false},
		{t: 2*ms + 99, want: true},
		{t: 2*ms + 100, cost: 3, want: false}, // a denied request opens [2100, 3100) too
		{t: 3*ms + 99, cost: 2, want: true},   // the window it opened: 2 more fit
		{t: 3*ms + 99, want: false},
		{t: 3*ms + 100, cost: 2, want: true},
	})
	// Subjects are independent; the client is ignored.
	m = NewFirstHitModel(Limit{Limit: 1, Window: time.Second})
	if !m.Decide("a", "x", 1, 0) || !m.Decide("b", "x", 1, 0) || m.Decide("a", "y", 1, 1) {
		t.Errorf("subjects a and b should each admit one, and a a second from another client should be denied")
	}
}

// firstHitOver returns a description of the first window of first-hit-window(limit, w) over
// its limit, for requests at times ts (non-decreasing) with the given costs and decisions; ""
// when none. It is the contract's definition written out: a window opens at the first request
// at or after the previous window's end.
func firstHitOver(limit, w int64, ts, costs []int64, admitted []bool) string {
	var start, used int64
	open := false
	for i, x := range ts {
		if !open || x >= start+w {
			start, used, open = x, 0, true
		}
		if admitted[i] {
			if used += costs[i]; used > limit {
				return fmt.Sprintf("window [%d, %d) holds %d > %d", start, start+w, used, limit)
			}
		}
	}
	return ""
}

// TestFirstHitModelKeepsContract: whatever the non-decreasing times and costs, the model's
// admissions obey first-hit-window(L, W), and it admits every request that fits (it is exact:
// a request denied would have broken the window it falls in).
func TestFirstHitModelKeepsContract(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		l := Limit{
			Limit:  rapid.Int64Range(1, 6).Draw(rt, "limit"),
			Window: time.Duration(rapid.Int64Range(1, 5).Draw(rt, "window_ms")) * time.Millisecond,
		}
		m := NewFirstHitModel(l)
		gaps := rapid.SliceOfN(rapid.Int64Range(0, 3000), 1, 80).Draw(rt, "gaps_us")
		var ts, costs []int64
		var admitted []bool
		now := int64(1_700_000_000_000_000)
		var start, used int64
		open := false
		w := l.Window.Microseconds()
		for i, g := range gaps {
			now += g
			cost := rapid.Int64Range(1, 3).Draw(rt, fmt.Sprint("cost", i))
			ok := m.Decide("k", "", cost, now)
			if !open || now >= start+w {
				start, used, open = now, 0, true
			}
			if fits := used+cost <= l.Limit; ok != fits {
				rt.Fatalf("request %d at %d, cost %d: Decide = %v; %d of %d used in [%d, %d)", i, now, cost, ok, used, l.Limit, start, start+w)
			}
			if ok {
				used += cost
			}
			ts, costs, admitted = append(ts, now), append(costs, cost), append(admitted, ok)
		}
		if v := firstHitOver(l.Limit, w, ts, costs, admitted); v != "" {
			rt.Fatalf("first-hit-window(%d, %s): %s", l.Limit, l.Window, v)
		}
	})
}

func ExampleNewFirstHitModel() {
	m := NewFirstHitModel(Limit{Limit: 2, Window: time.Second})
	for _, t := range []int64{500_000, 600_000, 1_400_000, 1_500_000, 1_600_000} {
		fmt.Println(t, m.Decide("user-1", "", 1, t))
	}
	// Output:
	// 500000 true
	// 600000 true
	// 1400000 false
	// 1500000 true
	// 1600000 true
}
