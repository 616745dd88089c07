package limitbenchtest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/internal/redisenv/redistest"
	"github.com/limitbench/limitbench/limitbenchtest"
	"github.com/limitbench/limitbench/verify"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// go-redis/redis_rate keeps the GCRA contract of its Limit, checked through its Go API against
// a real redis-server: a schedule at its boundaries and a short hunt find nothing.
func TestRedisRate(t *testing.T) {
	env := redistest.Single(t)
	limiter := redis_rate.NewLimiter(env.Target.Client)
	limit := redis_rate.Limit{Rate: 20, Burst: 5, Period: time.Second}
	contract := verify.GCRA(int64(limit.Burst), int64(limit.Rate), limit.Period)
	var trials atomic.Int64
	newLimiter := func() limitbenchtest.Limiter {
		prefix := fmt.Sprintf("%strial%d:", env.Prefix, trials.Add(1)) // a fresh key per trial
		return func(ctx context.Context, subject string, n int64) (bool, error) {
			res, err := limiter.AllowN(ctx, prefix+subject, limit, int(n))
			if err != nil {
				return false, err
			}
			return res.Allowed > 0, nil
		}
	}
	s, err := limitbenchtest.Boundaries(contract, 1)
	if err != nil {
		t.Fatal(err)
	}
	if sum := limitbenchtest.Check(t, contract, newLimiter(), s); sum.Verdict != verify.Pass {
		t.Errorf("verdict %s", sum.Verdict)
	}
	limitbenchtest.Hunt(t, contract, newLimiter, limitbenchtest.HuntOptions{Time: 2 * time.Second, Seed: 1})
}

// A hunt finds the whole-seconds flaw too, and fails with a shrunk reproducer that replays.
func TestHuntFlawedBucket(t *testing.T) {
	contract := verify.TokenBucket(5, 5, time.Second)
	newLimiter := func() limitbenchtest.Limiter {
		b := &wholeSeconds{tokens: 5, last: time.Now().Unix(), capacity: 5, perSecond: 5}
		return b.allow
	}
	tb := run(func(tb testing.TB) {
		limitbenchtest.Hunt(tb, contract, newLimiter, limitbenchtest.HuntOptions{Time: 5 * time.Second, Seed: 1})
	})
	if len(tb.failures) != 1 {
		t.Fatalf("hunt reported %d failures; want 1: %q", len(tb.failures), tb.failures)
	}
	f := tb.failures[0]
	for _, want := range []string{"token-bucket(5, 5/1s): fail", "reproducer (shrunk from", "limitbenchtest.Schedule{Every: 1000000000"} {
		if !strings.Contains(f, want) {
			t.Errorf("failure lacks %q:\n%s", want, f)
		}
	}
	t.Log(f)
}

// A limiter that admits everything fails a constant schedule; one that denies everything
// cannot be shown to keep anything (nothing admitted: inconclusive), and one whose every call
// fails leaves every outcome unknown: neither passes.
func TestCheckVerdicts(t *testing.T) {
	contract := verify.SlidingWindow(10, time.Second)
	s := limitbenchtest.Constant(100, 300*time.Millisecond)
	if len(s.Requests) != 30 || s.Requests[29].At != 290*time.Millisecond {
		t.Fatalf("Constant(100, 300ms): %d requests, last at %v; want 30, the last at 290ms", len(s.Requests), s.Requests[len(s.Requests)-1].At)
	}
	for _, tt := range []struct {
		name    string
		l       limitbenchtest.Limiter
		verdict verify.Verdict
	}{
		{"admits all", func(context.Context, string, int64) (bool, error) { return true, nil }, verify.Fail},
		{"denies all", func(context.Context, string, int64) (bool, error) { return false, nil }, verify.Inconclusive},
		{"errors", func(context.Context, string, int64) (bool, error) { return false, errors.New("lost") }, verify.Inconclusive},
	} {
		tb := run(func(tb testing.TB) {
			if sum := limitbenchtest.Check(tb, contract, tt.l, s); sum.Verdict != tt.verdict {
				t.Errorf("%s: verdict %s; want %s", tt.name, sum.Verdict, tt.verdict)
			}
		})
		if len(tb.failures) != 1 || !strings.Contains(tb.failures[0], "sliding-window(10, 1s): "+string(tt.verdict)) {
			t.Errorf("%s: failures %q; want one, %s", tt.name, tb.failures, tt.verdict)
		}
	}
}

