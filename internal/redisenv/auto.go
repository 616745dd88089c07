package redisenv

import (
	"context"
	"fmt"
	"os/exec"
)

// startAuto picks process when redis-server is on PATH, else container when an engine answers
// and the image is present locally, else fails saying what to install.
func startAuto(ctx context.Context, cfg Config) (*Target, error) {
	if p, err := exec.LookPath("redis-server"); err == nil {
		t, err := startProcess(ctx, cfg, "auto: redis-server found at "+p)
		if err != nil {
			return nil, err
		}
		return t, nil
	}
	return nil, fmt.Errorf("%w: auto: redis-server is not on PATH and no usable container engine: install redis-server (apt-get install redis-server, brew install redis) or Docker", ErrUnavailable)
}
