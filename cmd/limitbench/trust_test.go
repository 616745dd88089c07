package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
	"github.com/limitbench/limitbench/result"
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

// userLibraries loads, on c, the two function libraries of a user that limitbench must leave as
// they are: limitbench_gcra (the name limitbench once gave its own gcra library) and userlib
// (examples/custom's function_lib.lua under the user's name, whose source it returns).
func userLibraries(t *testing.T, ctx context.Context, c redis.UniversalClient) (userlib string) {
	t.Helper()
	src, err := os.ReadFile("../../examples/custom/function_lib.lua")
	if err != nil {
		t.Fatal(err)
	}
	userlib = strings.Replace(string(src), "name=limitbench_example", "name=userlib", 1)
	for _, code := range []string{"#!lua name=limitbench_gcra\nredis.register_function('user_gcra', function(keys, args) return 'user' end)\n", userlib} {
		if err := c.FunctionLoad(ctx, code).Err(); err != nil {
			t.Fatalf("load a user's library: %v", err)
		}
	}
	return userlib
}

// functionLibraries returns FUNCTION LIST WITHCODE of c as text, libraries in name order.
func functionLibraries(t *testing.T, ctx context.Context, c redis.UniversalClient) string {
	t.Helper()
	libs, err := c.FunctionList(ctx, redis.FunctionListQuery{WithCode: true}).Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(libs, func(a, b redis.Library) int { return strings.Compare(a.Name, b.Name) })
	return fmt.Sprintf("%+v", libs)
}

// TestRunFunctionLibrariesUntouched is issue 28's third broken promise: limitbench never replaces
// or deletes a function library it did not load. Against a Redis holding a user's limitbench_gcra
// and userlib: two concurrent `run --call fcall` measure without an error (each under names of its
// own, neither unloading the other's), a custom library whose name and code are the user's
// userlib runs on it and leaves it, one named userlib with other code is exit 2 naming the
// library, and afterwards FUNCTION LIST WITHCODE is as it was.
func TestRunFunctionLibrariesUntouched(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs Redis")
	}
	bin := buildBinary(t)
	server := redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess})
	ctx := context.Background()
	userlib := userLibraries(t, ctx, server.Client)
	before := functionLibraries(t, ctx, server.Client)
	u := url.URL{Scheme: "redis", User: url.UserPassword("default", server.Password), Host: server.Masters()[0]}
	tmp := t.TempDir()

	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			out := filepath.Join(tmp, fmt.Sprintf("fcall%d", i))
			code, _, stderr := runBin(t, bin, "run", "--redis", u.String(), "--call", "fcall", "--algorithms", "gcra,token-bucket",
				"--duration", "1500ms", "--no-reference", "--quiet", "--out", out, suite+"smoke.yaml")
			if code != exitOK && code != exitFailed { // 1: a verdict the load left inconclusive
				t.Errorf("concurrent run %d: exit %d\n%s", i, code, stderr)
			}
			res, err := result.Read(filepath.Join(out, result.FileName))
			if err != nil {
				t.Errorf("concurrent run %d: %v", i, err)
				return
			}
			for _, e := range res.Entries {
				if e.Call != "fcall" || e.Errors+e.Unknown > 0 {
					t.Errorf("concurrent run %d: %s: call %q, %d errors, %d unknown: a run unloaded the other's library?",
						i, e.Name(), e.Call, e.Errors, e.Unknown)
				}
			}
		})
	}
	wg.Wait()

	scenario := func(lib string) string {
		dir := t.TempDir()
		writeFile(t, dir, "userlib.lua", lib)
		return writeFile(t, dir, "lib.yaml", `version: 1
name: lib
topologies: [single]
duration: 1s
warmup: 0s
seed: 1
clients: 4
arrival: {rate: 80}
keys: {count: 2, distribution: uniform}
limit: {limit: 20, window: 1s}
algorithms:
  - name: users-function
    library: userlib.lua
    function: allow
    keys: ["log:{{tag}}"]
    args: ["{{limit}}", "{{window_ms}}", "{{uuid}}"]
    allowed: {element: 1, equals: 1}
    time: {element: 2, unit: us}
    contract: {kind: sliding-window, limit: 20, window: 1s}
`)
	}
	code, _, stderr := runBin(t, bin, "run", "--redis", u.String(), "--no-reference", "--quiet", "--out", filepath.Join(tmp, "same"),
		scenario(userlib))
	if code != exitOK && code != exitFailed {
		t.Errorf("the user's own library, same code: exit %d; want 0 (or 1, inconclusive)\n%s", code, stderr)
	}
	other := strings.Replace(userlib, "redis.call", "redis.pcall", 1)
	code, _, stderr = runBin(t, bin, "run", "--redis", u.String(), "--no-reference", "--quiet", "--out", filepath.Join(tmp, "other"),
		scenario(other))
	first, _, _ := strings.Cut(stderr, "\n")
	if code != exitBadInput || !strings.Contains(first, "library userlib") || !strings.Contains(first, "differs from") {
		t.Errorf("a library named userlib with other code: exit %d, first line %q; want exit 2 naming the library", code, first)
	}
	if after := functionLibraries(t, ctx, server.Client); after != before {
		t.Errorf("the user's function libraries changed:\nbefore %s\nafter  %s", before, after)
	}
}

