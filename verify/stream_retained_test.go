package verify

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/limitbench/limitbench/algorithms"
)

// steadyRun feeds a MeasurementStream a steady load of seconds simulated seconds: 4 subjects
// sent twice their limit's rate by a correct limiter (the contract's reference model), each
// decision known to an interval of up to 2 ms, arriving up to 5 ms after it was sent, with an
// Advance every 64 requests; it returns the most events the stream held at once and the
// report's verdict.
func steadyRun(t *testing.T, c algorithms.Contract, m algorithms.Model, seconds int64, disruptions bool) (int64, Verdict) {
	t.Helper()
	const base, subjects = 1_700_000_000_000_000, 4
	rng := rand.New(rand.NewPCG(7, uint64(seconds)))
	rate := 2 * c.Allowance(time.Second) * subjects // requests per second
	ms, err := NewMeasurementStream(Measurement{Contract: c, Start: base, Fresh: true}, base,
		[]string{"s0", "s1", "s2", "s3"}, []string{"c0"}, StreamSettings{BinWidths: []time.Duration{time.Second}, Disruptions: disruptions})
	if err != nil {
		t.Fatal(err)
	}
	type arrival struct {
		e  Event
		at int64
	}
	var pending []arrival
	var peak int64
	step := int64(1e6 / rate)
	for i, t0 := 0, int64(0); t0 < seconds*1_000_000; i, t0 = i+1, t0+step {
		s := rng.IntN(subjects)
		x := t0 + rng.Int64N(2000) // the decision's instant in [t0, t0 + 2 ms]
		k := Denied
		if m.Decide([]string{"s0", "s1", "s2", "s3"}[s], "c0", 1, base+x) {
			k = Admitted
		}
		e := mustEvent(t0, t0+2000, uint32(s), 0, 1, k)
		pending = append(pending, arrival{e, t0 + rng.Int64N(5000)})
		if i%64 == 63 {
			slices.SortFunc(pending, func(a, b arrival) int { return cmp.Compare(a.at, b.at) })
			n := 0
			for _, a := range pending {
				if a.at <= t0 {
					ms.Add(a.e, false)
					continue
				}
				pending[n] = a
				n++
			}
			pending = pending[:n]
			ms.Advance(t0 - 5000)
			ms.AdvanceCuts(base + t0 - 10_000) // the node watch polls every 10 ms
			peak = max(peak, ms.Retained())
		}
	}
	for _, a := range pending {
		ms.Add(a.e, false)
	}
	v, _ := ms.Sections(Warnings{})
	return peak, v.Verdict
}

// TestStreamRetainedEventsDoNotGrow (issue 30): at a steady load, the events a MeasurementStream
// holds do not grow with the run's length: a run four times as long holds at most a quarter
// more at its peak, for every contract kind, with and without epochs checked beside the whole
// history (the cuts known 10 ms behind); and a correct limiter's run passes.
func TestStreamRetainedEventsDoNotGrow(t *testing.T) {
	w := 100 * time.Millisecond
	for _, tt := range []struct {
		c algorithms.Contract
		m func() algorithms.Model
	}{
		{algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 10, Window: w, Granularity: 2 * time.Millisecond}, nil},
		{algorithms.Contract{Kind: algorithms.FixedWindow, Limit: 10, Window: w, Granularity: 2 * time.Millisecond}, nil},
		{algorithms.Contract{Kind: algorithms.TokenBucket, Capacity: 10, RefillPermits: 10, RefillPer: w, Granularity: 2 * time.Millisecond}, nil},
		{algorithms.Contract{Kind: algorithms.FirstHitWindow, Limit: 10, Window: w, Granularity: 2 * time.Millisecond}, nil},
	} {
		t.Run(string(tt.c.Kind), func(t *testing.T) {
			model := func() algorithms.Model {
				if tt.c.Kind == algorithms.FirstHitWindow {
					return algorithms.NewFirstHitModel(algorithms.Limit{Limit: tt.c.Limit, Window: tt.c.Window})
				}
				return newRefLimiter(tt.c)
			}
			for _, epochs := range []bool{false, true} {
				short, v1 := steadyRun(t, tt.c, model(), 10, epochs)
				long, v4 := steadyRun(t, tt.c, model(), 40, epochs)
				t.Logf("%s, epochs %v: at most %d events held over 10 s (8,000 requests), %d over 40 s", tt.c, epochs, short, long)
				if long > short+short/4 {
					t.Errorf("epochs %v: a run 4 times as long held %d events at its peak, against %d: the stream grows with the run",
						epochs, long, short)
				}
				if v1 != Pass || v4 != Pass {
					t.Errorf("epochs %v: a correct limiter's runs: %s and %s; want pass", epochs, v1, v4)
				}
			}
		})
	}
}
