package bench_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"flag"
	"fmt"
	"net"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/cpus"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/verify"
)

// loadgenScript is the Lua script both generators call: a per-subject counter with a server
// timestamp, about the weight of the cheapest limiters (one write, one TIME).
const loadgenScript = `
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
local t = redis.call('TIME')
local allowed = 0
if n <= tonumber(ARGV[2]) then allowed = 1 end
return {allowed, n, t[1] * 1000000 + t[2]}
`

// loadgenLimit is high enough that every request is admitted.
const loadgenLimit = 1 << 50

// loadgenKeys is the number of subjects (redis-benchmark -r).
const loadgenKeys = 1000

// scriptLimiter calls loadgenScript with EVALSHA exactly as redis-benchmark does, the way the
// algorithms' Calls do it (see algorithms.Call): each Call builds its command once and sends it
// again for every request with the key and cost replaced, so a request allocates nothing but
// what go-redis allocates to read the reply. Every element of the reply is checked. It runs
// against one server only (on a cluster go-redis would keep the first request's slot on the
// command).
type scriptLimiter struct{ sha string }

func (l scriptLimiter) Keys(req algorithms.Request) []string {
	return []string{"lb:{" + req.Subject + "}"}
}

func (l scriptLimiter) NewCall() algorithms.Call {
	c := &scriptCall{}
	c.cmd = redis.NewCmd(context.Background(), "evalsha", l.sha, 1, &c.key, &c.cost, loadgenLimit)
	c.cmd.SetFirstKeyPos(3)
	return c
}

// scriptCall is the Call of a scriptLimiter.
type scriptCall struct {
	key  keyArg
	cost int64
	cmd  *redis.Cmd
}

// keyArg is a key built in place: go-redis writes it with MarshalBinary.
type keyArg struct{ b []byte }

func (k *keyArg) MarshalBinary() ([]byte, error) { return k.b, nil }

func (c *scriptCall) Send(ctx context.Context, rc redis.Cmdable, req algorithms.Request) {
	c.key.b = append(append(append(c.key.b[:0], "lb:{"...), req.Subject...), '}')
	c.cost = max(req.Cost, 1)
	c.cmd.SetErr(nil)
	c.cmd.SetVal(nil)
	p, ok := rc.(interface {
		Process(context.Context, redis.Cmder) error
	})
	if !ok {
		c.cmd.SetErr(fmt.Errorf("cannot send on %T", rc))
		return
	}
	_ = p.Process(ctx, c.cmd) // the command carries its error
}

// Result decodes {allowed 0|1, count >= cost, server time µs > 0}.
func (c *scriptCall) Result() (algorithms.Decision, error) {
	raw, err := c.cmd.Result()
	if err != nil {
		return algorithms.Decision{}, err
	}
	arr, ok := raw.([]any)
	if !ok || len(arr) != 3 {
		return algorithms.Decision{}, fmt.Errorf("%w: %#v", algorithms.ErrBadReply, raw)
	}
	allowed, ok1 := arr[0].(int64)
	n, ok2 := arr[1].(int64)
	t, ok3 := arr[2].(int64)
	if !ok1 || !ok2 || !ok3 || allowed < 0 || allowed > 1 || n < c.cost || t <= 0 {
		return algorithms.Decision{}, fmt.Errorf("%w: %#v", algorithms.ErrBadReply, raw)
	}
	return algorithms.Decision{Allowed: allowed == 1, Remaining: loadgenLimit - n, TimeMicros: t, Clock: algorithms.ClockServer}, nil
}

// loadgenRedis, when set, is the URL of a Redis server BenchmarkLoadgen uses as `limitbench run
// --backend external --redis URL` would, instead of starting a redis-server process of its own.
// The benchmark writes keys lb:{0} to lb:{999} there.
var loadgenRedis = flag.String("loadgen-redis", "", "BenchmarkLoadgen: the URL of a Redis server to use as an external backend (default: start a redis-server process); keys lb:{N} are written there")

