package load

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// counterScript admits while a per-subject counter stays within ARGV[2] and returns
// {allowed, count, TIME in µs}.
var counterScript = redis.NewScript(`
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
local t = redis.call('TIME')
local allowed = 0
if n <= tonumber(ARGV[2]) then allowed = 1 end
return {allowed, n, t[1] * 1000000 + t[2]}
`)

// testLimiter is a trivial algorithms.Limiter over counterScript that also tracks how many of
// its requests are in flight (from Send until the Result is read).
type testLimiter struct {
	prefix   string
	limit    int64
	inflight atomic.Int64
	maxIn    atomic.Int64
}

var _ algorithms.Limiter = (*testLimiter)(nil)

func (l *testLimiter) Keys(req algorithms.Request) []string {
	return []string{l.prefix + "{" + req.Subject + "}"}
}

func (l *testLimiter) NewCall() algorithms.Call { return algorithms.PendingCall(l.do) }

func (l *testLimiter) do(ctx context.Context, c redis.Cmdable, req algorithms.Request) algorithms.Pending {
	n := l.inflight.Add(1)
	for {
		m := l.maxIn.Load()
		if n <= m || l.maxIn.CompareAndSwap(m, n) {
			break
		}
	}
	var cmd *redis.Cmd
	if _, ok := c.(redis.Pipeliner); ok {
		cmd = counterScript.EvalSha(ctx, c, l.Keys(req), req.Cost, l.limit)
	} else {
		cmd = counterScript.Run(ctx, c, l.Keys(req), req.Cost, l.limit)
	}
	return func() (algorithms.Decision, error) {
		defer l.inflight.Add(-1)
		v, err := cmd.Int64Slice()
		if err != nil {
			return algorithms.Decision{}, fmt.Errorf("test limiter: %w", err)
		}
		if len(v) != 3 {
			return algorithms.Decision{}, fmt.Errorf("test limiter: %w: %v", algorithms.ErrBadReply, v)
		}
		return algorithms.Decision{Allowed: v[0] == 1, Remaining: l.limit - v[1], TimeMicros: v[2], Clock: algorithms.ClockServer}, nil
	}
}

// newLimiter loads counterScript and returns a test limiter under env's prefix.
func newLimiter(t *testing.T, env *redistest.Env, limit int64) *testLimiter {
	t.Helper()
	ctx := context.Background()
	err := env.Target.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		return counterScript.Load(ctx, c).Err()
	})
	if err != nil {
		t.Fatalf("load script: %v", err)
	}
	return &testLimiter{prefix: env.Prefix, limit: limit}
}

func newClient(env *redistest.Env, clients int) redis.UniversalClient {
	return env.Target.NewClient(redisenv.ClientOptions{PoolSize: clients})
}

