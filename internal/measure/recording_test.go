package measure

import (
	"testing"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/verify"
)

func TestWindows(t *testing.T) {
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
		got := Windows(tt.c)
		if len(got) != len(tt.want) {
			t.Errorf("Windows(%s) = %v; want %v", tt.c, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("Windows(%s) = %v; want %v", tt.c, got, tt.want)
			}
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
	got := binLimits(m.Contract, m.BinLimits, 250*time.Millisecond, 6)
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
	if got, want := binLimits(m.Contract, m.BinLimits, time.Second, 2), m.BinLimits(time.Second, 2); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("binLimits by 1 s = %v; want %v", got, want)
	}
	m.Contract = algorithms.Contract{Kind: algorithms.NoContract}
	if got := binLimits(m.Contract, m.BinLimits, 250*time.Millisecond, 6); got != nil {
		t.Errorf("no contract: %v; want nil", got)
	}
}
