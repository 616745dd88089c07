package redisenv

import (
	"context"
	"fmt"
	"os/exec"
)

// startAuto picks process when redis-server is on PATH, else container when a Docker engine
// answers and the image is already present locally (auto never pulls), else fails saying what to
// install. Info.Chosen says which and why.
func startAuto(ctx context.Context, cfg Config) (*Target, error) {
	if p, err := exec.LookPath("redis-server"); err == nil {
		return startProcess(ctx, cfg, "auto: redis-server found at "+p)
	}
	cli, err := dockerClient(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: auto: redis-server is not on PATH and %w; install redis-server (apt-get install redis-server, brew install redis) or start Docker with image %s present", ErrUnavailable, err, cfg.Image)
	}
	if cfg.Image == HostImage {
		_ = cli.Close()
		return nil, fmt.Errorf("%w: auto: redis-server is not on PATH, and image host is built from the local redis-server; install redis-server (apt-get install redis-server, brew install redis), then auto runs it directly and `make redis-image` (or --backend container --image host) builds the offline image; or name an image present locally with --image", ErrUnavailable)
	}
	present := imagePresent(ctx, cli, cfg.Image)
	_ = cli.Close()
	if !present {
		return nil, fmt.Errorf("%w: auto: redis-server is not on PATH and image %s is not present locally (auto never pulls); install redis-server (apt-get install redis-server, brew install redis), or run `docker pull %s`, or use --backend container to let it pull", ErrUnavailable, cfg.Image, cfg.Image)
	}
	return startContainer(ctx, cfg, "auto: redis-server is not on PATH; a Docker engine answers and has image "+cfg.Image)
}