func TestRunOpenLoop(t *testing.T) {
	for _, mode := range []Mode{ModePlain, ModePipeline, ModeAutoPipeline} {
		t.Run(string(mode), func(t *testing.T) {
			env := redistest.Single(t)
			lim := newLimiter(t, env, 50)
			c := newClient(env, 4)
			p := Plan{
				Arrival:  Constant(400),
				Warmup:   250 * ms,
				Duration: 500 * ms,
				Clients:  4,
				Mode:     mode,
				Keys:     Keys{Count: 3},
				Seed:     1,
				Bin:      100 * ms,
			}
			res, rec, err := recorded(context.Background(), c, lim, p)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			cn := res.Counts
			if res.Scheduled != 200 {
				t.Errorf("Scheduled = %d; want 200 (400/s × 0.5 s)", res.Scheduled)
			}
			if cn.Requests+cn.Missed != res.Scheduled || cn.Warmup != 100 {
				t.Errorf("Requests %d + Missed %d != Scheduled %d, or Warmup %d != 100", cn.Requests, cn.Missed, res.Scheduled, cn.Warmup)
			}
			if cn.Allowed+cn.Denied+cn.Failed+cn.Unknown != cn.Requests {
				t.Errorf("counts do not add up: %+v", cn)
			}
			if cn.Errors() != 0 {
				t.Errorf("errors: %+v", cn)
			}
			if got := uint64(len(rec.outs.outs)); got != cn.Requests {
				t.Errorf("the aggregators got %d outcomes; want one per measured request (%d)", got, cn.Requests)
			}
			if got := rec.hist.Latency().TotalCount(); uint64(got) != cn.Allowed+cn.Denied {
				t.Errorf("latency histogram holds %d; want %d", got, cn.Allowed+cn.Denied)
			}
			// The timeline counts every measured request in the 100 ms bin of its intended
			// time: five bins, and fewer only when the generator missed the last ticks (a
			// loaded machine can stall it past the end; the run is then behind, below).
			var want []uint64
			for _, o := range rec.outs.outs {
				i := int((o.Intended - p.Warmup) / p.Bin)
				for len(want) <= i {
					want = append(want, 0)
				}
				want[i]++
			}
			var got []uint64
			for _, b := range rec.tl.Bins {
				got = append(got, b.Offered)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("timeline's requests per bin (-from the outcomes +timeline):\n%s", diff)
			}
			if len(got) != 5 && (cn.Missed == 0 || len(got) > 5) {
				t.Errorf("timeline: %d bins with %d ticks missed; want 5 bins of 100 ms over 500 ms", len(got), cn.Missed)
			}
			if res.Behind {
				// A loaded 2-core machine may legitimately fall behind; say so rather than fail.
				t.Logf("run fell behind: late %d, missed %d of %d", cn.Late, cn.Missed, res.Scheduled)
			}
			// The warmup's admissions consumed the limit: 3 subjects × 50 permits in total.
			if cn.Allowed > 150 {
				t.Errorf("Allowed = %d > 150 = the test limiter's total", cn.Allowed)
			}
		})
	}
}

// sequence records (subject, client) by tick.
type sequence struct {
	mu  sync.Mutex
	got map[uint64][2]uint32
}

func (s *sequence) add(o *Outcome) {
	s.mu.Lock()
	s.got[o.Tick] = [2]uint32{o.Subject, uint32(o.Client)}
	s.mu.Unlock()
}

func TestRunIsSeeded(t *testing.T) {
	env := redistest.Single(t)
	lim := newLimiter(t, env, 1000)
	c := newClient(env, 4)
	run := func(seed uint64) map[uint64][2]uint32 {
		s := &sequence{got: map[uint64][2]uint32{}}
		p := Plan{Arrival: Constant(500), Duration: 200 * ms, Clients: 4, Keys: Keys{Count: 100, Distribution: Zipf, ZipfS: 1.1}, Seed: seed, OnOutcome: s.add}
		if _, _, err := recorded(context.Background(), c, lim, p); err != nil {
			t.Fatalf("Run: %v", err)
		}
		return s.got
	}
	a, b, other := run(9), run(9), run(10)
	// Compare the ticks both runs sent (a loaded machine may miss a few at the end).
	common := func(x, y map[uint64][2]uint32) (xs, ys map[uint64][2]uint32) {
		xs, ys = map[uint64][2]uint32{}, map[uint64][2]uint32{}
		for k, v := range x {
			if w, ok := y[k]; ok {
				xs[k], ys[k] = v, w
			}
		}
		return xs, ys
	}
	ax, bx := common(a, b)
	// 20 ticks of 100 Zipf subjects and 4 clients already tell two seeds apart; a loaded
	// machine may miss many of the 100 scheduled.
	if len(ax) < 20 {
		t.Fatalf("only %d ticks in common", len(ax))
	}
	if diff := cmp.Diff(ax, bx); diff != "" {
		t.Errorf("same seed, different (subject, client) sequence (-run1 +run2):\n%s", diff)
	}
	ax, ox := common(a, other)
	if cmp.Equal(ax, ox) {
		t.Errorf("seeds 9 and 10 sent the same sequence")
	}
}

