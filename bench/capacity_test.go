package bench_test

import (
	"context"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/runner"
	"github.com/limitbench/limitbench/scenarios"
)

// BenchmarkCapacity is issue 7's capacity check, measured rather than asserted (timings on a
// shared machine are noisy): `limitbench run scenarios/saturation.yaml` for gcra gives the
// saturation throughput S; then `limitbench capacity --algorithm gcra --slo "p99 < 2ms"` on the
// process backend, pinned as the command pins it, and the same sweep with the throughput
// criterion alone (--slo none --no-pin, the conditions of the saturation run). It reports, from
// this one run:
//
//   - slo/saturation and none/saturation: the sustainable rates over S (target: within 20%);
//   - slo-s: how long the sweep under the objective took, in seconds (target: under 120).
//
// It ignores b.N.
//
//	go test -run '^$' -bench Capacity -benchtime 1x -timeout 10m ./bench/
func BenchmarkCapacity(b *testing.B) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		b.Skipf("redis-server is not on PATH: %v", err)
	}
	ctx := context.Background()
	env := redisenv.Config{Backend: redisenv.BackendProcess}
	// GOMAXPROCS as the commands set it (runner.GeneratorProcs), restored at the end.
	procs := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(procs)
	local, _ := runner.GeneratorProcs(runtime.NumCPU(), 1)
	runtime.GOMAXPROCS(local)
	sat, err := scenarios.Load("../scenarios/saturation.yaml")
	if err != nil {
		b.Fatal(err)
	}
	if err := sat.Apply(scenarios.Overrides{Algorithms: []string{"gcra"}}); err != nil {
		b.Fatal(err)
	}
	out, err := runner.Run(ctx, runner.Options{Scenario: sat, Env: env, NoReference: true})
	if err != nil || len(out.Result.Entries) != 1 {
		b.Fatalf("saturation run: %v", err)
	}
	s := out.Result.Entries[0].ThroughputRPS

	slo, err := scenarios.ParseThreshold("p99 < 2ms")
	if err != nil {
		b.Fatal(err)
	}
	// Pinned and with GOMAXPROCS as `limitbench capacity` sets them.
	o := runner.CapacityOptions{Scenario: runner.CapacityScenario(), Algorithm: "gcra", SLO: &slo, Env: env, MemorySubjects: -1}
	restore := runner.PinHarness(&o.Pin)
	o.Pin.Awake = runner.HoldCPUsAwake
	if move := o.Pin.Harness; move != nil {
		o.Pin.Harness = func() ([]int, error) {
			cpus, err := move()
			if err == nil {
				runtime.GOMAXPROCS(len(cpus))
			}
			return cpus, err
		}
	}
	start := time.Now()
	pinned, err := runner.Capacity(ctx, o)
	took := time.Since(start)
	runtime.GOMAXPROCS(local)
	restore()
	if err != nil {
		b.Fatalf("capacity p99 < 2ms: %v", err)
	}
	o = runner.CapacityOptions{Scenario: runner.CapacityScenario(), Algorithm: "gcra", Env: env, MemorySubjects: -1,
		Pin: runner.CapacityPinning{NotPinned: "--no-pin"}}
	none, err := runner.Capacity(ctx, o)
	if err != nil {
		b.Fatalf("capacity --slo none: %v", err)
	}
	b.Logf("saturation run %.0f/s; capacity p99 < 2ms (%s; CPU idle states %s) %.0f/s in %s (probe %.0f/s); capacity --slo none --no-pin %.0f/s",
		s, pinned.Pinning.Note, pinned.Pinning.AwakeNote, pinned.SustainableRPS, took.Round(time.Millisecond), pinned.Probe.AchievedRPS, none.SustainableRPS)
	for _, st := range pinned.Steps {
		b.Logf("  %s %.0f/s: achieved %.0f/s, p50 %.0f µs, p99 %.0f µs, good %v %s", st.Phase, st.OfferedRPS, st.AchievedRPS,
			st.LatencyUS.P50, st.LatencyUS.P99, st.Good, st.Reason)
	}
	b.ReportMetric(pinned.SustainableRPS/s, "slo/saturation")
	b.ReportMetric(none.SustainableRPS/s, "none/saturation")
	b.ReportMetric(took.Seconds(), "slo-s")
}
