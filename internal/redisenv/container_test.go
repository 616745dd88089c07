package redisenv_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/limitbench/limitbench/internal/redisenv"
)

// needEngine skips the test, with the reason, when no Docker engine answers.
func needEngine(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		t.Skipf("no Docker engine answers (docker info: %v: %s); container tests skipped", err, out)
	}
	needRedisServer(t) // the offline "host" image is built from the local redis-server
}

func TestContainerSingle(t *testing.T) {
	needEngine(t)
	target := startT(t, redisenv.Config{Backend: redisenv.BackendContainer, Image: redisenv.HostImage})
	if target.Info.Backend != redisenv.BackendContainer || target.Info.Image == "" {
		t.Errorf("Info = %+v, want container with an image", target.Info)
	}
	checkSingle(t, target)
}

func TestContainerCluster(t *testing.T) {
	needEngine(t)
	target := startT(t, redisenv.Config{Backend: redisenv.BackendContainer, Image: redisenv.HostImage,
		Topology: redisenv.TopologyCluster})
	checkCluster(t, target, 3)
}
