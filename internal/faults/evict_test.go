package faults

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

// TestEvictAll: on a real redis-server holding keys, with and without TTLs, evictAll leaves no
// key and puts maxmemory and maxmemory-policy back as they were; the server goes on answering.
func TestEvictAll(t *testing.T) {
	tgt := redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess})
	ctx := context.Background()
	c := tgt.Client
	if err := c.ConfigSet(ctx, "maxmemory", "512mb").Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		if err := c.Set(ctx, "k"+strconv.Itoa(i), "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Set(ctx, "ttl", "v", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	node := redis.NewClient(tgt.NodeOptions(tgt.Masters()[0]))
	defer node.Close()
	if err := evictAll(ctx, node); err != nil {
		t.Fatal(err)
	}
	if n, err := c.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Errorf("DBSIZE after evictAll = %d, %v; want 0", n, err)
	}
	got, err := c.ConfigGet(ctx, "maxmemory*").Result()
	if err != nil || got["maxmemory"] != "536870912" || got["maxmemory-policy"] != "noeviction" {
		t.Errorf("after evictAll maxmemory %q, policy %q (%v); want 536870912 and noeviction, as before", got["maxmemory"], got["maxmemory-policy"], err)
	}
	if err := c.Set(ctx, "after", "v", 0).Err(); err != nil {
		t.Errorf("a write after evictAll: %v", err)
	}
}