// loadgenEnv is one Redis server with the script loaded: a redis-server process the benchmark
// started, or the external server of -loadgen-redis.
type loadgenEnv struct {
	cfg    redisenv.Config
	target *redisenv.Target
	host   string
	port   string
	sha    string
}

// The shape of BenchmarkLoadgen's and BenchmarkLoadgenFloor's comparisons: connections and the
// time each side measures in a round; loadgenRounds is the number of paired rounds.
const (
	loadgenClients = 32
	loadgenMeasure = 1500 * time.Millisecond
)

var loadgenRounds = flag.Int("loadgen-rounds", 5, "BenchmarkLoadgen, BenchmarkLoadgenFloor: the number of paired rounds each figure is the median of")

// applyProcs sets GOMAXPROCS as `limitbench run` sets it against e's server, logs the policy's
// note, and returns the function that restores it.
func (e *loadgenEnv) applyProcs(b *testing.B) (undo func()) {
	b.Helper()
	st, undo := cpus.Apply(cpus.Policy{Env: e.cfg, Topologies: []redisenv.Topology{redisenv.TopologySingle}})
	b.Log(st.ProcsNote)
	return undo
}

func startLoadgenEnv(b *testing.B) *loadgenEnv {
	b.Helper()
	cfg := redisenv.Config{Backend: redisenv.BackendProcess}
	bins := []string{"redis-server", "redis-benchmark"}
	if *loadgenRedis != "" {
		cfg = redisenv.Config{Backend: redisenv.BackendExternal, URL: *loadgenRedis}
		bins = bins[1:]
	}
	for _, bin := range bins {
		if _, err := exec.LookPath(bin); err != nil {
			b.Skipf("%s is not on PATH: %v", bin, err)
		}
	}
	ctx := context.Background()
	t, err := redisenv.Start(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = t.Stop(context.Background()) })
	sha, err := t.Client.ScriptLoad(ctx, loadgenScript).Result()
	if err != nil {
		b.Fatal(err)
	}
	host, port, err := net.SplitHostPort(t.Masters()[0])
	if err != nil {
		b.Fatal(err)
	}
	return &loadgenEnv{cfg: cfg, target: t, host: host, port: port, sha: sha}
}

// redisBenchmark runs redis-benchmark with the script and returns its requests per second and
// the CPU time it used per request (0 when the system cannot tell).
func (e *loadgenEnv) redisBenchmark(b *testing.B, clients, depth, requests int) (rps float64, cpu time.Duration) {
	b.Helper()
	args := []string{"-h", e.host, "-p", e.port}
	if e.target.Username != "" {
		args = append(args, "--user", e.target.Username)
	}
	if e.target.Password != "" {
		args = append(args, "-a", e.target.Password)
	}
	args = append(args, "-c", strconv.Itoa(clients), "-n", strconv.Itoa(requests),
		"-P", strconv.Itoa(depth), "-r", strconv.Itoa(loadgenKeys), "--csv",
		"EVALSHA", e.sha, "1", "lb:{__rand_int__}", "1", strconv.Itoa(loadgenLimit))
	cmd := exec.Command("redis-benchmark", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	_, before, _ := cpuUsed()
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("redis-benchmark: %v: %s", err, stderr.String())
	}
	_, after, ok := cpuUsed()
	if ok {
		cpu = (after - before) / time.Duration(requests)
	}
	rows, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil || len(rows) < 2 || len(rows[1]) < 2 {
		b.Fatalf("redis-benchmark output %q: %v", out, err)
	}
	rps, err = strconv.ParseFloat(rows[1][1], 64)
	if err != nil {
		b.Fatalf("redis-benchmark rps %q: %v", rows[1][1], err)
	}
	return rps, cpu
}

// lbRun is what one run of limitbench's generator measured.
type lbRun struct {
	res  *load.Result
	hist *load.Histograms
	// cpu is the process's CPU time (user + system, every thread) per request; allocs its heap
	// allocations per request, the run's setup and its aggregators' storage included.
	cpu    time.Duration
	allocs float64
}

