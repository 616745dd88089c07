package algorithms

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/scripts"
)

// loadScript reads file (a name in scripts.FS, for example "gcra.lua") and loads it with SCRIPT
// LOAD on every master of c: each master of a *redis.ClusterClient (ForEachMaster), otherwise c
// itself. Loading everywhere up front is what lets runScript use a bare EVALSHA inside pipelines,
// where go-redis cannot fall back to EVAL on NOSCRIPT.
func loadScript(ctx context.Context, c redis.UniversalClient, file string) (*redis.Script, error) {
	src, err := scripts.FS.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read script %s: %w", file, err)
	}
	s := redis.NewScript(string(src))
	if cc, ok := c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			return s.Load(ctx, m).Err()
		})
	} else {
		err = s.Load(ctx, c).Err()
	}
	if err != nil {
		return nil, fmt.Errorf("load script %s: %w", file, err)
	}
	return s, nil
}

// runScript sends s on c. On a client it is (*redis.Script).Run: EVALSHA, then EVAL when the server
// answers NOSCRIPT (a script cache flushed after Prepare). On a pipeline (redis.Pipeliner) it
// queues a bare EVALSHA, since a queued command has no reply to fall back on; loadScript put the
// script on every master beforehand. The returned command's result is read after the pipeline's
// Exec.
func runScript(ctx context.Context, c redis.Cmdable, s *redis.Script, keys []string, args ...any) *redis.Cmd {
	if _, ok := c.(redis.Pipeliner); ok {
		return s.EvalSha(ctx, c, keys, args...)
	}
	return s.Run(ctx, c, keys, args...)
}
