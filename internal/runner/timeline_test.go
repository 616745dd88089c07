package runner

import (
	"context"
	"testing"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/verify"
	"github.com/limitbench/limitbench/scenarios"
)

func TestContractWindows(t *testing.T) {
	tests := []struct {
		c    algorithms.Contract
		want []time.Duration
	}{
		{algorithms.Contract{}, nil},
		{algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 5, Window: time.Second}, []time.Duration{time.Second}},
		{algorithms.Contract{Kind: algorithms.TokenBucket, Capacity: 5, RefillPermits: 1, RefillPer: 100 * time.Millisecond},
			[]time.Duration{100 * time.Millisecond}},
		{algorithms.Contract{Kind: algorithms.FixedWindow, Limit: 5, Window: time.Minute,
			Also: []algorithms.Contract{{Kind: algorithms.FirstHitWindow, Limit: 1, Window: 10 * time.Millisecond}}},
			[]time.Duration{time.Minute, 10 * time.Millisecond}},
	}
	for _, tt := range tests {
		got := contractWindows(tt.c)
		if len(got) != len(tt.want) {
			t.Errorf("contractWindows(%s) = %v; want %v", tt.c, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("contractWindows(%s) = %v; want %v", tt.c, got, tt.want)
			}
		}
	}
}

// TestTimelineBinsOfARun: a 1 s run of a 10 ms window gets 100 bins of 10 ms (BinFor: never
// wider than the narrowest window of the run), for every entry alike, the reference script's and
// a 60 s contract's too; the bins hold every request and admission, with a limit per bin.
func TestTimelineBinsOfARun(t *testing.T) {
	needRedis(t)
	s := scenarioOf(t, redisenv.TopologySingle, []string{"gcra", "fixed-window-published"}, func(s *scenarios.Scenario) {
		s.Duration, s.Warmup = time.Second, 0
		s.Clients = 2
		s.Limit = algorithms.Limit{Limit: 1, Window: 10 * time.Millisecond}
		s.Arrival = &arrival.Arrival{Rate: 300}
		s.Expect.MayViolate = []string{"fixed-window-published"}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := Run(ctx, Options{Scenario: s, Env: processEnv})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(out.Result.Entries) != 3 {
		t.Fatalf("%d entries; want 3 (reference, gcra, fixed-window-published)", len(out.Result.Entries))
	}
	for _, e := range out.Result.Entries {
		tl := e.Timeline
		if tl.BinS != 0.01 {
			t.Errorf("%s: bin_s = %g; want 0.01 (the 10 ms window)", e.Name(), tl.BinS)
		}
		if n := len(tl.Offered); n < 100 || n > 101 {
			t.Errorf("%s: %d bins; want 100 (a late last request may open a 101st)", e.Name(), n)
		}
		var offered, admitted int64
		for i := range tl.Offered {
			offered += tl.Offered[i]
			admitted += tl.Admitted[i]
		}
		if offered != e.Requests || admitted != e.Allowed {
			t.Errorf("%s: bins hold %d requests and %d admissions; want %d and %d", e.Name(), offered, admitted, e.Requests, e.Allowed)
		}
		if e.Algorithm != algorithms.ReferenceName && len(tl.Limit) != len(tl.Offered) {
			t.Errorf("%s: %d limits for %d bins", e.Name(), len(tl.Limit), len(tl.Offered))
		}
	}
}

// TestBinLimitsOverTheWindow: with bins a quarter of the window, the limit of each bin counts the
// subjects of its window-long span: subject b, which sends only in the second bin, counts in all
// four bins of the first span, and a bin where nobody sent in a span where someone did still has
// a limit.
func TestBinLimitsOverTheWindow(t *testing.T) {
	const start = 1_700_000_000_000_000
	ev := func(at int64, subject uint32) verify.Event {
		e, err := verify.NewEvent(at, at, subject, 0, 1, verify.Denied)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	log := &verify.Log{Subjects: []string{"a", "b"}, Clients: []string{"c0"}, Base: start, Events: []verify.Event{
		ev(10_000, 0), ev(300_000, 1), // span 0 (0–1 s): a in bin 0, b in bin 1
		ev(1_100_000, 0), // span 1: a only, in bin 4
	}}
	m := verify.Measurement{Contract: algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 8, Window: time.Second}, Log: log, Start: start}
	got := binLimits(m, 250*time.Millisecond, 6)
	want := []float64{4, 4, 4, 4, 2, 2} // 8/s × 0.25 s × 2 subjects; then 1 subject
	if len(got) != len(want) {
		t.Fatalf("binLimits = %v; want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("binLimits = %v; want %v", got, want)
		}
	}
	// Bins as wide as the window: what verify's BinLimits gives.
	if got, want := binLimits(m, time.Second, 2), m.BinLimits(time.Second, 2); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("binLimits by 1 s = %v; want %v", got, want)
	}
	m.Contract = algorithms.Contract{Kind: algorithms.NoContract}
	if got := binLimits(m, 250*time.Millisecond, 6); got != nil {
		t.Errorf("no contract: %v; want nil", got)
	}
}
