package load_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/verify"
)

// nopLimiter decides without Redis, so a run measures the harness alone.
type nopLimiter struct{}

func (nopLimiter) Keys(algorithms.Request) []string { return nil }

func (nopLimiter) NewCall() algorithms.Call { return nopLimiter{} }

func (nopLimiter) Send(context.Context, redis.Cmdable, algorithms.Request) {}

func (nopLimiter) Result() (algorithms.Decision, error) {
	return algorithms.Decision{Allowed: true, TimeMicros: time.Now().UnixMicro(), Clock: algorithms.ClockServer}, nil
}

// BenchmarkRunOverhead is the harness's own cost per request (ns/op, allocs/op), closed loop,
// with and without recording, against a limiter that does not touch Redis.
func BenchmarkRunOverhead(b *testing.B) {
	for _, rec := range []bool{true, false} {
		name := "recording"
		if !rec {
			name = "no-recording"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var n uint64
			var busy time.Duration
			for b.Loop() {
				p := load.Plan{Arrival: load.ClosedLoop{}, Duration: 200 * time.Millisecond, Clients: 8, Keys: load.Keys{Count: 1000}}
				var sinks load.Sinks
				if rec {
					// What the runner records: histograms, timeline, admission log.
					sinks.Measured = []load.Aggregator{load.NewHistograms(0), load.NewTimeline(0, time.Second, p.Duration),
						verify.NewAdmissionLog(time.Time{}, true, nil, false)}
				}
				res, err := load.Run(context.Background(), nil, nopLimiter{}, p, sinks)
				if err != nil {
					b.Fatal(err)
				}
				n += res.Counts.Requests
				busy += res.Duration
			}
			// Harness time per request while the load ran (setup and merging excluded).
			b.ReportMetric(float64(busy.Nanoseconds())/float64(n), "ns/request")
		})
	}
}
