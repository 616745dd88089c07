package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

var update = flag.Bool("update", false, "rewrite testdata from the synthetic results in gate_test.go")

// gateJitter is a fixed, low-noise pattern (under ±1%) applied to the samples of a synthetic
// entry; its IQR/median is about 1%, far below MaxSpread.
var gateJitter = []float64{-0.010, 0.004, -0.003, 0.008, 0.000, -0.006, 0.002, 0.009, -0.001, 0.005}

// gateNoise is a noisy pattern (about ±20%): its IQR/median is over MaxSpread.
var gateNoise = []float64{-0.20, 0.15, -0.05, 0.22, -0.12, 0.08, 0.18, -0.18}

// sampleSpec describes a synthetic entry's samples: slowdown multiplies the time figures
// (throughput is divided by it), noise is the jitter pattern, and the rest are set as given.
type sampleSpec struct {
	n          int
	slowdown   float64
	noise      []float64
	efficiency float64
	bytes      float64
	cpu        float64
	verdicts   map[int]verify.Verdict // repeat → verdict; default pass
	// drift is the machine's slowdown in each repeat (cycled), shared by every entry of a run
	// measured in the same round; nil for none.
	drift []float64
}

func (s sampleSpec) samples() []result.Sample {
	if s.slowdown == 0 {
		s.slowdown = 1
	}
	if s.noise == nil {
		s.noise = gateJitter
	}
	if s.efficiency == 0 {
		s.efficiency = 0.99
	}
	if s.bytes == 0 {
		s.bytes = 80
	}
	if s.cpu == 0 {
		s.cpu = 25
	}
	out := make([]result.Sample, s.n)
	base := s.slowdown
	for i := range out {
		s.slowdown = base
		if s.drift != nil {
			s.slowdown *= s.drift[i%len(s.drift)]
		}
		j := 1 + s.noise[i%len(s.noise)]
		// A different phase per metric, so the metrics are not perfectly correlated.
		k := 1 + s.noise[(i+3)%len(s.noise)]
		v := s.verdicts[i+1]
		if v == "" {
			v = verify.Pass
		}
		cpu := s.cpu * s.slowdown * k
		if s.cpu < 0 {
			cpu = 0 // not measured
		}
		out[i] = result.Sample{
			Repeat:             i + 1,
			ThroughputRPS:      math.Round(10000 / s.slowdown * j),
			LatencyUS:          load.Latency{P50: math.Round(300 * s.slowdown * k), P99: math.Round(800 * s.slowdown * k)},
			Efficiency:         s.efficiency,
			USecPerCall:        12 * s.slowdown,
			CPUUSecPerDecision: math.Round(cpu*1000) / 1000,
			BytesPerKey:        s.bytes,
			Verdict:            v,
		}
	}
	return out
}

func gateEntry(algorithm, topology string, verdict verify.Verdict, spec sampleSpec) result.Entry {
	e := result.Entry{Algorithm: algorithm, Topology: topology, Samples: spec.samples()}
	e.Verification.Verdict = verdict
	e.ThroughputRPS = e.Samples[0].ThroughputRPS
	return e
}

// gateResult returns a result of scenario "saturation" on a machine with cpus CPUs.
func gateResult(cpus int, entries ...result.Entry) *result.Result {
	return &result.Result{
		Schema:   result.SchemaVersion,
		Scenario: result.Scenario{Name: "saturation", Seed: 1, Settings: gateSettings(200)},
		Environment: result.Environment{Backend: "process", Topology: "single", RedisVersion: "7.0.15", Nodes: 1,
			CPUs: cpus, GOMAXPROCS: cpus, GoVersion: "go1.26", HarnessVersion: "test", OS: "linux", Arch: "amd64"},
		Entries: entries,
	}
}

// withReference adds a reference entry "reference" on single, with the same slowdown as the
// machine (so ratios to it are machine-independent).
func withReference(r *result.Result, machineSlowdown float64) *result.Result {
	r.Reference = "reference"
	r.Entries = append(r.Entries, gateEntry("reference", "single", verify.Pass, sampleSpec{n: len(r.Entries[0].Samples), slowdown: machineSlowdown, efficiency: 1, bytes: 60, cpu: 10}))
	return r
}

// gateSettings returns the settings of scenario "saturation" at rate requests per second.
func gateSettings(rate float64) *result.Settings {
	return &result.Settings{Limit: algorithms.Limit{Limit: 100, Window: time.Second, Burst: 100, ConsumerLimit: 100}, Cost: 1, DurationS: 5, Clients: 8,
		ClientMode: load.ModePlain, Arrival: &arrival.Arrival{Rate: rate}, Keys: load.Keys{Count: 100},
		Algorithms: []string{"gcra", "token-bucket"}}
}

