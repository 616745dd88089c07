package bench_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/redisenv"
)

// loadgenFloorProfile, when set, is a directory where BenchmarkLoadgenFloor writes a CPU profile
// of each Go generator at each depth (floor-<generator>-d<depth>.pprof) and the profile of every
// allocation it made (floor-<generator>-d<depth>.allocs.pprof, to read with -base
// floor-<generator>-d<depth>.allocs-base.pprof), taken in an extra run after the measured rounds
// so that profiling disturbs none of them.
// loadgenFloorGens, when set, is a regular expression: BenchmarkLoadgenFloor runs only the Go
// generators whose names it matches (and redis-benchmark).
var loadgenFloorGens = flag.String("loadgen-floor-gens", "", "BenchmarkLoadgenFloor: a regular expression of the Go generators to run (raw, go-redis, go-redis-t1, go-redis-t2, go-redis-p2, limitbench; default: all)")

var loadgenFloorProfile = flag.String("loadgen-floor-profile", "", "BenchmarkLoadgenFloor: a directory to write a CPU and an allocation profile of each Go generator at each depth to (default: none)")

// floorGen is one Go load generator of BenchmarkLoadgenFloor: run drives the server with
// clients workers at the given pipeline depth until end and returns how many requests were
// answered. A request counts only once its reply has been read and checked in full.
type floorGen struct {
	name string
	run  func(depth int, end time.Time) (int64, error)
	// close releases the generator's connections.
	close func()
}

// floorResult is what one run of a generator measured.
type floorResult struct {
	n      int64 // requests answered
	rps    float64
	cpu    float64 // µs of this process's CPU time (user + system, every thread) per request
	allocs float64 // heap allocations per request
}

// measureFloor runs g for d at depth and returns what it measured.
func measureFloor(b *testing.B, g floorGen, depth int, d time.Duration) floorResult {
	b.Helper()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	before, _, _ := cpuUsed()
	start := time.Now()
	n, err := g.run(depth, start.Add(d))
	elapsed := time.Since(start)
	after, _, _ := cpuUsed()
	runtime.ReadMemStats(&m1)
	if err != nil {
		b.Fatalf("%s at depth %d: %v", g.name, depth, err)
	}
	if n == 0 {
		b.Fatalf("%s at depth %d: no request answered", g.name, depth)
	}
	return floorResult{
		n:      n,
		rps:    float64(n) / elapsed.Seconds(),
		cpu:    float64(after-before) / 1e3 / float64(n),
		allocs: float64(m1.Mallocs-m0.Mallocs) / float64(n),
	}
}

// runWorkers runs work in clients goroutines and returns the sum of what they counted and the
// first error.
func runWorkers(clients int, work func(w int) (int64, error)) (int64, error) {
	var wg sync.WaitGroup
	var total atomic.Int64
	errs := make([]error, clients)
	for w := range clients {
		wg.Go(func() {
			n, err := work(w)
			total.Add(n)
			errs[w] = err
		})
	}
	wg.Wait()
	return total.Load(), errors.Join(errs...)
}

// floorKeyDigits is the width of a key's number: redis-benchmark replaces __rand_int__ with a
// 12-digit zero-padded number, and the Go generators send the same keys (lb:{000000000123}), so
// that the server does the same work for all of them.
const floorKeyDigits = 12

// floorKey returns the key of subject i as redis-benchmark writes it.
func floorKey(i int) string {
	s := strconv.Itoa(i)
	return "lb:{" + strings.Repeat("0", floorKeyDigits-len(s)) + s + "}"
}

// rawConn is one connection of the raw-RESP generator: a command buffer built once with depth
// EVALSHA commands where only the keys' digits change per request, and a reply parser that
// allocates nothing.
type rawConn struct {
	conn net.Conn
	r    *bufio.Reader
	w    *bufio.Writer
	cmds []byte
	keys []int // offsets of each command's key digits in cmds
	rng  *rand.Rand
}

// dialRaw connects to addr and authenticates and selects the database as e's clients do.
func dialRaw(e *loadgenEnv, addr string, seed uint64) (*rawConn, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &rawConn{conn: conn, r: bufio.NewReaderSize(conn, 64<<10), w: bufio.NewWriterSize(conn, 64<<10),
		rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))}
	var setup [][]string
	if p := e.target.Password; p != "" {
		if u := e.target.Username; u != "" {
			setup = append(setup, []string{"AUTH", u, p})
		} else {
			setup = append(setup, []string{"AUTH", p})
		}
	}
	if db := e.target.DB(); db != 0 {
		setup = append(setup, []string{"SELECT", strconv.Itoa(db)})
	}
	for _, args := range setup {
		if _, err := c.w.Write(appendRESP(nil, args...)); err != nil {
			_ = conn.Close()
			return nil, err
		}
		if err := c.w.Flush(); err != nil {
			_ = conn.Close()
			return nil, err
		}
		line, err := c.line()
		if err != nil || string(line) != "+OK" {
			_ = conn.Close()
			return nil, fmt.Errorf("raw client: %s: reply %q: %v", args[0], line, err)
		}
	}
	return c, nil
}

