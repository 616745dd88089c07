package redisenv

import (
	"context"
	"os/exec"
	"testing"
)

// BenchmarkStartProcess starts and stops a single redis-server process: the cost of a process
// start, including the background sweep of leftover containers. Run it once as it is and once
// with DOCKER_HOST=unix:///nonexistent (no engine answers) to see what the sweep adds.
func BenchmarkStartProcess(b *testing.B) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		b.Skipf("redis-server is not on PATH: %v", err)
	}
	ctx := context.Background()
	for b.Loop() {
		t, err := Start(ctx, Config{Backend: BackendProcess})
		if err != nil {
			b.Fatal(err)
		}
		if err := t.Stop(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
