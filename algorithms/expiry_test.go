package algorithms

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

// expiringNames are the corrected algorithms whose keys expire once their state means the same as
// no key. The published variants keep the article's expiry (or none) and are not checked here.
var expiringNames = []string{"fixed-window", "sliding-log", "token-bucket", "gcra", "sliding-counter", "resource-consumer"}

// stateEnd is the time in µs from which the state that a fresh subject's first admission, of cost
// permits at t µs, wrote means the same as no key: the bucket is full again, the TAT or the window
// has passed, the log's entries have left the window. The keys must live at least that long.
func stateEnd(name string, l Limit, t, cost int64) int64 {
	w := l.Window.Microseconds()
	switch name {
	case "gcra":
		interval, _ := gcraParams(l)
		return t + cost*interval
	case "token-bucket":
		unit, rate := tokenBucketUnits(l)
		return t + (cost*unit+rate-1)/rate
	case "sliding-log", "resource-consumer":
		return t + w
	case "fixed-window":
		return (floorDiv(t, w) + 1) * w
	case "sliding-counter":
		return (floorDiv(t, w) + 2) * w
	}
	panic("stateEnd: no expiry rule for " + name)
}

// keyExpiry is the time in µs, from lo to hi, at which the keys of a fresh subject whose first
// admission of cost permits at t µs wrote a state that ends at end (stateEnd) expire: end itself,
// except for token-bucket, which keeps a key at least until the end of the quantum Q that the time
// F its bucket is full again falls in, and less than 2Q after F (its caller's estimate when that
// is in range, else the quantum's end; scripts/token_bucket.lua), and fixed-window and
// sliding-counter, whose keys must not outlive the time their state is read until, since a key's
// expiry is what tells the script the window has ended: they expire at end − 1 ms (a whole ms),
// the last ms Redis keeps them in (scripts/fixed_window.lua, scripts/sliding_counter.lua).
func keyExpiry(name string, l Limit, t, cost, end int64) (lo, hi int64) {
	switch name {
	case "fixed-window", "sliding-counter":
		return end - 1000, end - 1000
	case "token-bucket":
		unit, rate := tokenBucketUnits(l)
		q := expiryQuantum(l.Capacity()*unit, rate)
		return quantumEnd(t, cost*unit, rate, q), end + 2*q - 1
	}
	return end, end
}

// TestRegressionRedis72EarlyExpiry is the regression test of the early-expiry bug: the scripts set
// relative TTLs (PEXPIRE, SET … PX) computed from the `now` their TIME call returned, but since
// Redis 7.2 a relative TTL counts from a time snapshot taken when the script started, a little
// before TIME (and the ms truncation of either clock adds up to 1 ms), so a key could vanish
// before its state was really reset and admit a fraction of a permit early. The keys now expire at
// an absolute time derived from the decision time itself, ⌈end/1000⌉ ms, which Redis keeps until
// its ms clock is strictly past it, i.e. beyond end on every version. The test checks that
// anchoring exactly with PEXPIRETIME; with relative TTLs it depends on when Redis read its own
// clock and fails.
//
// With a fixed time (tests), the TTL is relative and at least a minute, so that fixed times that
// run ahead of the real clock never lose a key to a stall of the real one.
func TestRegressionRedis72EarlyExpiry(t *testing.T) {
	// T = 100 ms and W = 1 s are whole ms, so a TTL counted from the ms Redis read its clock in
	// differs from the anchored one whenever the decision time is not on a whole ms.
	l := Limit{Limit: 10, Window: time.Second}
	for _, name := range expiringNames {
		t.Run(name, func(t *testing.T) {
			a := lookup(t, name)
			topologies(t, func(t *testing.T, env *redistest.Env) {
				ctx := context.Background()
				c := env.Target.Client
				lim := prepare(t, env, a, l)
				for i := range 8 {
					cost := int64(1 + i%3)
					req := Request{Subject: fmt.Sprint("e", i), Client: "c", Cost: cost}
					d := decide(t, c, lim, req)
					if !d.Allowed || d.Clock != ClockServer {
						t.Fatalf("first request of a fresh subject: %+v, want allowed on the server clock", d)
					}
					end := stateEnd(name, l, d.TimeMicros, cost)
					lo, hi := keyExpiry(name, l, d.TimeMicros, cost, end)
					if lo < end && name != "fixed-window" && name != "sliding-counter" {
						t.Fatalf("keyExpiry %d µs before the state's end %d µs", lo, end)
					}
					// The keys of the request at its decision time; sliding-counter's second, the
					// previous window's counter, was only read. fixed-window's key is the
					// subject's (a fixed time would name it by the window).
					keys := lim.Keys(Request{Subject: req.Subject, Client: req.Client, FixedTime: time.UnixMicro(d.TimeMicros)})
					switch name {
					case "sliding-counter":
						keys = keys[:1]
					case "fixed-window":
						keys = lim.Keys(Request{Subject: req.Subject, Client: req.Client})
					}
					for _, k := range keys {
						pexp, err := c.PExpireTime(ctx, k).Result()
						if err != nil && strings.Contains(err.Error(), "unknown command") {
							t.Skipf("PEXPIRETIME needs Redis >= 7.0: %v", err)
						}
						if err != nil {
							t.Fatalf("PEXPIRETIME %s: %v", k, err)
						}
						got := int64(pexp / time.Millisecond)
						if want, most := (lo+999)/1000, (hi+999)/1000; got < want || got > most {
							t.Errorf("decision at %d µs, state reset at %d µs: key %s expires at %d ms, want %d to %d ms (⌈%d/1000⌉ to ⌈%d/1000⌉; the key must outlive %d µs whenever Redis read its own clock)",
								d.TimeMicros, end, k, got, want, most, lo, hi, end)
						}
					}
				}
				// Fixed times (tests only): a relative TTL of at least a minute.
				req := Request{Subject: "fixed", Client: "c", Cost: 1, FixedTime: base}
				if d := decide(t, c, lim, req); !d.Allowed {
					t.Fatalf("fixed time: %+v, want allowed", d)
				}
				keys := lim.Keys(req)
				if name == "sliding-counter" {
					keys = keys[:1] // the previous window's counter was only read
				}
				for _, k := range keys {
					if ttl := c.PTTL(ctx, k).Val(); ttl < time.Minute {
						t.Errorf("fixed time: key %s has PTTL %s, want >= 1m", k, ttl)
					}
				}
			})
		})
	}
}

