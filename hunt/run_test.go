package hunt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
	"github.com/limitbench/limitbench/internal/trace"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/scenarios"
	"github.com/limitbench/limitbench/verify"
)

// benchOnly is a custom algorithm without a contract (benchmark only), its script in
// bench.lua beside the scenario (writeScenario writes it).
const benchOnly = `  - name: bench-only
    script: bench.lua
    keys: ["n:{{tag}}"]
    args: ["{{limit}}"]
    allowed: {element: 1, equals: 1}
    contract: {kind: none}
`

// writeScenario writes yaml as dir/name, and bench.lua (benchOnly's script) beside it, and
// loads it.
func writeScenario(t *testing.T, dir, name, yaml string) *scenarios.Scenario {
	t.Helper()
	lua := "return {1, redis.call('INCR', KEYS[1])}\n"
	if err := os.WriteFile(filepath.Join(dir, "bench.lua"), []byte(lua), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := scenarios.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// simLab is a Lab whose trials replay schedules through the simulated limiters of sim_test.go,
// after checking that the environment Run started answers: fixed-window-published's client
// minute, and the reference model of every other algorithm. It records the addresses of the
// environments it was given, and every reproducer gets 7 clients.
type simLab struct {
	mu    sync.Mutex
	addrs []string
	skews []time.Duration
}

func (s *simLab) lab() Lab {
	return Lab{
		Resolve: func(_ *scenarios.Scenario, e scenarios.AlgorithmEntry) (algorithms.Algorithm, error) {
			if e.Custom != nil {
				return algorithms.NewCustom(*e.Custom)
			}
			return algorithms.Lookup(e.Name)
		},
		Check: func(ctx context.Context, tgt *redisenv.Target, _ []algorithms.Algorithm) error {
			s.mu.Lock()
			s.addrs = append(s.addrs, tgt.Masters()...)
			s.mu.Unlock()
			return tgt.Client.Ping(ctx).Err()
		},
		Trial: func(ctx context.Context, tgt *redisenv.Target, a algorithms.Algorithm, l algorithms.Limit, frame arrival.Align,
			batch []*trace.Trace) ([]verify.Measurement, error) {
			if err := tgt.Client.Ping(ctx).Err(); err != nil {
				return nil, err
			}
			tg, err := TargetOf(a, l, s.skews)
			if err != nil {
				return nil, err
			}
			mk := func() limiter { return serverModel{a.Model(l)} }
			if a.Describe().Name == "fixed-window-published" {
				mk = func() limiter { return newMinuteKey(l.Limit) }
			}
			return simTrial(tg, frame, mk, nil)(ctx, batch)
		},
		Workers: func(*trace.Trace) int { return 7 },
	}
}

// TestRun: a hunt of a scenario on a real environment, with simulated trials. Run starts the
// environment, hunts the algorithms with a contract in order (bench-only, which has none, is
// skipped), says so line by line, stops the environment, and returns hunt.json's entries with
// the schedules and a reproducer scenario that loads; Write puts them all in the directory, and
// the verdict follows the scenario's expectations.
func TestRun(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH: %v", err)
	}
	dir := t.TempDir()
	s := writeScenario(t, dir, "pub.yaml", `limit: {limit: 20, window: 1s}
clock_skew: [0s, 2s, -2s]
algorithms:
  - fixed-window-published
`+benchOnly+`  - gcra
expect:
  may_violate: [fixed-window-published]
`)
	sim := &simLab{skews: demoSkews}
	var lines []string
	var mu sync.Mutex
	o := Options{Scenario: s, Env: redisenv.Config{Backend: redisenv.BackendProcess}, Bounds: Bounds{Span: DefaultSpan},
		Time: 20 * time.Second, Trials: 40, Batch: 4, Seed: 1, Lab: sim.lab(),
		Logf: func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			lines = append(lines, fmt.Sprintf(format, args...))
		}}
	plan, err := NewPlan(o)
	if err != nil {
		t.Fatal(err)
	}
	if got := plan.Skipped(); !slices.Equal(got, []string{"bench-only"}) {
		t.Errorf("Skipped() = %v; want [bench-only]", got)
	}
	out, err := plan.Run(context.Background(), dir)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, strings.Join(lines, "\n"))
	}
	redistest.CheckGone(t, sim.addrs)
	f := out.File
	if len(f.Entries) != 2 || f.CutShort || f.Seed != 1 || f.BudgetS != 20 || f.Trials != 40 || f.SpanS != 2 {
		t.Fatalf("file %+v; want two entries, not cut short, the options' settings", f)
	}
	pub, gcra := f.Entries[0], f.Entries[1]
	if pub.Algorithm != "fixed-window-published" || pub.Violation == nil || pub.Violation.Shrunk == nil || !pub.ExpectedViolation ||
		pub.Violation.Shrunk.Confirm == nil || pub.Violation.Shrunk.Confirm.Replays != ConfirmReplays {
		t.Fatalf("first entry %+v; want fixed-window-published broken, expected, shrunk and confirmed", pub)
	}
	if gcra.Algorithm != "gcra" || gcra.Violation != nil || gcra.Trials != 40 {
		t.Errorf("second entry %+v; want gcra held in 40 trials", gcra)
	}
	wantLines := []string{
		"hunt fixed-window-published on single: fixed-window(20, 1m0s)",
		"hunt gcra on single: no violation in 40 trials (trials); closest approach",
		"hunt fixed-window-published on single: violation at trial",
		filepath.Join(dir, "fixed-window-published-single-repro.yaml"),
	}
	for _, w := range wantLines {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, w) }) {
			t.Errorf("no line says %q:\n%s", w, strings.Join(lines, "\n"))
		}
	}
	repro := out.Scenarios["fixed-window-published-single-repro.yaml"]
	for _, w := range []string{"clients: 7 ", "  align: {every: 1m0s, offset: 59s}\n", "algorithms: [fixed-window-published]\n"} {
		if !strings.Contains(string(repro), w) {
			t.Errorf("reproducer scenario lacks %q:\n%s", w, repro)
		}
	}
	if err := out.Write(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{FileName, "report.md", "report.html", pub.Best.Trace, pub.Violation.Schedule.Trace, gcra.Best.Trace} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("Write did not write %s: %v", name, err)
		}
	}
	if _, err := scenarios.Load(filepath.Join(dir, pub.Reproducer())); err != nil {
		t.Errorf("the reproducer does not load: %v", err)
	}
	if err := Verdict(f, s.Expect); err != nil {
		t.Errorf("Verdict = %v; want nil (the violation is expected)", err)
	}
	if err := Verdict(f, result.Expect{Violations: []string{"gcra"}}); err == nil {
		t.Errorf("Verdict with gcra expected to break = nil; want an error")
	}
}