func TestRunClosedLoopBoundsInFlight(t *testing.T) {
	for _, mode := range []Mode{ModePlain, ModeAutoPipeline, ModePipeline} {
		t.Run(string(mode), func(t *testing.T) {
			env := redistest.Single(t)
			lim := newLimiter(t, env, 1<<40)
			const clients = 8
			c := newClient(env, clients)
			p := Plan{Arrival: ClosedLoop{}, Duration: 200 * ms, Clients: clients, Mode: mode, PipelineDepth: 4, Keys: Keys{Count: 10}}
			res, rec, err := recorded(context.Background(), c, lim, p)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			bound := int64(clients)
			if mode == ModePipeline {
				bound = clients * 4
			}
			if got := lim.maxIn.Load(); got > bound {
				t.Errorf("max in flight = %d; want <= %d", got, bound)
			}
			if res.Counts.Requests == 0 || res.Counts.Errors() != 0 || res.Behind || res.Counts.Late != 0 {
				t.Errorf("closed loop counts %+v, behind %v", res.Counts, res.Behind)
			}
			if res.Scheduled != res.Counts.Requests {
				t.Errorf("closed loop Scheduled %d != Requests %d", res.Scheduled, res.Counts.Requests)
			}
			if lat, svc := rec.hist.Latency(), rec.hist.Service(); lat.Max() != svc.Max() {
				t.Errorf("closed loop latency max %d != service max %d; want equal (intended = sent)", lat.Max(), svc.Max())
			}
		})
	}
}

func TestRunCancel(t *testing.T) {
	env := redistest.Single(t)
	lim := newLimiter(t, env, 1<<40)
	c := newClient(env, 2)
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int64
	p := Plan{
		Arrival: Constant(200), Duration: time.Minute, Clients: 2, ProgressEvery: 50 * ms,
		Progress: func(Progress) {
			if calls.Add(1) == 4 {
				cancel()
			}
		},
	}
	begin := time.Now()
	res, rec, err := recorded(ctx, c, lim, p)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if took := time.Since(begin); took > 20*time.Second {
		t.Fatalf("Run took %s after cancel; want prompt return", took)
	}
	if !res.Canceled || res.Duration >= time.Minute || res.Duration <= 0 {
		t.Errorf("Canceled %v, Duration %s; want canceled early", res.Canceled, res.Duration)
	}
	if res.Counts.Requests == 0 || uint64(len(rec.outs.outs)) != res.Counts.Requests {
		t.Errorf("Requests %d, log %d: want the measured part kept", res.Counts.Requests, len(rec.outs.outs))
	}
	// Scheduled covers only the time before the cancel (not the minute planned), so stopping is
	// not falling behind; a loaded machine may still miss ticks before it.
	if due := uint64(200*res.Duration.Seconds()) + 2; res.Scheduled > due {
		t.Errorf("Scheduled = %d after a cancel at %s; want at most the %d ticks due by then", res.Scheduled, res.Duration, due)
	}
}

func TestRunClassifiesErrors(t *testing.T) {
	env := redistest.Single(t)
	// A limiter whose script is not loaded: EVALSHA in a pipeline gets NOSCRIPT, an error
	// reply: failed, never unknown.
	lim := &testLimiter{prefix: env.Prefix, limit: 10}
	if err := env.Target.Client.ScriptFlush(context.Background()).Err(); err != nil {
		t.Fatalf("SCRIPT FLUSH: %v", err)
	}
	c := newClient(env, 2)
	res, _, err := recorded(context.Background(), c, lim, Plan{Arrival: Constant(200), Duration: 100 * ms, Clients: 2, Mode: ModePipeline})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Counts.Failed == 0 || res.Counts.Failed != res.Counts.Requests {
		t.Errorf("counts %+v; want every request failed (NOSCRIPT)", res.Counts)
	}
	// A closed client: failed too.
	closed := newClient(env, 1)
	closed.Close()
	res, _, err = recorded(context.Background(), closed, lim, Plan{Arrival: Constant(100), Duration: MinDuration, Clients: 1})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Counts.Failed != res.Counts.Requests || res.Counts.Requests == 0 {
		t.Errorf("closed client counts %+v; want every request failed", res.Counts)
	}
}

func TestRunCluster(t *testing.T) {
	env := redistest.Cluster(t)
	lim := newLimiter(t, env, 20)
	c := newClient(env, 4)
	for _, mode := range []Mode{ModePlain, ModePipeline, ModeAutoPipeline} {
		res, _, err := recorded(context.Background(), c, lim, Plan{Arrival: Constant(300), Duration: 300 * ms, Clients: 4, Mode: mode, Keys: Keys{Count: 16}})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if res.Counts.Errors() != 0 || res.Counts.Requests == 0 {
			t.Errorf("%s on a cluster: counts %+v", mode, res.Counts)
		}
	}
}

