package load

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
)

// nopLimiter decides without Redis, so a run measures the harness alone.
type nopLimiter struct{}

func (nopLimiter) Keys(algorithms.Request) []string { return nil }

func (nopLimiter) Do(context.Context, redis.Cmdable, algorithms.Request) algorithms.Pending {
	return func() (algorithms.Decision, error) {
		return algorithms.Decision{Allowed: true, TimeMicros: time.Now().UnixMicro(), Clock: algorithms.ClockServer}, nil
	}
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
				res, err := Run(context.Background(), nil, nopLimiter{}, Plan{Arrival: ClosedLoop{}, Duration: 200 * time.Millisecond, Clients: 8, Keys: Keys{Count: 1000}, NoRecording: !rec, SharedClock: true})
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