// appendRESP appends args as one RESP array of bulk strings.
func appendRESP(buf []byte, args ...string) []byte {
	buf = append(strconv.AppendInt(append(buf, '*'), int64(len(args)), 10), "\r\n"...)
	for _, a := range args {
		buf = append(strconv.AppendInt(append(buf, '$'), int64(len(a)), 10), "\r\n"...)
		buf = append(append(buf, a...), "\r\n"...)
	}
	return buf
}

// build makes the command buffer for depth commands, keys to be filled in by fill.
func (c *rawConn) build(sha string, depth int) {
	c.cmds, c.keys = c.cmds[:0], c.keys[:0]
	key := floorKey(0)
	for range depth {
		c.cmds = appendRESP(c.cmds, "EVALSHA", sha, "1", key, "1", strconv.Itoa(loadgenLimit))
		c.keys = append(c.keys, bytes.LastIndex(c.cmds, []byte(key))+len("lb:{"))
	}
}

// fill writes a random subject in [0, loadgenKeys) into every command's key.
func (c *rawConn) fill() {
	for _, off := range c.keys {
		v := c.rng.IntN(loadgenKeys)
		d := c.cmds[off : off+floorKeyDigits]
		for i := len(d) - 1; i >= 0; i-- {
			d[i] = byte('0' + v%10)
			v /= 10
		}
	}
}

// line reads one reply line without its CRLF. The slice is valid until the next read.
func (c *rawConn) line() ([]byte, error) {
	l, err := c.r.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if len(l) < 3 || l[len(l)-2] != '\r' {
		return nil, fmt.Errorf("raw client: bad reply line %q", l)
	}
	return l[:len(l)-2], nil
}

// integer reads one RESP integer reply.
func (c *rawConn) integer() (int64, error) {
	l, err := c.line()
	if err != nil {
		return 0, err
	}
	if l[0] != ':' {
		return 0, fmt.Errorf("raw client: want an integer, got %q", l)
	}
	var v int64
	neg := false
	digits := l[1:]
	if len(digits) > 0 && digits[0] == '-' {
		neg, digits = true, digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, fmt.Errorf("raw client: bad integer %q", l)
	}
	for _, ch := range digits {
		if ch < '0' || ch > '9' {
			return 0, fmt.Errorf("raw client: bad integer %q", l)
		}
		v = v*10 + int64(ch-'0')
	}
	if neg {
		v = -v
	}
	return v, nil
}

// reply reads one reply of loadgenScript and checks it: {allowed 0|1, count >= 1, server time
// µs > 0}.
func (c *rawConn) reply() error {
	l, err := c.line()
	if err != nil {
		return err
	}
	if string(l) != "*3" {
		return fmt.Errorf("raw client: want a 3-element array, got %q", l)
	}
	allowed, err := c.integer()
	if err != nil {
		return err
	}
	n, err := c.integer()
	if err != nil {
		return err
	}
	t, err := c.integer()
	if err != nil {
		return err
	}
	if allowed < 0 || allowed > 1 || n < 1 || t <= 0 {
		return fmt.Errorf("raw client: bad reply {%d %d %d}", allowed, n, t)
	}
	return nil
}

// rawGen is the floor of a Go generator: clients goroutines, each with its own connection,
// writing depth commands at once and reading and checking depth replies, allocating nothing
// per request.
func rawGen(b *testing.B, e *loadgenEnv, clients int) floorGen {
	b.Helper()
	addr := net.JoinHostPort(e.host, e.port)
	conns := make([]*rawConn, clients)
	for i := range conns {
		c, err := dialRaw(e, addr, uint64(i))
		if err != nil {
			b.Fatal(err)
		}
		conns[i] = c
	}
	return floorGen{
		name: "raw",
		run: func(depth int, end time.Time) (int64, error) {
			return runWorkers(clients, func(w int) (int64, error) {
				c := conns[w]
				c.build(e.sha, depth)
				var n int64
				for time.Now().Before(end) {
					c.fill()
					if _, err := c.w.Write(c.cmds); err != nil {
						return n, err
					}
					if err := c.w.Flush(); err != nil {
						return n, err
					}
					for range depth {
						if err := c.reply(); err != nil {
							return n, err
						}
					}
					n += int64(depth)
				}
				return n, nil
			})
		},
		close: func() {
			for _, c := range conns {
				_ = c.conn.Close()
			}
		},
	}
}