func TestOwnConns(t *testing.T) {
	client := func(poolSize, maxActive int) redis.UniversalClient {
		// Never dialed: ownConns only reads the options.
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", PoolSize: poolSize, MaxActiveConns: maxActive})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, PoolSize: 8})
	t.Cleanup(func() { _ = cluster.Close() })
	tests := []struct {
		name    string
		c       redis.UniversalClient
		mode    Mode
		clients int
		want    bool
	}{
		{"plain, pool = clients", client(4, 0), ModePlain, 4, true},
		{"pipeline, pool > clients", client(6, 0), ModePipeline, 4, true},
		{"default mode", client(4, 0), "", 4, true},
		{"pool < clients", client(3, 0), ModePlain, 4, false},
		{"max active < clients", client(8, 3), ModePipeline, 4, false},
		{"autopipeline", client(4, 0), ModeAutoPipeline, 4, false},
		{"cluster", cluster, ModePlain, 4, false},
		{"no client", nil, ModePlain, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ownConns(tt.c, Plan{Mode: tt.mode, Clients: tt.clients})
			if (got != nil) != tt.want {
				t.Errorf("ownConns(%s, %d clients) = %v; want own connections %v", tt.mode, tt.clients, got, tt.want)
			}
		})
	}
}

// poolGets returns how many times c's pools handed out a connection.
func poolGets(c redis.UniversalClient) uint32 {
	s := c.(*redis.Client).PoolStats()
	n := s.Hits + s.Misses
	if s.PipelineStats != nil {
		n += s.PipelineStats.Hits + s.PipelineStats.Misses
	}
	return n
}

