package algorithms

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

// fixedAt is a request of client for subject at the fixed server time t (tests only).
func fixedAt(subject, client string, t time.Time) Request {
	return Request{Subject: subject, Client: client, Cost: 1, FixedTime: t}
}

// TestResourceConsumerSequential walks both variants through the two limits (resource 5, consumer
// 3, window 1 s): a consumer is stopped at 3, the resource at 5 whoever asks, and both pass again
// after the window. The corrected script gives exact retry-afters; the published one gives 0 and
// forgets a second's entries at the next whole second of TIME.
func TestResourceConsumerSequential(t *testing.T) {
	l := Limit{Limit: 5, ConsumerLimit: 3, Window: time.Second}
	ms := func(i int) time.Time { return base.Add(time.Duration(i) * time.Millisecond) }
	steps := []struct {
		client  string
		at      int // ms after base
		allowed bool
		retry   time.Duration // corrected variant only
	}{
		{"c1", 0, true, 0}, {"c1", 1, true, 0}, {"c1", 2, true, 0},
		{"c1", 3, false, time.Second - 3*time.Millisecond}, // consumer full
		{"c2", 4, true, 0}, {"c2", 5, true, 0},
		{"c2", 6, false, time.Second - 6*time.Millisecond}, // resource full
		{"c3", 7, false, time.Second - 7*time.Millisecond}, // resource full for a new consumer
	}
	for _, name := range []string{"resource-consumer", "resource-consumer-published"} {
		published := name == "resource-consumer-published"
		t.Run(name, func(t *testing.T) {
			a := lookup(t, name)
			topologies(t, func(t *testing.T, env *redistest.Env) {
				cl := env.Target.Client
				lim := prepare(t, env, a, l)
				for i, s := range steps {
					now := ms(s.at)
					d := decide(t, cl, lim, fixedAt("s", s.client, now))
					if d.Allowed != s.allowed {
						t.Fatalf("step %d (%s at +%dms): %+v, want allowed %v", i+1, s.client, s.at, d, s.allowed)
					}
					if d.TimeMicros != now.UnixMicro() || d.Clock != ClockServer {
						t.Errorf("step %d: decision time %d (%s), want %d (server)", i+1, d.TimeMicros, d.Clock, now.UnixMicro())
					}
					want := s.retry
					if published {
						want = 0 // the article answers only True or False
					}
					if d.RetryAfter != want {
						t.Errorf("step %d: retry-after %s, want %s", i+1, d.RetryAfter, want)
					}
				}
				if o := decide(t, cl, lim, fixedAt("other", "c1", ms(8))); !o.Allowed {
					t.Errorf("another subject was denied: subjects share state")
				}
				// The corrected window is (t−1s, t]: the entry at base leaves at base+1s exactly.
				// The published one keeps whole seconds of TIME: base's second leaves at the next
				// whole second.
				again := base.Add(time.Second)
				if published {
					again = base.Truncate(time.Second).Add(time.Second)
				}
				if d := decide(t, cl, lim, fixedAt("s", "c1", again.Add(-time.Microsecond))); d.Allowed {
					t.Errorf("allowed 1 µs before the window moved: %+v", d)
				}
				if d := decide(t, cl, lim, fixedAt("s", "c1", again)); !d.Allowed {
					t.Errorf("denied once the window moved, at +%s: %+v", again.Sub(base), d)
				}
			})
		})
	}
}

// TestResourceConsumerCost: the corrected script charges costs against both limits and denies a
// cost above either limit with retry-after 0. A denial reports 0 remaining: the lists show that the
// entry at L − n is in the window, not how many permits are left.
func TestResourceConsumerCost(t *testing.T) {
	env := redistest.Single(t)
	cl := env.Target.Client
	lim := prepare(t, env, lookup(t, "resource-consumer"), Limit{Limit: 5, ConsumerLimit: 4, Window: time.Second})
	steps := []struct {
		client    string
		cost      int64
		allowed   bool
		remaining int64
	}{
		{"c1", 3, true, 1},  // consumer 3 of 4, resource 3 of 5
		{"c1", 2, false, 0}, // consumer would be 5 of 4
		{"c2", 2, true, 0},  // resource 5 of 5
		{"c2", 1, false, 0},
		{"c3", 5, false, 0}, // over the consumer limit: never
	}
	for i, s := range steps {
		req := fixedAt("cost", s.client, base.Add(time.Duration(i)*time.Millisecond))
		req.Cost = s.cost
		d := decide(t, cl, lim, req)
		if d.Allowed != s.allowed || d.Remaining != s.remaining {
			t.Errorf("step %d (%s, cost %d): %+v; want allowed %v, remaining %d", i+1, s.client, s.cost, d, s.allowed, s.remaining)
		}
		if s.cost > 4 && d.RetryAfter != 0 {
			t.Errorf("step %d: cost over the limit: retry-after %s, want 0 (never)", i+1, d.RetryAfter)
		}
	}
}

