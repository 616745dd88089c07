package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

// fcallRounds is how many paired rounds one iteration of BenchmarkFCallVsEvalSha measures.
const fcallRounds = 10

// BenchmarkFCallVsEvalSha measures, for every built-in algorithm that runs a script (all but
// sliding-log-published, which sends plain commands), what one decision costs Redis when the
// script is called with EVALSHA and when the same Lua is called as a Redis Function with FCALL
// (algorithms.WithFunctions), on a single Redis at limit 100 per second, one client sending one
// request at a time:
//
//   - evalsha-µs/call and fcall-µs/call: Redis time per call from INFO commandstats (usec of
//     cmdstat_evalsha and cmdstat_fcall, which include the commands the script calls), the median
//     over the rounds;
//   - x-evalsha: fcall-µs/call divided by evalsha-µs/call of the same round, the median over the
//     rounds; the sub-benchmark also logs the line "x-evalsha <algorithm> = R (median of N paired
//     rounds, range [lo, hi])". Below 1 FCALL is cheaper.
//
// One round is benchRoundCalls calls with each path, the order alternating from round to round so
// that a drift of the machine's other load favours neither. Each batch resets INFO commandstats
// before it and reads it after.
//
//	go test ./bench -run '^$' -bench FCallVsEvalSha -benchtime 2x
func BenchmarkFCallVsEvalSha(b *testing.B) {
	env := redistest.Single(b)
	ctx := context.Background()
	c := env.Target.Client
	for i, a := range algorithms.All() {
		name := a.Describe().Name
		if name == "sliding-log-published" {
			continue
		}
		b.Run(name, func(b *testing.B) {
			prefix := fmt.Sprintf("%sf%02d:", env.Prefix, i)
			sha, err := a.Prepare(ctx, c, benchLimit, prefix+"e:")
			if err != nil {
				b.Fatal(err)
			}
			var fns algorithms.Functions
			defer func() {
				if err := fns.Delete(ctx); err != nil {
					b.Error(err)
				}
			}()
			fc, err := a.Prepare(algorithms.WithFunctions(ctx, &fns), c, benchLimit, prefix+"f:")
			if err != nil {
				b.Fatal(err)
			}
			if len(fns.Libraries()) != 1 {
				b.Fatalf("%s: %d function libraries loaded, want 1", name, len(fns.Libraries()))
			}
			var shaUS, fcUS []float64
			first := 0
			b.ResetTimer()
			for n := 0; n < b.N; n++ {
				for r := range fcallRounds {
					order := []algorithms.Limiter{sha, fc}
					if r%2 == 1 {
						order = []algorithms.Limiter{fc, sha}
					}
					for _, lim := range order {
						bt, err := measureBatch(ctx, c, nil, lim, first)
						if err != nil {
							b.Fatal(err)
						}
						us := bt.usec / benchRoundCalls
						if lim == sha {
							shaUS = append(shaUS, us)
						} else {
							fcUS = append(fcUS, us)
						}
					}
					first += benchRoundCalls
				}
			}
			b.StopTimer()
			x := ratios(fcUS, shaUS)
			if len(x) == 0 {
				b.Fatalf("%s: no round where EVALSHA took server time", name)
			}
			b.ReportMetric(median(shaUS), "evalsha-µs/call")
			b.ReportMetric(median(fcUS), "fcall-µs/call")
			b.ReportMetric(median(x), "x-evalsha")
			b.Logf("x-evalsha %s = %.3f (median of %d paired rounds, range [%.3f, %.3f])", name, median(x), len(x),
				slices.Min(x), slices.Max(x))
		})
	}
}
