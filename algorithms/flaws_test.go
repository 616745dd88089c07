package algorithms

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

// skewed is one request of the flaw scenarios at one real instant: the client's clock, skew
// included, which the published variants read (Request.ClientTime), and the real instant on the
// server's clock, which the corrected ones read (Request.FixedTime, standing in for Redis TIME).
// Both variants get the same Requests.
type skewed struct{ client, server time.Time }

// repeat is n requests at the same real instant server, from a client whose clock is off by skew.
func repeat(n int, server time.Time, skew time.Duration) []skewed {
	out := make([]skewed, n)
	for i := range out {
		out[i] = skewed{client: server.Add(skew), server: server}
	}
	return out
}

// countAdmitted sends reqs for subject in order and counts the admissions.
func countAdmitted(t *testing.T, env *redistest.Env, lim Limiter, subject string, reqs []skewed) int {
	t.Helper()
	count := 0
	for _, r := range reqs {
		req := Request{Subject: subject, Client: "c", Cost: 1, ClientTime: r.client, FixedTime: r.server}
		if decide(t, env.Target.Client, lim, req).Allowed {
			count++
		}
	}
	return count
}

// TestPublishedFlaws: each *-published variant shows the flaw its Describe().Flaw names, and the
// corrected variant, given the same requests (skewed client clocks, one shared server clock),
// admits exactly what its contract allows at the real instants: no more (it ignores the skewed
// ClientTime) and no less.
func TestPublishedFlaws(t *testing.T) {
	const limit = 5
	l := Limit{Limit: limit, Window: time.Second}
	minute := time.UnixMicro(1_700_000_040_000_000) // a whole minute
	every100ms := func() []skewed {
		var rs []skewed
		for i := range 30 {
			rs = append(rs, repeat(1, minute.Add(time.Duration(i)*100*time.Millisecond), 0)...)
		}
		return rs
	}()
	tests := []struct {
		name string
		reqs []skewed
		// allowed is what the corrected variant's contract allows at the requests' real instants,
		// and what it must admit.
		allowed int
		// more: the flaw lets the published variant admit more than allowed; else far less.
		more bool
	}{
		{
			// Two clients at the same real instant, one clock 30 s ahead: they count in different
			// minute keys and together admit 2L in one minute. fixed-window(L, 1 s) allows L at one
			// instant; a corrected script that read the client's clock would count two windows.
			name:    "fixed-window-published",
			reqs:    append(repeat(limit+1, minute.Add(45*time.Second), 0), repeat(limit+1, minute.Add(45*time.Second), 30*time.Second)...),
			allowed: limit,
			more:    true,
		},
		{
			// At one real instant: a correct client empties the bucket, a client 5 s behind rewinds
			// the stored time, so the next correct one is refilled for those 5 s again; then a client
			// 5 s ahead is refilled once more. token-bucket(L, L/s) allows L at one instant; a
			// corrected script that read the client's clock would refill for the one ahead.
			name: "token-bucket-published",
			reqs: slices.Concat(
				repeat(limit+1, minute.Add(10*time.Second), 0),
				repeat(1, minute.Add(10*time.Second), -5*time.Second),
				repeat(limit+1, minute.Add(10*time.Second), 0),
				repeat(limit+1, minute.Add(10*time.Second), 5*time.Second),
			),
			allowed: limit,
			more:    true,
		},
		{
			// One request every 100 ms for 3 s is 10 per window against a limit of 5: the published
			// log records its denials and, once full, admits nothing more. sliding-window(L, 1 s)
			// allows 5 in each of the three seconds (the entry at 0 leaves at exactly 1 s).
			name:    "sliding-log-published",
			reqs:    every100ms,
			allowed: 3 * limit,
			more:    false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := redistest.Single(t)
			got := countAdmitted(t, env, prepare(t, env, lookup(t, tt.name), l), "pub", tt.reqs)
			t.Logf("%s: %d admitted, the contract allows %d", tt.name, got, tt.allowed)
			if tt.more && got <= tt.allowed {
				t.Errorf("%s: %d admitted; the flaw should let more than %d through", tt.name, got, tt.allowed)
			}
			if !tt.more && got*2 > tt.allowed {
				t.Errorf("%s: %d admitted; the flaw (denials recorded) should keep it far below %d", tt.name, got, tt.allowed)
			}

			corrected := lookup(t, strings.TrimSuffix(tt.name, "-published"))
			if got := countAdmitted(t, env, prepare(t, env, corrected, l), "cor", tt.reqs); got != tt.allowed {
				t.Errorf("corrected %s: %d admitted on the server's clock, want exactly %d (what its contract allows)",
					corrected.Describe().Name, got, tt.allowed)
			}
		})
	}
}

