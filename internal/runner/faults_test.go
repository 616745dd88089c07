package runner

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/faults"
	"github.com/limitbench/limitbench/internal/measure"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/scenarios"
	"github.com/limitbench/limitbench/verify"
)

// overLimit is a scenario of names at ten times their limit (1000/s against 100 per second) on one
// subject, for d with no warmup: every window full, so a limiter that forgot its state admits
// what its contract forbids across the loss.
func overLimit(t *testing.T, names []string, d time.Duration) *scenarios.Scenario {
	return scenarioOf(t, redisenv.TopologySingle, names, func(s *scenarios.Scenario) {
		s.Duration, s.Warmup = d, 0
		s.Clients = 8
		s.Limit = algorithms.Limit{Limit: 100, Window: time.Second}
		s.Arrival = &arrival.Arrival{Rate: 1000}
	})
}

// measured is what measureOne returned for one algorithm.
type measured struct {
	e    *result.Entry
	err  error
	took time.Duration
}

// measureUnder measures every algorithm of s on tgt, one after the other, and calls fault once
// in each, in a goroutine, when its load has run for about a second (its first progress report).
func measureUnder(t *testing.T, tgt *redisenv.Target, s *scenarios.Scenario, fault func(ctx context.Context) error) map[string]measured {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := map[string]measured{}
	runID := measure.NewRunID()
	for _, entry := range s.Algorithms {
		a, err := measure.Resolve(s, entry)
		if err != nil {
			t.Fatal(err)
		}
		var once sync.Once
		var wg sync.WaitGroup
		o := Options{Scenario: s, Repeat: 1, Progress: func(Progress) {
			once.Do(func() {
				wg.Go(func() {
					if err := fault(ctx); err != nil {
						t.Errorf("%s: inject the fault: %v", entry.Name, err)
					}
				})
			})
		}}
		start := time.Now()
		e, err := measureOne(ctx, o, tgt, "single", a, 1, runID, nil)
		took := time.Since(start)
		wg.Wait()
		if e != nil {
			v := e.Verification
			t.Logf("%s: %d requests, %d allowed, %d errors, %d unknown; %s, %d definite, %d attributed; %v", entry.Name,
				e.Requests, e.Allowed, e.Errors, e.Unknown, v.Verdict, v.DefiniteViolations, v.AttributedViolations, v.Reasons)
		}
		out[entry.Name] = measured{e, err, took}
	}
	return out
}

// Issue 14, item 2: a Redis restarted during a run (state and script cache lost) made a correct
// gcra fail with thousands of definite violations. Every corrected algorithm, restarted a second
// into its load at ten times its limit: the restart is seen (run id before and after), each side
// is verified apart, nothing is definite, the violations across the restart are attributed to it
// and the verdict is inconclusive, naming the restart.
func TestMeasureAcrossRestart(t *testing.T) {
	needRedis(t)
	tgt := redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess})
	addr := tgt.Masters()[0]
	got := measureUnder(t, tgt, overLimit(t, corrected(), 2*time.Second), func(ctx context.Context) error {
		return tgt.Restart(ctx, addr)
	})
	attributed := int64(0)
	for name, m := range got {
		if m.err != nil || m.e == nil {
			t.Errorf("%s: Measure = %v; want an entry and no error (the server came back)", name, m.err)
			continue
		}
		v := m.e.Verification
		attributed += v.AttributedViolations
		if v.Verdict != verify.Inconclusive || v.DefiniteViolations != 0 || v.Epochs != 2 {
			t.Errorf("%s: verdict %s, %d definite, %d epochs (%v); want inconclusive, 0, 2", name, v.Verdict, v.DefiniteViolations,
				v.Epochs, v.Reasons)
		}
		if !strings.Contains(strings.Join(v.Reasons, "; "), addr+" restarted (run id") {
			t.Errorf("%s: reasons %q do not name the restart", name, v.Reasons)
		}
		w := m.e.Watch
		if w == nil || len(w.Nodes) != 1 || w.Nodes[0].RunIDBefore == "" || w.Nodes[0].RunIDAfter == "" ||
			w.Nodes[0].RunIDBefore == w.Nodes[0].RunIDAfter {
			t.Errorf("%s: watch %+v; want the node's run id before and after, different", name, w)
		}
	}
	if attributed == 0 {
		t.Errorf("no violation across any restart was attributed: the test did not make the restart matter")
	}
}

