package hunt

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/trace"
	"github.com/limitbench/limitbench/scenarios"
	"github.com/limitbench/limitbench/verify"
)

// TestHuntCorpusFirst: the corpus's schedules are run first, every one of them whatever the
// budget, each as a candidate of family corpus:NAME; one that breaks the contract is the
// violation at once; and after the corpus the families' first schedules are those of a hunt
// without it (the corpus's schedules then join the candidates kept for mutation).
func TestHuntCorpusFirst(t *testing.T) {
	l := demoLimit
	tg := Target{Algorithm: "over-by-one", Contract: algorithms.Contract{Kind: algorithms.FixedWindow, Limit: l.Limit, Window: l.Window},
		Clock: algorithms.ClockServer}
	flawed := func() limiter { return &overByOne{*newSnapshotRace(l)} }
	found, _ := huntSim(t, tg, flawed, 1, 300)
	if found.Violation == nil || found.Violation.Shrunk == nil {
		t.Fatal("no violation of over-by-one to make a corpus of")
	}
	repro := found.Violation.Shrunk.Trace
	record := func(mk func() limiter, corpus []Known, trials int) (*Result, []uint64) {
		var seen []uint64
		clock := &fakeClock{t: simEpoch}
		trial := simTrial(tg, FrameOf(tg, Bounds{}), mk, nil)
		res, err := Hunt(context.Background(), Config{
			Target: tg, Budget: Budget{Trials: trials, Batch: 2, Shrink: -1}, Seed: 3, Now: clock.now, Corpus: corpus,
			Trial: func(ctx context.Context, b []*trace.Trace) ([]verify.Measurement, error) {
				for _, tr := range b {
					seen = append(seen, traceHash(tr))
				}
				clock.t = clock.t.Add(time.Second)
				return trial(ctx, b)
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return res, seen
	}

	// The flawed limiter: the corpus's reproducer breaks it at trial 1.
	res, _ := record(flawed, []Known{{Name: "a.yaml", Trace: repro}}, 50)
	if v := res.Violation; v == nil || v.Trial != 1 || v.Family != "corpus:a.yaml" || res.Corpus != 1 || res.Trials != 1 {
		t.Fatalf("violation %+v after %d trials (%d of the corpus); want the corpus's a.yaml at trial 1", v, res.Trials, res.Corpus)
	}

	// A correct model: all three run though the budget allows one trial, in batches of their own,
	// then the search stops; without the corpus it runs the same schedules after them.
	correct := func() limiter { return serverModel{mustAlgorithm(t, "fixed-window").Model(l)} }
	poisson, _ := FamilyNamed("poisson")
	corpus := []Known{{Name: "a.yaml", Trace: repro}, {Name: "b.yaml", Trace: found.Violation.Trace},
		{Name: "c.yaml", Trace: poisson.Make(tg, Bounds{}, 9)}}
	res, _ = record(correct, corpus, 1)
	if res.Violation != nil || res.Corpus != 3 || res.Trials != 3 || res.Stop != StopTrials {
		t.Fatalf("%d trials (%d of the corpus), stop %s, violation %v; want the 3 of the corpus alone, no violation",
			res.Trials, res.Corpus, res.Stop, res.Violation)
	}
	res, without := record(correct, nil, 20)
	_, with := record(correct, corpus, 3+20)
	first := 2 * len(res.Families)
	if diff := cmp.Diff(without[:first], with[3:3+first]); diff != "" {
		t.Errorf("after the corpus, the families' first schedules differ from a hunt's without it:\n%s", diff)
	}
}

// mustAlgorithm is algorithms.Lookup of a registered algorithm.
func mustAlgorithm(t *testing.T, name string) algorithms.Algorithm {
	t.Helper()
	a, err := algorithms.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestRunCorpus: a hunt with a corpus saves its reproducer there as a scenario that loads, with
// no expectation (the contract must hold), named by algorithm, topology and schedule; the next
// hunt replays it first and breaks the contract at trial 1, and an algorithm of its own is not
// given another's entries. An entry that is not one is refused before anything starts.
func TestRunCorpus(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH: %v", err)
	}
	dir := t.TempDir()
	corpus := filepath.Join(dir, "corpus")
	s := writeScenario(t, dir, "pub.yaml", `limit: {limit: 20, window: 1s}
clock_skew: [0s, 2s, -2s]
algorithms: [fixed-window-published, gcra]
expect:
  may_violate: [fixed-window-published]
`)
	sim := &simLab{skews: demoSkews}
	hunt := func(trials int) *Outcome {
		t.Helper()
		plan, err := NewPlan(Options{Scenario: s, Env: redisenv.Config{Backend: redisenv.BackendProcess}, Bounds: Bounds{Span: DefaultSpan},
			Time: 20 * time.Second, Trials: trials, Batch: 4, Seed: 1, Corpus: corpus, Lab: sim.lab()})
		if err != nil {
			t.Fatal(err)
		}
		out, err := plan.Run(context.Background(), filepath.Join(dir, "out"))
		if err != nil {
			t.Fatal(err)
		}
		if err := out.Corpus.Write(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	out := hunt(40)
	saved := out.Corpus.Saved()
	if len(saved) != 1 || !strings.HasPrefix(filepath.Base(saved[0]), "fixed-window-published-single-") {
		t.Fatalf("saved %v; want one entry of fixed-window-published on single", saved)
	}
	entries, err := LoadCorpus(corpus)
	if err != nil || len(entries) != 1 {
		t.Fatalf("LoadCorpus: %d entries, %v; want the one saved", len(entries), err)
	}
	e := entries[0]
	pub := out.File.Entries[0]
	if e.Algorithm != "fixed-window-published" || e.Limit != s.Limit || e.Align != pub.Align ||
		traceHash(e.Trace) != traceHash(out.Traces[pub.Violation.Shrunk.Trace].Canonical()) {
		t.Errorf("entry %+v; want the reproducer of fixed-window-published at its frame", e)
	}
	es, err := scenarios.Load(saved[0])
	if err != nil || len(es.Expect.Violations)+len(es.Expect.MayViolate) != 0 {
		t.Errorf("the entry loads with %v, expect %+v; want a scenario that expects the contract to hold", err, es.Expect)
	}

	again := hunt(1)
	pub, gcra := again.File.Entries[0], again.File.Entries[1]
	if v := pub.Violation; v == nil || pub.Corpus != 1 || v.Schedule.Trial != 1 || v.Schedule.Family != "corpus:"+filepath.Base(saved[0]) {
		t.Errorf("second hunt of fixed-window-published: %d of the corpus, violation %+v; want the corpus's entry breaking it at trial 1", pub.Corpus, v)
	}
	if gcra.Corpus != 0 || gcra.Trials != 1 {
		t.Errorf("gcra replayed %d of the corpus in %d trials; want none of fixed-window-published's", gcra.Corpus, gcra.Trials)
	}

	// A file of the corpus that is not an entry: refused, naming it.
	bad := filepath.Join(corpus, "two.yaml")
	if err := os.WriteFile(bad, []byte("limit: {limit: 20, window: 1s}\nalgorithms: [gcra, token-bucket]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = NewPlan(Options{Scenario: s, Bounds: Bounds{Span: DefaultSpan}, Time: time.Minute, Batch: 1, Corpus: corpus, Lab: sim.lab()})
	if !errors.Is(err, scenarios.ErrInvalid) || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "not a corpus entry") {
		t.Errorf("NewPlan with %s in the corpus: %v; want it refused as not a corpus entry, naming the file", bad, err)
	}
	if entries, err := LoadCorpus(filepath.Join(dir, "none")); err != nil || len(entries) != 0 {
		t.Errorf("LoadCorpus of a missing directory: %v, %v; want an empty corpus", entries, err)
	}
}