func baselineResult() *result.Result {
	return gateResult(2,
		gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 6}),
		gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6, bytes: 120}))
}

func rowOf(t *testing.T, g *Report, algorithm string, m result.Metric) Row {
	t.Helper()
	for _, r := range g.Rows {
		if r.Algorithm == algorithm && r.Metric == m {
			return r
		}
	}
	t.Fatalf("no row for %s %s in %+v", algorithm, m, g.Rows)
	return Row{}
}

func TestGate(t *testing.T) {
	tests := []struct {
		name    string
		current *result.Result
		// baseline defaults to baselineResult().
		baseline      *result.Result
		th            Thresholds
		wantRegressed bool
		// want maps "algorithm metric" to the wanted verdict; rows not named are not checked.
		want    map[string]Verdict
		figures Figures
		check   func(t *testing.T, g *Report)
	}{
		{
			name:    "identical samples",
			current: baselineResult(),
			want: map[string]Verdict{
				"gcra throughput": Insignificant, "gcra p99": Insignificant, "gcra cpu": Insignificant,
				"gcra memory": Insignificant, "gcra efficiency": Insignificant, "gcra verdict": OK,
				"token-bucket throughput": Insignificant,
			},
			figures: FiguresRaw,
			check: func(t *testing.T, g *Report) {
				if r := rowOf(t, g, "gcra", result.Throughput); r.P != 1 || r.Delta != 0 {
					t.Errorf("identical throughput: p = %v, delta = %v; want 1, 0", r.P, r.Delta)
				}
			},
		},
		{
			name: "25% slower with low noise",
			current: gateResult(2,
				gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 6, slowdown: 1.25}),
				gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6, bytes: 120})),
			wantRegressed: true,
			want: map[string]Verdict{
				"gcra throughput": Regression, "gcra p99": Regression, "gcra cpu": Regression,
				"gcra memory": Insignificant, "token-bucket throughput": Insignificant,
			},
			figures: FiguresRaw,
			check: func(t *testing.T, g *Report) {
				r := rowOf(t, g, "gcra", result.Throughput)
				if !(r.P < 0.05) {
					t.Errorf("p = %v; want < 0.05", r.P)
				}
				if r.Delta > -19 || r.Delta < -21 {
					t.Errorf("throughput delta = %.2f%%; want about -20%%", r.Delta)
				}
				if !strings.Contains(g.Summary, "REGRESSION") || !strings.Contains(g.Summary, "gcra/single throughput -20") {
					t.Errorf("summary %q does not name the regression", g.Summary)
				}
			},
		},
		{
			name: "3% slower is significant but under a 10% threshold",
			current: gateResult(2,
				gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 6, slowdown: 1.03}),
				gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6, bytes: 120})),
			want:    map[string]Verdict{"gcra throughput": OK, "gcra cpu": OK},
			figures: FiguresRaw,
			check: func(t *testing.T, g *Report) {
				if r := rowOf(t, g, "gcra", result.Throughput); !(r.P < 0.05) {
					t.Errorf("3%% slower: p = %v; want < 0.05 (the case must be significant to test the threshold)", r.P)
				}
			},
		},
		{
			name: "5% slower under a 2% threshold is a regression",
			current: gateResult(2,
				gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 6, slowdown: 1.05}),
				gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6, bytes: 120})),
			th:            Thresholds{ThroughputPct: 2, P99Pct: 15, CPUPct: 10, MemoryPct: 5, EfficiencyPt: 1},
			wantRegressed: true,
			want:          map[string]Verdict{"gcra throughput": Regression, "gcra p99": OK},
			figures:       FiguresRaw,
		},
		{
			// The medians moved 2.9%, over the 2% threshold, but the 95% interval of the shift,
			// [-3.9%, -1.9%], reaches inside it: not certainly larger than the threshold.
			name: "3% slower whose interval reaches inside a 2% threshold is ok",
			current: gateResult(2,
				gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 6, slowdown: 1.03}),
				gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6, bytes: 120})),
			th:      Thresholds{ThroughputPct: 2, P99Pct: 15, CPUPct: 10, MemoryPct: 5, EfficiencyPt: 1},
			want:    map[string]Verdict{"gcra throughput": OK},
			figures: FiguresRaw,
			check: func(t *testing.T, g *Report) {
				r := rowOf(t, g, "gcra", result.Throughput)
				if !(r.P < 0.05) || !(r.Delta < -2) || !(r.DeltaLow < -2 && r.DeltaHigh > -2) {
					t.Errorf("p = %v, delta %.2f%% in [%.2f, %.2f]; want significant, beyond -2%%, with an interval across -2%%",
						r.P, r.Delta, r.DeltaLow, r.DeltaHigh)
				}
				if !strings.Contains(r.Note, "straddles the threshold") {
					t.Errorf("note %q does not say why a change over the threshold is ok", r.Note)
				}
			},
		},
		{
			name: "25% faster is an improvement",
			current: gateResult(2,
				gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 6, slowdown: 0.8}),
				gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6, bytes: 120})),
			want:    map[string]Verdict{"gcra throughput": Improvement, "gcra p99": Improvement},
			figures: FiguresRaw,
		},
		{
			// Issue 13: a 4× slowdown measured with spreads over 10% was "unstable" and passed.
			name: "large shift with high spread is a regression",
			baseline: gateResult(2,
				gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 6, noise: gateNoise}),
				gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6, bytes: 120})),
			current: gateResult(2,
				gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 6, slowdown: 4, noise: gateNoise}),
				gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6, bytes: 120})),
			wantRegressed: true,
			want:          map[string]Verdict{"gcra throughput": Regression, "gcra p99": Regression, "gcra cpu": Regression},
			figures:       FiguresRaw,
			check: func(t *testing.T, g *Report) {
				for _, m := range []result.Metric{result.Throughput, result.P99, result.CPU} {
					if r := rowOf(t, g, "gcra", m); !(r.OldSpread > 0.10 && r.NewSpread > 0.10) || !(r.MDE > r.Threshold) {
						t.Errorf("%s: spreads %.3f, %.3f and MDE %.1f%%; want both spreads over 10%% and an MDE over the %v%% threshold (the case must be noisy)",
							m, r.OldSpread, r.NewSpread, r.MDE, r.Threshold)
					}
				}
				if !strings.Contains(g.Summary, "REGRESSION") || !g.Failed {
					t.Errorf("summary %q, Failed %v; want a failing regression", g.Summary, g.Failed)
				}
			},
		},
		{
			name: "same code with high spread is never a regression",
			baseline: gateResult(2,
				gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 6, noise: gateNoise}),
				gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6, bytes: 120})),
			current: gateResult(2,
				gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 6, noise: gateNoise[2:]}),
				gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6, bytes: 120})),
			want:    map[string]Verdict{"gcra throughput": Inconclusive, "gcra p99": Inconclusive, "gcra cpu": Inconclusive},
			figures: FiguresRaw,
			check: func(t *testing.T, g *Report) {
				if g.Failed || g.Regressed() {
					t.Errorf("Failed = %v, Regressed = %v; want neither: inconclusive rows pass by default", g.Failed, g.Regressed())
				}
				if strings.Contains(g.Summary, "no regression") || !strings.HasPrefix(g.Summary, "limitbench gate: INCONCLUSIVE") {
					t.Errorf("summary %q; want INCONCLUSIVE, never \"no regression\"", g.Summary)
				}
			},
		},
		{
			// The interval straddles the 10% threshold, and the samples cannot see a 10% change:
			// the gate cannot rule out a regression and must say so, not "no regression".
			name: "straddling interval with high spread cannot rule out a regression",
			baseline: gateResult(2,
				gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 6, noise: gateNoise}),
				gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6, bytes: 120})),
			current: gateResult(2,
				gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 6, slowdown: 1.15, noise: gateNoise[1:]}),
				gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6, bytes: 120})),
			want:    map[string]Verdict{"gcra cpu": Inconclusive},
			figures: FiguresRaw,
			check: func(t *testing.T, g *Report) {
				r := rowOf(t, g, "gcra", result.CPU)
				if !(r.DeltaLow < r.Threshold && r.DeltaHigh > r.Threshold) || !(r.MDE > r.Threshold) {
					t.Errorf("cpu interval [%.1f, %.1f]%%, MDE %.1f%%; want an interval across %v%% and an MDE above it", r.DeltaLow, r.DeltaHigh, r.MDE, r.Threshold)
				}
				if !strings.Contains(r.Note, "cannot rule out a regression of 10%") || !strings.Contains(r.Note, formatCI(r)) {
					t.Errorf("note %q; want it to say it cannot rule out a 10%% regression, with the interval %s", r.Note, formatCI(r))
				}
				var md bytes.Buffer
				if err := g.Markdown(&md); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(md.String(), "**inconclusive** (cannot rule out") {
					t.Errorf("Markdown does not show the inconclusive row:\n%s", md.String())
				}
			},
		},
		{
			name: "pass to fail with identical speed",
			current: gateResult(2,
				gateEntry("gcra", "single", verify.Fail, sampleSpec{n: 6}),
				gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6, bytes: 120})),
			wantRegressed: true,
			want:          map[string]Verdict{"gcra verdict": Regression, "gcra throughput": Insignificant},
			figures:       FiguresRaw,
		},
		{
			name: "a failed repeat under a passing entry is a regression",
			current: gateResult(2,
				gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 6, verdicts: map[int]verify.Verdict{4: verify.Fail}}),
				gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6, bytes: 120})),
			wantRegressed: true,
			want:          map[string]Verdict{"gcra verdict": Regression},
			figures:       FiguresRaw,
		},
		{
			name: "fail to pass is an improvement",
			baseline: gateResult(2,
				gateEntry("gcra", "single", verify.Fail, sampleSpec{n: 6}),
				gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6, bytes: 120})),
			current: baselineResult(),
			want:    map[string]Verdict{"gcra verdict": Improvement},
			figures: FiguresRaw,
		},
		{
			name:    "pass to inconclusive is unstable",
			current: gateResult(2, gateEntry("gcra", "single", verify.Inconclusive, sampleSpec{n: 6}), gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6, bytes: 120})),
			want:    map[string]Verdict{"gcra verdict": Inconclusive},
			figures: FiguresRaw,
		},
		{
			name: "efficiency drop of 3 points",
			current: gateResult(2,
				gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 6}),
				gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6, bytes: 120, efficiency: 0.96})),
			wantRegressed: true,
			want:          map[string]Verdict{"token-bucket efficiency": Regression},
			figures:       FiguresRaw,
			check: func(t *testing.T, g *Report) {
				if r := rowOf(t, g, "token-bucket", result.Efficiency); math.Abs(r.Delta+3) > 1e-9 || r.DeltaUnit != "pt" {
					t.Errorf("efficiency delta = %v%s; want -3pt", r.Delta, r.DeltaUnit)
				}
			},
		},
		{
			name: "efficiency drop of half a point is within 1pt",
			current: gateResult(2,
				gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 6}),
				gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6, bytes: 120, efficiency: 0.985})),
			want:    map[string]Verdict{"token-bucket efficiency": OK},
			figures: FiguresRaw,
		},
		{
			name: "memory up 20% with every repeat equal",
			current: gateResult(2,
				gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 6, bytes: 96}),
				gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6, bytes: 120})),
			wantRegressed: true,
			want:          map[string]Verdict{"gcra memory": Regression, "token-bucket memory": Insignificant},
			figures:       FiguresRaw,
		},
		{
			name: "unmeasured CPU is noted, not compared",
			current: gateResult(2,
				gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 6, cpu: -1}),
				gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6, bytes: 120})),
			want:    map[string]Verdict{"gcra throughput": Insignificant},
			figures: FiguresRaw,
			check: func(t *testing.T, g *Report) {
				for _, r := range g.Rows {
					if r.Algorithm == "gcra" && r.Metric == result.CPU {
						t.Errorf("unmeasured CPU got a row: %+v", r)
					}
				}
				if !strings.Contains(strings.Join(g.Notes, "\n"), "gcra-single cpu: current not measured") {
					t.Errorf("notes %q do not explain the missing CPU row", g.Notes)
				}
			},
		},
		{
			name: "entries in one result only are noted",
			current: gateResult(2,
				gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 6}),
				gateEntry("sliding-log", "single", verify.Pass, sampleSpec{n: 6})),
			want:    map[string]Verdict{"gcra throughput": Insignificant},
			figures: FiguresRaw,
			check: func(t *testing.T, g *Report) {
				notes := strings.Join(g.Notes, "\n")
				if !strings.Contains(notes, "token-bucket-single is in the baseline only") || !strings.Contains(notes, "sliding-log-single is in the current run only") {
					t.Errorf("notes = %q", notes)
				}
			},
		},
		{
			name:     "different machine, same code: relative figures, no alarm",
			baseline: withReference(baselineResult(), 1),
			// A machine half as fast: raw figures would all regress by 50%.
			current: withReference(gateResult(4,
				gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 6, slowdown: 2}),
				gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6, slowdown: 2, bytes: 120})), 2),
			want: map[string]Verdict{
				"gcra throughput": Insignificant, "gcra p99": Insignificant, "gcra cpu": Insignificant,
				"token-bucket throughput": Insignificant,
			},
			figures: FiguresRelative,
			check: func(t *testing.T, g *Report) {
				if g.SameMachine || g.Reference != "reference" {
					t.Errorf("SameMachine = %v, Reference = %q; want false, reference", g.SameMachine, g.Reference)
				}
				r := rowOf(t, g, "gcra", result.Throughput)
				if r.Figures != FiguresRelative || math.Abs(r.OldMedian-1) > 0.02 {
					t.Errorf("gcra throughput row = %+v; want relative figures near 1", r)
				}
				if e := rowOf(t, g, "gcra", result.Efficiency); e.Figures != FiguresRaw {
					t.Errorf("efficiency figures = %q; want raw", e.Figures)
				}
				for _, r := range g.Rows {
					if r.Algorithm == "reference" {
						t.Errorf("the reference was gated: %+v", r)
					}
				}
				var md bytes.Buffer
				if err := g.Markdown(&md); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(md.String(), "Figures: **relative** to the reference script `reference`") {
					t.Errorf("Markdown does not say figures are relative:\n%s", md.String())
				}
			},
		},
		{
			name:     "different machine, 25% slower code: regression on relative figures",
			baseline: withReference(baselineResult(), 1),
			current: withReference(gateResult(4,
				gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 6, slowdown: 2 * 1.25}),
				gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6, slowdown: 2, bytes: 120})), 2),
			wantRegressed: true,
			want:          map[string]Verdict{"gcra throughput": Regression, "token-bucket throughput": Insignificant},
			figures:       FiguresRelative,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := tt.baseline
			if base == nil {
				base = baselineResult()
			}
			p := DefaultPolicy()
			if tt.th != (Thresholds{}) {
				p.Thresholds = tt.th
			}
			g, err := Compare(base, tt.current, p)
			if err != nil {
				t.Fatalf("Compare: %v", err)
			}
			if g.Regressed() != tt.wantRegressed {
				t.Errorf("Regressed() = %v; want %v\n%s", g.Regressed(), tt.wantRegressed, g.Summary)
			}
			for _, r := range g.Rows {
				if r.Metric != result.Verdict && r.Metric != result.Efficiency && r.Figures != tt.figures {
					t.Errorf("%s %s compares %s figures; want %s", r.Algorithm, r.Metric, r.Figures, tt.figures)
				}
			}
			for key, want := range tt.want {
				alg, m, _ := strings.Cut(key, " ")
				if r := rowOf(t, g, alg, result.Metric(m)); r.Verdict != want {
					t.Errorf("%s: verdict %q; want %q (row %+v)", key, r.Verdict, want, r)
				}
			}
			if tt.check != nil {
				tt.check(t, g)
			}
			// Every report renders in both formats.
			var md, js bytes.Buffer
			if err := g.Markdown(&md); err != nil {
				t.Errorf("Markdown: %v", err)
			}
			if first, _, _ := strings.Cut(md.String(), "\n"); first != "**"+g.Summary+"**" {
				t.Errorf("Markdown first line = %q; want the summary", first)
			}
			if err := g.JSON(&js); err != nil {
				t.Errorf("JSON: %v", err)
			}
		})
	}
}

