package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

// TestRedisLog: go-redis's own lines are not shown, except a Sentinel naming the master, which
// is shown once per address in limitbench's words; LIMITBENCH_REDIS_LOG=1 shows every line. The
// failover is real (a process Sentinel group), so the format go-redis logs is the one matched.
func TestRedisLog(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Sentinel group and fails it over")
	}
	var buf syncBuffer
	setRedisLogger(t, newRedisLog(&buf, "env", false))
	target := redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess, Topology: redisenv.TopologySentinel})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := target.Client.Set(ctx, "k", 1, 0).Err(); err != nil {
		t.Fatalf("SET through the failover client: %v", err)
	}
	old := target.Masters()[0]
	promoted, err := target.Failover(ctx, old, redisenv.FailoverCoordinated)
	if err != nil {
		t.Fatalf("Failover(%s): %v", old, err)
	}
	// The failover client learns of the new master from the Sentinels, and logs it.
	want := "limitbench env: Sentinel: the master of "
	for !strings.Contains(buf.String(), promoted) {
		if ctx.Err() != nil {
			t.Fatalf("no line naming %s within a minute:\n%s", promoted, buf.String())
		}
		_ = target.Client.Set(ctx, "k", 2, 0).Err()
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("shown:\n%s", buf.String())
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	seen := map[string]bool{}
	for _, l := range lines {
		if !strings.HasPrefix(l, want) {
			t.Errorf("line %q is not limitbench's; want every line to start with %q", l, want)
		}
		if seen[l] {
			t.Errorf("line %q shown twice", l)
		}
		seen[l] = true
	}
	if !strings.HasSuffix(lines[len(lines)-1], " is "+promoted) {
		t.Errorf("last line %q; want it to name the promoted master %s", lines[len(lines)-1], promoted)
	}

	// Anything else go-redis logs (a failed dial here) is dropped, or shown raw when asked.
	raw := &syncBuffer{}
	for _, tt := range []struct {
		l    *redisLog
		want string
	}{{newRedisLog(&buf, "run", false), ""}, {newRedisLog(raw, "run", true), "go-redis: "}} {
		buf = syncBuffer{}
		setRedisLogger(t, tt.l)
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
		_ = c.Ping(ctx).Err()
		_ = c.Close()
		got := buf.String() + raw.String()
		if tt.want == "" && got != "" {
			t.Errorf("shown without LIMITBENCH_REDIS_LOG: %q; want nothing", got)
		}
		if tt.want != "" && !strings.HasPrefix(got, tt.want) {
			t.Errorf("shown with LIMITBENCH_REDIS_LOG=1: %q; want lines starting %q", got, tt.want)
		}
	}
}

// setRedisLogger makes l go-redis's logger for the rest of t, then silences it.
func setRedisLogger(t *testing.T, l *redisLog) {
	redis.SetLogger(l)
	t.Cleanup(func() { redis.SetLogger(newRedisLog(io.Discard, "test", false)) })
}
