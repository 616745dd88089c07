package redisenv

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Hold waits for ctx to end, pinging every master every interval (each ping bounded by interval);
// it returns nil when ctx ends, and an error when some master has not answered misses checks in a
// row: the environment was lost.
func (t *Target) Hold(ctx context.Context, interval time.Duration, misses int) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		pctx, cancel := context.WithTimeout(ctx, interval)
		err := t.ForEachMaster(pctx, func(ctx context.Context, c *redis.Client) error { return c.Ping(ctx).Err() })
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			failures = 0
			continue
		}
		if failures++; failures >= misses {
			return fmt.Errorf("environment lost: %w", err)
		}
	}
}
