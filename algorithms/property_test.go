package algorithms

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

// redesignedNames are the algorithms whose scripts TestScriptsAgreeWithModels checks.
var redesignedNames = []string{"sliding-log", "resource-consumer", "fixed-window", "sliding-counter", "token-bucket", "gcra"}

// TestScriptsAgreeWithModels is a property test against real Redis, single and cluster: for any
// small limit and any sequence of requests (a few subjects and clients, gaps from 0 to 1.5 W,
// costs from 1 to L + 1, so costs that fill the limit exactly and costs that never fit), each
// script, given the times as fixed times in one pipeline, decides as its reference model does on
// the decision times it returned, and every decision reports the time it was given.
func TestScriptsAgreeWithModels(t *testing.T) {
	var seq atomic.Int64
	for _, name := range redesignedNames {
		a := lookup(t, name)
		t.Run(name, func(t *testing.T) {
			topologies(t, func(t *testing.T, env *redistest.Env) {
				rapid.Check(t, func(rt *rapid.T) {
					l := Limit{
						Limit:         rapid.Int64Range(1, 6).Draw(rt, "limit"),
						Window:        time.Duration(rapid.Int64Range(1, 50).Draw(rt, "window_ms")) * time.Millisecond,
						Burst:         rapid.Int64Range(0, 6).Draw(rt, "burst"),
						ConsumerLimit: rapid.Int64Range(0, 6).Draw(rt, "consumer_limit"),
					}
					lim, err := a.Prepare(context.Background(), env.Target.Client, l, fmt.Sprintf("%sp%d:", env.Prefix, seq.Add(1)))
					if err != nil {
						rt.Fatalf("Prepare(%+v): %v", l, err)
					}
					m := a.Model(l)
					w := l.Window.Microseconds()
					now := base.UnixMicro()
					type sent struct {
						req  Request
						pend Pending
					}
					var batch []sent
					p := env.Target.Client.Pipeline()
					for i, n := 0, rapid.IntRange(1, 60).Draw(rt, "requests"); i < n; i++ {
						now += rapid.Int64Range(0, w*3/2).Draw(rt, "gap_us")
						req := Request{
							Subject:   rapid.SampledFrom([]string{"a", "b"}).Draw(rt, "subject"),
							Client:    rapid.SampledFrom([]string{"c1", "c2"}).Draw(rt, "client"),
							Cost:      rapid.Int64Range(1, l.Limit+1).Draw(rt, "cost"),
							FixedTime: time.UnixMicro(now),
						}
						batch = append(batch, sent{req, Do(context.Background(), lim, p, req)})
					}
					if _, err := p.Exec(context.Background()); err != nil {
						rt.Fatalf("Exec: %v", err)
					}
					for i, s := range batch {
						d, err := s.pend()
						if err != nil {
							rt.Fatalf("request %d %+v: %v", i, s.req, err)
						}
						if want := s.req.FixedTime.UnixMicro(); d.TimeMicros != want {
							rt.Fatalf("request %d: decision time %d, want the fixed time %d", i, d.TimeMicros, want)
						}
						if want := m.Decide(s.req.Subject, s.req.Client, s.req.Cost, d.TimeMicros); d.Allowed != want {
							rt.Fatalf("limit %+v request %d (%s/%s, cost %d, t=%d): script allowed=%v, model %v",
								l, i, s.req.Subject, s.req.Client, s.req.Cost, d.TimeMicros, d.Allowed, want)
						}
					}
				})
			})
		})
	}
}
