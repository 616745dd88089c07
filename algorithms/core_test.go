package algorithms

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

// coreNames are the algorithms of this file's tests: the seeds 001–003 (published and corrected),
// gcra and sliding-counter.
var coreNames = []string{
	"fixed-window", "fixed-window-published", "sliding-log", "sliding-log-published",
	"token-bucket", "token-bucket-published", "gcra", "sliding-counter",
}

// topologies runs f once on the shared single server and once on the shared cluster.
func topologies(t *testing.T, f func(t *testing.T, env *redistest.Env)) {
	t.Helper()
	t.Run("single", func(t *testing.T) { f(t, redistest.Single(t)) })
	t.Run("cluster", func(t *testing.T) { f(t, redistest.Cluster(t)) })
}

// parallelTopologies is topologies with both subtests parallel (t.Parallel): for tests that run
// for seconds on keys of their own. go test runs at most -parallel (GOMAXPROCS) of them at once.
func parallelTopologies(t *testing.T, f func(t *testing.T, env *redistest.Env)) {
	t.Helper()
	t.Run("single", func(t *testing.T) { t.Parallel(); f(t, redistest.Single(t)) })
	t.Run("cluster", func(t *testing.T) { t.Parallel(); f(t, redistest.Cluster(t)) })
}

// hammerFor is how long the concurrency tests hammer one key with 64 goroutines.
const hammerFor = 3 * time.Second

// checkUnderOverload is the "not far below" side of the concurrency tests: when the goroutines
// offered at least four times what the contract allows (bound), a correct limiter admits at least
// half of bound (about 90% in practice; half leaves room for a loaded machine). With less load the
// check says so and is skipped.
func checkUnderOverload(t *testing.T, admitted, offered, bound int64) {
	t.Helper()
	if offered < 4*bound {
		t.Logf("only %d offered for a bound of %d: not overloaded, lower bound not checked", offered, bound)
		return
	}
	if admitted < bound/2 {
		t.Errorf("only %d admissions under overload (%d offered), want at least %d (half of the %d the contract allows)", admitted, offered, bound/2, bound)
	}
}

func lookup(t *testing.T, name string) Algorithm {
	t.Helper()
	a, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func prepare(t *testing.T, env *redistest.Env, a Algorithm, l Limit) Limiter {
	t.Helper()
	lim, err := a.Prepare(context.Background(), env.Target.Client, l, env.Prefix)
	if err != nil {
		t.Fatalf("Prepare(%s, %+v): %v", a.Describe().Name, l, err)
	}
	return lim
}

// at is a request for subject at t on both clocks: server-clock scripts take FixedTime,
// client-clock algorithms ClientTime.
func at(subject string, t time.Time) Request {
	return Request{Subject: subject, Cost: 1, ClientTime: t, FixedTime: t}
}

func decide(t *testing.T, c redis.Cmdable, lim Limiter, req Request) Decision {
	t.Helper()
	d, err := Do(context.Background(), lim, c, req)()
	if err != nil {
		t.Fatalf("Do(%+v): %v", req, err)
	}
	return d
}

// base is a time aligned on every window the tests use (a whole minute), plus 100 ms.
var base = time.UnixMicro(1_700_000_040_000_000).Add(100 * time.Millisecond)

// TestSequential: a fresh subject admits its first L requests, denies the next with a plausible
// retry-after, and admits again once the window has passed or the bucket has refilled.
func TestSequential(t *testing.T) {
	const limit = 5
	tests := []struct {
		name string
		// again returns when to retry after a denial at t with decision d, and whether a request
		// one microsecond earlier must still be denied (retry-after is exact).
		again    func(t time.Time, d Decision) (time.Time, bool)
		maxRetry time.Duration // plausible upper bound of the first retry-after
		timeUnit time.Duration // resolution of the time the algorithm reports
	}{
		{"fixed-window", byRetry, time.Second, time.Microsecond},
		{"fixed-window-published", byRetry, time.Minute, time.Microsecond},
		{"sliding-log", byRetry, time.Second, time.Microsecond},
		{"sliding-log-published", func(t time.Time, _ Decision) (time.Time, bool) {
			return t.Add(time.Second + time.Millisecond), false
		}, 0, time.Millisecond},
		{"token-bucket", byRetry, time.Second / limit, time.Microsecond},
		{"token-bucket-published", func(t time.Time, _ Decision) (time.Time, bool) {
			return t.Truncate(time.Second).Add(time.Second), false
		}, time.Second / limit, time.Second},
		{"gcra", byRetry, time.Second / limit, time.Microsecond},
		{"sliding-counter", byRetry, 2 * time.Second, time.Microsecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := lookup(t, tt.name)
			topologies(t, func(t *testing.T, env *redistest.Env) {
				cl := env.Target.Client
				lim := prepare(t, env, a, Limit{Limit: limit, Window: time.Second})
				clock := a.Describe().Clock
				now := base
				for i := range limit {
					now = base.Add(time.Duration(i) * time.Millisecond)
					d := decide(t, cl, lim, at("s", now))
					if !d.Allowed {
						t.Fatalf("request %d at +%s: denied (%+v), want allowed", i+1, now.Sub(base), d)
					}
					if want := now.Truncate(tt.timeUnit).UnixMicro(); d.TimeMicros != want || d.Clock != clock {
						t.Errorf("decision time %d (%s), want %d (%s)", d.TimeMicros, d.Clock, want, clock)
					}
					if d.Remaining != limit-int64(i)-1 {
						t.Errorf("request %d: remaining %d, want %d", i+1, d.Remaining, limit-i-1)
					}
				}
				now = now.Add(time.Millisecond)
				d := decide(t, cl, lim, at("s", now))
				if d.Allowed {
					t.Fatalf("request %d: allowed, want denied", limit+1)
				}
				if tt.maxRetry > 0 && (d.RetryAfter <= 0 || d.RetryAfter > tt.maxRetry) {
					t.Errorf("retry-after %s, want in (0, %s]", d.RetryAfter, tt.maxRetry)
				}
				if o := decide(t, cl, lim, at("other", now)); !o.Allowed {
					t.Errorf("another subject was denied: subjects share state")
				}
				next, exact := tt.again(now, d)
				if exact {
					if e := decide(t, cl, lim, at("s", next.Add(-time.Microsecond))); e.Allowed {
						t.Errorf("allowed 1 µs before retry-after %s: retry-after is not tight", d.RetryAfter)
					}
				}
				if e := decide(t, cl, lim, at("s", next)); !e.Allowed {
					t.Errorf("denied at +%s after the denial (retry-after %s): %+v", next.Sub(now), d.RetryAfter, e)
				}
			})
		})
	}
}

