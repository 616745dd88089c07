package algorithms

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

// redissonNames are the two rate types of seed 000.
var redissonNames = []string{"redisson", "redisson-per-client"}

// clientAt is a request of client for subject on the client's clock t.
func clientAt(subject, client string, t time.Time) Request {
	return Request{Subject: subject, Client: client, Cost: 1, ClientTime: t}
}

// TestRedissonSequential: the first L grants of a fresh subject pass, the next is denied with a
// retry-after that is exact in ms on the caller's clock, and the request passes once it is over.
func TestRedissonSequential(t *testing.T) {
	const limit = 5
	l := Limit{Limit: limit, Window: time.Second}
	for _, name := range redissonNames {
		t.Run(name, func(t *testing.T) {
			a := lookup(t, name)
			topologies(t, func(t *testing.T, env *redistest.Env) {
				cl := env.Target.Client
				lim := prepare(t, env, a, l)
				now := base
				for i := range limit {
					now = base.Add(time.Duration(i)*time.Millisecond + 300*time.Microsecond)
					d := decide(t, cl, lim, clientAt("s", "c1", now))
					if !d.Allowed || d.Remaining != limit-int64(i)-1 {
						t.Fatalf("request %d: %+v, want allowed with %d remaining", i+1, d, limit-i-1)
					}
					if want := now.Truncate(time.Millisecond).UnixMicro(); d.TimeMicros != want || d.Clock != ClockClient {
						t.Errorf("decision time %d (%s), want %d (client)", d.TimeMicros, d.Clock, want)
					}
				}
				now = now.Add(time.Millisecond)
				d := decide(t, cl, lim, clientAt("s", "c1", now))
				// The oldest grant, at base (ms), leaves at base + W.
				if want := base.Add(l.Window).Sub(now.Truncate(time.Millisecond)); d.Allowed || d.RetryAfter != want {
					t.Fatalf("request %d: %+v, want denied with retry-after %s", limit+1, d, want)
				}
				if o := decide(t, cl, lim, clientAt("other", "c1", now)); !o.Allowed {
					t.Errorf("another subject was denied: subjects share state")
				}
				// OVERALL counts every client together, PER_CLIENT each on its own.
				o := decide(t, cl, lim, clientAt("s", "c2", now))
				if want := name == "redisson-per-client"; o.Allowed != want {
					t.Errorf("another client of the subject: allowed %v, want %v", o.Allowed, want)
				}
				next := now.Truncate(time.Millisecond).Add(d.RetryAfter)
				if e := decide(t, cl, lim, clientAt("s", "c1", next.Add(-time.Millisecond))); e.Allowed {
					t.Errorf("allowed 1 ms before retry-after %s: retry-after is not tight", d.RetryAfter)
				}
				if e := decide(t, cl, lim, clientAt("s", "c1", next)); !e.Allowed {
					t.Errorf("denied at the retry-after %s: %+v", d.RetryAfter, e)
				}
			})
		})
	}
}

// TestRedissonCost: a request charges its cost; more than the rate is denied with retry-after 0.
func TestRedissonCost(t *testing.T) {
	for _, name := range redissonNames {
		t.Run(name, func(t *testing.T) {
			env := redistest.Single(t)
			cl := env.Target.Client
			lim := prepare(t, env, lookup(t, name), Limit{Limit: 5, Window: time.Second})
			req := clientAt("c", "c1", base)
			steps := []struct {
				cost      int64
				allowed   bool
				remaining int64
			}{{3, true, 2}, {3, false, 2}, {2, true, 0}, {6, false, 0}}
			for i, s := range steps {
				req.Cost = s.cost
				d := decide(t, cl, lim, req)
				if d.Allowed != s.allowed || d.Remaining != s.remaining {
					t.Errorf("step %d, cost %d: %+v; want allowed %v, remaining %d", i+1, s.cost, d, s.allowed, s.remaining)
				}
				if s.cost > 5 && d.RetryAfter != 0 {
					t.Errorf("cost %d over the rate: retry-after %s, want 0 (never)", s.cost, d.RetryAfter)
				}
			}
			req.Cost = -1
			if _, err := Do(context.Background(), lim, cl, req)(); !errors.Is(err, ErrCostUnsupported) {
				t.Errorf("cost -1: %v, want ErrCostUnsupported", err)
			}
		})
	}
}

