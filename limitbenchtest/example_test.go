package limitbenchtest_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/limitbench/limitbench/limitbenchtest"
	"github.com/limitbench/limitbench/verify"
)

// golang.org/x/time/rate's Limiter with burst 5 and 20 permits a second keeps token-bucket(5,
// 20/1s): a schedule aimed at its refills and a short hunt find nothing. (In a test, pass its
// t; the example's tb stands in for it.)
func Example_xTimeRate() {
	contract := verify.TokenBucket(5, 20, time.Second)
	newLimiter := func() limitbenchtest.Limiter {
		l := rate.NewLimiter(20, 5)
		return func(_ context.Context, _ string, n int64) (bool, error) {
			return l.AllowN(time.Now(), int(n)), nil
		}
	}
	tb := run(func(tb testing.TB) {
		s, err := limitbenchtest.Boundaries(contract, 1)
		if err != nil {
			tb.Fatalf("%v", err)
		}
		sum := limitbenchtest.Check(tb, contract, newLimiter(), s)
		fmt.Println(sum.Verdict, sum.DefiniteViolations)
		limitbenchtest.Hunt(tb, contract, newLimiter, limitbenchtest.HuntOptions{Time: 2 * time.Second, Seed: 1})
	})
	fmt.Println("failures:", len(tb.failures))
	// Output:
	// pass 0
	// failures: 0
}

// wholeSeconds is a flawed token bucket: it refills only when the Unix second changes, by a
// whole second's worth, so the permits of the second before and of the refill can be spent
// within a few milliseconds across a second boundary.
type wholeSeconds struct {
	mu                  sync.Mutex
	tokens, last        int64
	capacity, perSecond int64
}

func (b *wholeSeconds) allow(_ context.Context, _ string, n int64) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if now := time.Now().Unix(); now > b.last {
		b.tokens = min(b.capacity, b.tokens+(now-b.last)*b.perSecond)
		b.last = now
	}
	if b.tokens < n {
		return false, nil
	}
	b.tokens -= n
	return true, nil
}

// The flawed bucket promises token-bucket(5, 5/1s); the schedule aimed at refills catches it,
// and the test fails with the finding and the schedule as a Go literal to replay.
func Example_flawedBucket() {
	contract := verify.TokenBucket(5, 5, time.Second)
	b := &wholeSeconds{tokens: 5, last: time.Now().Unix(), capacity: 5, perSecond: 5}
	tb := run(func(tb testing.TB) {
		s, err := limitbenchtest.Boundaries(contract, 1)
		if err != nil {
			tb.Fatalf("%v", err)
		}
		limitbenchtest.Check(tb, contract, b.allow, s)
	})
	for _, f := range tb.failures {
		fmt.Println("failed:", strings.Contains(f, "token-bucket(5, 5/1s): fail"))
		fmt.Println("reproducer:", strings.Contains(f, "limitbenchtest.Schedule{"))
	}
	// Output:
	// failed: true
	// reproducer: true
}

// fakeTB is a testing.TB that keeps what a check reports, for the examples, which have no t.
// Only the methods limitbenchtest calls are implemented.
type fakeTB struct {
	testing.TB
	mu       sync.Mutex
	failures []string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Logf(string, ...any) {}

func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures = append(f.failures, fmt.Sprintf(format, args...))
}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	runtime.Goexit()
}

// run calls body with a fakeTB on a goroutine of its own (Fatalf ends it) and returns the
// fakeTB when body returned.
func run(body func(tb testing.TB)) *fakeTB {
	tb := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		body(tb)
	}()
	<-done
	return tb
}