// TestServerClockIgnoresSkew: every corrected server-clock algorithm, on one node and on a cluster,
// given 2L requests at one real instant from clients whose clocks are off by up to an hour either
// way, admits exactly L, what its contract allows at one instant (fixed-window, sliding-window, token-bucket with burst L, and the
// resource's limit for resource-consumer, whose clients are distinct consumers); and exactly L
// again at a second instant 2W later, when every algorithm has forgotten the first.
func TestServerClockIgnoresSkew(t *testing.T) {
	const limit = 5
	l := Limit{Limit: limit, Window: time.Second}
	skews := []time.Duration{0, time.Hour, -time.Hour, 30 * time.Second, -30 * time.Second, l.Window / 2, -l.Window / 2, time.Millisecond, -time.Millisecond, 2 * l.Window}
	for _, a := range All() {
		if d := a.Describe(); d.Clock != ClockServer || d.Flaw != "" {
			continue // resource-consumer-published reads TIME, but its same-µs members collide
		}
		name := a.Describe().Name
		t.Run(name, func(t *testing.T) {
			topologies(t, func(t *testing.T, env *redistest.Env) {
				lim := prepare(t, env, a, l)
				for _, server := range []time.Time{base, base.Add(2 * l.Window)} {
					got := 0
					for i := range 2 * limit {
						skew := skews[i%len(skews)]
						req := Request{Subject: "skew", Client: fmt.Sprint("c", i), Cost: 1, ClientTime: server.Add(skew), FixedTime: server}
						if decide(t, env.Target.Client, lim, req).Allowed {
							got++
						}
					}
					if got != limit {
						t.Errorf("at +%s: %d of %d admitted from skewed clients at one real instant, want exactly %d",
							server.Sub(base), got, 2*limit, limit)
					}
				}
			})
		})
	}
}

// TestFixedWindowKeys: with fixed times (tests), each window counts in a key of its own, named by
// the window, that expires with it plus a minute; a clock that steps back into an earlier window
// counts in that window's key again. (On the server's clock the key is the subject's; see
// TestFixedWindowEndsWithItsKey.)
func TestFixedWindowKeys(t *testing.T) {
	topologies(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		c := env.Target.Client
		lim := prepare(t, env, lookup(t, "fixed-window"), Limit{Limit: 3, Window: time.Second})
		var keys []string
		for w := range 3 {
			now := base.Add(time.Duration(w) * time.Second)
			if d := decide(t, c, lim, at("h", now)); !d.Allowed || d.Remaining != 2 {
				t.Fatalf("window %d: %+v, want allowed with 2 remaining", w, d)
			}
			key := lim.Keys(at("h", now))[0]
			if want := fmt.Sprintf("%sfw:{h}:%s", env.Prefix, strconv.FormatInt(now.Unix(), 36)); key != want {
				t.Errorf("window %d: key %q, want %q", w, key, want)
			}
			if got := c.Get(ctx, key).Val(); got != "1" {
				t.Errorf("window %d: counter %q, want \"1\"", w, got)
			}
			if ttl := c.PTTL(ctx, key).Val(); ttl <= time.Minute || ttl > time.Minute+time.Second {
				t.Errorf("window %d: PTTL %s, want in (1m, 1m1s]", w, ttl)
			}
			keys = append(keys, key)
		}
		if len(slices.Compact(slices.Clone(keys))) != 3 {
			t.Errorf("keys %q, want one per window", keys)
		}
		back := base.Add(time.Second)
		if d := decide(t, c, lim, at("h", back)); !d.Allowed || d.Remaining != 1 {
			t.Errorf("a clock stepped back one window: %+v, want allowed with 1 remaining (its window's second)", d)
		}
	})
}