// TestRedissonSkewFlaw shows the published flaw: a client whose clock runs one window ahead
// expires the grants of a correct client, so twice the rate passes within one real millisecond.
func TestRedissonSkewFlaw(t *testing.T) {
	const limit = 5
	l := Limit{Limit: limit, Window: time.Second}
	topologies(t, func(t *testing.T, env *redistest.Env) {
		cl := env.Target.Client
		lim := prepare(t, env, lookup(t, "redisson"), l)
		admitted := 0
		for i := range 2 * limit {
			clock := base // the correct client
			if i >= limit {
				clock = base.Add(l.Window) // the skewed one, in the same real instant
			}
			if decide(t, cl, lim, clientAt("skew", "c", clock)).Allowed {
				admitted++
			}
		}
		if admitted != 2*limit {
			t.Errorf("%d admitted in one real instant, want %d (the skewed client's clock releases the grants)", admitted, 2*limit)
		}
	})
}

// TestRedissonGrantCollision reproduces the article's packing of grants, struct.pack('fI', id,
// permits): two ids that round to the same 4-byte float, granted the same permits, are one member
// of the sorted set, so when it leaves the window only one grant's permits come back and the
// limiter has lost one permit for good. Ids with different floats lose nothing.
func TestRedissonGrantCollision(t *testing.T) {
	const limit = 5
	l := Limit{Limit: limit, Window: time.Second}
	tests := []struct {
		name   string
		a, b   int64
		grants int64 // members the two grants leave in the sorted set
	}{
		{"same float", 1 << 40, 1<<40 + 1, 1}, // float32 keeps 24 significant bits
		{"different floats", 1 << 40, 1<<40 + 1<<20, 2},
	}
	for _, name := range redissonNames {
		for _, tt := range tests {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				env := redistest.Single(t)
				c := env.Target.Client
				lim := prepare(t, env, lookup(t, name), l)
				ids := []int64{tt.a, tt.b}
				lim.(*redissonLimiter).id = func() int64 { id := ids[0]; ids = ids[1:]; return id }
				for i := range 2 {
					if d := decide(t, c, lim, clientAt("s", "c", base.Add(time.Duration(i)*time.Millisecond))); !d.Allowed {
						t.Fatalf("grant %d: %+v, want allowed", i+1, d)
					}
				}
				permitsKey := lim.Keys(clientAt("s", "c", base))[2]
				if n := c.ZCard(context.Background(), permitsKey).Val(); n != tt.grants {
					t.Errorf("ZCARD %s = %d after two grants, want %d", permitsKey, n, tt.grants)
				}
				// Both grants have left the window: a fresh window should admit the whole rate.
				lim.(*redissonLimiter).id = nil // random ids from here on
				later := base.Add(l.Window + 10*time.Millisecond)
				admitted := int64(0)
				for i := range limit + 1 {
					if decide(t, c, lim, clientAt("s", "c", later.Add(time.Duration(i)*time.Millisecond))).Allowed {
						admitted++
					}
				}
				if want := limit - (2 - tt.grants); admitted != want {
					t.Errorf("%d admitted in the next window, want %d (permits leaked: %d)", admitted, want, 2-tt.grants)
				}
			})
		}
	}
}

// TestRedissonDifferential: with non-decreasing caller times (no skew), Redisson decides exactly
// like a sliding log of the caller's ms: the value counter always equals the rate minus the
// permits granted in (t−W, t].
func TestRedissonDifferential(t *testing.T) {
	l := Limit{Limit: 7, Window: 150 * time.Millisecond}
	for _, name := range redissonNames {
		t.Run(name, func(t *testing.T) {
			a := lookup(t, name)
			topologies(t, func(t *testing.T, env *redistest.Env) {
				rng := rand.New(rand.NewPCG(3, 42))
				lim := prepare(t, env, a, l)
				// Seeded grant ids: a float collision of two ids (see TestRedissonGrantCollision)
				// would leak a permit and make the script deny where the sliding log admits; with
				// fixed ids the outcome is the same on every run.
				ids := rand.New(rand.NewPCG(3, 43))
				lim.(*redissonLimiter).id = func() int64 { return int64(ids.Uint64()) }
				m := newSlidingLogModel(l)
				now := base
				p := env.Target.Client.Pipeline()
				type sent struct {
					key  string
					cost int64
					pend Pending
				}
				var batch []sent
				for range 1500 {
					now = now.Add(time.Duration(rng.Int64N(2*int64(l.Window)/l.Limit + 1)))
					s, c := []string{"a", "b"}[rng.IntN(2)], []string{"x", "y"}[rng.IntN(2)]
					cost := int64(1)
					if rng.IntN(4) == 0 {
						cost = 1 + rng.Int64N(3)
					}
					key := s
					if name == "redisson-per-client" {
						key = s + "/" + c
					}
					req := Request{Subject: s, Client: c, Cost: cost, ClientTime: now}
					batch = append(batch, sent{key, cost, Do(context.Background(), lim, p, req)})
				}
				if _, err := p.Exec(context.Background()); err != nil {
					t.Fatalf("Exec: %v", err)
				}
				allowed := 0
				for i, b := range batch {
					d, err := b.pend()
					if err != nil {
						t.Fatalf("request %d: %v", i, err)
					}
					if want := m.Decide(b.key, "", b.cost, d.TimeMicros); d.Allowed != want {
						t.Fatalf("request %d (%s, cost %d, t=%d): script allowed=%v, sliding log %v", i, b.key, b.cost, d.TimeMicros, d.Allowed, want)
					}
					if d.Allowed {
						allowed++
					}
				}
				if allowed == 0 || allowed == len(batch) {
					t.Errorf("%d of %d allowed; the sequence tests nothing", allowed, len(batch))
				}
			})
		})
	}
}