// TestRunCanceled: a hunt whose context is canceled starts nothing, returns an error that says
// so, and a File marked cut short.
func TestRunCanceled(t *testing.T) {
	dir := t.TempDir()
	s := writeScenario(t, dir, "g.yaml", "limit: {limit: 20, window: 1s}\nalgorithms: [gcra]\n")
	sim := &simLab{}
	plan, err := NewPlan(Options{Scenario: s, Env: redisenv.Config{Backend: redisenv.BackendProcess}, Bounds: Bounds{Span: DefaultSpan},
		Time: DefaultSpan, Batch: 1, Lab: sim.lab()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out, err := plan.Run(ctx, dir)
	if !errors.Is(err, context.Canceled) || out == nil || !out.File.CutShort || len(out.File.Entries) != 0 || len(sim.addrs) != 0 {
		t.Errorf("Run canceled = %v, %+v; want context.Canceled, a file cut short without entries, no environment", err, out)
	}
}

// TestNewPlanRefuses: options that cannot run are refused before anything starts, every error
// saying why.
func TestNewPlanRefuses(t *testing.T) {
	dir := t.TempDir()
	good := writeScenario(t, dir, "g.yaml", "limit: {limit: 20, window: 1s}\nalgorithms: [gcra]\n")
	none := writeScenario(t, dir, "n.yaml", "limit: {limit: 20, window: 1s}\nalgorithms:\n"+benchOnly)
	wait := writeScenario(t, dir, "w.yaml", "topologies: [sentinel]\nwait_replicas: 1\nlimit: {limit: 20, window: 1s}\nalgorithms: [gcra]\n")
	faults := writeScenario(t, dir, "f.yaml", "limit: {limit: 20, window: 1s}\nalgorithms: [gcra]\nfaults:\n  - {at: 1500ms, kind: restart, target: master}\n")
	lab := (&simLab{}).lab()
	ok := Options{Scenario: good, Bounds: Bounds{Span: DefaultSpan}, Time: DefaultSpan, Batch: 1, Lab: lab}
	for _, c := range []struct {
		name string
		edit func(o *Options)
		want string
		is   error
	}{
		{"no scenario", func(o *Options) { o.Scenario = nil }, "no scenario", ErrBadOptions},
		{"no lab", func(o *Options) { o.Lab.Trial = nil }, "the lab lacks a function", ErrBadOptions},
		{"no time", func(o *Options) { o.Time = 0 }, "time 0s", ErrBadOptions},
		{"span too long", func(o *Options) { o.Bounds.Span = 2 * time.Hour }, "span 2h0m0s is outside", ErrBadTarget},
		{"nothing to hunt", func(o *Options) { o.Scenario = none }, "n.yaml: no algorithm of the scenario has a contract to break", ErrBadOptions},
		{"wait", func(o *Options) { o.Scenario = wait }, "w.yaml:2: wait_replicas: applies to limitbench run", nil},
		{"faults", func(o *Options) { o.Scenario = faults }, "f.yaml:3: faults: a hunt places faults of its own choosing", nil},
		{"time shorter than a trial", func(o *Options) { o.Time = time.Nanosecond }, "time 1ns is shorter than one trial", ErrBadOptions},
		{"unknown algorithm", func(o *Options) {
			o.Lab.Resolve = func(*scenarios.Scenario, scenarios.AlgorithmEntry) (algorithms.Algorithm, error) {
				return algorithms.Lookup("nope")
			}
		}, `unknown algorithm "nope"`, algorithms.ErrUnknownAlgorithm},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := ok
			c.edit(&o)
			_, err := NewPlan(o)
			if err == nil || !strings.Contains(err.Error(), c.want) || (c.is != nil && !errors.Is(err, c.is)) {
				t.Errorf("NewPlan = %v; want an error saying %q (matching %v)", err, c.want, c.is)
			}
		})
	}
	if _, err := NewPlan(ok); err != nil {
		t.Errorf("NewPlan of good options = %v", err)
	}
}

// TestSkewsOf: a list of offsets as it is, a spread as its ends and 0, none as none.
func TestSkewsOf(t *testing.T) {
	s := 2 * time.Second
	for _, c := range []struct {
		s    []time.Duration
		k    time.Duration
		want []time.Duration
	}{
		{[]time.Duration{0, s, -s}, 0, []time.Duration{0, s, -s}},
		{nil, s, []time.Duration{-s, 0, s}},
		{nil, 0, nil},
	} {
		k := scenarios.Scenario{}.ClockSkew
		k.Offsets, k.Spread = c.s, c.k
		if got := skewsOf(k); !slices.Equal(got, c.want) {
			t.Errorf("skewsOf(%v, spread %s) = %v; want %v", c.s, c.k, got, c.want)
		}
	}
}