// Issue 14, item 2: FLUSHALL during a run empties the limiter's keys; it is seen and judged like
// a restart, never as the algorithm's violation.
func TestMeasureAcrossFlush(t *testing.T) {
	needRedis(t)
	tgt := redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess})
	got := measureUnder(t, tgt, overLimit(t, []string{"gcra", "sliding-log"}, 2*time.Second), func(ctx context.Context) error {
		return tgt.Client.FlushAll(ctx).Err()
	})
	for name, m := range got {
		if m.err != nil || m.e == nil {
			t.Fatalf("%s: Measure = %v", name, m.err)
		}
		v := m.e.Verification
		if v.Verdict != verify.Inconclusive || v.DefiniteViolations != 0 || !strings.Contains(strings.Join(v.Reasons, "; "), "was flushed (FLUSHALL)") {
			t.Errorf("%s: verdict %s, %d definite (%v); want inconclusive, 0, the flush named", name, v.Verdict, v.DefiniteViolations, v.Reasons)
		}
	}
}

// Issue 14, item 13: after the server was killed, a run kept sending errors until its scheduled
// end. Now it stops once Redis is lost (20 requests in a row over a second that could not reach
// it), keeps what it measured, says why, and Measure returns ErrLost.
func TestMeasureStopsWhenRedisIsLost(t *testing.T) {
	needRedis(t)
	tgt := redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess})
	got := measureUnder(t, tgt, overLimit(t, []string{"gcra"}, 8*time.Second), func(ctx context.Context) error {
		return tgt.Kill(ctx, tgt.Masters()[0])
	})
	m := got["gcra"]
	if !errors.Is(m.err, measure.ErrLost) || !errors.Is(m.err, faults.ErrUnreachable) {
		t.Fatalf("Measure = %v; want ErrLost, the guard's reason", m.err)
	}
	if m.took > 5*time.Second {
		t.Errorf("Measure took %s of an 8 s run after the server was killed at 1 s; want it stopped within about 2 s of the kill", m.took)
	}
	if m.e == nil || m.e.Requests == 0 || m.e.Verification.Verdict == verify.Fail {
		t.Fatalf("entry %+v; want what was measured, not failed", m.e)
	}
	if !strings.Contains(strings.Join(m.e.Verification.Reasons, "; "), "stopped early (Redis was lost)") {
		t.Errorf("reasons %q do not say the run stopped because Redis was lost", m.e.Verification.Reasons)
	}
	var kinds []string
	for _, c := range m.e.ErrorClasses {
		kinds = append(kinds, c.Kind)
		if c.First == "" {
			t.Errorf("error class %s without its first text", c.Kind)
		}
	}
	if !strings.Contains(strings.Join(kinds, ","), "connection") {
		t.Errorf("error classes %v; want the connection errors the kill caused", kinds)
	}
}

// aclTarget starts a private server, creates user u with the given ACL rules, and returns the
// server (with its default user) and an external target that talks to it as u.
func aclTarget(t *testing.T, u string, rules ...string) (server, ext *redisenv.Target) {
	t.Helper()
	server = redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess})
	ctx := context.Background()
	args := []any{"ACL", "SETUSER", u, "reset", "on", ">secret-" + u}
	for _, r := range rules {
		args = append(args, r)
	}
	if err := server.Client.Do(ctx, args...).Err(); err != nil {
		t.Fatal(err)
	}
	url := url.URL{Scheme: "redis", User: url.UserPassword(u, "secret-"+u), Host: server.Masters()[0]}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ext, err := redisenv.Start(sctx, redisenv.Config{Backend: redisenv.BackendExternal, URL: url.String()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ext.Stop(context.Background()) })
	return server, ext
}

