package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
	"github.com/limitbench/limitbench/internal/segment"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/scenarios"
	"github.com/limitbench/limitbench/verify"
)

// clusterEnv returns the package's shared cluster as an external environment, the way
// generators on other machines see one Redis Cluster.
func clusterEnv(t *testing.T) redisenv.Config {
	t.Helper()
	tgt := redistest.Cluster(t).Target
	u := url.URL{Scheme: "redis", User: url.UserPassword("default", tgt.Password), Host: strings.Join(tgt.Masters(), ",")}
	return redisenv.Config{Backend: redisenv.BackendExternal, URL: u.String()}
}

// runSegments runs s as count segments at once, segment i with the clock offset offsets[i],
// sharing runID, and returns their results by segment.
func runSegments(t *testing.T, s *scenarios.Scenario, env redisenv.Config, runID string, offsets []time.Duration) []segment.Part {
	t.Helper()
	parts := make([]segment.Part, len(offsets))
	errs := make([]error, len(offsets))
	var wg sync.WaitGroup
	for i, off := range offsets {
		wg.Go(func() {
			seg := &segment.Segment{Index: i, Count: len(offsets), RunID: runID, Lead: 1500 * time.Millisecond, ClockOffset: off}
			out, err := Run(context.Background(), Options{Scenario: s, Env: env, NoReference: true, Segment: seg})
			parts[i], errs[i] = segment.Part{Dir: fmt.Sprintf("segment-%d", i), Result: out.Result}, err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("Run segments: %v", err)
	}
	return parts
}

// missedTicks lists the entries of r that missed ticks.
func missedTicks(r *result.Result) []string {
	var out []string
	for _, e := range r.Entries {
		if e.Dropped != 0 {
			out = append(out, fmt.Sprintf("%s: %d missed", e.Name(), e.Dropped))
		}
	}
	return out
}

// subjectCounts counts the requests of an entry's partial admission log by subject.
func subjectCounts(t *testing.T, logs ...[]byte) map[uint32]int {
	t.Helper()
	out := map[uint32]int{}
	for _, b := range logs {
		// A segment's log file, sorted and compressed (verify.LogReader reads either encoding).
		r, err := verify.NewLogReader(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("decode admission log: %v", err)
		}
		for e, ok := r.Next(); ok; e, ok = r.Next() {
			out[e.Subject]++
		}
		if err := r.Err(); err != nil {
			t.Fatalf("decode admission log: %v", err)
		}
	}
	return out
}

// TestSegmentsMergeToTheUnsegmentedRun: three generators, each with a clock of its own (offsets
// of 0, +150 ms and −250 ms), run one scenario in segments against a real cluster; merged, they
// give exactly the requests of the unsegmented run with the same seed (per subject), the same
// verdicts, and histograms equal to the merge of the parts'.
func TestSegmentsMergeToTheUnsegmentedRun(t *testing.T) {
	needRedis(t)
	env := clusterEnv(t)
	names := []string{"gcra", "sliding-log", "fixed-window", "token-bucket"}
	s := scenarioOf(t, redisenv.TopologyCluster, names, func(s *scenarios.Scenario) {
		s.Duration, s.Warmup = 1500*time.Millisecond, 300*time.Millisecond
		s.Clients = 6
		s.Seed = 7
		s.Keys = load.Keys{Count: 5, Distribution: load.Zipf, ZipfS: 1.2}
		s.Limit = algorithms.Limit{Limit: 20, Window: time.Second}
		s.Arrival = &arrival.Arrival{Rate: 240}
	})
	// A generator that misses ticks (a machine too loaded to keep to the schedule: each result
	// says so) sends less than the schedule, and then the requests cannot be compared exactly:
	// such an attempt is run again, three times at most. Late ticks are still sent.
	var whole *result.Result
	var parts []segment.Part
	for attempt := 1; ; attempt++ {
		whole = runSegments(t, s, env, fmt.Sprintf("whole%d", attempt), []time.Duration{0})[0].Result
		parts = runSegments(t, s, env, fmt.Sprintf("parts%d", attempt), []time.Duration{0, 150 * time.Millisecond, -250 * time.Millisecond})
		missed := missedTicks(whole)
		for _, p := range parts {
			missed = append(missed, missedTicks(p.Result)...)
		}
		if len(missed) == 0 {
			break
		}
		if attempt == 3 {
			t.Skipf("every attempt missed ticks, so the runs cannot be compared exactly: %v", missed)
		}
		t.Logf("attempt %d missed ticks, trying again: %v", attempt, missed)
	}
	merged, failures, err := segment.Merge(parts)
	if err != nil {
		t.Fatalf("Merge: %v", err)
	}
	if len(merged.Generators) != 3 {
		t.Errorf("merged result has %d generator rows; want 3", len(merged.Generators))
	}
	for i, g := range merged.Generators {
		want := []float64{0, -150_000, 250_000}[i]
		if d := g.ClockOffsetUS - want; d < -50_000 || d > 50_000 {
			t.Errorf("generator %d: clock offset %.0f µs; want about %.0f µs (its artificial offset, negated)", i, g.ClockOffsetUS, want)
		}
	}
	for i, name := range names {
		w, m := whole.Entries[i], merged.Entries[i]
		if w.Algorithm != name || m.Algorithm != name {
			t.Fatalf("entry %d: whole %s, merged %s; want %s", i, w.Algorithm, m.Algorithm, name)
		}
		if m.Requests != w.Requests {
			t.Errorf("%s: merged %d requests, the unsegmented run %d", name, m.Requests, w.Requests)
		}
		var logs [][]byte
		for _, p := range parts {
			logs = append(logs, p.Result.Entries[i].Partial.LogData)
		}
		wc, mc := subjectCounts(t, w.Partial.LogData), subjectCounts(t, logs...)
		if fmt.Sprint(wc) != fmt.Sprint(mc) {
			t.Errorf("%s: requests per subject: merged %v, unsegmented %v", name, mc, wc)
		}
		behind := m.Verification.Verdict == verify.Inconclusive || w.Verification.Verdict == verify.Inconclusive
		if behind {
			// More than 1 % of the ticks late (a loaded machine) makes a verdict inconclusive on
			// either side: then the verdicts agree in having no definite violation.
			t.Logf("%s: merged %s %v, unsegmented %s %v", name, m.Verification.Verdict, m.Verification.Reasons,
				w.Verification.Verdict, w.Verification.Reasons)
		}
		if (!behind && m.Verification.Verdict != w.Verification.Verdict) || m.Verification.DefiniteViolations != 0 ||
			w.Verification.DefiniteViolations != 0 {
			t.Errorf("%s: merged verdict %s (%d definite, %v), unsegmented %s (%v)", name, m.Verification.Verdict,
				m.Verification.DefiniteViolations, m.Verification.Reasons, w.Verification.Verdict, w.Verification.Reasons)
		}
		if m.Accuracy.IdealAllowed == 0 {
			t.Errorf("%s: merged accuracy has no ideal admissions: %+v", name, m.Accuracy)
		}
		// The merged histograms are the merge of the parts'.
		h := &load.Histograms{}
		for k, p := range parts {
			var ph load.Histograms
			if err := ph.UnmarshalBinary(p.Result.Entries[i].Partial.Histograms); err != nil {
				t.Fatal(err)
			}
			if k == 0 {
				h = &ph
			} else if err := h.Merge(&ph); err != nil {
				t.Fatal(err)
			}
		}
		lat, err := m.LatencyHistogram()
		if err != nil {
			t.Fatal(err)
		}
		svc, err := m.ServiceHistogram()
		if err != nil {
			t.Fatal(err)
		}
		if !lat.Equals(h.Latency()) || !svc.Equals(h.Service()) {
			t.Errorf("%s: merged histograms differ from the merge of the parts' (latency %d vs %d values)", name,
				lat.TotalCount(), h.Latency().TotalCount())
		}
		if lat.TotalCount() != m.Allowed+m.Denied {
			t.Errorf("%s: latency histogram holds %d; want %d decisions", name, lat.TotalCount(), m.Allowed+m.Denied)
		}
	}
	if len(failures) > 0 {
		t.Logf("merged failures: %v", failures)
	}
}

// TestMergeCatchesWhatNoSegmentShows: three generators whose clocks differ by ±2 s run
// client-clock algorithms. Each sends 18 requests per second to one subject whose limit is 20 per
// second, so no segment alone can break its contract; merged on the server's clock, the history
// shows the flawed designs admitting far more than the limit.
func TestMergeCatchesWhatNoSegmentShows(t *testing.T) {
	needRedis(t)
	env := clusterEnv(t)
	flawed := []string{"token-bucket-published", "redisson"}
	s := scenarioOf(t, redisenv.TopologyCluster, append(flawed, "gcra"), func(s *scenarios.Scenario) {
		s.Duration, s.Warmup = 4*time.Second, 0
		s.Clients = 3
		s.Keys = load.Keys{Count: 1, Distribution: load.Uniform}
		s.Limit = algorithms.Limit{Limit: 20, Window: time.Second}
		s.Arrival = &arrival.Arrival{Rate: 54}
	})
	parts := runSegments(t, s, env, "skewed", []time.Duration{0, 2 * time.Second, -2 * time.Second})
	for _, p := range parts {
		for _, e := range p.Result.Entries {
			if e.Verification.DefiniteViolations != 0 {
				t.Errorf("%s alone: %s has %d definite violations; a segment offered below the limit cannot break it",
					p.Dir, e.Algorithm, e.Verification.DefiniteViolations)
			}
		}
	}
	merged, _, err := segment.Merge(parts)
	if err != nil {
		t.Fatalf("Merge: %v", err)
	}
	for _, e := range merged.Entries {
		v := e.Verification
		t.Logf("merged %s: %d requests, %d allowed, %s, %d definite", e.Algorithm, e.Requests, e.Allowed, v.Verdict, v.DefiniteViolations)
		switch e.Algorithm {
		case "gcra":
			if v.DefiniteViolations != 0 {
				t.Errorf("gcra merged: %d definite violations; a server-clock algorithm is immune to the generators' clocks", v.DefiniteViolations)
			}
		default:
			if v.DefiniteViolations == 0 {
				t.Errorf("%s merged: no definite violation with generators' clocks ±2 s apart (%s, %v)", e.Algorithm, v.Verdict, v.Reasons)
			}
		}
	}
}

// schedule, hence inconclusive, never a pass.
func TestSegmentArrivingLate(t *testing.T) {
	needRedis(t)
	env := clusterEnv(t)
	s := scenarioOf(t, redisenv.TopologyCluster, []string{"gcra"}, func(s *scenarios.Scenario) {
		s.Duration, s.Warmup = time.Second, 0
		s.Clients = 2
		s.Keys = load.Keys{Count: 2, Distribution: load.Uniform}
		s.Arrival = &arrival.Arrival{Rate: 100}
	})
	seg := &segment.Segment{Index: 1, Count: 2, RunID: "late", StartAt: time.Now().Add(-700 * time.Millisecond)}
	out, err := Run(context.Background(), Options{Scenario: s, Env: env, NoReference: true, Segment: seg})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	e := out.Result.Entries[0]
	if e.Partial == nil || e.Partial.LateStartMS < 700 {
		t.Fatalf("partial %+v; want a late start of at least 700 ms", e.Partial)
	}
	if e.Late == 0 || e.Verification.Verdict == verify.Pass {
		t.Errorf("late start: %d late requests, verdict %s; want late requests and no pass", e.Late, e.Verification.Verdict)
	}
	if g := out.Result.Segment; g == nil || !strings.HasPrefix(g.Start, "start-at ") || g.Index != 1 || g.Count != 2 {
		t.Errorf("segment %+v; want 1/2 started at --start-at", g)
	}
}