// TestRedissonConcurrency: 64 goroutines with correct clocks hammer one subject (one client for
// PER_CLIENT). The caller takes its time before the call reaches Redis, so grants can arrive out
// of time order by the scheduling delay; the count over the whole run is checked against the
// contract with a margin of one window, and a violation on the returned times is only logged.
// Under overload the count must not be far below the contract's bound. Subtests run in parallel.
func TestRedissonConcurrency(t *testing.T) {
	if testing.Short() {
		t.Skip("hammers Redis for seconds")
	}
	l := Limit{Limit: 50, Window: 200 * time.Millisecond}
	for _, name := range redissonNames {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := lookup(t, name)
			parallelTopologies(t, func(t *testing.T, env *redistest.Env) {
				c, err := a.Contract(l)
				if err != nil {
					t.Fatal(err)
				}
				lim := prepare(t, env, a, l)
				r := hammer(t, env, lim, hammerFor)
				if v := violation(c, r.times); v != "" {
					t.Logf("on the callers' times (out of order by scheduling): %s", v)
				}
				bound := maxAdmissions(c, r.elapsed+l.Window)
				t.Logf("%s: %d offered, %d admitted in %s; bound %d", c, r.offered, r.admitted, r.elapsed, bound)
				if r.admitted > bound {
					t.Errorf("%d admissions in %s, contract %s allows %d", r.admitted, r.elapsed, c, bound)
				}
				// The margin of one window is on the upper side only.
				checkUnderOverload(t, r.admitted, r.offered, maxAdmissions(c, r.elapsed))
			})
		})
	}
}

// TestBadReplies: a reply of the wrong shape from any of this file's limiters is an error wrapping
// ErrBadReply (or the Redis error), never an admission. The limiters are given a stand-in script.
func TestBadReplies(t *testing.T) {
	env := redistest.Single(t)
	ctx := context.Background()
	tests := []struct {
		name, lua string
		bad       bool // ErrBadReply, else another error
	}{
		{"integer", "return 1", true},
		{"string", "return 'True'", true},
		{"short", "return {1, 2, 3}", true},
		{"long", "return {1, 2, 3, 4, 5}", true},
		{"flag 2", "return {2, 0, 0, 1}", true},
		{"flag -1", "return {-1, 0, 0, 1}", true},
		{"string element", "return {1, 'x', 0, 1}", true},
		{"string flag", "return {'1', 0, 0, 1}", true},
		{"nested", "return {1, {0}, 0, 1}", true},
		{"negative retry", "return {0, 0, -5, 1}", true},
		{"zero time", "return {1, 0, 0, 0}", true},
		{"empty", "return {}", true},
		{"nil", "return nil", false},
		{"error", "return redis.error_reply('ERR boom')", false},
	}
	limiters := map[string]func(s *script) Limiter{
		"redisson": func(s *script) Limiter {
			return &redissonLimiter{name: "redisson", script: s, prefix: env.Prefix, rate: 5, interval: 1000, typ: "0"}
		},
		"resource-consumer": func(s *script) Limiter {
			return &resourceConsumerLimiter{name: "resource-consumer", script: s, prefix: env.Prefix, args: []any{5, 5, 1000000}}
		},
	}
	for lname, mk := range limiters {
		for _, tt := range tests {
			t.Run(lname+"/"+tt.name, func(t *testing.T) {
				lim := mk(&script{Script: redis.NewScript(tt.lua)})
				d, err := Do(ctx, lim, env.Target.Client, clientAt("bad", "c", base))()
				if err == nil || d.Allowed {
					t.Fatalf("reply %s: %+v, %v; want an error and no admission", tt.lua, d, err)
				}
				if got := errors.Is(err, ErrBadReply); got != tt.bad {
					t.Errorf("reply %s: error %v; ErrBadReply %v, want %v", tt.lua, err, got, tt.bad)
				}
			})
		}
	}
}