// TestFixedWindowEndsWithItsKey: on the server's clock the counter is the subject's key, and the
// window's first call sets it to expire in the window's last ms, (k+1)W − 1, so that Redis ends the
// count when the window ends. It is also the regression test of a first call in a window's last
// ms: PEXPIREAT to the current ms deletes the key at once (Redis 7.0), so the calls after it in
// that ms would count from 0 again and the window could admit L more; SET … PXAT keeps it. Two
// calls in one MULTI run in the same ms almost always; with W = 2 ms half the first calls fall in
// a window's last ms, and the second call of each such pair must find the count (or, if the ms
// passed in between, open the next window).
func TestFixedWindowEndsWithItsKey(t *testing.T) {
	topologies(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		c := env.Target.Client
		lim := prepare(t, env, lookup(t, "fixed-window"), Limit{Limit: 3, Window: time.Second})
		d := decide(t, c, lim, Request{Subject: "e", Cost: 1})
		if !d.Allowed || d.TimeMicros == 0 || d.Clock != ClockServer {
			t.Fatalf("first call: %+v, want allowed with the server's time", d)
		}
		key := lim.Keys(Request{Subject: "e"})[0]
		if want := env.Prefix + "fw:{e}"; key != want {
			t.Errorf("key %q, want %q", key, want)
		}
		endMs := (d.TimeMicros/1_000_000 + 1) * 1000
		if got := c.PExpireTime(ctx, key).Val(); got != time.Duration(endMs-1)*time.Millisecond {
			t.Errorf("decision at %d µs: PEXPIRETIME %d ms, want %d ms (the window's last ms)", d.TimeMicros, got.Milliseconds(), endMs-1)
		}
		if d := decide(t, c, lim, Request{Subject: "e", Cost: 1}); !d.Allowed || d.Remaining != 1 || d.TimeMicros != 0 {
			t.Errorf("second call: %+v, want allowed with 1 remaining and no time", d)
		}

		short := prepare(t, env, lookup(t, "fixed-window"), Limit{Limit: 1000, Window: 2 * time.Millisecond})
		lastMs := 0
		deadline := time.Now().Add(5 * time.Second)
		for i := 0; lastMs < 20 && time.Now().Before(deadline); i++ {
			req := Request{Subject: fmt.Sprint("last", i), Cost: 1}
			p := c.TxPipeline()
			first, second := Do(ctx, short, p, req), Do(ctx, short, p, req)
			if _, err := p.Exec(ctx); err != nil {
				t.Fatal(err)
			}
			d1, err1 := first()
			d2, err2 := second()
			if err1 != nil || err2 != nil {
				t.Fatalf("pair %d: %v, %v", i, err1, err2)
			}
			if d1.TimeMicros == 0 || (d1.TimeMicros/1000)%2 != 1 {
				continue // not a first call in a window's last ms
			}
			lastMs++
			nextWindow := d2.TimeMicros != 0 && d2.TimeMicros/2000 > d1.TimeMicros/2000
			if !nextWindow && (d2.TimeMicros != 0 || d2.Remaining != 998) {
				t.Errorf("pair %d: first call at %d µs (a window's last ms), the second %+v; want it counted second in that window (998 remaining) or in the next window", i, d1.TimeMicros, d2)
			}
		}
		if lastMs < 20 {
			t.Errorf("only %d first calls fell in a window's last ms in 5 s", lastMs)
		}
	})
}

