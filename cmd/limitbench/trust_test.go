package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
	"github.com/limitbench/limitbench/verify"
)

// correctedAlgorithms are the built-in algorithms that keep their contracts (the corrected
// seeds): a definite violation of one is a false positive unless Redis lost its state.
const correctedAlgorithms = "fixed-window,gcra,resource-consumer,sliding-counter,sliding-log,token-bucket"

// TestRunEvictionIsNotAFail is issue 28's first broken promise: an external Redis with maxmemory
// 4mb and allkeys-lru, while another client writes 300 kB values every 2 ms, evicts the limiters'
// keys. The run warns before it starts that keys may be evicted, no corrected algorithm gets fail
// (the eviction, not the algorithm, over-admits), and the verification names the eviction and
// the policy.
func TestRunEvictionIsNotAFail(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against real Redis")
	}
	server := redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := server.NewClient(redisenv.ClientOptions{PoolSize: 2})
	for _, kv := range [][2]string{{"maxmemory", "4mb"}, {"maxmemory-policy", "allkeys-lru"}} {
		if err := admin.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	wctx, stop := context.WithCancel(ctx)
	wg.Go(func() { writeLargeValues(wctx, admin, 300<<10, 2*time.Millisecond) })
	u := url.URL{Scheme: "redis", User: url.UserPassword("default", server.Password), Host: server.Masters()[0]}
	scenario := writeFile(t, t.TempDir(), "evict.yaml", `version: 1
name: evict
topologies: [single]
duration: 1s
warmup: 0s
seed: 1
clients: 4
arrival: {rate: 600}
keys: {count: 4, distribution: uniform}
limit: {limit: 50, window: 1s}
`)
	code, _, stderr, res := runCLI(t, t.TempDir(), false, "--backend", "external", "--redis", u.String(), "--no-reference",
		"--algorithms", correctedAlgorithms, scenario)
	stop()
	wg.Wait()
	if code != exitOK && code != exitFailed {
		t.Fatalf("exit %d; want 0, or 1 for inconclusive verdicts", code)
	}
	if !strings.Contains(stderr, "maxmemory-policy allkeys-lru: it may evict the limiters' keys") {
		t.Errorf("stderr lacks the warning that keys may be evicted:\n%s", stderr)
	}
	named := 0
	for _, e := range res.Entries {
		v := e.Verification
		if v.Verdict == verify.Fail {
			t.Errorf("%s: fail while Redis evicted keys: %v", e.Name(), v.Reasons)
		}
		for _, d := range v.Disruptions {
			if d.Kind == "evicted" && d.StateLost && strings.Contains(d.What, "maxmemory-policy allkeys-lru") {
				named++
				break
			}
		}
	}
	if named == 0 {
		t.Errorf("no entry's verification names an eviction with its policy; the writer did not make Redis evict?")
	}
}

// writeLargeValues writes values of size bytes to fresh keys every interval until ctx ends, as
// a user's application that fills a Redis with maxmemory would; errors (OOM) are ignored.
func writeLargeValues(ctx context.Context, c redis.UniversalClient, size int, interval time.Duration) {
	value := strings.Repeat("x", size)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			_ = c.Set(ctx, fmt.Sprintf("user:big:%d", i), value, 0).Err()
		}
	}
}
