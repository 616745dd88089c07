package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/cpus"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/measure"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/scenarios"
)

func mustThreshold(t *testing.T, s string) *scenarios.Threshold {
	t.Helper()
	th, err := scenarios.ParseThreshold(s)
	if err != nil {
		t.Fatal(err)
	}
	return &th
}

func TestJudgeStep(t *testing.T) {
	slo, _ := scenarios.ParseThreshold("p99 < 2ms")
	ok := result.Entry{Requests: 20000, Allowed: 20000, OfferedRPS: 10000, ThroughputRPS: 10000,
		LatencyUS: load.Latency{P50: 300, P99: 1500}}
	with := func(f func(e *result.Entry)) result.Entry {
		e := ok
		f(&e)
		return e
	}
	tests := []struct {
		name   string
		phase  string
		rate   float64
		e      result.Entry
		slo    *scenarios.Threshold
		good   bool
		reason string
	}{
		{"good", PhaseDouble, 10000, ok, &slo, true, ""},
		{"no objective", PhaseDouble, 10000, with(func(e *result.Entry) { e.LatencyUS.P99 = 9000 }), nil, true, ""},
		{"objective broken", PhaseDouble, 10000, with(func(e *result.Entry) { e.LatencyUS.P99 = 2000 }), &slo, false, `p99 2ms broke "p99 < 2ms"`},
		{"95% achieved is enough", PhaseBisect, 10000, with(func(e *result.Entry) { e.ThroughputRPS = 9500 }), &slo, true, ""},
		{"not following", PhaseBisect, 10000, with(func(e *result.Entry) { e.ThroughputRPS = 9400 }), &slo, false, "achieved 94% of offered"},
		{"behind", PhaseDouble, 10000, with(func(e *result.Entry) { e.Late = 150; e.Dropped = 60 }), &slo, false, "the generator fell behind (150 late, 60 never sent)"},
		{"1% late is not behind", PhaseDouble, 10000, with(func(e *result.Entry) { e.Late = 200 }), &slo, true, ""},
		{"errors", PhaseDouble, 10000, with(func(e *result.Entry) { e.Errors = 15; e.Unknown = 6 }), &slo, false, "21 of 20000 requests failed"},
		{"0.1% errors tolerated", PhaseDouble, 10000, with(func(e *result.Entry) { e.Errors = 20 }), &slo, true, ""},
		{"nothing", PhaseDouble, 10000, result.Entry{}, &slo, false, "no request completed"},
		{"probe ignores the rate", PhaseProbe, 0, with(func(e *result.Entry) { e.ThroughputRPS = 16000 }), nil, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := judgeStep(tt.phase, tt.rate, &tt.e, tt.slo)
			if st.Good != tt.good || !strings.Contains(st.Reason, tt.reason) || (tt.good && st.Reason != "") {
				t.Errorf("judgeStep = good %v, reason %q; want good %v, reason containing %q", st.Good, st.Reason, tt.good, tt.reason)
			}
		})
	}
}

func TestFillRequests(t *testing.T) {
	o1 := algorithms.Description{Memory: "O(1)"}
	olimit := algorithms.Description{Memory: "O(limit)"}
	unknown := algorithms.Description{Memory: "unknown"}
	tests := []struct {
		d             algorithms.Description
		limit         int64
		subjects      int
		wantPer, want int
	}{
		{o1, 100, 10000, 2, 10000},
		{o1, 1, 10000, 1, 10000},
		{olimit, 100, 10000, 100, 3000},
		{olimit, 10, 10000, 10, 10000},
		{olimit, 1000, 10000, 1000, 300},
		{olimit, 100000, 10000, 1000, 300},
		{unknown, 100, 10000, 100, 3000},
		{olimit, 100, 50, 100, 50},
		{olimit, 5000, 100, 1000, 100},
	}
	for _, tt := range tests {
		per, n := fillRequests(tt.d, algorithms.Limit{Limit: tt.limit, Window: time.Second}, tt.subjects)
		if per != tt.wantPer || n != tt.want {
			t.Errorf("fillRequests(%s, limit %d, %d) = (%d, %d); want (%d, %d)", tt.d.Memory, tt.limit, tt.subjects, per, n, tt.wantPer, tt.want)
		}
		if per*n > memoryBudget && n > memoryMinSubjects {
			t.Errorf("fillRequests(%s, limit %d, %d) sends %d requests; budget %d", tt.d.Memory, tt.limit, tt.subjects, per*n, memoryBudget)
		}
	}
}

