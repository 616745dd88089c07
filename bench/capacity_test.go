package bench_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/limitbench/limitbench/capacity"
	"github.com/limitbench/limitbench/internal/cpus"
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
	single := []redisenv.Topology{redisenv.TopologySingle}
	sat, err := scenarios.Load("../scenarios/saturation.yaml")
	if err != nil {
		b.Fatal(err)
	}
	if err := sat.Apply(scenarios.Overrides{Algorithms: []string{"gcra"}}); err != nil {
		b.Fatal(err)
	}
	// GOMAXPROCS as `limitbench run` sets it (cpus.Apply), restored after.
	_, undo := cpus.Apply(cpus.Policy{Env: env, Topologies: single})
	out, err := runner.Run(ctx, runner.Options{Scenario: sat, Env: env, NoReference: true})
	undo()
	if err != nil || len(out.Result.Entries) != 1 {
		b.Fatalf("saturation run: %v", err)
	}
	s := out.Result.Entries[0].ThroughputRPS

	slo, err := scenarios.ParseThreshold("p99 < 2ms")
	if err != nil {
		b.Fatal(err)
	}
	// Pinned, held awake and with GOMAXPROCS as `limitbench capacity` sets them.
	o := capacity.Options{Scenario: capacity.Scenario(), Algorithm: "gcra", SLO: &slo, Env: env, MemorySubjects: -1}
	st, undo := cpus.Apply(cpus.Policy{Env: env, Topologies: single, Pin: true, Awake: true})
	o.CPUs = st
	start := time.Now()
	pinned, err := capacity.Run(ctx, o)
	took := time.Since(start)
	undo()
	if err != nil {
		b.Fatalf("capacity p99 < 2ms: %v", err)
	}
	st, undo = cpus.Apply(cpus.Policy{Env: env, Topologies: single, NotPinned: "--no-pin"})
	o = capacity.Options{Scenario: capacity.Scenario(), Algorithm: "gcra", Env: env, MemorySubjects: -1, CPUs: st}
	none, err := capacity.Run(ctx, o)
	undo()
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
