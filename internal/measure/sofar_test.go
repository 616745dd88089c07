package measure

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// tighter is an algorithm that promises a contract a tenth of what its script keeps: gcra
// measured against token-bucket(L/10, L/10 per window), so that a pressed run has definite
// violations.
type tighter struct{ algorithms.Algorithm }

func (a tighter) Contract(l algorithms.Limit) (algorithms.Contract, error) {
	l.Limit /= 10
	return a.Algorithm.Contract(l)
}

func (a tighter) Model(algorithms.Limit) algorithms.Model { return nil }

// checkpointRun measures a (gcra, or tighter gcra) at 1,000 requests per second over 5 subjects
// of 100 per second for d, with a Checkpoints stage every 100 ms and the load's client timeouts
// short (so the stream's horizon is 0.4 s and it verifies as the load goes), and returns the
// measurement, the checkpoints' entries, and how many checkpoints came once Do had returned.
func checkpointRun(t *testing.T, a algorithms.Algorithm, d time.Duration) (*Measurement, []result.Entry, int) {
	t.Helper()
	spec := Spec{Target: redistest.Single(t).Target, Topology: "single", Algorithm: a,
		Limit: algorithms.Limit{Limit: 100, Window: time.Second}, Prefix: KeyPrefix(NewRunID(), "gcra", "c"),
		Plan: load.Plan{Arrival: load.Constant(1000), Warmup: 300 * time.Millisecond, Duration: d, Clients: 4,
			Keys: load.Keys{Count: 5}, LateAfter: time.Minute}}
	var mu sync.Mutex
	var seen []result.Entry
	short := Stage{Setup: func(_ context.Context, m *Measurement) error {
		m.Client.PoolTimeout, m.Client.DialTimeout = 100*time.Millisecond, 100*time.Millisecond
		m.Client.WriteTimeout, m.Client.ReadTimeout = 100*time.Millisecond, 100*time.Millisecond
		return nil
	}}
	m, err := Do(context.Background(), spec, short, Checkpoints(100*time.Millisecond, func(e *result.Entry) {
		mu.Lock()
		seen = append(seen, *e)
		mu.Unlock()
	}))
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	n := len(seen)
	mu.Unlock()
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	return m, seen, len(seen) - n
}

// TestCheckpointsSoFar: while the load runs, the Checkpoints stage sees the measurement so far
// (run with -race): an in-progress entry whose counts add up and grow, with latency once
// decisions came back, a valid result, and a verdict that is never a pass for a correct
// limiter; none comes after the measurement, whose own entry has at least what the last one had.
func TestCheckpointsSoFar(t *testing.T) {
	a, err := algorithms.Lookup("gcra")
	if err != nil {
		t.Fatal(err)
	}
	m, seen, after := checkpointRun(t, a, 1500*time.Millisecond)
	if after != 0 {
		t.Errorf("%d checkpoint(s) after Do returned; want none", after)
	}
	if len(seen) < 5 {
		t.Fatalf("%d checkpoints over a 1.8 s load, one every 100 ms; want at least 5", len(seen))
	}
	var prev int64
	for i, e := range seen {
		if !e.InProgress || e.Algorithm != "gcra" || e.Topology != "single" {
			t.Errorf("checkpoint %d: in progress %v, %s on %s; want an in-progress entry of gcra on single", i, e.InProgress,
				e.Algorithm, e.Topology)
		}
		if e.Allowed+e.Denied+e.Errors+e.Unknown != e.Requests || e.Requests < prev {
			t.Errorf("checkpoint %d: %d requests = %d allowed + %d denied + %d errors + %d unknown, after %d; want them to add up and grow",
				i, e.Requests, e.Allowed, e.Denied, e.Errors, e.Unknown, prev)
		}
		prev = e.Requests
		if e.Allowed+e.Denied > 0 && (e.LatencyUS.P50 <= 0 || e.Histograms.Latency == "" || e.ThroughputRPS <= 0) {
			t.Errorf("checkpoint %d: %d decisions with p50 %v µs, throughput %v/s, histogram %q; want them measured", i,
				e.Allowed+e.Denied, e.LatencyUS.P50, e.ThroughputRPS, e.Histograms.Latency)
		}
		if v := e.Verification; v.Verdict == verify.Pass || v.DefiniteViolations != 0 || len(v.Reasons) == 0 {
			t.Errorf("checkpoint %d: verdict %s, %d definite, reasons %q; want no pass, no violation of a correct gcra, and why",
				i, v.Verdict, v.DefiniteViolations, v.Reasons)
		}
		r := result.Result{Schema: result.SchemaVersion, Entries: []result.Entry{e}}
		if err := r.Validate(); err != nil {
			t.Errorf("checkpoint %d does not validate: %v", i, err)
		}
	}
	if last := seen[len(seen)-1]; prev == 0 || m.Entry.Requests < last.Requests || m.Entry.InProgress {
		t.Errorf("the last checkpoint has %d requests, the measurement's entry %d (in progress %v); want some, at most the end's, the end not in progress",
			last.Requests, m.Entry.Requests, m.Entry.InProgress)
	}
}

// TestCheckpointsViolationSoFar: a definite violation the streaming verifier found while the
// load runs shows in the checkpoints as it is found: a fail, with the count so far, never more
// than the measurement's own at its end.
func TestCheckpointsViolationSoFar(t *testing.T) {
	a, err := algorithms.Lookup("gcra")
	if err != nil {
		t.Fatal(err)
	}
	m, seen, _ := checkpointRun(t, tighter{a}, 2500*time.Millisecond)
	if m.Entry.Verification.DefiniteViolations == 0 {
		t.Fatalf("gcra against a tenth of its contract: no definite violation at the end (%v)", m.Entry.Verification.Reasons)
	}
	var found int64
	for i, e := range seen {
		v := e.Verification
		switch {
		case v.DefiniteViolations > 0 && v.Verdict != verify.Fail:
			t.Errorf("checkpoint %d: %d definite violations with verdict %s; want fail", i, v.DefiniteViolations, v.Verdict)
		case v.DefiniteViolations == 0 && v.Verdict != verify.Inconclusive:
			t.Errorf("checkpoint %d: no violation yet with verdict %s; want inconclusive", i, v.Verdict)
		case v.DefiniteViolations < found:
			t.Errorf("checkpoint %d: %d definite violations after %d; want them only to grow", i, v.DefiniteViolations, found)
		}
		found = v.DefiniteViolations
	}
	if found == 0 || found > m.Entry.Verification.DefiniteViolations {
		t.Errorf("the last checkpoint saw %d definite violations, the end %d; want some, at most the end's", found,
			m.Entry.Verification.DefiniteViolations)
	}
}