func TestNiceRate(t *testing.T) {
	for _, tt := range []struct{ in, want float64 }{
		{4012.7, 4000}, {3999, 3900}, {16020 / 4.0, 4000}, {123456, 120000}, {99, 99}, {5, minRate}, {10, 10},
	} {
		if got := niceRate(tt.in); got != tt.want {
			t.Errorf("niceRate(%g) = %g; want %g", tt.in, got, tt.want)
		}
	}
}

// fakeSweep runs the sweep against a model shard that sustains exactly limit/s and saturates at
// sat/s, and returns the capacity it found.
func fakeSweep(t *testing.T, sat, limit float64, maxSteps int) *Result {
	t.Helper()
	c := &Result{}
	sw := &sweep{o: Options{MaxSteps: maxSteps, Logf: t.Logf}, c: c}
	sw.measure = func(_ context.Context, phase string, rate float64) (Step, *result.Entry, error) {
		e := &result.Entry{Server: result.Server{CPUUSecPerDecision: 20 + rate/1e4, BytesPerKey: 70}}
		st := Step{Phase: phase, OfferedRPS: rate, Good: true, AchievedRPS: rate}
		if phase == PhaseProbe {
			st.AchievedRPS = sat
		} else if rate > limit {
			st.Good, st.Reason, st.AchievedRPS = false, "over the model's limit", math.Min(rate, sat)
		}
		return st, e, nil
	}
	if err := sw.run(context.Background()); err != nil {
		t.Fatalf("sweep: %v", err)
	}
	return c
}

// checkSweep checks a finished sweep's internal consistency: doubling (or halving) steps, then
// bisection steps strictly inside the interval they narrow, ending within Resolution, with the
// sustainable rate the highest good step and every step above it bad.
func checkSweep(t *testing.T, c *Result) {
	t.Helper()
	if len(c.Steps) == 0 {
		t.Fatal("no steps")
	}
	// A superseded step and the confirm step after it are one verdict: the confirm step's, at
	// the superseded step's rate and in its phase.
	var steps []Step
	for i, s := range c.Steps {
		switch {
		case s.Superseded:
			if i+1 >= len(c.Steps) || c.Steps[i+1].Phase != PhaseConfirm || c.Steps[i+1].OfferedRPS != s.OfferedRPS {
				t.Errorf("step %d is superseded but not followed by a confirm step at %g", i, s.OfferedRPS)
			}
		case s.Phase == PhaseConfirm:
			if i == 0 || !c.Steps[i-1].Superseded {
				t.Errorf("step %d: a confirm step after an unsuperseded %+v", i, c.Steps[max(i-1, 0)])
				continue
			}
			s.Phase = c.Steps[i-1].Phase
			steps = append(steps, s)
		default:
			steps = append(steps, s)
		}
	}
	var good, bad float64
	for i, s := range steps {
		switch s.Phase {
		case PhaseDouble:
			if i > 0 && (steps[i-1].Phase != PhaseDouble || s.OfferedRPS != 2*steps[i-1].OfferedRPS) {
				t.Errorf("step %d: double to %g after %+v", i, s.OfferedRPS, steps[i-1])
			}
		case PhaseHalve:
			if i == 0 || s.OfferedRPS != steps[i-1].OfferedRPS/2 || steps[i-1].Good {
				t.Errorf("step %d: halve to %g after %+v", i, s.OfferedRPS, steps[i-1])
			}
		case PhaseBisect:
			if good == 0 || bad == 0 || s.OfferedRPS <= good || s.OfferedRPS >= bad {
				t.Errorf("step %d: bisect at %g outside (%g, %g)", i, s.OfferedRPS, good, bad)
			}
			if mid := (good + bad) / 2; math.Abs(s.OfferedRPS-mid) > 1 {
				t.Errorf("step %d: bisect at %g; want the midpoint %g", i, s.OfferedRPS, mid)
			}
		default:
			t.Errorf("step %d: phase %q", i, s.Phase)
		}
		if s.Good && s.OfferedRPS > good {
			good = s.OfferedRPS
		}
		if !s.Good && (bad == 0 || s.OfferedRPS < bad) {
			bad = s.OfferedRPS
		}
		if good > 0 && bad > 0 && good >= bad {
			t.Errorf("step %d: good %g ≥ bad %g: the sweep is not monotone", i, good, bad)
		}
	}
	if c.SustainableRPS != good || c.FirstBadRPS != bad {
		t.Errorf("sustainable %g, first bad %g; want %g, %g", c.SustainableRPS, c.FirstBadRPS, good, bad)
	}
	if good > 0 && bad > 0 && bad/good-1 > Resolution && !strings.Contains(strings.Join(c.Notes, " "), "stopped after") {
		t.Errorf("ended at [%g, %g]: %.1f%% apart; want ≤ %.0f%%", good, bad, 100*(bad/good-1), 100*Resolution)
	}
}