// limitbench runs load.Run with p (Keys set here) and returns what it measured. It records what
// `limitbench run` records (histograms, timeline and admission log), or nothing with noRecording.
func (e *loadgenEnv) limitbench(b *testing.B, c redis.UniversalClient, p load.Plan, noRecording bool) lbRun {
	b.Helper()
	p.Keys = load.Keys{Count: loadgenKeys}
	hist := load.NewHistograms(0)
	var sinks load.Sinks
	if !noRecording {
		sinks.Measured = []load.Aggregator{hist, load.NewTimeline(p.Warmup, p.Bin, p.Duration),
			verify.NewAdmissionLog(time.Time{}, true, nil, false)}
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	before, _, _ := cpuUsed()
	res, err := load.Run(context.Background(), c, scriptLimiter{sha: e.sha}, p, sinks)
	after, _, _ := cpuUsed()
	runtime.ReadMemStats(&m1)
	if err != nil {
		b.Fatal(err)
	}
	if n := res.Counts.Errors(); n > 0 {
		b.Fatalf("limitbench: %d errors (%+v)", n, res.Counts)
	}
	n := max(res.Counts.Requests, 1)
	return lbRun{res: res, hist: hist, cpu: (after - before) / time.Duration(n), allocs: float64(m1.Mallocs-m0.Mallocs) / float64(n)}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkLoadgen measures limitbench's load generator against redis-benchmark on the same Redis
// server, script, connections and pipeline depth, with all recording on, and reports figures
// measured in this one run (absolute numbers depend on the machine):
//
//   - ratio-d1, ratio-d16: limitbench closed-loop throughput ÷ redis-benchmark's (target >= 0.95);
//   - cpu-µs/req-d1|d16-limitbench|redis-benchmark: each generator's CPU time (user + system,
//     every thread) per request in those runs, a figure the machine's other load disturbs
//     less than throughput, since on a small machine the generator and Redis share the CPUs;
//     cpu-ratio-d1|d16 is limitbench's ÷ redis-benchmark's (targets <= 1.0 and <= 1.5);
//   - allocs/req-d1|d16: limitbench's heap allocations per request (setup and recording
//     included);
//   - recording: throughput with every aggregator on ÷ with them off, and recording-cpu, CPU per
//     request with them off ÷ on (targets >= 0.95);
//   - accuracy-N%: open-loop achieved ÷ scheduled rate at N % of saturation (target >= 0.99);
//   - late-p99-µs-N%-keeper|nokeeper: the generator's own lateness (sent − intended), p99 in
//     µs, at N % of saturation with the timekeeper and without.
//
// Each figure is the median of rounds that alternate the two sides (and which side goes first);
// a ratio is the median of the rounds' ratios. It ignores b.N. The Redis server is a
// redis-server process the benchmark starts, with GOMAXPROCS as `limitbench run` sets it for
// one; with -loadgen-redis URL, the server there, reached as `limitbench run --backend external`
// would (a loopback address leaves a CPU to the server as a started one does).
//
//	go test -run '^$' -bench '^BenchmarkLoadgen$' -benchtime 1x -timeout 15m ./bench/ [-args -loadgen-redis URL]
func BenchmarkLoadgen(b *testing.B) {
	e := startLoadgenEnv(b)
	defer e.applyProcs(b)()
	const (
		clients = loadgenClients
		measure = loadgenMeasure
	)
	rounds := *loadgenRounds
	c := e.target.NewClient(redisenv.ClientOptions{PoolSize: clients})
	// Warm the connections and the script cache.
	e.limitbench(b, c, load.Plan{Arrival: load.ClosedLoop{}, Duration: 300 * time.Millisecond, Clients: clients}, false)

	for _, depth := range []int{1, 16} {
		var rb, lb, ratios, rbCPU, lbCPU, cpuRatios, allocs []float64
		for i := range rounds {
			runRB := func() {
				// Size redis-benchmark's request count to about the same measuring time.
				n := 20_000 * depth
				if len(lb) > 0 {
					n = int(lb[len(lb)-1] * measure.Seconds())
				}
				rps, cpu := e.redisBenchmark(b, clients, depth, n)
				rb = append(rb, rps)
				rbCPU = append(rbCPU, float64(cpu)/1e3)
			}
			runLB := func() {
				p := load.Plan{Arrival: load.ClosedLoop{}, Duration: measure, Clients: clients, Mode: load.ModePlain}
				if depth > 1 {
					p.Mode, p.PipelineDepth = load.ModePipeline, depth
				}
				r := e.limitbench(b, c, p, false)
				lb = append(lb, r.res.Throughput)
				lbCPU = append(lbCPU, float64(r.cpu)/1e3)
				allocs = append(allocs, r.allocs)
			}
			// Alternate which side goes first, so that a drift in the machine's other load
			// favours neither.
			if i%2 == 0 {
				runRB()
				runLB()
			} else {
				runLB()
				runRB()
			}
			ratios = append(ratios, lb[len(lb)-1]/rb[len(rb)-1])
			cpuRatios = append(cpuRatios, lbCPU[len(lbCPU)-1]/rbCPU[len(rbCPU)-1])
		}
		ratio := median(ratios)
		b.Logf("depth %2d, %d connections: limitbench %.0f/s %.0f, redis-benchmark %.0f/s %.0f: median of paired ratios %.3f %.3f",
			depth, clients, median(lb), lb, median(rb), rb, ratio, ratios)
		b.ReportMetric(ratio, fmt.Sprintf("ratio-d%d", depth))
		b.Logf("depth %2d: allocations per request, limitbench %.2f %.2f", depth, median(allocs), allocs)
		b.ReportMetric(median(allocs), fmt.Sprintf("allocs/req-d%d", depth))
		if _, _, ok := cpuUsed(); ok {
			b.Logf("depth %2d: CPU per request, limitbench %.2f µs %.2f, redis-benchmark %.2f µs %.2f: median of paired ratios %.3f %.3f",
				depth, median(lbCPU), lbCPU, median(rbCPU), rbCPU, median(cpuRatios), cpuRatios)
			b.ReportMetric(median(lbCPU), fmt.Sprintf("cpu-µs/req-d%d-limitbench", depth))
			b.ReportMetric(median(rbCPU), fmt.Sprintf("cpu-µs/req-d%d-redis-benchmark", depth))
			b.ReportMetric(median(cpuRatios), fmt.Sprintf("cpu-ratio-d%d", depth))
		}
	}

	// Recording overhead, depth 1 closed loop.
	var on, off, ratios, onCPU, offCPU, cpuRatios []float64
	for i := range rounds {
		p := load.Plan{Arrival: load.ClosedLoop{}, Duration: measure, Clients: clients}
		// Alternate which side goes first.
		for j, noRecording := range []bool{i%2 == 1, i%2 == 0} {
			r := e.limitbench(b, c, p, noRecording)
			if noRecording {
				off, offCPU = append(off, r.res.Throughput), append(offCPU, float64(r.cpu)/1e3)
			} else {
				on, onCPU = append(on, r.res.Throughput), append(onCPU, float64(r.cpu)/1e3)
			}
			if j == 1 {
				ratios = append(ratios, on[len(on)-1]/off[len(off)-1])
				cpuRatios = append(cpuRatios, offCPU[len(offCPU)-1]/onCPU[len(onCPU)-1])
			}
		}
	}
	rec := median(ratios)
	b.Logf("recording: on %.0f/s %.0f, off %.0f/s %.0f: median of paired ratios %.3f %.3f", median(on), on, median(off), off, rec, ratios)
	b.ReportMetric(rec, "recording")
	if _, _, ok := cpuUsed(); ok {
		b.Logf("recording: CPU per request on %.2f µs %.2f, off %.2f µs %.2f: median of paired ratios off ÷ on %.3f %.3f",
			median(onCPU), onCPU, median(offCPU), offCPU, median(cpuRatios), cpuRatios)
		b.ReportMetric(median(cpuRatios), "recording-cpu")
	}

	// Open-loop accuracy: saturation is the closed-loop depth-1 throughput with recording on.
	sat := median(on)
	for _, pct := range []int{20, 50, 80} {
		target := sat * float64(pct) / 100
		r := e.limitbench(b, c, load.Plan{Arrival: load.Constant(target), Duration: 3 * time.Second, Clients: clients}, false)
		res := r.res
		acc := float64(res.Counts.Requests) / float64(res.Scheduled)
		lat := r.hist.Latency()
		b.Logf("open loop at %d%% of saturation (%.0f/s): achieved %.0f/s, sent/scheduled %.4f, late %d, missed %d, behind %v, latency p50 %d µs p99 %d µs",
			pct, target, res.AchievedRate, acc, res.Counts.Late, res.Counts.Missed, res.Behind, lat.ValueAtQuantile(50), lat.ValueAtQuantile(99))
		b.ReportMetric(acc, fmt.Sprintf("accuracy-%d%%", pct))
	}

	// The generator's own lateness (send time minus intended time) at 5% and 20% of
	// saturation, with the timekeeper (see internal/load) and without: the part of the
	// reported latency that is the harness's, not Redis's.
	for _, pct := range []int{5, 20} {
		rate := sat * float64(pct) / 100
		for _, off := range []bool{false, true} {
			var mu sync.Mutex
			var late []time.Duration
			p := load.Plan{Arrival: load.Constant(rate), Duration: 2 * time.Second, Clients: clients, NoKeeper: off,
				OnOutcome: func(o *load.Outcome) {
					mu.Lock()
					late = append(late, o.Sent-o.Intended)
					mu.Unlock()
				}}
			e.limitbench(b, c, p, false)
			slices.Sort(late)
			q := func(f float64) time.Duration { return late[int(f*float64(len(late)-1))] }
			name := "keeper"
			if off {
				name = "nokeeper"
			}
			b.Logf("open loop at %d%% of saturation (%.0f/s), %s: generator lateness p50 %s, p99 %s, max %s", pct, rate, name, q(0.5), q(0.99), q(1))
			b.ReportMetric(float64(q(0.99).Microseconds()), fmt.Sprintf("late-p99-µs-%d%%-%s", pct, name))
		}
	}
}

// BenchmarkLoadgenConns compares, outside the harness, the two ways workers can hold their
// connections: one go-redis client whose pool has one connection per worker, or one client
// (PoolSize 1) per worker. It reports per-worker ÷ shared throughput (median of paired rounds).
//
//	go test -run '^$' -bench LoadgenConns -benchtime 1x ./bench/
func BenchmarkLoadgenConns(b *testing.B) {
	e := startLoadgenEnv(b)
	const (
		workers = 32
		rounds  = 5
		measure = time.Second
	)
	shared := e.target.NewClient(redisenv.ClientOptions{PoolSize: workers})
	own := make([]redis.UniversalClient, workers)
	for i := range own {
		own[i] = e.target.NewClient(redisenv.ClientOptions{PoolSize: 1})
	}
	drive := func(client func(w int) redis.UniversalClient) float64 {
		var wg sync.WaitGroup
		var total atomic.Int64
		end := time.Now().Add(measure)
		for w := range workers {
			wg.Go(func() {
				c := client(w)
				keys := []string{"lb:{" + strconv.Itoa(w) + "}"}
				var n int64
				for time.Now().Before(end) {
					if err := c.EvalSha(context.Background(), e.sha, keys, 1, loadgenLimit).Err(); err != nil {
						b.Error(err)
						return
					}
					n++
				}
				total.Add(n)
			})
		}
		wg.Wait()
		return float64(total.Load()) / measure.Seconds()
	}
	drive(func(int) redis.UniversalClient { return shared })
	drive(func(w int) redis.UniversalClient { return own[w] })
	var ratios []float64
	for range rounds {
		s := drive(func(int) redis.UniversalClient { return shared })
		o := drive(func(w int) redis.UniversalClient { return own[w] })
		ratios = append(ratios, o/s)
	}
	b.Logf("client per worker ÷ shared pool: %.3f (rounds %.3f)", median(ratios), ratios)
	b.ReportMetric(median(ratios), "own/shared")
}
