package report

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

var (
	regenFixture = flag.Bool("regen-fixture", false, "rewrite testdata/result.json and testdata/result-b.json from syntheticResult")
)

// fixtureEntry describes one synthetic entry.
type fixtureEntry struct {
	alg, contract    string
	mayViolate       bool
	p50us            float64 // median latency, µs
	tail             float64 // lognormal sigma
	verdict          verify.Verdict
	reasons          []string
	expected         bool
	definite         int64
	possible         int64
	excess           int64
	where            string
	ratio, eff       float64
	bytes, cpu, usec float64
	errors, late     int64
	overAdmit        float64 // admitted/limit in violation bins
}

// syntheticResult builds a deterministic result of the demo scenario on a single node. run 0 and
// run 1 differ a little (a second run of the same scenario) for comparison tests.
func syntheticResult(t testing.TB, run int) *result.Result {
	t.Helper()
	rng := rand.New(rand.NewPCG(42, uint64(run)))
	start := time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC).Add(time.Duration(run) * time.Hour)
	r := &result.Result{
		Schema: result.SchemaVersion,
		Scenario: result.Scenario{
			Name: "demo", Description: "Every built-in family at 200 requests/s over 50 keys with a 100/s limit per key, plus one published bug that must be caught.",
			File: "scenarios/demo.yaml", Seed: 42, Topologies: []string{"single"},
			Settings: &result.Settings{
				Limit: algorithms.Limit{Limit: 100, Window: time.Second, Burst: 10, ConsumerLimit: 100}, Cost: 1, WarmupS: 2, DurationS: 20,
				Clients: 8, ClientMode: load.ModePlain, Arrival: &arrival.Arrival{Rate: 200},
				Keys:       load.Keys{Count: 50, Distribution: load.Zipf, ZipfS: 1.1},
				Algorithms: []string{"gcra", "sliding-log", "sliding-counter", "fixed-window-published", "token-bucket", "sliding-log-published"},
				Expect:     result.Expect{Violations: []string{"fixed-window-published"}, MayViolate: []string{"sliding-log-published"}},
				Thresholds: []string{"errors < 1%", "gcra: efficiency > 0.9", "sliding-counter: efficiency > 0.95"},
			},
		},
		Environment: result.Environment{
			Backend: "process", Topology: "single", RedisVersion: "7.0.15", Nodes: 1, CPUs: 2, GOMAXPROCS: 2,
			GoVersion: "go1.26.0", HarnessVersion: "v0.1.0", OS: "linux", Arch: "amd64",
		},
		StartedAt: start, FinishedAt: start.Add(110 * time.Second),
		Reference: "reference",
	}
	slow := 1 + 0.15*float64(run) // the second run is a little slower
	fixtures := []fixtureEntry{
		{alg: "gcra", contract: "token-bucket(10, 100/1s)", p50us: 180, tail: 0.35, verdict: verify.Pass, ratio: 0.96, eff: 0.998, bytes: 72, cpu: 6.1, usec: 4.2},
		{alg: "sliding-log", contract: "sliding-window(100, 1s)", p50us: 260, tail: 0.45, verdict: verify.Pass, possible: 2, ratio: 1, eff: 1, bytes: 2890, cpu: 14.5, usec: 11.9},
		{alg: "sliding-counter", contract: "fixed-window(100, 1s)", p50us: 200, tail: 0.4, verdict: verify.Pass, ratio: 0.99, eff: 0.93, bytes: 150, cpu: 7.2, usec: 5.0},
		{alg: "fixed-window-published", contract: "fixed-window(100, 1m0s)", p50us: 210, tail: 0.5, verdict: verify.Fail, expected: true,
			reasons: []string{"definite violations of fixed-window(100, 1m0s)"}, definite: 37, possible: 41, excess: 100,
			where: "on key {demo}:k3 in the window starting at 60.000 s", ratio: 2, eff: 1.31, bytes: 96, cpu: 9.0, usec: 6.6, overAdmit: 2},
		{alg: "token-bucket", contract: "token-bucket(10, 100/1s)", p50us: 240, tail: 0.9, verdict: verify.Inconclusive,
			reasons: []string{"the load generator fell 3.2% behind its schedule (limit 1%)"}, ratio: 0.9, eff: 0.99, bytes: 110, cpu: 8.8, usec: 6.0, errors: 12, late: 128},
		{alg: "sliding-log-published", contract: "sliding-window(100, 1s)", mayViolate: true, p50us: 320, tail: 0.5, verdict: verify.Fail,
			reasons: []string{"definite violations of sliding-window(100, 1s)"}, definite: 3, possible: 9, excess: 2,
			where: "on key {demo}:k0 between 11.990 s and 12.990 s", ratio: 1.02, eff: 1.01, bytes: 3120, cpu: 18.5, usec: 15.1, overAdmit: 1.02},
		{alg: "reference", contract: "none", p50us: 150, tail: 0.3, verdict: verify.Inconclusive,
			reasons: []string{"no contract: nothing was verified"}, bytes: 56, cpu: 4.0, usec: 2.1},
	}
	// thresholds are the scenario's, as the runner checks them: metric value per entry.
	thresholds := []struct {
		text, alg string
		value     func(e *result.Entry) float64
		holds     func(v float64) bool
		shown     func(v float64) string
	}{
		{"errors < 1%", "", func(e *result.Entry) float64 { return float64(e.Errors+e.Unknown) / float64(e.Requests) },
			func(v float64) bool { return v < 0.01 }, func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }},
		{"gcra: efficiency > 0.9", "gcra", func(e *result.Entry) float64 { return e.Accuracy.Efficiency },
			func(v float64) bool { return v > 0.9 }, func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }},
		{"sliding-counter: efficiency > 0.95", "sliding-counter", func(e *result.Entry) float64 { return e.Accuracy.Efficiency },
			func(v float64) bool { return v > 0.95 }, func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }},
	}
	const bins, binS = 20, 1.0
	for _, f := range fixtures {
		lat := hdrhistogram.New(1, 60_000_000, 3)
		svc := hdrhistogram.New(1, 60_000_000, 3)
		n := 4000
		for i := range n {
			s := f.p50us * slow * math.Exp(f.tail*rng.NormFloat64())
			queue := 0.0
			if i%97 == 0 {
				queue = 2000 * rng.Float64() // occasional stalls the service time does not see
			}
			if err := svc.RecordValue(int64(s)); err != nil {
				t.Fatal(err)
			}
			if err := lat.RecordValue(int64(s + queue)); err != nil {
				t.Fatal(err)
			}
		}
		e := result.Entry{
			Algorithm: f.alg, Topology: "single",
			Requests: int64(n), Errors: f.errors, Late: f.late, LateFraction: float64(f.late) / float64(n),
			DurationS: bins * binS, OfferedRPS: 200,
			Verification: verify.Summary{
				Verdict: f.verdict, Reasons: f.reasons, Contract: f.contract,
				DefiniteViolations: f.definite, PossibleViolations: f.possible, WorstExcess: f.excess, Where: f.where,
				ExpectedViolation: f.expected, MayViolate: f.mayViolate,
			},
			Accuracy: verify.AccuracySummary{FalseDenials: int64(math.Round((1 - math.Min(f.eff, 1)) * 2000)), MaxWindowRatio: f.ratio, Efficiency: f.eff},
			Server:   result.Server{USecPerCall: f.usec, CPUUSecPerDecision: f.cpu, BytesPerKey: f.bytes, Keys: 50},
			Timeline: result.Timeline{Series: load.Series{BinS: binS}},
		}
		if err := e.SetHistograms(lat, svc); err != nil {
			t.Fatal(err)
		}
		for b := range bins {
			offered := int64(190 + rng.IntN(21))
			limit := 100.0 * binS
			admitted := int64(math.Min(float64(offered), limit*(0.95+0.04*rng.Float64())))
			if f.overAdmit > 0 && b%10 == 9 {
				admitted = int64(math.Min(float64(offered), limit*f.overAdmit))
				e.Verification.ViolationTimesS = append(e.Verification.ViolationTimesS, float64(b)*binS+0.5)
			}
			if f.contract == "none" { // the reference admits everything and has no limit
				admitted = offered
			}
			errs := int64(0)
			if f.errors > 0 && b == 7 {
				errs = f.errors
			}
			e.Timeline.Offered = append(e.Timeline.Offered, offered)
			e.Timeline.Admitted = append(e.Timeline.Admitted, admitted)
			e.Timeline.Denied = append(e.Timeline.Denied, offered-admitted-errs)
			e.Timeline.Errors = append(e.Timeline.Errors, errs)
			if f.contract != "none" {
				e.Timeline.Limit = append(e.Timeline.Limit, limit)
			}
			e.Allowed += admitted
			e.Denied += offered - admitted - errs
		}
		e.Requests = e.Allowed + e.Denied + e.Errors
		e.ThroughputRPS = float64(e.Allowed+e.Denied) / e.DurationS
		if f.eff > 0 {
			e.Accuracy.IdealAllowed = int64(math.Round(float64(e.Allowed) / f.eff))
		} else {
			e.Accuracy = verify.AccuracySummary{}
		}
		if f.alg != r.Reference {
			for _, th := range thresholds {
				if th.alg != "" && th.alg != f.alg {
					continue
				}
				v := th.value(&e)
				c := verify.ThresholdCheck{Threshold: th.text, Status: verify.ThresholdHeld, Value: v, Shown: th.shown(v)}
				if !th.holds(v) {
					c.Status = verify.ThresholdBroken
					e.Verification.Verdict = verify.Fail
					e.Verification.Reasons = append(e.Verification.Reasons,
						fmt.Sprintf("threshold %q broken: efficiency = %s", th.text, c.Shown))
				}
				e.Verification.Thresholds = append(e.Verification.Thresholds, c)
			}
		}
		e.Samples = []result.Sample{
			{Repeat: 1, ThroughputRPS: e.ThroughputRPS, LatencyUS: e.LatencyUS, Efficiency: f.eff, USecPerCall: f.usec, CPUUSecPerDecision: f.cpu, BytesPerKey: f.bytes, Verdict: f.verdict},
		}
		r.Entries = append(r.Entries, e)
	}
	return r
}

// TestRegenFixture rewrites testdata/result.json and testdata/result-b.json with -regen-fixture.
// The golden report.md is derived from testdata/result.json, which otherwise never changes.
func TestRegenFixture(t *testing.T) {
	if !*regenFixture {
		t.Skip("run with -regen-fixture to rewrite testdata/result*.json")
	}
	for run, name := range []string{"result.json", "result-b.json"} {
		r := syntheticResult(t, run)
		dir := t.TempDir()
		if err := r.Write(dir); err != nil {
			t.Fatal(err)
		}
		if err := copyFile(filepath.Join(dir, result.FileName), filepath.Join("testdata", name)); err != nil {
			t.Fatal(err)
		}
	}
}