func TestSweepConsistency(t *testing.T) {
	tests := []struct {
		name       string
		sat, limit float64
		maxSteps   int
		want       float64 // the limit's bracket: sustainable in [want/(1+Resolution), want]
	}{
		{"limit below saturation", 16000, 12345, DefaultMaxSteps, 12345},
		{"limit at saturation", 16000, 16000, DefaultMaxSteps, 16000},
		{"first step too fast", 16000, 1500, DefaultMaxSteps, 1500},
		{"far below", 16000, 37, DefaultMaxSteps, 37},
		{"no probe", 0, 5000, DefaultMaxSteps, 5000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fakeSweep(t, tt.sat, tt.limit, tt.maxSteps)
			checkSweep(t, c)
			if c.SustainableRPS > tt.want || c.SustainableRPS < tt.want/(1+Resolution) {
				t.Errorf("sustainable %g; want within %.0f%% below %g", c.SustainableRPS, 100*Resolution, tt.want)
			}
			if c.Probe == nil || c.Probe.AchievedRPS != tt.sat {
				t.Errorf("probe %+v; want saturation %g", c.Probe, tt.sat)
			}
			if want := 20 + c.SustainableRPS/1e4; c.CPUUSecPerDecision != want {
				t.Errorf("CPU per decision %g; want the sustainable step's %g", c.CPUUSecPerDecision, want)
			}
		})
	}
	t.Run("step limit", func(t *testing.T) {
		c := fakeSweep(t, 16000, 12345, 5)
		if len(c.Steps) != 5 || !strings.Contains(strings.Join(c.Notes, " "), "stopped after 5 steps") {
			t.Errorf("%d steps, notes %q; want 5 steps and a note", len(c.Steps), c.Notes)
		}
	})
	t.Run("never good", func(t *testing.T) {
		c := fakeSweep(t, 16000, 1, DefaultMaxSteps)
		if c.SustainableRPS != 0 || !strings.Contains(strings.Join(c.Notes, " "), "no rate down to") {
			t.Errorf("sustainable %g, notes %q; want 0 and a note", c.SustainableRPS, c.Notes)
		}
	})
}

