package algorithms

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

func TestDecodeDecision(t *testing.T) {
	good := []any{int64(1), int64(4), int64(0), int64(1_700_000_000_000_000)}
	d, err := decodeDecision(good, ClockServer)
	want := Decision{Allowed: true, Remaining: 4, TimeMicros: 1_700_000_000_000_000, Clock: ClockServer}
	if err != nil || d != want {
		t.Fatalf("decodeDecision(%v) = %+v, %v; want %+v", good, d, err, want)
	}
	denied := []any{int64(0), int64(0), int64(1500), int64(7)}
	d, err = decodeDecision(denied, ClockClient)
	want = Decision{RetryAfter: 1500 * time.Microsecond, TimeMicros: 7, Clock: ClockClient}
	if err != nil || d != want {
		t.Fatalf("decodeDecision(%v) = %+v, %v; want %+v", denied, d, err, want)
	}

	bad := []struct {
		name string
		raw  any
	}{
		{"nil", nil},
		{"string", "OK"},
		{"integer", int64(1)},
		{"empty array", []any{}},
		{"short array", []any{int64(1), int64(2), int64(3)}},
		{"long array", []any{int64(1), int64(2), int64(3), int64(4), int64(5)}},
		{"string element", []any{"1", int64(2), int64(3), int64(4)}},
		{"float element", []any{int64(1), 2.5, int64(3), int64(4)}},
		{"nil element", []any{int64(1), nil, int64(3), int64(4)}},
		{"int not int64", []any{1, int64(2), int64(3), int64(4)}},
		{"allowed 2", []any{int64(2), int64(2), int64(0), int64(4)}},
		{"allowed -1", []any{int64(-1), int64(2), int64(0), int64(4)}},
		{"negative retry", []any{int64(0), int64(0), int64(-5), int64(4)}},
		{"zero time", []any{int64(1), int64(2), int64(0), int64(0)}},
		{"negative time", []any{int64(1), int64(2), int64(0), int64(-3)}},
		{"nested array", []any{[]any{int64(1)}, int64(2), int64(0), int64(4)}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			d, err := decodeDecision(tt.raw, ClockServer)
			if !errors.Is(err, ErrBadReply) {
				t.Fatalf("decodeDecision(%#v) = %+v, %v; want ErrBadReply", tt.raw, d, err)
			}
			if d.Allowed {
				t.Errorf("a bad reply decoded as an admission")
			}
		})
	}
}

// TestCallResult: a failed or malformed reply from Redis is an error, never an admission.
func TestCallResult(t *testing.T) {
	tests := []struct {
		name    string
		cmd     *redis.Cmd
		wantErr error
	}{
		{"redis error", redis.NewCmdResult(nil, errors.New("ERR boom")), nil},
		{"nil reply", redis.NewCmdResult(nil, redis.Nil), redis.Nil},
		{"status reply", redis.NewCmdResult("OK", nil), ErrBadReply},
		{"bool-like reply", redis.NewCmdResult(int64(1), nil), ErrBadReply},
		{"short array", redis.NewCmdResult([]any{int64(1)}, nil), ErrBadReply},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := (&gcraLimiter{interval: 1, tolerance: 10}).NewCall().(*gcraCall)
			c.sent = &evalCmd{last: tt.cmd}
			d, err := c.Result()
			if err == nil || d.Allowed {
				t.Fatalf("got %+v, %v; want an error and no admission", d, err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %v; want %v", err, tt.wantErr)
			}
			if !strings.HasPrefix(err.Error(), "gcra: ") {
				t.Errorf("error %q does not name the algorithm", err)
			}
		})
	}
}

func TestRequestCost(t *testing.T) {
	tests := []struct {
		cost    int64
		multi   bool
		want    int64
		wantErr bool
	}{
		{0, false, 1, false},
		{1, false, 1, false},
		{2, false, 0, true},
		{2, true, 2, false},
		{-1, true, 0, true},
	}
	for _, tt := range tests {
		got, err := requestCost("x", Request{Cost: tt.cost}, tt.multi)
		if got != tt.want || (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, ErrCostUnsupported)) {
			t.Errorf("requestCost(cost %d, multi %v) = %d, %v; want %d, error %v", tt.cost, tt.multi, got, err, tt.want, tt.wantErr)
		}
	}
}

