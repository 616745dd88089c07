package load_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/load"
)

// Run one prepared limiter at 2,000 requests per second in total (not per client) from 64
// clients, 20 % of the requests on one hot subject, for 10 s after a 2 s warmup.
func ExampleRun() {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:7000", PoolSize: 64, MaxRetries: -1})
	alg, _ := algorithms.Lookup("gcra")
	lim, err := alg.Prepare(ctx, c, algorithms.Limit{Limit: 100, Window: time.Second}, "example:")
	if err != nil {
		fmt.Println(err)
		return
	}
	// The latency histograms are the one aggregator this run feeds; each worker shard gets its
	// own, merged into hist at the end.
	hist := load.NewHistograms(0)
	res, err := load.Run(ctx, c, lim, load.Plan{
		Arrival:  load.Constant(2000),
		Warmup:   2 * time.Second,
		Duration: 10 * time.Second,
		Clients:  64,
		Keys:     load.Keys{Count: 100, Distribution: load.Hot, HotShare: 0.2},
		Seed:     1,
	}, load.Sinks{Measured: []load.Aggregator{hist}})
	if err != nil {
		fmt.Println(err)
		return
	}
	lat := hist.Latency()
	fmt.Printf("%.0f/s offered, %d allowed, p99 %d µs, behind schedule: %v\n",
		res.OfferedRate, res.Counts.Allowed, lat.ValueAtQuantile(99), res.Behind)
}