// latencyEntry returns an entry of a step at rate that followed it on schedule, whose latency
// histogram holds fast requests of 100 µs and slow ones of 5 ms.
func latencyEntry(t *testing.T, rate float64, fast, slow int64) *result.Entry {
	t.Helper()
	h := hdrhistogram.New(1, 60_000_000, 3)
	if err := h.RecordValues(100, fast); err != nil {
		t.Fatal(err)
	}
	if err := h.RecordValues(5000, slow); err != nil {
		t.Fatal(err)
	}
	e := &result.Entry{Requests: fast + slow, Allowed: fast + slow, OfferedRPS: rate, ThroughputRPS: rate,
		LatencyUS: load.Summarize(h)}
	if err := e.SetHistograms(h, nil); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestSweepConfirmsLatencyOnlyFailures runs the sweep against a model shard whose steps break
// p99 < 2ms in three ways: a stall in one step of a rate (1.5% slow requests, then none when
// measured again: over both steps 0.75%, so the rate is good), a real overload (2% slow in every
// step: bad over both), and falling behind (bad at once, never measured again).
func TestSweepConfirmsLatencyOnlyFailures(t *testing.T) {
	const stallAt, overloadFrom, behindFrom = 4000, 9000, 20000
	c := &Result{}
	slo := mustThreshold(t, "p99 < 2ms")
	sw := &sweep{o: Options{MaxSteps: DefaultMaxSteps, SLO: slo, Logf: t.Logf}, c: c}
	measured := map[float64]int{}
	sw.measure = func(_ context.Context, phase string, rate float64) (Step, *result.Entry, error) {
		measured[rate]++
		var e *result.Entry
		switch {
		case phase == PhaseProbe:
			e = latencyEntry(t, 16000, 1000, 0)
			e.ThroughputRPS = 16000
		case rate >= behindFrom:
			e = latencyEntry(t, rate, 1000, 0)
			e.Late = 500
		case rate >= overloadFrom:
			e = latencyEntry(t, rate, 980, 20)
		case rate == stallAt && measured[rate] == 1:
			e = latencyEntry(t, rate, 985, 15)
		default:
			e = latencyEntry(t, rate, 1000, 0)
		}
		return judgeStep(phase, rate, e, slo), e, nil
	}
	if err := sw.run(context.Background()); err != nil {
		t.Fatalf("sweep: %v", err)
	}
	checkSweep(t, c)
	if c.SustainableRPS < overloadFrom/(1+Resolution) || c.SustainableRPS >= overloadFrom {
		t.Errorf("sustainable %g; want within %.0f%% below %d (the stall at %d must not decide)", c.SustainableRPS, 100*Resolution, overloadFrom, stallAt)
	}
	var confirms, goodConfirms int
	for _, s := range c.Steps {
		if s.Phase != PhaseConfirm {
			continue
		}
		confirms++
		if s.Good {
			goodConfirms++
			if s.OfferedRPS != stallAt || !strings.Contains(s.Note, "over both steps p99 100µs") {
				t.Errorf("good confirm step %+v; want only the stalled rate %d, noted over both steps", s, stallAt)
			}
		} else if s.OfferedRPS < overloadFrom || !strings.Contains(s.Reason, "over both steps p99 5.003ms broke") { // 5 ms as the histogram keeps it
			t.Errorf("bad confirm step %+v; want an overloaded rate, bad over both steps", s)
		}
	}
	if goodConfirms != 1 || confirms < 2 {
		t.Errorf("%d confirm steps, %d good; want the stalled rate good and each overloaded rate bad", confirms, goodConfirms)
	}
	for rate, n := range measured {
		if rate >= behindFrom && n != 1 {
			t.Errorf("rate %g, behind schedule, measured %d times; want once", rate, n)
		}
	}
	if c.FirstBadRPS < overloadFrom {
		t.Errorf("first bad rate %g; want the overload's (≥ %d)", c.FirstBadRPS, overloadFrom)
	}
}

func TestScenarioMatchesSaturation(t *testing.T) {
	sat, err := scenarios.Load("../scenarios/saturation.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := Scenario()
	if c.Clients != sat.Clients || c.Keys != sat.Keys || c.Limit != sat.Limit || c.ClientMode != sat.ClientMode ||
		c.Seed != sat.Seed || c.Cost != sat.Cost {
		t.Errorf("Scenario() = clients %d, keys %+v, limit %+v, mode %s, seed %d; saturation.yaml has %d, %+v, %+v, %s, %d",
			c.Clients, c.Keys, c.Limit, c.ClientMode, c.Seed, sat.Clients, sat.Keys, sat.Limit, sat.ClientMode, sat.Seed)
	}
	if c.Arrival != nil {
		t.Errorf("Scenario has an arrival; each step sets its own")
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Scenario().Validate() = %v", err)
	}
}

func needRedisServer(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH: %v", err)
	}
}

// TestRunProcess runs a short real sweep and checks its consistency and its figures.
func TestRunProcess(t *testing.T) {
	needRedisServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var pin cpus.State // Redis pinned, the test process left where it is
	if runtime.NumCPU() > 1 && runtime.GOOS == "linux" {
		all, err := redisenv.ProcessCPUs(os.Getpid())
		if err == nil && len(all) > 1 {
			pin.RedisCPUs = all[len(all)-1:]
		}
	}
	var steps int
	c, err := Run(ctx, Options{
		Scenario: Scenario(), Algorithm: "gcra", SLO: mustThreshold(t, "p99 < 20ms"),
		Env:  redisenv.Config{Backend: redisenv.BackendProcess},
		Step: 400 * time.Millisecond, MemorySubjects: 2000, CPUs: pin,
		OnStep: func(Step) { steps++ }, Logf: t.Logf,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	checkSweep(t, c)
	if runtime.GOOS == "linux" && !c.Noise.CPUMeasured {
		t.Errorf("noise %+v; want the CPU figures measured from /proc", c.Noise)
	}
	t.Logf("machine noise: %s", c.Noise.text())
	if steps != len(c.Steps)+1 {
		t.Errorf("OnStep called %d times; want %d (the probe and every step)", steps, len(c.Steps)+1)
	}
	if c.Probe == nil || c.Probe.AchievedRPS <= 0 || c.SustainableRPS <= 0 {
		t.Fatalf("probe %+v, sustainable %g; want both > 0", c.Probe, c.SustainableRPS)
	}
	if c.CPUUSecPerDecision <= 0 || c.Memory.BytesPerSubject <= 0 || c.Memory.MemoryUsagePerSubject <= 0 || c.Memory.Subjects != 2000 {
		t.Errorf("CPU %g µs/decision, memory %+v; want positive figures over 2000 subjects", c.CPUUSecPerDecision, c.Memory)
	}
	if len(c.Projection.Memory) != 5 || len(c.Projection.Shards) != 4 || c.Masters != 1 || c.ShardRPS != c.SustainableRPS {
		t.Errorf("projection %+v, masters %d, shard %g; want 5 memory rows, 4 shard rows, one master", c.Projection, c.Masters, c.ShardRPS)
	}
	for _, p := range c.Projection.Shards {
		if want := int(math.Ceil(p.DecisionsPerSecond / (c.ShardRPS * 0.7))); p.Shards != want {
			t.Errorf("%g decisions/s: %d shards; want ceil(%g / (%g × 0.7)) = %d", p.DecisionsPerSecond, p.Shards, p.DecisionsPerSecond, c.ShardRPS, want)
		}
	}
	if len(pin.RedisCPUs) > 0 && (!c.Pinning.Pinned || !strings.Contains(c.Pinning.Note, fmt.Sprintf("Redis pinned to CPU %d", pin.RedisCPUs[0]))) {
		t.Errorf("pinning %+v; want Redis pinned to %v", c.Pinning, pin.RedisCPUs)
	}
	t.Logf("sustainable %.0f/s (probe %.0f/s), %d steps, %.2f µs CPU/decision, %.0f bytes/subject (MEMORY USAGE %.0f), %s, took %s",
		c.SustainableRPS, c.Probe.AchievedRPS, len(c.Steps), c.CPUUSecPerDecision, c.Memory.BytesPerSubject,
		c.Memory.MemoryUsagePerSubject, c.Pinning.Note, c.FinishedAt.Sub(c.StartedAt).Round(time.Millisecond))
}

// TestMemorySlidingLogVsGCRA: under saturation at limit 100 a sliding log keeps up to 100
// entries per subject and GCRA one timestamp, so its bytes per subject are at least five times
// as many (a list of 100 integers, about 1.2 KB, against one key of about 150 bytes). Memory,
// not timing: the assertion is safe on a loaded machine.
func TestMemorySlidingLogVsGCRA(t *testing.T) {
	needRedisServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tgt, err := redisenv.Start(ctx, redisenv.Config{Backend: redisenv.BackendProcess})
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Stop(context.Background())
	sc := Scenario()
	sc.Limit = algorithms.Limit{Limit: 100, Window: time.Second}
	got := map[string]Memory{}
	for _, name := range []string{"gcra", "sliding-log"} {
		a, err := algorithms.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		sw := &sweep{o: Options{Scenario: sc, MemorySubjects: DefaultMemorySubjects, Logf: t.Logf}, tgt: tgt, alg: a,
			runID: measure.NewRunID(), c: &Result{Topology: "single"}}
		m, err := sw.memoryStep(ctx)
		if err != nil {
			t.Fatalf("memoryStep(%s): %v", name, err)
		}
		t.Logf("%s: %+v", name, m)
		if m.BytesPerSubject <= 0 || m.MemoryUsagePerSubject <= 0 || m.Note != "" {
			t.Errorf("%s: %+v; want positive figures and no note", name, m)
		}
		got[name] = m
	}
	g, s := got["gcra"], got["sliding-log"]
	if s.BytesPerSubject < 5*g.BytesPerSubject {
		t.Errorf("used_memory per subject: sliding-log %.0f, gcra %.0f: ratio %.1f; want ≥ 5",
			s.BytesPerSubject, g.BytesPerSubject, s.BytesPerSubject/g.BytesPerSubject)
	}
	if s.MemoryUsagePerSubject < 5*g.MemoryUsagePerSubject {
		t.Errorf("MEMORY USAGE per subject: sliding-log %.0f, gcra %.0f: ratio %.1f; want ≥ 5",
			s.MemoryUsagePerSubject, g.MemoryUsagePerSubject, s.MemoryUsagePerSubject/g.MemoryUsagePerSubject)
	}
	if s.RequestsPerSubject != 100 {
		t.Errorf("sliding-log was sent %d requests per subject; want 100 (its limit)", s.RequestsPerSubject)
	}
	t.Logf("bytes per subject at limit 100: sliding-log %.0f, gcra %.0f (ratio %.1f); MEMORY USAGE %.0f, %.0f (ratio %.1f)",
		s.BytesPerSubject, g.BytesPerSubject, s.BytesPerSubject/g.BytesPerSubject,
		s.MemoryUsagePerSubject, g.MemoryUsagePerSubject, s.MemoryUsagePerSubject/g.MemoryUsagePerSubject)
}

func TestRunBadInput(t *testing.T) {
	_, err := Run(context.Background(), Options{Scenario: Scenario(), Algorithm: "gcar"})
	if !errors.Is(err, algorithms.ErrUnknownAlgorithm) {
		t.Errorf("Run(gcar) = %v; want ErrUnknownAlgorithm", err)
	}
	_, err = Run(context.Background(), Options{Scenario: Scenario(), Algorithm: "gcra",
		Env: redisenv.Config{Backend: "vm"}})
	if !errors.Is(err, redisenv.ErrBadConfig) {
		t.Errorf("Run(backend vm) = %v; want ErrBadConfig", err)
	}
}