func TestGateInputErrors(t *testing.T) {
	tests := []struct {
		name      string
		baseline  *result.Result
		current   *result.Result
		wantErr   error
		wantSide  Side
		wantAlgo  string
		wantInMsg string
	}{
		{
			name:      "5 samples",
			baseline:  baselineResult(),
			current:   gateResult(2, gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 5}), gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6})),
			wantErr:   ErrTooFewSamples,
			wantSide:  Current,
			wantAlgo:  "gcra",
			wantInMsg: "current: gcra on single: too few samples: 5, the gate needs at least 6 a side",
		},
		{
			name:      "no samples in the baseline",
			baseline:  gateResult(2, result.Entry{Algorithm: "gcra", Topology: "single"}),
			current:   baselineResult(),
			wantErr:   ErrTooFewSamples,
			wantSide:  Baseline,
			wantAlgo:  "gcra",
			wantInMsg: "baseline: gcra on single: too few samples: 0",
		},
		{
			name:      "different scenarios",
			baseline:  baselineResult(),
			current:   func() *result.Result { r := baselineResult(); r.Scenario.Name = "zipf"; return r }(),
			wantErr:   ErrScenarioMismatch,
			wantInMsg: `baseline ran "saturation", current ran "zipf"`,
		},
		{
			name:      "different machine without a reference",
			baseline:  baselineResult(),
			current:   gateResult(8, gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 6}), gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6})),
			wantErr:   ErrNoReference,
			wantSide:  Baseline,
			wantInMsg: "the machines differ and the result names no reference script",
		},
		{
			name:     "different machine, reference misses a repeat",
			baseline: withReference(baselineResult(), 1),
			current: func() *result.Result {
				r := withReference(gateResult(8, gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 6})), 1)
				r.Entries[0].Samples = append(r.Entries[0].Samples, sampleSpec{n: 7}.samples()[6])
				return r
			}(),
			wantErr:   ErrNoReference,
			wantSide:  Current,
			wantAlgo:  "gcra",
			wantInMsg: "reference reference has no sample for repeat 7",
		},
		{
			name:      "nothing in common",
			baseline:  baselineResult(),
			current:   gateResult(2, gateEntry("sliding-log", "single", verify.Pass, sampleSpec{n: 6})),
			wantErr:   ErrNothingToCompare,
			wantInMsg: "baseline has gcra-single, token-bucket-single, current has sliding-log-single",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := Compare(tt.baseline, tt.current, DefaultPolicy())
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Compare = %v, %v; want error %v", g, err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantInMsg) {
				t.Errorf("error %q does not contain %q", err, tt.wantInMsg)
			}
			var ie *InputError
			if tt.wantSide == "" {
				if errors.As(err, &ie) {
					t.Errorf("error %v is about one side; want about both", err)
				}
				return
			}
			if !errors.As(err, &ie) {
				t.Fatalf("error %v is not a *InputError", err)
			}
			if ie.Side != tt.wantSide || ie.Algorithm != tt.wantAlgo {
				t.Errorf("InputError side %q algorithm %q; want %q %q", ie.Side, ie.Algorithm, tt.wantSide, tt.wantAlgo)
			}
		})
	}
}