// TestDescriptions: every algorithm of this package's core says what the list shows.
func TestDescriptions(t *testing.T) {
	for _, name := range coreNames {
		a, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		d := a.Describe()
		if d.Name != name || d.Origin == "" || d.Clock == 0 || d.KeysPerSubject < 1 || (d.Memory != "O(1)" && d.Memory != "O(limit)") {
			t.Errorf("%s: incomplete description %+v", name, d)
		}
		published := strings.HasSuffix(name, "-published")
		if published != (d.Flaw != "") || published == (d.Corrected != "") {
			t.Errorf("%s: Flaw %q, Corrected %q: want a flaw exactly for -published and a correction otherwise", name, d.Flaw, d.Corrected)
		}
		if published != (a.Model(Limit{Limit: 1, Window: time.Second}) == nil) {
			t.Errorf("%s: want a model exactly for corrected algorithms", name)
		}
		if _, err := a.Contract(Limit{}); !errors.Is(err, ErrBadLimit) {
			t.Errorf("%s: Contract(zero Limit) error %v; want ErrBadLimit", name, err)
		}
	}
}

func TestContracts(t *testing.T) {
	l := Limit{Limit: 10, Window: 2 * time.Second, Burst: 15}
	want := map[string]Contract{
		"fixed-window":           {Kind: FixedWindow, Limit: 10, Window: 2 * time.Second},
		"fixed-window-published": {Kind: FixedWindow, Limit: 10, Window: time.Minute},
		"sliding-log":            {Kind: SlidingWindow, Limit: 10, Window: 2 * time.Second},
		"sliding-log-published":  {Kind: SlidingWindow, Limit: 10, Window: 2 * time.Second, Granularity: time.Millisecond},
		"token-bucket":           {Kind: TokenBucket, Capacity: 15, RefillPermits: 10, RefillPer: 2 * time.Second},
		"token-bucket-published": {Kind: TokenBucket, Capacity: 15, RefillPermits: 10, RefillPer: 2 * time.Second, Granularity: time.Second},
		"gcra":                   {Kind: TokenBucket, Capacity: 15, RefillPermits: 10, RefillPer: 2 * time.Second},
		"sliding-counter":        {Kind: FixedWindow, Limit: 10, Window: 2 * time.Second},
	}
	for name, w := range want {
		c, err := lookup(t, name).Contract(l)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(w, c); diff != "" {
			t.Errorf("%s: Contract(%+v) (-want +got):\n%s", name, l, diff)
		}
	}
}

// TestNoscriptFallback: when the script cache is flushed after Prepare (a restarted or failed-over
// server), a pipelined request, which is a bare EVALSHA, fails with NOSCRIPT and loads the script
// again, so that the next pipelined request of the same Call is decided; a request on a client
// falls back to EVAL, as Script.Run does, and is decided, and that EVAL puts the script back, so
// the next pipeline works again. Every algorithm, and the reference, on a single node and on a
// cluster, through one Call that sends its command again each time (as the load generator does).
func TestNoscriptFallback(t *testing.T) {
	l := Limit{Limit: 5, Window: time.Second}
	topologies(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		c := env.Target.Client
		flush := func() {
			if err := env.Target.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
				return m.ScriptFlush(ctx).Err()
			}); err != nil {
				t.Fatal(err)
			}
		}
		for _, a := range append(All(), Reference()) {
			name := a.Describe().Name
			scripted := name != "sliding-log-published" // the article sends plain commands
			lim := prepare(t, env, a, l)
			call := lim.NewCall()
			pipelined := func(req Request) (Decision, error) {
				p := c.Pipeline()
				call.Send(ctx, p, req)
				_, _ = p.Exec(ctx) // the command's own error is read through Result
				return call.Result()
			}
			at := func(ms int) Request {
				t := base.Add(time.Duration(ms) * time.Millisecond)
				return Request{Subject: "nos", Client: "c", Cost: 1, ClientTime: t, FixedTime: t}
			}
			flush()
			_, err := pipelined(at(0))
			if got := err != nil && strings.Contains(err.Error(), "NOSCRIPT"); got != scripted {
				t.Errorf("%s: pipelined EVALSHA after SCRIPT FLUSH: %v; want NOSCRIPT %v", name, err, scripted)
			}
			if d, err := pipelined(at(1)); err != nil || !d.Allowed {
				t.Errorf("%s: pipeline after a NOSCRIPT: %+v, %v; want allowed (the NOSCRIPT loaded the script again)", name, d, err)
			}
			flush()
			call.Send(ctx, c, at(2))
			if d, err := call.Result(); err != nil || !d.Allowed {
				t.Errorf("%s: after SCRIPT FLUSH: %+v, %v; want allowed (EVALSHA, then EVAL)", name, d, err)
			}
			if d, err := pipelined(at(3)); err != nil || !d.Allowed {
				t.Errorf("%s: pipeline after the fallback: %+v, %v; want allowed (EVAL cached the script)", name, d, err)
			}
		}
	})
}