// TestResourceConsumerPublishedFlaws reproduces the article's two counting flaws, which the
// corrected script does not have.
func TestResourceConsumerPublishedFlaws(t *testing.T) {
	l := Limit{Limit: 5, ConsumerLimit: 100, Window: time.Second}
	sec := base.Truncate(time.Second)
	tests := []struct {
		name string
		reqs func() []Request
		// corrected is how many the corrected script admits; published, the article's design.
		corrected, published int
	}{
		{
			// 4 single requests, then one of cost 2 takes the count from 4 to 6: it is never
			// `==` 5 again, so every later request in the window passes too.
			name: "== check jumped by cost",
			reqs: func() []Request {
				var rs []Request
				for i := range 14 {
					r := fixedAt("eq", "c", base.Add(time.Duration(i)*time.Millisecond))
					if i == 4 {
						r.Cost = 2
					}
					rs = append(rs, r)
				}
				return rs
			},
			corrected: 5, published: 14,
		},
		{
			// 5 at the end of one second and 5 at the start of the next, 2 ms apart: whole
			// seconds forget the first five.
			name: "whole seconds",
			reqs: func() []Request {
				var rs []Request
				for i := range 10 {
					at := sec.Add(999*time.Millisecond + time.Duration(i)*100*time.Microsecond)
					if i >= 5 {
						at = sec.Add(time.Second + time.Millisecond + time.Duration(i)*100*time.Microsecond)
					}
					rs = append(rs, fixedAt("sec", "c", at))
				}
				return rs
			},
			corrected: 5, published: 10,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := redistest.Single(t)
			for name, want := range map[string]int{"resource-consumer": tt.corrected, "resource-consumer-published": tt.published} {
				lim := prepare(t, env, lookup(t, name), l)
				admitted := 0
				for _, r := range tt.reqs() {
					if decide(t, env.Target.Client, lim, r).Allowed {
						admitted++
					}
				}
				if admitted != want {
					t.Errorf("%s admitted %d, want %d", name, admitted, want)
				}
			}
		})
	}
}

// TestResourceConsumerDifferential replays a long random sequence (4 subjects, 5 consumers,
// costs 1–3) through the corrected script and the two-level model, fed the decision times the
// script returned: they agree on every request.
func TestResourceConsumerDifferential(t *testing.T) {
	limits := []Limit{
		{Limit: 7, ConsumerLimit: 3, Window: time.Second},
		{Limit: 10, Window: 2 * time.Second},
	}
	a := lookup(t, "resource-consumer")
	topologies(t, func(t *testing.T, env *redistest.Env) {
		for li, l := range limits {
			seed := uint64(li + 1)
			rng := rand.New(rand.NewPCG(seed, 7))
			lim := prepare(t, env, a, l)
			m := a.Model(l)
			now := base.UnixMicro()
			meanGap := l.Window.Microseconds() / l.Limit
			p := env.Target.Client.Pipeline()
			type sent struct {
				subject, client string
				cost            int64
				pend            Pending
			}
			var batch []sent
			for range 2000 {
				// Sometimes several requests in the same microsecond.
				if rng.IntN(5) > 0 {
					now += rng.Int64N(meanGap + 1)
				}
				s := fmt.Sprint("l", li, "s", rng.IntN(4)) // fresh subjects for each limit
				c := fmt.Sprint("c", rng.IntN(5))
				cost := int64(1)
				if rng.IntN(4) == 0 {
					cost = 1 + rng.Int64N(3)
				}
				batch = append(batch, sent{s, c, cost, Do(context.Background(), lim, p, fixedAt(s, c, time.UnixMicro(now)).withCost(cost))})
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
				if want := m.Decide(b.subject, b.client, b.cost, d.TimeMicros); d.Allowed != want {
					t.Fatalf("limit %+v seed %d request %d (%s/%s, cost %d, t=%d): script allowed=%v, model %v",
						l, seed, i, b.subject, b.client, b.cost, d.TimeMicros, d.Allowed, want)
				}
				if d.Allowed {
					allowed++
				}
			}
			if allowed < len(batch)/10 || allowed > len(batch)*9/10 {
				t.Errorf("limit %+v: %d of %d allowed; the sequence tests little", l, allowed, len(batch))
			}
		}
	})
}

// withCost returns r with Cost n.
func (r Request) withCost(n int64) Request { r.Cost = n; return r }