func TestGateReportsEveryTooSmallEntry(t *testing.T) {
	cur := gateResult(2, gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 3}), gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 4}))
	_, err := Compare(baselineResult(), cur, DefaultPolicy())
	for _, want := range []string{"gcra on single: too few samples: 3", "token-bucket on single: too few samples: 4"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not contain %q", err, want)
		}
	}
}

func TestParseGateThresholds(t *testing.T) {
	tests := []struct {
		in      string
		want    Thresholds
		wantErr []string // substrings of the error, every one reported at once
	}{
		{in: "", want: DefaultThresholds()},
		{in: "throughput=10%,p99=15%,cpu=10%,memory=5%,efficiency=1pt", want: DefaultThresholds()},
		{in: "throughput=5%", want: Thresholds{ThroughputPct: 5, P99Pct: 15, CPUPct: 10, MemoryPct: 5, EfficiencyPt: 1}},
		{in: " p99 = 20.5% , efficiency=0.5pt ", want: Thresholds{ThroughputPct: 10, P99Pct: 20.5, CPUPct: 10, MemoryPct: 5, EfficiencyPt: 0.5}},
		{in: "memory=0%", want: Thresholds{ThroughputPct: 10, P99Pct: 15, CPUPct: 10, MemoryPct: 0, EfficiencyPt: 1}},
		{in: "latency=10%", wantErr: []string{`unknown metric "latency" (known: throughput, p99, cpu, memory, efficiency)`}},
		{in: "throughput", wantErr: []string{`"throughput": want metric=value`}},
		{in: "throughput=10", wantErr: []string{"throughput takes a percentage of the baseline median, for example throughput=10%"}},
		{in: "efficiency=1%", wantErr: []string{"efficiency takes points of efficiency, for example efficiency=1pt"}},
		{in: "cpu=ten%", wantErr: []string{`"ten" is not a number`}},
		{in: "cpu=-5%", wantErr: []string{"must be a finite number ≥ 0"}},
		{in: "cpu=NaN%", wantErr: []string{"must be a finite number ≥ 0"}},
		{in: "p99=10%,p99=20%", wantErr: []string{"p99 given twice"}},
		{in: "p99=10%,", wantErr: []string{"item 2 is empty"}},
		{in: "bogus=1%,throughput=x%,efficiency=2", wantErr: []string{`unknown metric "bogus"`, `"x" is not a number`, "efficiency takes points"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseThresholds(tt.in)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("ParseThresholds(%q) error: %v", tt.in, err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("ParseThresholds(%q) mismatch (-want +got):\n%s", tt.in, diff)
				}
				// String renders what Parse reads.
				back, err := ParseThresholds(got.String())
				if err != nil || back != got {
					t.Errorf("ParseThresholds(%q.String() = %q) = %+v, %v; want %+v", tt.in, got.String(), back, err, got)
				}
				return
			}
			if !errors.Is(err, ErrBadThreshold) {
				t.Fatalf("ParseThresholds(%q) error = %v; want ErrBadThreshold", tt.in, err)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("ParseThresholds(%q) error %q does not contain %q", tt.in, err, w)
				}
			}
		})
	}
}

