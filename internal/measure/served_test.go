package measure

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/limitbench/limitbench/internal/faults"
	"github.com/limitbench/limitbench/internal/faults/watch"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
	"github.com/limitbench/limitbench/verify"
)

// TestServedStampsReplies: the hook stamps a node's time at each reply read from it, on a real
// redis-server, and at none for a node never dialled.
func TestServedStampsReplies(t *testing.T) {
	env := redistest.Single(t)
	addr := env.Target.Masters()[0]
	sv := newServed(env.Target.RealAddr)
	c := env.Target.NewClient(redisenv.ClientOptions{PoolSize: 1})
	c.AddHook(sv)
	if _, ok := sv.last(addr); ok {
		t.Fatal("a reply stamped before any was read")
	}
	before := time.Now()
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	first, ok := sv.last(addr)
	if !ok || first.Before(before) || first.After(time.Now()) {
		t.Fatalf("last(%s) = %v, %v after a PING at %v; want the PING's reply", addr, first, ok, before)
	}
	time.Sleep(5 * time.Millisecond)
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	if again, _ := sv.last(addr); !again.After(first) {
		t.Errorf("last after a second PING = %v; want later than %v", again, first)
	}
	if _, ok := sv.last("127.0.0.1:1"); ok {
		t.Error("a node never dialled has a last reply")
	}
}

// TestPromotionCutEndsAtLastServed: on Sentinel, the cut a promotion makes ends at the former
// master's last answer to the load (or the promotion, when it answered none after it), not at
// its demotion seen seconds later, and stays open to the end without a tracker.
func TestPromotionCutEndsAtLastServed(t *testing.T) {
	start := time.Now()
	res := &load.Result{Start: start}
	r := &Recording{Log: &verify.AdmissionLog{Origin: 1_700_000_000_000_000}}
	promoted := faults.Event{Node: "n2", Kind: watch.EventPromoted, From: "n1", After: start.Add(time.Second), At: start.Add(1100 * time.Millisecond)}
	demoted := faults.Event{Node: "n1", Kind: watch.EventDemoted, After: start.Add(10 * time.Second), At: start.Add(10100 * time.Millisecond)}
	events := []faults.Event{promoted, demoted}
	us := func(d time.Duration) int64 { return r.Log.Origin + d.Microseconds() }
	slack := verify.MismatchSlack.Microseconds() + 1

	for _, tt := range []struct {
		name     string
		lastRead time.Duration // when n1 last answered; 0: never
		tracked  bool
		wantHi   int64
	}{
		{"answered after the promotion", 2 * time.Second, true, us(2*time.Second) + slack},
		{"answered none after it", 500 * time.Millisecond, true, us(1100*time.Millisecond) + slack},
		{"never answered", 0, true, us(1100*time.Millisecond) + slack},
		{"no tracker: the demotion ends it", 0, false, us(10100*time.Millisecond) + slack},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var sv *served
			if tt.tracked {
				sv = newServed(func(a string) string { return a })
				sv.base = start
				if tt.lastRead > 0 {
					sv.stamp("n1").Store(int64(tt.lastRead))
				}
			}
			cuts := verify.Cuts(r.disruptions(events, res, sv), 0)
			if len(cuts) != 1 {
				t.Fatalf("cuts %+v; want one", cuts)
			}
			if got := cuts[0].Hi; got != tt.wantHi {
				t.Errorf("the cut ends at %d; want %d", got-r.Log.Origin, tt.wantHi-r.Log.Origin)
			}
		})
	}
	// Without the demotion and without a tracker the promotion's cut never ends.
	if cuts := verify.Cuts(r.disruptions(events[:1], res, nil), 0); len(cuts) != 1 || cuts[0].Hi != math.MaxInt64 {
		t.Errorf("cuts %+v; want one to the end of the log", cuts)
	}
}