// TestSegmentsNeedOneRedis is issue 28's second broken promise: segments that never shared a
// Redis were merged into a false fail. `run --segment` with a backend that starts a private Redis
// is exit 2 before anything starts, and `merge` refuses two segments measured against two
// different servers (exit 2, naming both directories), since each partial records its server's
// run id.
func TestSegmentsNeedOneRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs Redis")
	}
	bin := buildBinary(t)
	tmp := t.TempDir()
	code, _, stderr := runBin(t, bin, "run", "--backend", "process", "--segment", "0/2", "--out", filepath.Join(tmp, "p"), suite+"smoke.yaml")
	if first, _, _ := strings.Cut(stderr, "\n"); code != exitBadInput || !strings.Contains(first, "--segment needs one Redis that every segment shares") {
		t.Errorf("run --backend process --segment 0/2: exit %d, first line %q; want exit 2 saying segments need one Redis", code, first)
	}
	if _, err := os.Stat(filepath.Join(tmp, "p")); err == nil {
		t.Errorf("the refused run made its results directory: something started")
	}

	scenario := writeFile(t, tmp, "seg.yaml", `version: 1
name: seg
topologies: [single]
duration: 1s
warmup: 0s
seed: 2
clients: 2
arrival: {rate: 60}
keys: {count: 2, distribution: uniform}
limit: {limit: 20, window: 1s}
algorithms: [gcra]
`)
	start := time.Now().Add(4 * time.Second).UTC().Format(time.RFC3339Nano)
	dirs := make([]string, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		server := redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess})
		u := url.URL{Scheme: "redis", User: url.UserPassword("default", server.Password), Host: server.Masters()[0]}
		dirs[i] = filepath.Join(tmp, fmt.Sprintf("s%d", i))
		wg.Go(func() {
			code, _, stderr := runBin(t, bin, "run", "--redis", u.String(), "--no-reference", "--quiet", "--segment", fmt.Sprintf("%d/2", i),
				"--run-id", "two-servers", "--start-at", start, "--out", dirs[i], scenario)
			if code != exitOK && code != exitFailed {
				t.Errorf("segment %d: exit %d\n%s", i, code, stderr)
			}
		})
	}
	wg.Wait()
	code, _, stderr = runBin(t, bin, "merge", "--out", filepath.Join(tmp, "merged"), dirs[0], dirs[1])
	if code != exitBadInput || !strings.Contains(stderr, dirs[0]) || !strings.Contains(stderr, dirs[1]) ||
		!strings.Contains(stderr, "must share one Redis") {
		t.Errorf("merge of segments measured on two servers: exit %d; want 2 naming both directories\n%s", code, stderr)
	}
}