func TestGateSummarize(t *testing.T) {
	tests := []struct {
		in                 []float64
		median, spreadWant float64
	}{
		// Sorted 1..6: Q1 at h = 1.25 → 2.25, Q3 at h = 3.75 → 4.75, median 3.5: (4.75-2.25)/3.5.
		{[]float64{6, 1, 5, 2, 4, 3}, 3.5, 2.5 / 3.5},
		{[]float64{100, 100, 100, 100, 100, 100}, 100, 0},
		{[]float64{0, 0, 0, 0, 0, 0}, 0, 0},
		{[]float64{-1, 0, 0, 0, 0, 1}, 0, 0},
		{[]float64{-2, -1, 0, 0, 1, 2}, 0, math.Inf(1)},
		// One stray repeat does not make a set unstable.
		{[]float64{100, 101, 99, 100, 102, 150}, 100.5, (101.75 - 100) / 100.5},
	}
	for _, tt := range tests {
		got := summarize(tt.in)
		if math.Abs(got.median-tt.median) > 1e-12 || !(got.spread == tt.spreadWant || math.Abs(got.spread-tt.spreadWant) < 1e-12) {
			t.Errorf("summarize(%v) = %+v; want median %v spread %v", tt.in, got, tt.median, tt.spreadWant)
		}
	}
}