// TestDifferentialExpiry is the differential test on the server's clock: each corrected
// algorithm, with a 20 ms window, gets a random sequence of requests on two subjects separated by
// real sleeps, some longer than every key's TTL, so that keys really expire and the scripts take
// their "missing key = fresh state" paths. The reference model, replayed on the decision times the
// scripts returned, must make the same decision for every request. Each sequence counts the
// requests that found a subject's keys gone after it had state, and fails if there were none.
//
// The sequences mostly sleep, so all of them (every algorithm, single and cluster) run at once, in
// about 1.5 s; the subtests then report each one.
func TestDifferentialExpiry(t *testing.T) {
	if testing.Short() {
		t.Skip("sleeps for seconds")
	}
	l := Limit{Limit: 4, Window: 20 * time.Millisecond}
	const requests = 150
	envs := map[string]*redistest.Env{"single": redistest.Single(t), "cluster": redistest.Cluster(t)}
	var (
		mu      sync.Mutex
		results = map[string]expiryRun{}
		wg      sync.WaitGroup
	)
	for topo, env := range envs {
		for i, name := range expiringNames {
			a := lookup(t, name)
			lim := prepare(t, env, a, l)
			seed := uint64(i + 1)
			wg.Go(func() {
				r := runExpirySequence(env, lim, a.Model(l), l, rand.New(rand.NewPCG(seed, 11)), requests)
				mu.Lock()
				results[topo+"/"+name] = r
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	for topo := range envs {
		t.Run(topo, func(t *testing.T) {
			for _, name := range expiringNames {
				t.Run(name, func(t *testing.T) {
					r := results[topo+"/"+name]
					if r.err != nil {
						t.Fatal(r.err)
					}
					t.Logf("%d of %d allowed; %d requests found expired keys; %d missed the server's window each time; %d decided without a time", r.allowed, requests, r.expired, r.missed, r.untimed)
					if r.untimed == 0 && (name == "fixed-window" || name == "sliding-counter") {
						t.Errorf("no decision without a time; the path that reads no TIME was not compared")
					}
					if r.missed > requests/10 {
						t.Errorf("%d of %d requests missed the server's window each time; the comparison covered too few", r.missed, requests)
					}
					if r.expired == 0 {
						t.Errorf("no request found a subject's keys expired; the fresh-state path was not compared")
					}
					if r.allowed == 0 || r.allowed == requests {
						t.Errorf("%d of %d allowed; the sequence tests nothing", r.allowed, requests)
					}
				})
			}
		})
	}
}

// expiryRun is what one sequence of TestDifferentialExpiry saw.
type expiryRun struct {
	allowed, expired int
	// missed counts the requests denied because they missed the server's window each time.
	missed int
	// untimed counts the decisions without a time (fixed-window's, sliding-counter's), replayed
	// at a time of their window.
	untimed int
	err     error
}

// missesWindows reports whether lim predicts the server's window and denies a request that
// missed it serverWindowTries times (sliding-counter).
func missesWindows(lim Limiter) bool {
	_, ok := lim.(*slidingCounterLimiter)
	return ok
}

// runExpirySequence sends n requests to lim, one at a time, with real sleeps: mostly up to W/(2L)
// (about the limit's rate), and one time in seven 2W + 3 ms to 3W, longer than any corrected
// script's keys live (until at most 2W + 1 ms after the last write). Before each request it notes
// whether the subject had state but its keys are gone. It returns the first disagreement with m,
// replayed on the returned decision times, as an error.
func runExpirySequence(env *redistest.Env, lim Limiter, m Model, l Limit, rng *rand.Rand, n int) (r expiryRun) {
	ctx := context.Background()
	c := env.Target.Client
	w := l.Window
	hadState := map[string]bool{}
	windows := map[string]int64{} // the window of each subject's last reported decision time
	for i := range n {
		if rng.IntN(7) == 0 {
			time.Sleep(2*w + 3*time.Millisecond + time.Duration(rng.Int64N(int64(w-3*time.Millisecond))))
		} else {
			time.Sleep(time.Duration(rng.Int64N(int64(w) / (2 * l.Limit))))
		}
		subject := []string{"x", "y"}[rng.IntN(2)]
		client := []string{"c1", "c2"}[rng.IntN(2)]
		cost := int64(1 + rng.IntN(2))
		req := Request{Subject: subject, Client: client, Cost: cost}
		if hadState[subject] {
			n, err := c.Exists(ctx, lim.Keys(Request{Subject: subject, Client: "c1"})[0]).Result()
			if err != nil {
				r.err = fmt.Errorf("request %d: EXISTS: %w", i, err)
				return r
			}
			if n == 0 {
				r.expired++
				hadState[subject] = false
			}
		}
		sent := time.Now().UnixMicro()
		d, err := Do(ctx, lim, c, req)()
		received := time.Now().UnixMicro()
		if err != nil {
			r.err = fmt.Errorf("request %d: %w", i, err)
			return r
		}
		if d.TimeMicros != 0 {
			windows[subject] = floorDiv(d.TimeMicros, w.Microseconds())
		} else {
			// fixed-window reports the time of a window's first call only, and sliding-counter
			// none when it found both its counters; the others counted in the key that call
			// opened, so in its window, which must still be the window of the time they ran at
			// (in [sent, received]; Redis reads this host's clock): a key that outlived its
			// window would count the next window's requests in it.
			k, ok := windows[subject]
			if !ok {
				r.err = fmt.Errorf("request %d: a decision without a time for a subject whose window is unknown: %+v", i, d)
				return r
			}
			start, end := k*w.Microseconds(), (k+1)*w.Microseconds()
			if sent >= end || received < start {
				r.err = fmt.Errorf("request %d: counted in the key of window [%d, %d) µs, sent at %d µs and answered at %d µs: the key outlived its window", i, start, end, sent, received)
				return r
			}
			d.TimeMicros = start
			r.untimed++
			if sc, ok := lim.(*slidingCounterLimiter); ok {
				// sliding-counter weighed the previous window at its estimate of the server's
				// time, which it took between sent and received (moved by its offset, which only
				// replies with a time change) and kept in the window: replay an admission at
				// the latest such time and a denial at the earliest, since a later time only
				// weighs the previous window less. The model agrees with the script exactly
				// when the script's decision is the model's at some time it could have used.
				off := sc.windows.offset.Load()
				d.TimeMicros = min(max(sent+off, start), end-1)
				if d.Allowed {
					d.TimeMicros = min(max(received+off, start), end-1)
				}
			}
		}
		if !d.Allowed && d.RetryAfter == 0 && cost <= l.Limit && missesWindows(lim) {
			// The window scripts' Call denies, writing nothing, a request that missed the
			// server's window serverWindowTries times (a round trip over the 20 ms window on a
			// loaded machine): it never reached the state, so the model does not see it.
			r.missed++
			continue
		}
		if want := m.Decide(subject, client, cost, d.TimeMicros); d.Allowed != want {
			r.err = fmt.Errorf("limit %+v request %d (%s/%s, cost %d, t=%d): script allowed=%v, model %v",
				l, i, subject, client, cost, d.TimeMicros, d.Allowed, want)
			return r
		}
		if d.Allowed {
			r.allowed++
			hadState[subject] = true
		}
	}
	return r
}

// TestTokenBucketExpiryQuantum: on the server's clock token-bucket keeps its key's expiry (SET …
// KEEPTTL) while the time its bucket is full again (F = ts + (C·U − tokens)/R) stays in the quantum
// Q it was set for, and sets it again otherwise; after every admission the key expires at the end
// of F's quantum or later, and less than 2Q after F, and the expiry was set again several times.
func TestTokenBucketExpiryQuantum(t *testing.T) {
	l := Limit{Limit: 10, Window: 80 * time.Millisecond} // Tfull 80 ms, Q 20 ms
	topologies(t, func(t *testing.T, env *redistest.Env) {
		c := env.Target.Client
		lim := prepare(t, env, lookup(t, "token-bucket"), l)
		unit, rate := tokenBucketUnits(l)
		capacity := l.Capacity() * unit
		q := expiryQuantum(capacity, rate)
		req := Request{Subject: "q", Cost: 1}
		key := lim.Keys(req)[0]
		expiries := map[int64]bool{}
		for i := range 40 {
			time.Sleep(time.Duration(i%5) * time.Millisecond)
			if d := decide(t, c, lim, req); !d.Allowed {
				continue
			}
			tokens, ts, got := tokenBucketKey(t, c, key)
			end := ts + (capacity-tokens+rate-1)/rate
			if lo := quantumEnd(ts, capacity-tokens, rate, q); got*1000 < lo || got*1000 >= end+2*q {
				t.Errorf("request %d: state (%d, %d): expires at %d ms, not in [%d, %d) µs: from the end of the quantum the bucket is full again in, at %d µs, to two quanta after", i, tokens, ts, got, lo, end+2*q, end)
			}
			expiries[got] = true
		}
		if len(expiries) < 3 {
			t.Errorf("%d expiries set over the admissions; want several", len(expiries))
		}
	})
}

// TestTokenBucketKeptHint: token-bucket reads a subject's state first (GET) when the last reply
// said its key is still kept, and otherwise tries to write a missing key's state first (SET … NX
// … GET); a hint that is wrong (the key went away) costs only the command: the request is
// decided as for a missing key, a full bucket, and the key gets its expiry.
func TestTokenBucketKeptHint(t *testing.T) {
	env := redistest.Single(t)
	ctx := context.Background()
	c := env.Target.Client
	l := Limit{Limit: 10, Window: time.Minute}
	lim := prepare(t, env, lookup(t, "token-bucket"), l)
	unit, rate := tokenBucketUnits(l)
	capacity := l.Capacity() * unit
	q := expiryQuantum(capacity, rate)
	req := Request{Subject: "hint", Cost: 1}
	key := lim.Keys(req)[0]
	gets := func() int64 { return commandCalls(t, c, "get") }
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		del       bool  // delete the key before the request
		gets      int64 // the request's GETs
		remaining int64
	}{
		{false, 0, 9}, // a new subject: written with SET … NX … GET
		{false, 1, 8}, // kept: read first
		{true, 1, 9},  // kept by the hint, gone in fact: read first, decided as a full bucket
		{false, 1, 8},
	} {
		if want.del {
			if err := c.Del(ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
		}
		d := decide(t, c, lim, req)
		if !d.Allowed || d.Remaining != want.remaining {
			t.Fatalf("request %d: %+v; want allowed with %d remaining", i, d, want.remaining)
		}
		if got := gets(); got != want.gets {
			t.Errorf("request %d: %d GETs; want %d", i, got, want.gets)
		}
		tokens, ts, expiry := tokenBucketKey(t, c, key)
		if err := c.ConfigResetStat(ctx).Err(); err != nil { // the GET tokenBucketKey sent
			t.Fatal(err)
		}
		if lo := quantumEnd(ts, capacity-tokens, rate, q); expiry*1000 < lo {
			t.Errorf("request %d: key expires at %d ms, before the end of its quantum at %d µs", i, expiry, lo)
		}
	}
}

// tokenBucketKey returns the state token-bucket's key holds, tokens and ts, and its expiry in ms
// (PEXPIRETIME).
func tokenBucketKey(t *testing.T, c redis.Cmdable, key string) (tokens, ts, expiry int64) {
	t.Helper()
	ctx := context.Background()
	st, err := c.Get(ctx, key).Result()
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	if len(st) != 16 {
		t.Fatalf("state %q is not two packed integers", st)
	}
	tokens, ok1 := exactInt(st[:8])
	ts, ok2 := exactInt(st[8:])
	if !ok1 || !ok2 {
		t.Fatalf("state %q is not two packed integers", st)
	}
	pexp, err := c.PExpireTime(ctx, key).Result()
	if err != nil {
		t.Fatalf("PEXPIRETIME %s: %v", key, err)
	}
	return tokens, ts, int64(pexp / time.Millisecond)
}

// commandCalls returns how many times the server c talks to ran command (lower case) since its
// statistics were last reset (INFO commandstats).
func commandCalls(t *testing.T, c redis.Cmdable, command string) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+command+":calls="); ok {
			n, err := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	return 0
}

// TestSlidingCounterKeysProveWindow: sliding-counter reads no TIME when it finds both its
// counters, whose expiries prove the server is in the window the limiter predicted, and decides
// then on the limiter's estimate (a reply without a time); when the limiter's prediction is off
// by a window either way, the counters it names cannot both be there (the previous window's
// expired when the predicted window ended; the next window's is not written before it starts), so
// the script reads TIME, writes nothing, and the request is sent again for the server's window.
func TestSlidingCounterKeysProveWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for window boundaries")
	}
	t.Parallel()
	env := redistest.Single(t)
	c := env.Target.Client
	l := Limit{Limit: 100, Window: time.Second}
	lim := prepare(t, env, lookup(t, "sliding-counter"), l)
	sc := lim.(*slidingCounterLimiter)
	w := sc.windowUs
	req := Request{Subject: "proof", Cost: 1}
	// intoNextWindow sleeps until 20 ms into the next window on this host's clock, which Redis
	// reads too, and returns that window's index.
	intoNextWindow := func() int64 {
		now := time.Now().UnixMicro()
		k := floorDiv(now, w) + 1
		time.Sleep(time.Duration(k*w+20_000-now) * time.Microsecond)
		return k
	}
	timed := func(i int, d Decision, k int64) {
		t.Helper()
		if !d.Allowed || d.Clock != ClockServer || floorDiv(d.TimeMicros, w) != k {
			t.Fatalf("request %d: %+v; want admitted at a server time in window %d", i, d, k)
		}
	}
	k := intoNextWindow()
	timed(0, decide(t, c, lim, req), k) // creates the counter of window k
	k = intoNextWindow()
	timed(1, decide(t, c, lim, req), k) // creates the counter of window k, reads k − 1's
	if err := c.ConfigResetStat(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	for i := 2; i < 7; i++ {
		if d := decide(t, c, lim, req); !d.Allowed || d.TimeMicros != 0 {
			t.Fatalf("request %d with both counters there: %+v; want admitted without a time", i, d)
		}
	}
	if n := commandCalls(t, c, "time"); n != 0 {
		t.Errorf("%d TIME calls with both counters there; want none", n)
	}
	k = intoNextWindow()
	// Predicting the window before the server's, whose counter and its predecessor's were both
	// written: the previous one has expired, so TIME shows the miss, and the request sent again
	// for window k finds no counter of k and reads TIME again. Then predicting the window after
	// the server's, whose counter is not there: TIME shows the miss, and the request sent again
	// for window k finds both counters (the first request wrote k's).
	for i, step := range []struct {
		off, times int64
	}{{-w, 2}, {w, 1}} {
		sc.windows.offset.Store(step.off)
		if err := c.ConfigResetStat(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		d := decide(t, c, lim, req)
		if step.times == 2 {
			timed(7+i, d, k)
		} else if !d.Allowed || d.TimeMicros != 0 {
			t.Fatalf("request %d: %+v; want admitted without a time", 7+i, d)
		}
		if n := commandCalls(t, c, "time"); n != step.times {
			t.Errorf("offset %d µs: %d TIME calls; want %d", step.off, n, step.times)
		}
		if n := c.Exists(context.Background(), sc.key(req.Subject, k+1)).Val(); n != 0 {
			t.Errorf("offset %d µs: the counter of window %d was written", step.off, k+1)
		}
	}
	if n := c.Get(context.Background(), sc.key(req.Subject, k)).Val(); n != "2" {
		t.Errorf("the counter of window %d is %q; want 2", k, n)
	}
}