func byRetry(t time.Time, d Decision) (time.Time, bool) { return t.Add(d.RetryAfter), true }

// TestPipeline queues L+1 requests in one pipeline: the first L are admitted, the last denied.
func TestPipeline(t *testing.T) {
	for _, name := range coreNames {
		t.Run(name, func(t *testing.T) {
			a := lookup(t, name)
			topologies(t, func(t *testing.T, env *redistest.Env) {
				ctx := context.Background()
				// The script cache is flushed to show that Prepare loads scripts on every master.
				if err := env.Target.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
					return c.ScriptFlush(ctx).Err()
				}); err != nil {
					t.Fatal(err)
				}
				lim := prepare(t, env, a, Limit{Limit: 4, Window: time.Second})
				p := env.Target.Client.Pipeline()
				var pend []Pending
				for i := range 5 {
					pend = append(pend, Do(ctx, lim, p, at("p", base.Add(time.Duration(i)*time.Microsecond))))
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

// TestCost: algorithms that support costs charge them; the others refuse cost > 1.
func TestCost(t *testing.T) {
	env := redistest.Single(t)
	cl := env.Target.Client
	for _, name := range coreNames {
		a := lookup(t, name)
		lim := prepare(t, env, a, Limit{Limit: 5, Window: time.Second})
		req := at("c-"+name, base)
		req.Cost = 3
		d, err := Do(context.Background(), lim, env.Target.Client, req)()
		if !a.Describe().Cost {
			if !errors.Is(err, ErrCostUnsupported) {
				t.Errorf("%s: cost 3 gave %+v, %v; want ErrCostUnsupported", name, d, err)
			}
			continue
		}
		if err != nil || !d.Allowed || d.Remaining != 2 {
			t.Errorf("%s: cost 3 of 5: %+v, %v; want allowed with 2 remaining", name, d, err)
		}
		req.Cost = 3
		if d := decide(t, cl, lim, req); d.Allowed {
			t.Errorf("%s: cost 3 with 2 left: allowed", name)
		}
		req.Cost = 6
		if d := decide(t, cl, lim, req); d.Allowed {
			t.Errorf("%s: cost 6 over limit 5: allowed", name)
		}
	}
}

// TestDifferential replays a long random sequence through each corrected script and its reference
// model, fed the decision times the script returned: they agree on every request.
func TestDifferential(t *testing.T) {
	limits := []Limit{
		{Limit: 7, Window: 100 * time.Millisecond},
		{Limit: 10, Window: time.Second, Burst: 4},
	}
	for _, a := range All() {
		if a.Model(limits[0]) == nil || !slices.Contains(coreNames, a.Describe().Name) {
			continue
		}
		t.Run(a.Describe().Name, func(t *testing.T) {
			topologies(t, func(t *testing.T, env *redistest.Env) {
				for li, l := range limits {
					seed := uint64(li + 1)
					rng := rand.New(rand.NewPCG(seed, 42))
					lim := prepare(t, env, a, l)
					m := a.Model(l)
					subjects := []string{fmt.Sprint("a", li), fmt.Sprint("b", li), fmt.Sprint("c", li)}
					now := base.UnixMicro()
					meanGap := l.Window.Microseconds() / l.Limit
					p := env.Target.Client.Pipeline()
					type sent struct {
						subject string
						cost    int64
						pend    Pending
					}
					var batch []sent
					for range 1500 {
						// Mostly about 4/3 of the limit's rate on each of the three subjects, with
						// pauses of up to 2W now and then so that buckets refill and windows roll.
						if rng.IntN(50) == 0 {
							now += rng.Int64N(2 * l.Window.Microseconds())
						} else {
							now += rng.Int64N(meanGap/2 + 1)
						}
						s := subjects[rng.IntN(len(subjects))]
						cost := int64(1)
						if a.Describe().Cost && rng.IntN(4) == 0 {
							cost = 1 + rng.Int64N(3)
						}
						req := Request{Subject: s, Cost: cost, FixedTime: time.UnixMicro(now)}
						batch = append(batch, sent{s, cost, Do(context.Background(), lim, p, req)})
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
						if want := m.Decide(b.subject, "", b.cost, d.TimeMicros); d.Allowed != want {
							t.Fatalf("limit %+v seed %d request %d (%s, cost %d, t=%d): script allowed=%v, model %v",
								l, seed, i, b.subject, b.cost, d.TimeMicros, d.Allowed, want)
						}
						if d.Allowed {
							allowed++
						}
					}
					t.Logf("limit %+v: %d of %d allowed", l, allowed, len(batch))
					if allowed == 0 || allowed == len(batch) {
						t.Errorf("limit %+v: %d of %d allowed; the sequence tests nothing", l, allowed, len(batch))
					}
				}
			})
		})
	}
}

// TestConcurrency: 64 goroutines hammer one key for hammerFor; the admissions obey the contract on
// the decision times Redis returned, never exceed what the contract allows for the elapsed time,
// and under overload are not far below it. The subtests run in parallel (their keys are their
// own).
func TestConcurrency(t *testing.T) {
	if testing.Short() {
		t.Skip("hammers Redis for seconds")
	}
	l := Limit{Limit: 50, Window: 200 * time.Millisecond}
	for _, a := range All() {
		name := a.Describe().Name
		if a.Model(l) == nil || !slices.Contains(coreNames, name) {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			parallelTopologies(t, func(t *testing.T, env *redistest.Env) {
				c, err := a.Contract(l)
				if err != nil {
					t.Fatal(err)
				}
				lim := prepare(t, env, a, l)
				r := hammer(t, env, lim, hammerFor)
				if v := violation(c, r.times); v != "" {
					t.Errorf("contract %s violated on returned times: %s", c, v)
				}
				// Server and harness share this machine's clock; the run lasted elapsed, give or take
				// 10 ms on the safe side.
				bound := maxAdmissions(c, r.elapsed+10*time.Millisecond)
				t.Logf("%s: %d offered, %d admitted in %s; contract allows at most %d", c, r.offered, r.admitted, r.elapsed, bound)
				if r.admitted > bound {
					t.Errorf("%d admissions in %s, contract %s allows %d", r.admitted, r.elapsed, c, bound)
				}
				checkUnderOverload(t, r.admitted, r.offered, bound)
			})
		})
	}
}

// TestSlidingLogPublishedCollapse: under the same overload the published sliding log records its
// denials, so its window stays full and admissions collapse far below the limit.
func TestSlidingLogPublishedCollapse(t *testing.T) {
	if testing.Short() {
		t.Skip("hammers Redis for seconds")
	}
	l := Limit{Limit: 50, Window: 200 * time.Millisecond}
	a := lookup(t, "sliding-log-published")
	parallelTopologies(t, func(t *testing.T, env *redistest.Env) {
		lim := prepare(t, env, a, l)
		r := hammer(t, env, lim, hammerFor)
		ideal := int64(float64(l.Limit) * r.elapsed.Seconds() / l.Window.Seconds())
		t.Logf("%d offered, %d admitted in %s; a correct limiter would admit about %d", r.offered, r.admitted, r.elapsed, ideal)
		if r.admitted*3 > ideal {
			t.Errorf("%d admitted, want far below %d (denials recorded)", r.admitted, ideal)
		}
	})
}

// hammerRun is what hammer measured: the decision times of the admissions (sorted), how many
// admissions there were (times may leave some out), the number of requests and the elapsed time.
type hammerRun struct {
	times             []int64
	admitted, offered int64
	elapsed           time.Duration
}

// hammer runs 64 goroutines calling lim on one subject for d. An admission without a decision
// time (fixed-window reports the time of a window's first call only, sliding-counter none when
// it found both its counters) is timed by the midpoint of
// the µs it was sent and answered in when both are in one window of the limiter's contract (Redis
// reads this host's clock, so it was decided in that window), and left out of the times, counted
// in t.Log, when they are not: the times are those the contract can be checked on.
func hammer(t *testing.T, env *redistest.Env, lim Limiter, d time.Duration) hammerRun {
	t.Helper()
	ctx := context.Background()
	var (
		mu      sync.Mutex
		times   []int64
		offered int64
		firstE  error
		wg      sync.WaitGroup
	)
	var w int64 // the fixed window in µs of a limiter that may not time its decisions, or 0
	switch f := lim.(type) {
	case *fixedWindowLimiter:
		w = f.windowUs
	case *slidingCounterLimiter:
		w = f.windowUs
	}
	var untimed int64
	start := time.Now()
	deadline := start.Add(d)
	for range 64 {
		wg.Go(func() {
			var mine []int64
			var n, straddled int64
			for time.Now().Before(deadline) {
				sent := time.Now()
				dec, err := Do(ctx, lim, env.Target.Client, Request{Subject: "hot", Cost: 1, ClientTime: sent})()
				received := time.Now().UnixMicro() + 1
				n++
				if err != nil {
					mu.Lock()
					if firstE == nil {
						firstE = err
					}
					mu.Unlock()
					return
				}
				switch {
				case !dec.Allowed:
				case dec.TimeMicros != 0:
					mine = append(mine, dec.TimeMicros)
				case w == 0:
					mu.Lock()
					if firstE == nil {
						firstE = fmt.Errorf("an admission without a decision time from %T, whose contract has no window", lim)
					}
					mu.Unlock()
					return
				case floorDiv(sent.UnixMicro(), w) == floorDiv(received, w):
					mine = append(mine, (sent.UnixMicro()+received)/2)
				default:
					straddled++
				}
			}
			mu.Lock()
			times = append(times, mine...)
			offered += n
			untimed += straddled
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstE != nil {
		t.Fatalf("request failed: %v", firstE)
	}
	if untimed > 0 {
		t.Logf("%d admissions without a decision time straddled a window boundary and are left out of the times", untimed)
	}
	slices.Sort(times)
	return hammerRun{times: times, admitted: int64(len(times)) + untimed, offered: offered, elapsed: elapsed}
}

// maxAdmissions is the most permits of cost 1 that contract c allows in any span of length d.
func maxAdmissions(c Contract, d time.Duration) int64 {
	us := d.Microseconds()
	switch c.Kind {
	case FixedWindow:
		// The span touches at most ⌈d/W⌉ + 1 aligned windows.
		w := c.Window.Microseconds()
		return c.Limit * ((us+w-1)/w + 1)
	case SlidingWindow:
		w := c.Window.Microseconds()
		return c.Limit * ((us+w-1)/w + 1)
	case TokenBucket:
		per := c.RefillPer.Microseconds()
		return c.Capacity + (c.RefillPermits*us+per-1)/per
	}
	return 0
}

// violation checks admissions of one permit each at the sorted times (µs) against c and
// describes the first violation, or returns "".
func violation(c Contract, times []int64) string {
	switch c.Kind {
	case FixedWindow:
		w := c.Window.Microseconds()
		count := map[int64]int64{}
		for _, ts := range times {
			k := floorDiv(ts, w)
			if count[k]++; count[k] > c.Limit {
				return "window " + time.UnixMicro(k*w).UTC().Format(time.RFC3339Nano) + " over limit"
			}
		}
	case SlidingWindow:
		w := c.Window.Microseconds()
		lo := 0
		for i, ts := range times {
			for times[lo] <= ts-w {
				lo++
			}
			if int64(i-lo+1) > c.Limit {
				return "window ending " + time.UnixMicro(ts).UTC().Format(time.RFC3339Nano) + " over limit"
			}
		}
	case TokenBucket:
		per := c.RefillPer.Microseconds()
		for i := range times {
			for j := i; j < len(times); j++ {
				// (j−i+1) <= C + r·(tj − ti), in integers.
				if (int64(j-i+1)-c.Capacity)*per > c.RefillPermits*(times[j]-times[i]) {
					return "interval starting " + time.UnixMicro(times[i]).UTC().Format(time.RFC3339Nano) + " over C + r·Δt"
				}
			}
		}
	}
	return ""
}