// gateFixtures are the result.json files under testdata, built from the synthetic results
// above; `go test ./report -run TestGateFixtures -update` rewrites them.
func gateFixtures() map[string]*result.Result {
	slower := gateResult(2,
		gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 6, slowdown: 1.25}),
		gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6, bytes: 120}))
	failed := gateResult(2,
		gateEntry("gcra", "single", verify.Fail, sampleSpec{n: 6, verdicts: map[int]verify.Verdict{2: verify.Fail}}),
		gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6, bytes: 120}))
	failed.Entries[0].Verification.Reasons = []string{"1 definite violation"}
	failed.Entries[0].Verification.DefiniteViolations = 1
	five := gateResult(2,
		gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 5}),
		gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6, bytes: 120}))
	other := baselineResult()
	other.Scenario.Name = "zipf"
	noisy := func(slowdown float64, noise []float64) *result.Result {
		return gateResult(2,
			gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 6, slowdown: slowdown, noise: noise}),
			gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6, bytes: 120}))
	}
	// Issue 28 item 15: the same scenario at half the rate, every figure halved with it (the
	// reference's too), was called the machine's drift.
	halfRate := withReference(gateResult(2,
		gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 6, slowdown: 2}),
		gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6, slowdown: 2, bytes: 120})), 2)
	halfRate.Scenario.Settings = gateSettings(100)
	return map[string]*result.Result{
		"baseline-reference": withReference(baselineResult(), 1),
		"current-half-rate":  halfRate,
		"baseline-noisy":     noisy(1, gateNoise),
		"current-noisy-same": noisy(1, gateNoise[2:]),
		"current-noisy-4x":   noisy(4, gateNoise),
		"baseline":           baselineResult(),
		"current-same":       baselineResult(),
		"current-slower":     slower,
		"current-failed":     failed,
		"current-5":          five,
		"current-zipf":       other,
	}
}