// TestResourceConsumerConcurrency: 64 goroutines as 8 consumers hammer one resource of the
// corrected script. On the Redis times it returned, the resource and every consumer obey their
// sliding windows, and the total stays below what the contract allows for the elapsed time and,
// under overload, not far below it. Single and cluster run in parallel.
func TestResourceConsumerConcurrency(t *testing.T) {
	if testing.Short() {
		t.Skip("hammers Redis for seconds")
	}
	l := Limit{Limit: 50, ConsumerLimit: 10, Window: 200 * time.Millisecond}
	a := lookup(t, "resource-consumer")
	c, err := a.Contract(l)
	if err != nil {
		t.Fatal(err)
	}
	parallelTopologies(t, func(t *testing.T, env *redistest.Env) {
		lim := prepare(t, env, a, l)
		ctx := context.Background()
		var (
			mu       sync.Mutex
			all      []int64
			byClient = map[string][]int64{}
			offered  int
			firstE   error
			wg       sync.WaitGroup
		)
		start := time.Now()
		deadline := start.Add(hammerFor)
		for g := range 64 {
			client := fmt.Sprint("c", g%8)
			wg.Go(func() {
				var mine []int64
				n := 0
				for time.Now().Before(deadline) {
					d, err := Do(ctx, lim, env.Target.Client, Request{Subject: "hot", Client: client, Cost: 1})()
					n++
					if err != nil {
						mu.Lock()
						firstE = cmpOr(firstE, err)
						mu.Unlock()
						return
					}
					if d.Allowed {
						mine = append(mine, d.TimeMicros)
					}
				}
				mu.Lock()
				all = append(all, mine...)
				byClient[client] = append(byClient[client], mine...)
				offered += n
				mu.Unlock()
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		if firstE != nil {
			t.Fatalf("request failed: %v", firstE)
		}
		slices.Sort(all)
		if v := violation(c, all); v != "" {
			t.Errorf("resource: %s violated: %s", c, v)
		}
		for client, ts := range byClient {
			slices.Sort(ts)
			if v := violation(c.Also[0], ts); v != "" {
				t.Errorf("consumer %s: %s violated: %s", client, c.Also[0], v)
			}
		}
		bound := maxAdmissions(c, elapsed+10*time.Millisecond)
		t.Logf("%s: %d offered, %d admitted in %s; bound %d", c, offered, len(all), elapsed, bound)
		if int64(len(all)) > bound {
			t.Errorf("%d admissions in %s, contract %s allows %d", len(all), elapsed, c, bound)
		}
		checkUnderOverload(t, int64(len(all)), int64(offered), bound)
	})
}

// cmpOr returns a if it is non-nil, else b.
func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// TestTwoLevelPipeline queues L+1 requests of each of this algorithms in one pipeline,
// after flushing the script cache: Prepare loaded the scripts on every master, the first L pass.
func TestTwoLevelPipeline(t *testing.T) {
	for _, name := range []string{"redisson", "redisson-per-client", "resource-consumer", "resource-consumer-published"} {
		t.Run(name, func(t *testing.T) {
			a := lookup(t, name)
			topologies(t, func(t *testing.T, env *redistest.Env) {
				ctx := context.Background()
				if err := env.Target.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
					return c.ScriptFlush(ctx).Err()
				}); err != nil {
					t.Fatal(err)
				}
				lim := prepare(t, env, a, Limit{Limit: 4, Window: time.Second})
				p := env.Target.Client.Pipeline()
				var pend []Pending
				for i := range 5 {
					at := base.Add(time.Duration(i) * time.Millisecond)
					pend = append(pend, Do(ctx, lim, p, Request{Subject: "p", Client: "c", Cost: 1, ClientTime: at, FixedTime: at}))
				}
				if _, err := p.Exec(ctx); err != nil {
					t.Fatalf("Exec: %v", err)
				}
				for i, f := range pend {
					d, err := f()
					if err != nil {
						t.Fatalf("request %d: %v", i+1, err)
					}
					if want := i < 4; d.Allowed != want {
						t.Errorf("request %d: allowed %v, want %v", i+1, d.Allowed, want)
					}
				}
			})
		})
	}
}

// TestTwoLevelModel checks the model alone on hand-made instants.
func TestTwoLevelModel(t *testing.T) {
	m := newTwoLevelModel(Limit{Limit: 3, ConsumerLimit: 2, Window: time.Second})
	const s = 1_000_000 // µs
	steps := []struct {
		subject, client string
		cost, t         int64
		want            bool
	}{
		{"r", "a", 1, 0, true},
		{"r", "a", 1, 1, true},
		{"r", "a", 1, 2, false}, // consumer a full
		{"r", "b", 2, 3, false}, // resource would be 4
		{"r", "b", 1, 4, true},  // resource full
		{"r", "c", 1, 5, false},
		{"q", "a", 2, 6, true},      // another subject: its own logs
		{"r", "c", 1, s, true},      // the entry at 0 left at exactly W
		{"r", "a", 1, s + 1, true},  // consumer a: the entry at 1 left
		{"r", "a", 3, 5 * s, false}, // over the consumer limit: never
	}
	for i, st := range steps {
		if got := m.Decide(st.subject, st.client, st.cost, st.t); got != st.want {
			t.Errorf("step %d: Decide(%s, %s, %d, %d) = %v; want %v", i+1, st.subject, st.client, st.cost, st.t, got, st.want)
		}
	}
}