// TestFixedWindowDenials: a denial that finds the window full leaves its increment in the counter
// (one INCRBY per call), a denied cost that found room takes its increment back; either way the
// decisions and the remaining permits are those of a count that stops at the limit.
func TestFixedWindowDenials(t *testing.T) {
	env := redistest.Single(t)
	ctx := context.Background()
	c := env.Target.Client
	lim := prepare(t, env, lookup(t, "fixed-window"), Limit{Limit: 3, Window: time.Second})
	key := lim.Keys(at("d", base))[0]
	steps := []struct {
		cost      int64
		allowed   bool
		remaining int64
		stored    string // the window's counter afterwards
	}{
		{1, true, 2, "1"},
		{3, false, 2, "1"}, // 1 + 3 > 3: taken back, 2 still fit
		{2, true, 0, "3"},
		{1, false, 0, "4"}, // full: left in place
		{1, false, 0, "5"},
		{2, false, 0, "7"}, // full before it: left in place too
		{1, false, 0, "8"},
	}
	for i, s := range steps {
		req := at("d", base.Add(time.Duration(i)*time.Millisecond))
		req.Cost = s.cost
		d := decide(t, c, lim, req)
		if d.Allowed != s.allowed || d.Remaining != s.remaining {
			t.Errorf("step %d (cost %d): %+v; want allowed %v, remaining %d", i+1, s.cost, d, s.allowed, s.remaining)
		}
		if !d.Allowed && d.RetryAfter != base.Truncate(time.Second).Add(time.Second).Sub(req.FixedTime) {
			t.Errorf("step %d: retry-after %s, want the end of the window", i+1, d.RetryAfter)
		}
		if got := c.Get(ctx, key).Val(); got != s.stored {
			t.Errorf("step %d: counter %s = %q, want %q", i+1, key, got, s.stored)
		}
	}
	if d := decide(t, c, lim, at("d", base.Truncate(time.Second).Add(time.Second))); !d.Allowed || d.Remaining != 2 {
		t.Errorf("next window: %+v, want allowed with 2 remaining", d)
	}
}

// TestSlidingLogList: the list never holds more than L entries, an entry is the exact time in µs,
// a request of cost n is decided by the entry at index L − n, and a cost above 4096 (more than one LPUSH can take through unpack) is
// pushed in full.
func TestSlidingLogList(t *testing.T) {
	topologies(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		c := env.Target.Client
		lim := prepare(t, env, lookup(t, "sliding-log"), Limit{Limit: 3, Window: time.Second})
		key := lim.Keys(at("l", base))[0]
		for i := range 10 {
			// One admission every 400 ms: at most three in any second.
			now := base.Add(time.Duration(i) * 400 * time.Millisecond)
			if d := decide(t, c, lim, at("l", now)); !d.Allowed {
				t.Fatalf("request %d at +%s: denied", i+1, now.Sub(base))
			}
			if n := c.LLen(ctx, key).Val(); n > 3 {
				t.Errorf("request %d: %d entries, want at most 3", i+1, n)
			}
		}
		// Entries are TIME's seconds and its µs padded to six digits: a µs part with leading zeros.
		for _, us := range []int64{0, 7, 42_000, 999_999} {
			now := time.UnixMicro(1_700_000_100_000_000 + us)
			req := at(fmt.Sprint("pad", us), now)
			if d := decide(t, c, lim, req); !d.Allowed {
				t.Fatalf("at %d µs: denied", now.UnixMicro())
			}
			if got, want := c.LIndex(ctx, lim.Keys(req)[0], 0).Val(), fmt.Sprint(now.UnixMicro()); got != want {
				t.Errorf("entry %q, want %q", got, want)
			}
		}
		big := prepare(t, env, lookup(t, "sliding-log"), Limit{Limit: 10_000, Window: time.Second})
		req := at("big", base)
		req.Cost = 9_000
		if d := decide(t, c, big, req); !d.Allowed || d.Remaining != 1_000 {
			t.Fatalf("cost 9000 of 10000: %+v, want allowed with 1000 remaining", d)
		}
		if n := c.LLen(ctx, big.Keys(req)[0]).Val(); n != 9_000 {
			t.Errorf("cost 9000: %d entries, want 9000", n)
		}
		req.Cost = 1_001
		if d := decide(t, c, big, req); d.Allowed || d.RetryAfter != time.Second {
			t.Errorf("cost 1001 with 1000 left: %+v, want denied with retry-after 1s", d)
		}
		req.Cost = 1_000
		if d := decide(t, c, big, req); !d.Allowed || d.Remaining != 0 {
			t.Errorf("cost 1000 with 1000 left: %+v, want allowed with 0 remaining", d)
		}
	})
}