// TestGateFixtures checks that testdata holds what gateFixtures builds, and that the gate's
// Markdown for baseline against current-slower matches testdata/slower.md.
func TestGateFixtures(t *testing.T) {
	dir := "testdata"
	for name, want := range gateFixtures() {
		path := filepath.Join(dir, name, result.FileName)
		if *update {
			if err := want.Write(filepath.Dir(path)); err != nil {
				t.Fatal(err)
			}
		}
		got, err := result.Read(path)
		if err != nil {
			t.Fatalf("%v (run with -update to regenerate)", err)
		}
		want.Files.Result = result.FileName
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s differs from gateFixtures (-want +got); run with -update:\n%s", path, diff)
		}
	}

	base, err := result.Read(filepath.Join(dir, "baseline", result.FileName))
	if err != nil {
		t.Fatal(err)
	}
	cur, err := result.Read(filepath.Join(dir, "current-slower", result.FileName))
	if err != nil {
		t.Fatal(err)
	}
	g, err := Compare(base, cur, DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := g.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join(dir, "slower.md")
	if *update {
		if err := os.WriteFile(golden, md.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), md.String()); diff != "" {
		t.Errorf("Markdown mismatch (-%s +got); run with -update:\n%s", golden, diff)
	}
}

// TestGateMinSamplesRationale checks what MinSamples's doc comment says of the 99% interval
// (6 against 6: c = 2; 5 against 5: c = 0; 4 against 4: none) and the p-values of complete
// separation and of a little overlap.
func TestGateMinSamplesRationale(t *testing.T) {
	for _, tt := range []struct{ n, c int }{{6, 2}, {5, 0}, {4, -1}} {
		if got := criticalU(tt.n, tt.n, Alpha/2); got != tt.c {
			t.Errorf("criticalU(%d, %d, %v) = %d; want %d", tt.n, tt.n, Alpha/2, got, tt.c)
		}
	}
	seq := func(from, n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = float64(from + i)
		}
		return out
	}
	tests := []struct {
		name   string
		old    []float64
		cur    []float64
		wantP  float64
		within float64
	}{
		{"6 v 6 separated", seq(0, 6), seq(10, 6), 0.0022, 0.0001},
		// Swapping ranks until U = 3: the largest old value above three new ones (12.5 > 10, 11, 12).
		{"6 v 6, U = 3", []float64{0, 1, 2, 3, 4, 12.5}, seq(10, 6), 0.015, 0.001},
		{"4 v 4 separated", seq(0, 4), seq(10, 4), 0.029, 0.001},
		{"3 v 3 separated", seq(0, 3), seq(10, 3), 0.1, 0.001},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := make([]result.Sample, len(tt.old))
			cur := make([]result.Sample, len(tt.cur))
			for i, v := range tt.old {
				old[i] = result.Sample{Repeat: i + 1, ThroughputRPS: 1000 + v, Efficiency: 1}
			}
			for i, v := range tt.cur {
				cur[i] = result.Sample{Repeat: i + 1, ThroughputRPS: 1000 + v, Efficiency: 1}
			}
			row, note := compareMetric(metricInput{def: metricDefs[0], old: &result.Entry{Samples: old}, cur: &result.Entry{Samples: cur}, kinds: []Figures{FiguresRaw}})
			if note != "" {
				t.Fatal(note)
			}
			if math.Abs(row.P-tt.wantP) > tt.within {
				t.Errorf("p = %.4f; want %.4f", row.P, tt.wantP)
			}
		})
	}
}