// A limiter that trusts its clients' clocks is broken by clients whose clocks are behind: it
// reads ClientNow, which a Skewed schedule sets.
func TestSkewed(t *testing.T) {
	contract := verify.FixedWindow(5, time.Second)
	s, err := limitbenchtest.Skewed(contract, []time.Duration{-2 * time.Second, time.Second}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Skews) == 0 {
		t.Fatalf("Skewed gave no client a clock offset: %#v", s)
	}
	var seen atomic.Bool
	w := &windows{}
	trusting := func(ctx context.Context, subject string, n int64) (bool, error) {
		if d := time.Until(limitbenchtest.ClientNow(ctx)); d < -time.Second || d > time.Second/2 {
			seen.Store(true)
		}
		return w.allow(limitbenchtest.ClientNow(ctx), n), nil
	}
	tb := run(func(tb testing.TB) { limitbenchtest.Check(tb, contract, trusting, s) })
	if !seen.Load() {
		t.Errorf("ClientNow never returned a skewed time")
	}
	if len(tb.failures) != 1 || !strings.Contains(tb.failures[0], "fail") {
		t.Errorf("a limiter that trusts client clocks: failures %q; want one fail", tb.failures)
	}
}

// windows is a fixed-window counter of 5 per second on whatever time it is given.
type windows struct {
	mu     sync.Mutex
	counts map[int64]int64
}

func (w *windows) allow(now time.Time, n int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.counts == nil {
		w.counts = map[int64]int64{}
	}
	if w.counts[now.Unix()]+n > 5 {
		return false
	}
	w.counts[now.Unix()] += n
	return true
}

// The Recorder times decisions made from the test's own loop.
func TestRecorder(t *testing.T) {
	r := limitbenchtest.NewRecorder(func(context.Context, string, int64) (bool, error) { return true, nil })
	for range 3 {
		if _, err := r.Allow(context.Background(), "c", "s", 2); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Allow(context.Background(), "c", "s", 0); err != nil {
		t.Fatal(err)
	}
	l := r.Log()
	if len(l.Events) != 3 || l.Events[0].Kind() != verify.Admitted || l.Events[0].Permits != 2 {
		t.Errorf("log: %v; want 3 admissions of 2 permits", l.Events)
	}
	tb := run(func(tb testing.TB) { r.Check(tb, verify.SlidingWindow(10, time.Second)) })
	if len(tb.failures) != 1 || !strings.Contains(tb.failures[0], "inconclusive") {
		t.Errorf("a request the log could not hold: failures %q; want one inconclusive", tb.failures)
	}
}

// A reproducer too long for a literal is written to a trace file that ReadSchedule reads back.
func TestReproducerFile(t *testing.T) {
	s := limitbenchtest.Constant(200, 500*time.Millisecond)
	if len(s.Requests) <= limitbenchtest.MaxLiteral {
		t.Fatalf("%d requests: not more than MaxLiteral", len(s.Requests))
	}
	admitAll := func(context.Context, string, int64) (bool, error) { return true, nil }
	tb := run(func(tb testing.TB) { limitbenchtest.Check(tb, verify.SlidingWindow(10, time.Second), admitAll, s) })
	if len(tb.failures) != 1 {
		t.Fatalf("failures %q; want 1", tb.failures)
	}
	_, rest, ok := strings.Cut(tb.failures[0], " written to ")
	path, _, _ := strings.Cut(rest, ":")
	if !ok || path == "" {
		t.Fatalf("the failure names no file:\n%s", tb.failures[0])
	}
	defer os.Remove(path)
	back, err := limitbenchtest.ReadSchedule(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, back); diff != "" {
		t.Errorf("ReadSchedule(%s) (-played +read):\n%s", path, diff)
	}
}
