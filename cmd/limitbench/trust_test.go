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

// usersFunction is a scenario's algorithms entry that calls allow of the user's library userlib
// (userlib.lua beside the scenario), a sliding log of limit permits per second.
func usersFunction(limit int) string {
	return fmt.Sprintf(`  - name: users-function
    library: userlib.lua
    function: allow
    keys: ["log:{{tag}}"]
    args: ["{{limit}}", "{{window_ms}}", "{{uuid}}"]
    allowed: {element: 1, equals: 1}
    time: {element: 2, unit: us}
    contract: {kind: sliding-window, limit: %d, window: 1s}
`, limit)
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
	t.Parallel() // a child process, no state of this one: overlaps the other waits
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
`+usersFunction(20))
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

// userData is what a user's Redis holds that limitbench must leave as it was: every user key's
// DUMP and PTTL, whether the user's cached script is still cached, and FUNCTION LIST WITHCODE.
type userData struct {
	dumps  map[string]string
	pttls  map[string]time.Duration
	script bool
	libs   string
}

// loadUserData fills c with a user's keys of every type, each with a TTL, a cached script and two
// function libraries (userLibraries), and returns the digest of the script and the userlib code.
func loadUserData(t *testing.T, ctx context.Context, c redis.UniversalClient) (sha, userlib string) {
	t.Helper()
	pipe := c.Pipeline()
	pipe.Set(ctx, "user:string", "v", 0)
	pipe.RPush(ctx, "user:list", "a", "b", "c")
	pipe.HSet(ctx, "user:hash", "f1", "1", "f2", "2")
	pipe.SAdd(ctx, "user:set", "x", "y")
	pipe.ZAdd(ctx, "user:zset", redis.Z{Score: 1, Member: "m1"}, redis.Z{Score: 2, Member: "m2"})
	pipe.XAdd(ctx, &redis.XAddArgs{Stream: "user:stream", ID: "1-1", Values: []any{"k", "v"}})
	pipe.SetBit(ctx, "user:bits", 7, 1)
	pipe.PFAdd(ctx, "user:hll", "a", "b")
	for _, k := range userKeys {
		pipe.Expire(ctx, k, time.Hour)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	sha, err := c.ScriptLoad(ctx, "return redis.call('GET', KEYS[1])").Result()
	if err != nil {
		t.Fatal(err)
	}
	return sha, userLibraries(t, ctx, c)
}

var userKeys = []string{"user:string", "user:list", "user:hash", "user:set", "user:zset", "user:stream", "user:bits", "user:hll"}

// readUserData reads what loadUserData put on c.
func readUserData(t *testing.T, ctx context.Context, c redis.UniversalClient, sha string) userData {
	t.Helper()
	d := userData{dumps: map[string]string{}, pttls: map[string]time.Duration{}, libs: functionLibraries(t, ctx, c)}
	for _, k := range userKeys {
		d.dumps[k], _ = c.Dump(ctx, k).Result()
		d.pttls[k], _ = c.PTTL(ctx, k).Result()
	}
	exists, err := c.ScriptExists(ctx, sha).Result()
	if err != nil {
		t.Fatal(err)
	}
	d.script = len(exists) == 1 && exists[0]
	return d
}

// TestDataSafety is issue 28's data-safety check: on an external Redis holding a user's keys of
// every type with TTLs, a cached script and two function libraries (one named as limitbench once
// named its own), `run` (EVALSHA and FCALL), a custom function algorithm on the user's own
// library, `hunt`, `capacity` and a segmented run with its merge leave every key's DUMP and PTTL
// (within the time the test took), the script cache and FUNCTION LIST WITHCODE as they were.
func TestDataSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs every command against Redis")
	}
	t.Parallel() // a child process, no state of this one: overlaps the other waits
	bin := buildBinary(t)
	server := redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess})
	ctx := context.Background()
	sha, userlib := loadUserData(t, ctx, server.Client)
	began := time.Now()
	before := readUserData(t, ctx, server.Client, sha)
	u := url.URL{Scheme: "redis", User: url.UserPassword("default", server.Password), Host: server.Masters()[0]}
	redisURL, tmp := u.String(), t.TempDir()
	dir := t.TempDir()
	writeFile(t, dir, "userlib.lua", userlib)
	custom := writeFile(t, dir, "custom.yaml", `version: 1
name: safety
topologies: [single]
duration: 500ms
warmup: 0s
seed: 1
clients: 2
arrival: {rate: 60}
keys: {count: 2, distribution: uniform}
limit: {limit: 10, window: 1s}
algorithms:
  - gcra
`+usersFunction(10))
	seg := writeFile(t, dir, "seg.yaml", "version: 1\nname: seg\ntopologies: [single]\nduration: 500ms\nwarmup: 0s\nseed: 2\nclients: 2\n"+
		"arrival: {rate: 60}\nkeys: {count: 2, distribution: uniform}\nlimit: {limit: 10, window: 1s}\nalgorithms: [gcra]\n")
	out := func(name string) string { return filepath.Join(tmp, name) }
	steps := [][]string{
		{"run", "--redis", redisURL, "--quiet", "--out", out("evalsha"), custom},
		{"run", "--redis", redisURL, "--quiet", "--call", "fcall", "--algorithms", "gcra", "--out", out("fcall"), custom},
		{"hunt", "--redis", redisURL, "--quiet", "--budget", "2s", "--algorithms", "gcra", "--out", out("hunt"), seg},
		{"capacity", "--redis", redisURL, "--quiet", "--algorithm", "gcra", "--step", "300ms", "--warmup", "0s", "--subjects", "10",
			"--out", out("capacity")},
	}
	for _, args := range steps {
		if code, _, stderr := runBin(t, bin, args...); code != exitOK && code != exitFailed {
			t.Errorf("limitbench %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
		}
	}
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			args := []string{"run", "--redis", redisURL, "--quiet", "--no-reference", "--segment", fmt.Sprintf("%d/2", i), "--run-id", "safety",
				"--lead", "1s", "--out", out(fmt.Sprintf("seg%d", i)), seg}
			if code, _, stderr := runBin(t, bin, args...); code != exitOK {
				t.Errorf("segment %d: exit %d\n%s", i, code, stderr)
			}
		})
	}
	wg.Wait()
	if code, _, stderr := runBin(t, bin, "merge", "--out", out("merged"), out("seg0"), out("seg1")); code != exitOK && code != exitFailed {
		t.Errorf("merge: exit %d\n%s", code, stderr)
	}

	after := readUserData(t, ctx, server.Client, sha)
	took := time.Since(began)
	for _, k := range userKeys {
		if after.dumps[k] != before.dumps[k] {
			t.Errorf("%s: DUMP changed", k)
		}
		if d := before.pttls[k] - after.pttls[k]; after.pttls[k] <= 0 || d < 0 || d > took+time.Second {
			t.Errorf("%s: PTTL %s before, %s after %s; want it lower by at most the time that passed", k, before.pttls[k], after.pttls[k], took)
		}
	}
	if !after.script {
		t.Errorf("the user's cached script %s is gone", sha)
	}
	if after.libs != before.libs {
		t.Errorf("the user's function libraries changed:\nbefore %s\nafter  %s", before.libs, after.libs)
	}
	if n, err := server.Client.DBSize(ctx).Result(); err != nil || n != int64(len(userKeys)) {
		t.Errorf("%d keys on the server after every command, %v; want the user's %d (limitbench's left behind?)", n, err, len(userKeys))
	}
}

// TestSegmentAlone is part of issue 28's lost generator: a segment whose partner never comes
// (it died) measures its share, warns that only 1 of 2 generators arrived, and leaves in Redis
// no key without a TTL (the barrier's done counter had none).
func TestSegmentAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against real Redis")
	}
	server := redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess})
	u := url.URL{Scheme: "redis", User: url.UserPassword("default", server.Password), Host: server.Masters()[0]}
	scenario := writeFile(t, t.TempDir(), "seg.yaml", "version: 1\nname: seg\ntopologies: [single]\nduration: 500ms\nwarmup: 0s\nseed: 2\n"+
		"clients: 2\narrival: {rate: 60}\nkeys: {count: 2, distribution: uniform}\nlimit: {limit: 10, window: 1s}\nalgorithms: [gcra]\n")
	code, _, stderr, res := runCLI(t, t.TempDir(), true, "--backend", "external", "--redis", u.String(), "--no-reference",
		"--segment", "0/2", "--run-id", "alone", "--lead", "300ms", scenario)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	warned := false
	for _, e := range res.Entries {
		for _, w := range e.Warnings {
			warned = warned || (w.Kind == "segment" && strings.Contains(w.Message, "only 1 of 2 generators arrived"))
		}
	}
	if !warned {
		t.Errorf("no warning that the partner never arrived: %+v", res.Entries)
	}
	ctx := context.Background()
	keys, err := server.Client.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) == 0 {
		t.Fatal("no key left in Redis: the lone segment removed the run's keys, so the TTL check checks nothing")
	}
	for _, k := range keys {
		if ttl, err := server.Client.PTTL(ctx, k).Result(); err != nil || ttl < 0 {
			t.Errorf("key %s left with PTTL %s, %v; want a TTL", k, ttl, err)
		}
	}
}