// Issue 14, item 3: after SCRIPT FLUSH, every built-in algorithm and a custom script recover in
// pipeline mode: the pipelined requests that meet NOSCRIPT fail (they did not run), and the
// script is loaded again so that the next pipeline decides. Before, a pipeline never loaded the
// script again and failed with NOSCRIPT until the end of the run. Plain calls recover through
// EVAL, as before. On a private server and a private cluster, since it flushes their scripts.
func TestPipelineReloadsAfterScriptFlush(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private server and cluster")
	}
	for _, topo := range []redisenv.Topology{redisenv.TopologySingle, redisenv.TopologyCluster} {
		t.Run(string(topo), func(t *testing.T) {
			t.Parallel()
			target := redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess, Topology: topo})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			custom, err := NewCustom(CustomSpec{Name: "mine", Source: "return {1, 0, 0, 1}", Keys: []string{"mine:{{subject}}"},
				Allowed: ReplyRule{Element: 1, Op: RuleEquals, Value: "1"}, Contract: Contract{Kind: NoContract}})
			if err != nil {
				t.Fatal(err)
			}
			algs := append(All(), custom)
			lims := make([]Limiter, len(algs))
			for i, a := range algs {
				if lims[i], err = a.Prepare(ctx, target.Client, Limit{Limit: 1000, Window: time.Second}, "p14:"); err != nil {
					t.Fatalf("%s: Prepare: %v", a.Describe().Name, err)
				}
			}
			flush := func() {
				if err := target.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
					return c.ScriptFlush(ctx).Err()
				}); err != nil {
					t.Fatal(err)
				}
			}
			// batch sends three requests of lim in one pipeline and returns their errors.
			batch := func(lim Limiter) []error {
				pipe := target.Client.Pipeline()
				var ps []Pending
				for i := range 3 {
					ps = append(ps, Do(ctx, lim, pipe, Request{Subject: fmt.Sprintf("s%d", i), Client: "c", Cost: 1,
						ClientTime: time.Now()}))
				}
				_, _ = pipe.Exec(ctx)
				var errs []error
				for _, p := range ps {
					_, err := p()
					errs = append(errs, err)
				}
				return errs
			}
			for i, a := range algs {
				name := a.Describe().Name
				if name == "sliding-log-published" {
					continue // plain commands, no script
				}
				flush()
				for _, err := range batch(lims[i]) {
					if err == nil || !strings.Contains(err.Error(), "NOSCRIPT") {
						t.Errorf("%s: pipelined request after SCRIPT FLUSH: %v; want NOSCRIPT (the flush happened)", name, err)
					}
				}
				for j, err := range batch(lims[i]) {
					if err != nil {
						t.Errorf("%s: pipelined request %d after the NOSCRIPT batch: %v; want the script loaded again", name, j, err)
					}
				}
				flush()
				if _, err := Do(ctx, lims[i], target.Client, Request{Subject: "p", Client: "c", Cost: 1, ClientTime: time.Now()})(); err != nil {
					t.Errorf("%s: plain request after SCRIPT FLUSH: %v; want it run through EVAL", name, err)
				}
			}
		})
	}
}
