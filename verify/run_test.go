package verify

import (
	"context"
	"testing"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

// TestRunLogVerifies runs real algorithms at twice their limit through Run and checks the
// admission log with the verifier: corrected algorithms show no definite violation (so the
// log's intervals are sound), and a published one with skewed clients is caught.
func TestRunLogVerifies(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	limit := algorithms.Limit{Limit: 40, Window: 500 * time.Millisecond}
	const subjects = 4
	rate := 2 * limit.RatePerSecond() * subjects
	skewed := load.Skew{Offsets: []time.Duration{-2 * time.Second, 2 * time.Second}}
	tests := []struct {
		algorithm string
		mode      load.Mode
		skew      load.Skew
		duration  time.Duration
		wantFlag  bool
	}{
		{"gcra", load.ModePipeline, skewed, 2 * time.Second, false},
		{"token-bucket", load.ModePlain, skewed, 2 * time.Second, false},
		{"sliding-log", load.ModeAutoPipeline, load.Skew{}, 2 * time.Second, false},
		// Its contract has a 1 s granularity: a longer run makes the excess definite.
		{"token-bucket-published", load.ModePlain, skewed, 4 * time.Second, true},
	}
	for _, tt := range tests {
		t.Run(tt.algorithm+"/"+string(tt.mode), func(t *testing.T) {
			alg, lim, contract, env := onRedis(t, tt.algorithm, limit)
			ctx := context.Background()
			c := newClient(env, 16)
			log := NewAdmissionLog(time.Time{}, env.Target.Info.SharedClock, nil, false)
			res, err := load.Run(ctx, c, lim, load.Plan{
				Arrival: load.Constant(rate), Duration: tt.duration, Clients: 16, Mode: tt.mode,
				Keys: load.Keys{Count: subjects}, Skew: tt.skew, Seed: 3,
			}, load.Sinks{Measured: []load.Aggregator{log}})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			rep, err := Check(contract, log.Log(res.Subjects, res.Clients))
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			t.Logf("%s: %+v; definite %d, possible %d, behind %v", tt.algorithm, res.Counts, rep.Definite(), rep.Possible(), res.Behind)
			if res.Counts.Allowed == 0 || (!tt.wantFlag && res.Counts.Denied == 0) {
				t.Errorf("want admissions and (for a correct limiter) denials at twice the limit: %+v", res.Counts)
			}
			if n := uint64(log.Len()); n != res.Counts.Requests {
				t.Errorf("log has %d events; want one per measured request (%d)", n, res.Counts.Requests)
			}
			decisions := res.Counts.Allowed + res.Counts.Denied
			if alg.Describe().Clock == algorithms.ClockServer && env.Target.Info.SharedClock && res.Counts.Narrowed != decisions {
				t.Errorf("Narrowed = %d; want every decision (%d)", res.Counts.Narrowed, decisions)
			}
			if got := rep.Definite() > 0; got != tt.wantFlag {
				t.Errorf("definite violations %d; want flagged = %v", rep.Definite(), tt.wantFlag)
			}
		})
	}
}

// onRedis looks the algorithm up and prepares it for limit on a redis-server of its own; it
// returns the algorithm, its limiter, its contract and the server.
func onRedis(t *testing.T, name string, limit algorithms.Limit) (algorithms.Algorithm, algorithms.Limiter, algorithms.Contract, *redistest.Env) {
	t.Helper()
	alg, err := algorithms.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	env := redistest.Single(t)
	lim, err := alg.Prepare(context.Background(), env.Target.Client, limit, env.Prefix)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	contract, err := alg.Contract(limit)
	if err != nil {
		t.Fatalf("Contract: %v", err)
	}
	return alg, lim, contract, env
}