// goRedisGen is plain go-redis with no limitbench around it: clients goroutines each calling
// EvalSha (depth 1) or executing a Pipeline of depth EvalSha built once per goroutine, with
// the client's default options but PoolSize (one connection per goroutine) and the read and
// write timeouts and protocol given (0: go-redis's defaults, 5 s and RESP3).
func goRedisGen(b *testing.B, e *loadgenEnv, name string, clients int, readTimeout, writeTimeout time.Duration, protocol int) floorGen {
	b.Helper()
	c := redis.NewClient(&redis.Options{
		Addr:     net.JoinHostPort(e.host, e.port),
		Username: e.target.Username,
		Password: e.target.Password,
		DB:       e.target.DB(),
		PoolSize: clients,

		ReadTimeout:  readTimeout,
		WriteTimeout: writeTimeout,
		Protocol:     protocol,
	})
	keys := make([][]string, loadgenKeys)
	for i := range keys {
		keys[i] = []string{floorKey(i)}
	}
	check := func(cmd *redis.Cmd) error {
		raw, err := cmd.Result()
		if err != nil {
			return err
		}
		arr, ok := raw.([]any)
		if !ok || len(arr) != 3 {
			return fmt.Errorf("%s: bad reply %#v", name, raw)
		}
		allowed, ok1 := arr[0].(int64)
		n, ok2 := arr[1].(int64)
		t, ok3 := arr[2].(int64)
		if !ok1 || !ok2 || !ok3 || allowed < 0 || allowed > 1 || n < 1 || t <= 0 {
			return fmt.Errorf("%s: bad reply %#v", name, raw)
		}
		return nil
	}
	return floorGen{
		name: name,
		run: func(depth int, end time.Time) (int64, error) {
			ctx := context.Background()
			return runWorkers(clients, func(w int) (int64, error) {
				rng := rand.New(rand.NewPCG(uint64(w), 0x9e3779b97f4a7c15))
				var n int64
				if depth == 1 {
					for time.Now().Before(end) {
						if err := check(c.EvalSha(ctx, e.sha, keys[rng.IntN(loadgenKeys)], 1, loadgenLimit)); err != nil {
							return n, err
						}
						n++
					}
					return n, nil
				}
				pipe := c.Pipeline()
				for time.Now().Before(end) {
					for range depth {
						pipe.EvalSha(ctx, e.sha, keys[rng.IntN(loadgenKeys)], 1, loadgenLimit)
					}
					cmds, err := pipe.Exec(ctx)
					if err != nil {
						return n, err
					}
					if len(cmds) != depth {
						return n, fmt.Errorf("%s: %d replies to a pipeline of %d", name, len(cmds), depth)
					}
					for _, cmd := range cmds {
						if err := check(cmd.(*redis.Cmd)); err != nil {
							return n, err
						}
					}
					n += int64(depth)
				}
				return n, nil
			})
		},
		close: func() { _ = c.Close() },
	}
}

// limitbenchGen is limitbench's own generator as BenchmarkLoadgen runs it (load.Run, closed
// loop, recording on), for comparison in the same rounds. Its count is the measured requests.
func limitbenchGen(b *testing.B, e *loadgenEnv, clients int) floorGen {
	b.Helper()
	c := e.target.NewClient(redisenv.ClientOptions{PoolSize: clients})
	return floorGen{
		name: "limitbench",
		run: func(depth int, end time.Time) (int64, error) {
			p := load.Plan{Arrival: load.ClosedLoop{}, Duration: time.Until(end), Clients: clients, Mode: load.ModePlain}
			if depth > 1 {
				p.Mode, p.PipelineDepth = load.ModePipeline, depth
			}
			return int64(e.limitbench(b, c, p, false).res.Counts.Requests), nil
		},
		close: func() { _ = c.Close() },
	}
}