// TestGateUCritical checks the exact critical values of U against the published two-sided
// α = 0.05 table (for example Siegel & Castellan, table J): P(U ≤ c) ≤ 0.025.
func TestGateUCritical(t *testing.T) {
	tests := []struct{ m, n, want int }{
		{3, 3, -1}, {4, 4, 0}, {5, 5, 2}, {6, 6, 5}, {7, 7, 8}, {8, 8, 13}, {10, 10, 23},
		{6, 8, 8}, {8, 6, 8}, {5, 10, 8}, {20, 20, 127},
	}
	for _, tt := range tests {
		if got := uCritical(tt.m, tt.n, 0.025); got != tt.want {
			t.Errorf("uCritical(%d, %d, 0.025) = %d; want %d", tt.m, tt.n, got, tt.want)
		}
	}
	// For 6 against 6 the counts of U = 0..6 are the partitions 1 1 2 3 5 7 11 of C(12, 6) = 924.
	for _, tt := range []struct {
		p    float64
		want int
	}{{1.0 / 924, 0}, {2.0 / 924, 1}, {19.0 / 924, 5}, {29.0 / 924, 5}, {30.0 / 924, 6}, {0.5 / 924, -1}} {
		if got := uCritical(6, 6, tt.p); got != tt.want {
			t.Errorf("uCritical(6, 6, %.5f) = %d; want %d", tt.p, got, tt.want)
		}
	}
}

// TestGateShiftCI checks the interval on a hand-worked case: old 0..5 and new 10..15 give the
// 36 differences 5..15 (d = j − i + 10), whose 6th smallest is 7 and 6th largest is 13.
func TestGateShiftCI(t *testing.T) {
	old := []float64{0, 1, 2, 3, 4, 5}
	cur := []float64{10, 11, 12, 13, 14, 15}
	if lo, hi := shiftCI(old, cur, 1, 0.05); lo != 7 || hi != 13 {
		t.Errorf("interval = [%v, %v]; want [7, 13]", lo, hi)
	}
	if lo, hi := shiftCI(old, cur, 2, 0.05); lo != 14 || hi != 26 {
		t.Errorf("scaled interval = [%v, %v]; want [14, 26]", lo, hi)
	}
	if lo, hi := shiftCI(old[:3], cur[:3], 1, 0.05); !math.IsInf(lo, -1) || !math.IsInf(hi, 1) {
		t.Errorf("3 against 3: interval = [%v, %v]; want unbounded", lo, hi)
	}
}

// TestRowJSONNotFinite: a side whose median is 0 has an infinite spread, which JSON cannot hold;
// the report is still written, with null there (regression: "json: unsupported value: +Inf").
func TestRowJSONNotFinite(t *testing.T) {
	cur := gateResult(2, gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 6}), gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6, bytes: 120}))
	for i := range cur.Entries[0].Samples {
		if i < 4 {
			cur.Entries[0].Samples[i].ThroughputRPS = 0
		}
	}
	g, err := Compare(baselineResult(), cur, DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	r := rowOf(t, g, "gcra", result.Throughput)
	if !math.IsInf(r.NewSpread, 1) {
		t.Fatalf("throughput row = %+v; want an infinite current spread", r)
	}
	var js bytes.Buffer
	if err := g.JSON(&js); err != nil {
		t.Fatalf("JSON: %v", err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"new_spread": null`) || len(back.Rows) != len(g.Rows) || back.Rows[0].Verdict != r.Verdict {
		t.Errorf("JSON round trip lost the row: %s", js.String())
	}
}
