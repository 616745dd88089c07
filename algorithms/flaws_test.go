package algorithms

import (
	"context"
	"testing"
	"time"

	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

// admitted sends n requests for subject at t and counts the admissions.
func admitted(t *testing.T, env *redistest.Env, lim Limiter, subject string, tm time.Time, n int) int {
	t.Helper()
	count := 0
	for range n {
		if decide(t, env.Target.Client, lim, at(subject, tm)).Allowed {
			count++
		}
	}
	return count
}

// TestPublishedFlaws: each *-published variant shows the flaw its Describe().Flaw names, and the
// corrected variant does not.
func TestPublishedFlaws(t *testing.T) {
	const limit = 5
	l := Limit{Limit: limit, Window: time.Second}
	minute := time.UnixMicro(1_700_000_040_000_000) // a whole minute
	tests := []struct {
		name string
		// run returns the admissions a correct limiter allows at most, and the admissions seen.
		run func(t *testing.T, env *redistest.Env, lim Limiter) (bound, got int)
	}{
		{"fixed-window-published", func(t *testing.T, env *redistest.Env, lim Limiter) (int, int) {
			// Two clients at the same real instant, one clock 30 s ahead: they count in different
			// minute keys and together admit 2L in one minute.
			now := minute.Add(45 * time.Second)
			got := admitted(t, env, lim, "ip", now, limit+1) + admitted(t, env, lim, "ip", now.Add(30*time.Second), limit+1)
			return limit, got
		}},
		{"token-bucket-published", func(t *testing.T, env *redistest.Env, lim Limiter) (int, int) {
			// A client with a clock 5 s behind rewinds the stored time; the next up-to-date client
			// is refilled for those 5 s again.
			now := minute.Add(10 * time.Second)
			got := admitted(t, env, lim, "u", now, limit+1)
			got += admitted(t, env, lim, "u", now.Add(-5*time.Second), 1)
			got += admitted(t, env, lim, "u", now, limit+1)
			return limit, got
		}},
		{"sliding-log-published", func(t *testing.T, env *redistest.Env, lim Limiter) (int, int) {
			// One request every 100 ms for 3 s is 10 per window against a limit of 5: a correct
			// sliding log admits 5 per second; the published one records its denials and, once
			// full, admits nothing more.
			got := 0
			for i := range 30 {
				got += admitted(t, env, lim, "u", minute.Add(time.Duration(i)*100*time.Millisecond), 1)
			}
			return 3 * limit, got
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := redistest.Single(t)
			lim := prepare(t, env, lookup(t, tt.name), l)
			bound, got := tt.run(t, env, lim)
			switch tt.name {
			case "sliding-log-published":
				if got >= bound {
					t.Errorf("%d admitted; the flaw (denials recorded) should keep it below %d", got, bound)
				}
			default:
				if got <= bound {
					t.Errorf("%d admitted; the flaw should let more than %d through", got, bound)
				}
			}
			t.Logf("%s: %d admitted, a correct limiter %d", tt.name, got, bound)

			// The corrected variant, given the same instants on the server's clock, keeps its bound.
			corrected := lookup(t, tt.name[:len(tt.name)-len("-published")])
			env2 := redistest.Single(t)
			lim2 := prepare(t, env2, corrected, l)
			if _, got2 := tt.run(t, env2, lim2); got2 > bound+limit {
				t.Errorf("corrected %s admitted %d", corrected.Describe().Name, got2)
			}
		})
	}
}

// TestFixedWindowHash: the fixed-window hash keeps one field, expires with its window, and a
// clock that steps back into an earlier window is denied.
func TestFixedWindowHash(t *testing.T) {
	topologies(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		c := env.Target.Client
		lim := prepare(t, env, lookup(t, "fixed-window"), Limit{Limit: 3, Window: time.Second})
		key := lim.Keys(at("h", base))[0]
		for w := range 3 {
			if d := decide(t, c, lim, at("h", base.Add(time.Duration(w)*time.Second))); !d.Allowed {
				t.Fatalf("window %d: denied", w)
			}
			if n := c.HLen(ctx, key).Val(); n != 1 {
				t.Errorf("window %d: %d fields, want 1", w, n)
			}
		}
		// Fixed times: the time left in the window (at most 1 s) plus a minute.
		if ttl := c.PTTL(ctx, key).Val(); ttl <= time.Minute || ttl > time.Minute+time.Second {
			t.Errorf("PTTL %s, want in (1m, 1m1s]", ttl)
		}
		back := base.Add(time.Second)
		d := decide(t, c, lim, at("h", back))
		if d.Allowed {
			t.Fatalf("a clock stepped back one window was admitted")
		}
		if want := base.Add(2 * time.Second).Truncate(time.Second).Sub(back); d.RetryAfter != want {
			t.Errorf("retry-after %s, want %s (until the later window)", d.RetryAfter, want)
		}
		if n := c.HLen(ctx, key).Val(); n != 1 {
			t.Errorf("after the step back: %d fields, want 1", n)
		}
	})
}