// BenchmarkLoadgenFloor measures the floor of a Go load generator's CPU per request against
// redis-benchmark, on the server, script, keys, connections (32) and pipeline depths (1 and 16)
// of BenchmarkLoadgen, with GOMAXPROCS as BenchmarkLoadgen sets it. The generators:
//
//   - redis-benchmark;
//   - raw: a minimal raw-RESP Go client, one net.Conn per goroutine, a command buffer built
//     once where only the keys change, one write of depth commands then depth replies read and
//     checked in full through a bufio.Reader, no allocation per request: what Go's runtime,
//     net package and the system calls cost, and nothing else;
//   - go-redis: plain go-redis v9, no limitbench around it: EvalSha per request at depth 1, a
//     Pipeline of 16 EvalSha built once per goroutine at depth 16, default options but PoolSize
//     32 (one connection per goroutine; the default is 10 × GOMAXPROCS);
//   - go-redis-t1: the same with ReadTimeout and WriteTimeout -1 (no timeout: go-redis still
//     calls SetReadDeadline and SetWriteDeadline, with no deadline);
//   - go-redis-t2: the same with -2 (go-redis calls neither), to measure what deadlines cost;
//   - go-redis-p2: go-redis with default timeouts on RESP2 (Protocol 2) instead of RESP3, where
//     go-redis does not look for push notifications before each reply;
//   - limitbench: limitbench's generator as BenchmarkLoadgen runs it, for comparison.
//
// It reports for each Go generator and depth: cpu-µs/req-d<depth>-<generator> (CPU time of the
// process, user + system, every thread, per request; redis-benchmark's is its own process's)
// and cpu-ratio-d<depth>-<generator>, the median of the rounds' ratios to redis-benchmark's.
// Each round runs every generator once, the first one rotating from round to round, so that a
// drift in the machine's other load favours none. It ignores b.N.
//
// With -loadgen-floor-profile DIR it also writes a CPU profile of each Go generator at each
// depth to DIR (floor-<generator>-d<depth>.pprof), from an extra run after the rounds:
//
//	go test -run '^$' -bench '^BenchmarkLoadgenFloor$' -benchtime 1x -timeout 15m -v ./bench/ [-args -loadgen-floor-profile DIR] [-loadgen-floor-gens REGEXP] [-loadgen-redis URL]
//	go tool pprof -top bench.test DIR/floor-raw-d1.pprof
func BenchmarkLoadgenFloor(b *testing.B) {
	if _, _, ok := cpuUsed(); !ok {
		b.Skip("this system cannot tell a process's CPU time")
	}
	e := startLoadgenEnv(b)
	if e.target.TLS() {
		b.Skip("the raw client and redis-benchmark run without TLS")
	}
	// GOMAXPROCS as `limitbench run` sets it against this server (as BenchmarkLoadgen does).
	defer e.applyProcs(b)()
	const (
		clients = loadgenClients
		measure = loadgenMeasure
	)
	rounds := *loadgenRounds
	gens := []floorGen{
		rawGen(b, e, clients),
		goRedisGen(b, e, "go-redis", clients, 0, 0, 0),
		goRedisGen(b, e, "go-redis-t1", clients, -1, -1, 0),
		goRedisGen(b, e, "go-redis-t2", clients, -2, -2, 0),
		goRedisGen(b, e, "go-redis-p2", clients, 0, 0, 2),
		limitbenchGen(b, e, clients),
	}
	if *loadgenFloorGens != "" {
		re, err := regexp.Compile(*loadgenFloorGens)
		if err != nil {
			b.Fatalf("-loadgen-floor-gens: %v", err)
		}
		gens = slices.DeleteFunc(gens, func(g floorGen) bool {
			if !re.MatchString(g.name) {
				g.close()
				return true
			}
			return false
		})
		if len(gens) == 0 {
			b.Fatalf("-loadgen-floor-gens %q matches no generator", *loadgenFloorGens)
		}
	}
	for _, g := range gens {
		defer g.close()
	}
	// Warm the connections and the script cache.
	for _, g := range gens {
		for _, depth := range []int{1, 16} {
			measureFloor(b, g, depth, 200*time.Millisecond)
		}
	}

	for _, depth := range []int{1, 16} {
		var rbRPS, rbCPU []float64
		res := make([][]floorResult, len(gens))
		ratios := make([][]float64, len(gens))
		for i := range rounds {
			runRB := func() {
				// Size redis-benchmark's request count to about the same measuring time, from
				// the raw generator's last throughput.
				n := 20_000 * depth
				if len(res[0]) > 0 {
					n = int(res[0][len(res[0])-1].rps * measure.Seconds())
				}
				rps, cpu := e.redisBenchmark(b, clients, depth, n)
				rbRPS, rbCPU = append(rbRPS, rps), append(rbCPU, float64(cpu)/1e3)
			}
			// Side 0 is redis-benchmark, side k the generator gens[k-1]; round i starts at side
			// i mod (number of sides).
			for j := range len(gens) + 1 {
				side := (i + j) % (len(gens) + 1)
				if side == 0 {
					runRB()
					continue
				}
				res[side-1] = append(res[side-1], measureFloor(b, gens[side-1], depth, measure))
			}
			for k := range gens {
				ratios[k] = append(ratios[k], res[k][i].cpu/rbCPU[i])
			}
		}
		b.Logf("depth %2d, %d connections: redis-benchmark %.0f/s %.0f, CPU per request %.2f µs [%.2f, %.2f] %.2f",
			depth, clients, median(rbRPS), rbRPS, median(rbCPU), slices.Min(rbCPU), slices.Max(rbCPU), rbCPU)
		b.ReportMetric(median(rbCPU), fmt.Sprintf("cpu-µs/req-d%d-redis-benchmark", depth))
		for k, g := range gens {
			var rps, cpu, allocs []float64
			for _, r := range res[k] {
				rps, cpu, allocs = append(rps, r.rps), append(cpu, r.cpu), append(allocs, r.allocs)
			}
			b.Logf("depth %2d: %-11s %.0f/s, CPU per request %.2f µs [%.2f, %.2f] %.2f, ÷ redis-benchmark: median of paired ratios %.3f [%.3f, %.3f] %.3f; allocations per request %.2f",
				depth, g.name, median(rps), median(cpu), slices.Min(cpu), slices.Max(cpu), cpu,
				median(ratios[k]), slices.Min(ratios[k]), slices.Max(ratios[k]), ratios[k], median(allocs))
			b.ReportMetric(median(cpu), fmt.Sprintf("cpu-µs/req-d%d-%s", depth, g.name))
			b.ReportMetric(median(ratios[k]), fmt.Sprintf("cpu-ratio-d%d-%s", depth, g.name))
		}
	}

	if dir := *loadgenFloorProfile; dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatalf("-loadgen-floor-profile: %v", err)
		}
		// Every allocation from here on is recorded; the allocation profile of a run is the one
		// written after it less the one written before.
		defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
		runtime.MemProfileRate = 1
		for _, g := range gens {
			for _, depth := range []int{1, 16} {
				path := filepath.Join(dir, fmt.Sprintf("floor-%s-d%d.pprof", g.name, depth))
				allocs := strings.TrimSuffix(path, ".pprof") + ".allocs"
				writeAllocs(b, allocs+"-base.pprof")
				f, err := os.Create(path)
				if err != nil {
					b.Fatal(err)
				}
				if err := pprof.StartCPUProfile(f); err != nil {
					_ = f.Close()
					b.Fatal(err)
				}
				sys0, ok0 := syscallsUsed()
				r := measureFloor(b, g, depth, 6*time.Second)
				sys1, ok1 := syscallsUsed()
				pprof.StopCPUProfile()
				if err := f.Close(); err != nil {
					b.Fatal(err)
				}
				writeAllocs(b, allocs+".pprof")
				n := float64(r.n)
				b.Logf("profile of %s at depth %d (%.0f/s, %.2f µs per request): %s, allocations %s.pprof (-base %s-base.pprof)", g.name, depth, r.rps, r.cpu, path, allocs, allocs)
				if ok0 && ok1 {
					b.Logf("  per request: %.2f read and %.2f write system calls, %.2f voluntary and %.3f involuntary context switches",
						float64(sys1.reads-sys0.reads)/n, float64(sys1.writes-sys0.writes)/n,
						float64(sys1.vcsw-sys0.vcsw)/n, float64(sys1.ivcsw-sys0.ivcsw)/n)
				}
			}
		}
	}
}

// writeAllocs writes the profile of every allocation so far (the "allocs" profile) to path.
func writeAllocs(b *testing.B, path string) {
	b.Helper()
	runtime.GC() // the profile shows allocations as of the last collection
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		_ = f.Close()
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// syscallCounts are counts of this process's system calls and context switches so far.
type syscallCounts struct {
	reads, writes int64 // read and write system calls (/proc/self/io syscr, syscw)
	vcsw, ivcsw   int64 // voluntary and involuntary context switches of every thread
}

// syscallsUsed returns this process's counts; ok is false where Linux's /proc cannot tell.
func syscallsUsed() (c syscallCounts, ok bool) {
	raw, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return c, false
	}
	found := 0
	for line := range strings.Lines(string(raw)) {
		name, val, _ := strings.Cut(strings.TrimSpace(line), ": ")
		v, err := strconv.ParseInt(val, 10, 64)
		switch {
		case err != nil:
		case name == "syscr":
			c.reads, found = v, found+1
		case name == "syscw":
			c.writes, found = v, found+1
		}
	}
	var ru syscall.Rusage
	if found != 2 || syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return c, false
	}
	c.vcsw, c.ivcsw = ru.Nvcsw, ru.Nivcsw
	return c, true
}