// connectionsReceived returns the server's total_connections_received (INFO stats).
func connectionsReceived(t *testing.T, env *redistest.Env) int64 {
	t.Helper()
	info, err := env.Target.Client.Info(context.Background(), "stats").Result()
	if err != nil {
		t.Fatalf("INFO stats: %v", err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_connections_received:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("INFO stats: %q: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("INFO stats has no total_connections_received: %s", info)
	return 0
}

func TestRunHoldsConnections(t *testing.T) {
	// When the pool has a connection for every worker, each worker sends on a wire connection
	// of its own, opened once (the server counts one connection per worker, and one for the
	// client's first ping), and the pool hands out none for the requests. With fewer, workers
	// take a connection from the pool once per request (or batch).
	const clients = 4
	for _, mode := range []Mode{ModePlain, ModePipeline} {
		for _, poolSize := range []int{clients, clients - 1} {
			t.Run(fmt.Sprintf("%s/pool %d", mode, poolSize), func(t *testing.T) {
				env := redistest.Single(t)
				lim := newLimiter(t, env, 1<<40)
				c := newClient(env, poolSize)
				defer c.Close()
				conns := connectionsReceived(t, env)
				p := Plan{Arrival: ClosedLoop{}, Duration: 200 * ms, Clients: clients, Mode: mode, PipelineDepth: 4, Keys: Keys{Count: 10}}
				res, _, err := recorded(context.Background(), c, lim, p)
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				n := res.Counts.Requests
				if n < 8*clients*4 || res.Counts.Errors() != 0 {
					t.Fatalf("counts %+v; want errorless and enough requests to tell", res.Counts)
				}
				gets := poolGets(c)
				conns = connectionsReceived(t, env) - conns
				if poolSize >= clients && (gets > 1 || conns > clients+1) {
					t.Errorf("pool handed out %d connections and the server received %d for %d requests of %d workers; want one each and the ping's", gets, conns, n, clients)
				}
				if poolSize < clients && uint64(gets) < n/4 {
					t.Errorf("pool of %d for %d workers handed out %d connections for %d requests; want one per round trip", poolSize, clients, gets, n)
				}
			})
		}
	}
}

// killLimiter is testLimiter that, at its kill-th call, closes every client connection of the
// server but admin's (CLIENT KILL TYPE normal SKIPME yes), so that the request goes out on a
// connection the server has closed.
type killLimiter struct {
	*testLimiter
	admin redis.UniversalClient
	kill  int64
	calls atomic.Int64
	err   error // from CLIENT KILL; read after Run
}

func (l *killLimiter) NewCall() algorithms.Call { return algorithms.PendingCall(l.do) }

func (l *killLimiter) do(ctx context.Context, c redis.Cmdable, req algorithms.Request) algorithms.Pending {
	if l.calls.Add(1) == l.kill {
		l.err = l.admin.ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Err()
	}
	return l.testLimiter.do(ctx, c, req)
}

func TestRunRecoversFromKilledConnection(t *testing.T) {
	// Regression: a worker holding its own connection must give it up after a request fails on
	// it (go-redis then fails every later command on that connection), so one lost connection
	// costs one round trip, not the rest of the run.
	for _, mode := range []Mode{ModePlain, ModePipeline} {
		t.Run(string(mode), func(t *testing.T) {
			env := redistest.Single(t)
			const depth = 4
			lim := &killLimiter{testLimiter: newLimiter(t, env, 1<<40), admin: env.Target.Client, kill: 10 * depth}
			c := newClient(env, 1)
			defer c.Close()
			p := Plan{Arrival: ClosedLoop{}, Duration: 300 * ms, Clients: 1, Mode: mode, PipelineDepth: depth, Keys: Keys{Count: 10}}
			res, _, err := recorded(context.Background(), c, lim, p)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if lim.err != nil {
				t.Fatalf("CLIENT KILL: %v", lim.err)
			}
			cn := res.Counts
			if cn.Requests < uint64(4*lim.kill) {
				t.Fatalf("only %d requests; want well past the kill at %d", cn.Requests, lim.kill)
			}
			if cn.Errors() > depth {
				t.Errorf("counts %+v: %d errors; want at most one round trip's (%d) lost to the killed connection", cn, cn.Errors(), depth)
			}
		})
	}
}

func TestPlanValidate(t *testing.T) {
	err := Plan{Clients: 0, Duration: -1, Mode: "bulk", Cost: 70000, Arrival: Constant(-1), Keys: Keys{Distribution: "x"}}.Validate()
	if !errors.Is(err, ErrBadPlan) || !errors.Is(err, ErrBadPacer) {
		t.Fatalf("Validate() = %v; want ErrBadPlan wrapping ErrBadPacer", err)
	}
	for _, want := range []string{"arrival", "duration", "clients", "mode", "cost", "distribution"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v; want a problem naming %q", err, want)
		}
	}
	if err := (Plan{Arrival: ClosedLoop{}, Duration: time.Second, Clients: 1}).Validate(); err != nil {
		t.Errorf("minimal plan: Validate() = %v; want nil", err)
	}
}

// TestPlanBounds: every bound of bounds.go holds at its limit and breaks just past it, naming
// the field; NaN and infinite rates are refused.
func TestPlanBounds(t *testing.T) {
	ok := Plan{Arrival: Constant(100), Duration: time.Second, Clients: 4}
	tests := []struct {
		name  string
		edit  func(*Plan)
		field string // "" when the plan is valid
	}{
		{"minimal", func(*Plan) {}, ""},
		{"shortest duration", func(p *Plan) { p.Duration = MinDuration }, ""},
		{"too short", func(p *Plan) { p.Duration = MinDuration - 1 }, "duration"},
		{"one nanosecond", func(p *Plan) { p.Duration = 1 }, "duration"},
		{"longest span", func(p *Plan) { p.Warmup, p.Duration = time.Hour, MaxSpan-time.Hour }, ""},
		{"span too long", func(p *Plan) { p.Warmup, p.Duration = time.Hour, MaxSpan }, "duration"},
		{"warmup too long", func(p *Plan) { p.Warmup = MaxSpan + 1 }, "warmup"},
		{"most clients", func(p *Plan) { p.Clients = MaxClients }, ""},
		{"too many clients", func(p *Plan) { p.Clients = MaxClients + 1 }, "clients"},
		{"a billion clients", func(p *Plan) { p.Clients = 1_000_000_000 }, "clients"},
		{"deepest pipeline", func(p *Plan) { p.Mode, p.Clients, p.PipelineDepth = ModePipeline, 1, MaxPipelineDepth }, ""},
		{"too deep", func(p *Plan) { p.Mode, p.Clients, p.PipelineDepth = ModePipeline, 1, MaxPipelineDepth+1 }, "pipeline depth"},
		{"most in flight", func(p *Plan) { p.Mode, p.Clients, p.PipelineDepth = ModePipeline, 100, MaxInFlight/100 }, ""},
		{"too many in flight", func(p *Plan) { p.Mode, p.Clients, p.PipelineDepth = ModePipeline, 100, MaxInFlight/100+1 }, "pipeline depth"},
		{"depth ignored outside pipeline mode", func(p *Plan) { p.PipelineDepth = 100_000_000 }, ""},
		{"most keys", func(p *Plan) { p.Keys.Count = MaxKeys }, ""},
		{"too many keys", func(p *Plan) { p.Keys.Count = MaxKeys + 1 }, "keys.count"},
		{"a trillion keys", func(p *Plan) { p.Keys.Count = 1_000_000_000_000 }, "keys.count"},
		{"highest cost", func(p *Plan) { p.Cost = MaxCost }, ""},
		{"cost too high", func(p *Plan) { p.Cost = MaxCost + 1 }, "cost"},
		{"highest rate", func(p *Plan) { p.Arrival = Constant(MaxRate) }, ""},
		{"rate too high", func(p *Plan) { p.Arrival = Constant(1e15) }, "arrival"},
		{"NaN rate", func(p *Plan) { p.Arrival = Constant(math.NaN()) }, "arrival"},
		{"infinite rate", func(p *Plan) { p.Arrival = Ramp(0, math.Inf(1), time.Second) }, "arrival"},
		{"too many pieces", func(p *Plan) { p.Arrival = Steps(time.Millisecond, make([]float64, MaxPieces+1)...) }, "arrival"},
		{"NaN zipf exponent", func(p *Plan) { p.Keys = Keys{Count: 3, Distribution: Zipf, ZipfS: math.NaN()} }, "keys.zipf_s"},
		{"NaN hot share", func(p *Plan) { p.Keys = Keys{Count: 3, Distribution: Hot, HotShare: math.NaN()} }, "keys.hot_share"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ok
			tt.edit(&p)
			err := p.Validate()
			switch {
			case tt.field == "" && err != nil:
				t.Errorf("Validate() = %v; want nil", err)
			case tt.field != "" && (!errors.Is(err, ErrBadPlan) || !strings.Contains(err.Error(), tt.field+":")):
				t.Errorf("Validate() = %v; want ErrBadPlan naming %s", err, tt.field)
			}
		})
	}
}

// collector is an Aggregator that keeps a copy of every outcome, for tests.
type collector struct{ outs []Outcome }

func (c *collector) Add(o *Outcome)    { c.outs = append(c.outs, *o) }
func (c *collector) Fresh() Aggregator { return &collector{} }
func (c *collector) Finish() Counts    { return Counts{} }
func (c *collector) Merge(o Aggregator) error {
	oc, ok := o.(*collector)
	if !ok {
		return ErrMismatch
	}
	c.outs = append(c.outs, oc.outs...)
	return nil
}

// recording is a set of aggregators like the runner gives Run: histograms, a timeline and a
// collector of the measured part's outcomes, and a collector of the warmup's.
type recording struct {
	hist       *Histograms
	tl         *Timeline
	outs, warm *collector
}

// record returns the aggregators of a run of p.
func record(p Plan) *recording {
	p = p.withDefaults()
	return &recording{
		hist: NewHistograms(p.MaxLatency),
		tl:   NewTimeline(p.Warmup, p.Bin, p.Duration),
		outs: &collector{},
		warm: &collector{},
	}
}

func (r *recording) sinks() Sinks {
	return Sinks{Measured: []Aggregator{r.hist, r.tl, r.outs}, Warmup: []Aggregator{r.warm}}
}

// recorded runs Run with the aggregators of record(p) and returns them with the result.
func recorded(ctx context.Context, c redis.UniversalClient, lim algorithms.Limiter, p Plan) (*Result, *recording, error) {
	rec := record(p)
	res, err := Run(ctx, c, lim, p, rec.sinks())
	return res, rec, err
}
