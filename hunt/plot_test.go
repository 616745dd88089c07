package hunt

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/verify"
)

func TestPlotBin(t *testing.T) {
	for _, c := range []struct {
		extent, want time.Duration
	}{
		{0, time.Millisecond},
		{30 * time.Millisecond, time.Millisecond},
		{time.Second, 20 * time.Millisecond},
		{2500 * time.Millisecond, 50 * time.Millisecond},
		{3 * time.Second, 50 * time.Millisecond},
		{time.Minute, time.Second},
		{10 * time.Hour, 100 * time.Second},
	} {
		got := plotBin(c.extent)
		if got != c.want {
			t.Errorf("plotBin(%s) = %s; want %s", c.extent, got, c.want)
		}
		if n := c.extent / got; c.extent >= 50*time.Millisecond && (n < PlotBins || n >= MaxPlotBins) {
			t.Errorf("plotBin(%s) = %s: %d bins", c.extent, got, n)
		}
	}
}

// TestPlotOf: a log of a sliding-window(3, 1s) trial with four admissions of subject a within
// 300 ms (one too many), a denial, and an admission of subject b: the bins count the trial's own
// outcomes, and the marked window holds a's admissions only, in time order.
func TestPlotOf(t *testing.T) {
	const base = int64(1_700_000_000_000_000)
	ev := func(lo, hi int64, subject uint32, permits uint16, k verify.Kind) verify.Event {
		e, err := verify.NewEvent(lo, hi, subject, 0, permits, k)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	log := &verify.Log{Subjects: []string{"a", "b"}, Clients: []string{"c0"}, Base: base, Events: []verify.Event{
		ev(300_000, 300_000, 0, 1, verify.Admitted),
		ev(0, 0, 0, 1, verify.Admitted),
		ev(100_000, 100_200, 0, 2, verify.Admitted),
		ev(200_000, 200_000, 0, 1, verify.Denied),
		ev(250_000, 250_000, 1, 1, verify.Admitted),
		ev(1_000_000, 1_000_000, 0, 1, verify.Admitted),
	}}
	c := algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 3, Window: time.Second}
	w := plotWhere{lim: c, violation: true, subject: "a", lo: base, hi: base + 300_000, permits: 4, allowed: 3}
	p := plotOf(log, c, w)
	if p.BinS != 0.02 || p.FirstS != 0 || len(p.Admitted) != 51 || len(p.Requested) != 51 || p.AllowedPerBin != 3*0.02 {
		t.Fatalf("plot: bin %g, first %g, %d bins, allowed per bin %g", p.BinS, p.FirstS, len(p.Admitted), p.AllowedPerBin)
	}
	wantAdm := map[int]int64{0: 1, 5: 2, 12: 1, 15: 1, 50: 1}
	wantReq := map[int]int64{0: 1, 5: 2, 10: 1, 12: 1, 15: 1, 50: 1}
	for i := range p.Admitted {
		if p.Admitted[i] != wantAdm[i] || p.Requested[i] != wantReq[i] {
			t.Errorf("bin %d: admitted %d, requested %d; want %d, %d", i, p.Admitted[i], p.Requested[i], wantAdm[i], wantReq[i])
		}
	}
	want := &PlotWindow{Limit: "sliding-window(3, 1s)", Violation: true, Subject: "a", LoS: 0, HiS: 0.3, Permits: 4, Allowed: 3,
		AllowedAtLo: 3, Steps: []PlotStep{{AtS: 0, Permits: 1}, {AtS: 0.1001, Permits: 3}, {AtS: 0.3, Permits: 4}}}
	if diff := cmp.Diff(want, p.Window); diff != "" {
		t.Errorf("window (-want +got):\n%s", diff)
	}

	// A token bucket's allowance grows from its capacity at the refill rate.
	tb := algorithms.Contract{Kind: algorithms.TokenBucket, Capacity: 2, RefillPermits: 10, RefillPer: time.Second}
	p = plotOf(log, tb, plotWhere{lim: tb, subject: "a", lo: base, hi: base + 300_000, permits: 4, allowed: 5,
		bucketC: 2, bucketR: 10})
	if w := p.Window; w.AllowedAtLo != 2 || w.AllowedPerS != 10 || w.Allowed != 5 || p.AllowedPerBin != 10*0.02 {
		t.Errorf("token-bucket window %+v, allowed per bin %g", w, p.AllowedPerBin)
	}
	if p := plotOf(&verify.Log{}, c, w); p != nil {
		t.Errorf("plot of an empty log = %+v; want nil", p)
	}
}
