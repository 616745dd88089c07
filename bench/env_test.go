package bench_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/limitbench/limitbench/internal/redisenv"
)

// benchStart measures how long Start takes to return a ready environment (ns/op counts Start
// only; Stop runs with the timer stopped). DESIGN targets: single process < 100 ms, process
// cluster < 3 s (Redis holds a new master for 2 s), container cluster < 4 s.
func benchStart(b *testing.B, cfg redisenv.Config) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		b.Skipf("redis-server is not on PATH: %v", err)
	}
	ctx := context.Background()
	for b.Loop() {
		t, err := redisenv.Start(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := t.Stop(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

func BenchmarkStartSingleProcess(b *testing.B) {
	benchStart(b, redisenv.Config{Backend: redisenv.BackendProcess})
}

func BenchmarkStartClusterProcess(b *testing.B) {
	benchStart(b, redisenv.Config{Backend: redisenv.BackendProcess, Topology: redisenv.TopologyCluster})
}

func BenchmarkStartClusterContainer(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "info").CombinedOutput(); err != nil {
		b.Skipf("no Docker engine answers (docker info: %v: %.200s)", err, out)
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		b.Skipf("redis-server is not on PATH (the host image is built from it): %v", err)
	}
	// Build the host image outside the measurement.
	bctx, bcancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer bcancel()
	if _, err := redisenv.BuildHostImage(bctx, b.Logf); err != nil {
		b.Fatal(err)
	}
	benchStart(b, redisenv.Config{Backend: redisenv.BackendContainer, Image: redisenv.HostImage, Topology: redisenv.TopologyCluster})
}
