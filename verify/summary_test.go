package verify

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/algorithms"
)

// TestAddThreshold: a broken threshold makes any verdict fail, one that cannot be evaluated turns
// a pass (only) into inconclusive, a held one changes nothing; the two first add their reason.
func TestAddThreshold(t *testing.T) {
	for _, tt := range []struct {
		from   Verdict
		status ThresholdStatus
		want   Verdict
		reason bool
	}{
		{Pass, ThresholdHeld, Pass, false},
		{Pass, ThresholdBroken, Fail, true},
		{Inconclusive, ThresholdBroken, Fail, true},
		{Pass, ThresholdUnevaluated, Inconclusive, true},
		{Fail, ThresholdUnevaluated, Fail, true},
		{Inconclusive, ThresholdHeld, Inconclusive, false},
	} {
		s := Summary{Verdict: tt.from}
		c := ThresholdCheck{Threshold: "p99 < 1ms", Status: tt.status}
		s.AddThreshold(c, "why")
		var reasons []string
		if tt.reason {
			reasons = []string{"why"}
		}
		want := Summary{Verdict: tt.want, Reasons: reasons, Thresholds: []ThresholdCheck{c}}
		if d := cmp.Diff(want, s); d != "" {
			t.Errorf("%s then %s (-want +got):\n%s", tt.from, tt.status, d)
		}
		if got := s.ThresholdBroken(); got != (tt.status == ThresholdBroken) {
			t.Errorf("%s then %s: ThresholdBroken = %v", tt.from, tt.status, got)
		}
	}
}

// withWarmup puts the warmup's events before the measured ones on the measured log's Base, so
// that their absolute times are kept when the two logs' Bases differ, and refuses a warmup
// event that does not fit there.
func TestWithWarmupRebases(t *testing.T) {
	const start = 1_700_000_000_000_000
	ev := func(lo, hi int64, k Kind) Event {
		e, err := NewEvent(lo, hi, 0, 0, 1, k)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	names := []string{"s"}
	m := Measurement{
		Start: start + 1000,
		// The warmup at start + 10 and + 20 µs, the measured part at start + 1000 and + 1500.
		Warmup: &Log{Subjects: names, Clients: names, Base: start,
			Events: []Event{ev(10, 10, Admitted), ev(20, 30, Denied)}},
		Log: &Log{Subjects: names, Clients: names, Base: start + 1000,
			Events: []Event{ev(0, 0, Admitted), ev(500, 500, Denied)}},
	}
	log, err := m.withWarmup(m.Log)
	if err != nil {
		t.Fatalf("withWarmup: %v", err)
	}
	type abs struct {
		Lo, Hi int64
		Kind   Kind
	}
	var got []abs
	for _, e := range log.Events {
		got = append(got, abs{log.Base + e.Lo(), log.Base + e.Hi(), e.Kind()})
	}
	want := []abs{{start + 10, start + 10, Admitted}, {start + 20, start + 30, Denied},
		{start + 1000, start + 1000, Admitted}, {start + 1500, start + 1500, Denied}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events, absolute (-want +got):\n%s", diff)
	}
	if log.Base != start+1000 || log.From != start+1000 {
		t.Errorf("Base %d, From %d; want both %d (the measured part's start)", log.Base, log.From, start+1000)
	}

	m.Warmup.Base = start - 7*24*time.Hour.Microseconds()
	if _, err := m.withWarmup(m.Log); !errors.Is(err, ErrBadLog) {
		t.Errorf("withWarmup of a warmup 7 days earlier = %v; want ErrBadLog", err)
	}
}

// TestBinLimits: each bin's limit is the contract's allowance per bin times the scopes offered a
// request in it, each event in the bin of its midpoint; no contract or no log gives none.
func TestBinLimits(t *testing.T) {
	const start = 1_700_000_000_000_000
	ev := func(lo, hi int64, subject uint32, client uint16) Event {
		e, err := NewEvent(lo, hi, subject, client, 1, Denied)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	log := &Log{Subjects: []string{"a", "b"}, Clients: []string{"c0", "c1"}, Base: start, Events: []Event{
		ev(100, 200, 0, 0), ev(300_000, 300_000, 1, 0), // bin 0: two subjects
		ev(600_000, 1_400_000, 0, 1), // midpoint 1 s: bin 2
		ev(-600_000, -600_000, 1, 1), // a bin before Start
	}}
	m := Measurement{Contract: algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 10, Window: time.Second}, Log: log, Start: start}
	if d := cmp.Diff([]float64{10, 0, 5}, m.BinLimits(500*time.Millisecond, 3)); d != "" {
		t.Errorf("per subject (-want +got):\n%s", d)
	}
	m.Contract.Scope = algorithms.PerConsumer
	if d := cmp.Diff([]float64{5, 0, 5}, m.BinLimits(500*time.Millisecond, 3)); d != "" {
		t.Errorf("per consumer (-want +got):\n%s", d)
	}
	if got := (Measurement{Contract: algorithms.Contract{Kind: algorithms.NoContract}, Log: log}).BinLimits(time.Second, 3); got != nil {
		t.Errorf("no contract: %v; want nil", got)
	}
}