// Issue 14, item 3: NOPERM, an ACL that forbids the run's keys or commands, is the environment's
// problem: Measure returns ErrPermission with Redis's words, at once (not after the run), never
// a verdict; refused at preparation too.
func TestMeasureNoPermission(t *testing.T) {
	needRedis(t)
	for _, tt := range []struct {
		name  string
		rules []string
		entry bool // the load started: an entry comes back
	}{
		{"keys forbidden", []string{"~other:*", "+@all"}, true},
		{"script load forbidden", []string{"~*", "+@all", "-script|load"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ext := aclTarget(t, "limited", tt.rules...)
			got := measureUnder(t, ext, overLimit(t, []string{"gcra"}, 6*time.Second), func(context.Context) error { return nil })
			m := got["gcra"]
			if !errors.Is(m.err, measure.ErrPermission) || !strings.Contains(m.err.Error(), "NOPERM") {
				t.Fatalf("Measure = %v; want ErrPermission with Redis's NOPERM", m.err)
			}
			if m.took > 3*time.Second {
				t.Errorf("Measure took %s; want it stopped at the first NOPERM", m.took)
			}
			if (m.e != nil) != tt.entry {
				t.Errorf("entry %v; want one: %v", m.e != nil, tt.entry)
			}
		})
	}
}

// Issue 14, item 9: an ACL user without UNLINK left the run's keys behind on an external Redis
// with no word. The entry now carries a warning with the count, the prefix and a command that
// removes them, and that command works.
func TestMeasureWarnsOfKeysLeftBehind(t *testing.T) {
	needRedis(t)
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skipf("redis-cli is not on PATH: %v", err)
	}
	server, ext := aclTarget(t, "nounlink", "~*", "+@all", "-unlink", "-del")
	// fixed-window keeps a key per subject for its 10 s window: all 7 are there at the cleanup.
	s := scenarioOf(t, redisenv.TopologySingle, []string{"fixed-window"}, func(s *scenarios.Scenario) {
		s.Duration, s.Warmup, s.Clients = 500*time.Millisecond, 0, 2
		s.Arrival = &arrival.Arrival{Rate: 200}
		s.Keys.Count = 7
		s.Limit = algorithms.Limit{Limit: 1000, Window: 10 * time.Second}
	})
	got := measureUnder(t, ext, s, func(context.Context) error { return nil })
	m := got["fixed-window"]
	if m.err != nil || m.e == nil {
		t.Fatalf("Measure = %v", m.err)
	}
	if len(m.e.Warnings) != 1 {
		t.Fatalf("warnings %+v; want one about the keys left behind", m.e.Warnings)
	}
	w := m.e.Warnings[0]
	ctx := context.Background()
	keys, err := server.Client.Keys(ctx, w.Prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if w.Kind != result.WarningKeysLeft || w.Keys != 7 || len(keys) != 7 || !strings.HasPrefix(w.Prefix, "limitbench:") ||
		!strings.Contains(w.Message, fmt.Sprintf("7 keys under %s", w.Prefix)) || !strings.Contains(w.Message, "NOPERM") {
		t.Errorf("warning %+v with %d keys under its prefix; want 7 keys, the prefix, why and how to remove them", w, len(keys))
	}
	// The command, run as the default user, removes exactly those keys.
	if err := server.Client.Set(ctx, "someone-else", 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", strings.ReplaceAll(w.Remove, "--user USER", "--user default"))
	cmd.Env = append(os.Environ(), "REDISCLI_AUTH="+server.Password)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", w.Remove, err, out)
	}
	left, err := server.Client.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0] != "someone-else" {
		t.Errorf("keys after the warning's command: %v; want only someone-else", left)
	}
}
