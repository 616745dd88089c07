package redisenv

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// globEscape escapes the glob metacharacters of s for SCAN MATCH.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ScanPrefix calls fn with every batch of the keys that start with prefix, on every master
// (SCAN with MATCH on the escaped prefix, COUNT 1000), with that master's client. Masters are
// scanned concurrently, the batches of one master one after the other; batches are never empty.
// An error from fn or from SCAN stops that master's scan; the errors are joined, each prefixed
// with the master's address. prefix must not be empty: that would be every key.
func (t *Target) ScanPrefix(ctx context.Context, prefix string, fn func(ctx context.Context, c *redis.Client, keys []string) error) error {
	if prefix == "" {
		return fmt.Errorf("%w: empty key prefix", ErrBadConfig)
	}
	match := globEscape(prefix) + "*"
	return t.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, match, 1000).Result()
			if err != nil {
				return fmt.Errorf("SCAN %s: %w", match, err)
			}
			if len(keys) > 0 {
				if err := fn(ctx, c, keys); err != nil {
					return err
				}
			}
			if next == 0 {
				return nil
			}
			cursor = next
		}
	})
}

// ClaimPrefix returns an error wrapping ErrPrefixInUse if any master holds a key that starts with
// prefix, so a run never mixes its keys with someone else's. prefix must not be empty.
func (t *Target) ClaimPrefix(ctx context.Context, prefix string) error {
	return t.ScanPrefix(ctx, prefix, func(_ context.Context, _ *redis.Client, keys []string) error {
		return fmt.Errorf("%w: %q holds key %q", ErrPrefixInUse, prefix, keys[0])
	})
}

// CleanupPrefix removes every key that starts with prefix, with SCAN and UNLINK on every master.
// It never touches other keys and never flushes. prefix must not be empty.
func (t *Target) CleanupPrefix(ctx context.Context, prefix string) error {
	return t.ScanPrefix(ctx, prefix, func(ctx context.Context, c *redis.Client, keys []string) error {
		// One UNLINK per key: keys of different slots cannot share a command on a cluster.
		pipe := c.Pipeline()
		for _, k := range keys {
			pipe.Unlink(ctx, k)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("UNLINK: %w", err)
		}
		return nil
	})
}
