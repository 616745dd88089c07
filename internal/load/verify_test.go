package load

import (
	"context"
	"testing"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
	"github.com/limitbench/limitbench/internal/verify"
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
	skewed := Skew{Offsets: []time.Duration{-2 * time.Second, 2 * time.Second}}
	tests := []struct {
		algorithm string
		mode      Mode
		skew      Skew
		duration  time.Duration
		wantFlag  bool
	}{
		{"gcra", ModePipeline, skewed, 2 * time.Second, false},
		{"token-bucket", ModePlain, skewed, 2 * time.Second, false},
		{"sliding-log", ModeAutoPipeline, Skew{}, 2 * time.Second, false},
		// Its contract has a 1 s granularity: a longer run makes the excess definite.
		{"token-bucket-published", ModePlain, skewed, 4 * time.Second, true},
	}
	for _, tt := range tests {
		t.Run(tt.algorithm+"/"+string(tt.mode), func(t *testing.T) {
			alg, err := algorithms.Lookup(tt.algorithm)
			if err != nil {
				t.Skipf("algorithm not registered yet: %v", err)
			}
			env := redistest.Single(t)
			ctx := context.Background()
			lim, err := alg.Prepare(ctx, env.Target.Client, limit, env.Prefix)
			if err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			contract, err := alg.Contract(limit)
			if err != nil {
				t.Fatalf("Contract: %v", err)
			}
			c := newClient(env, 16)
			res, rec, err := recorded(ctx, c, lim, Plan{
				Arrival: Constant(rate), Duration: tt.duration, Clients: 16, Mode: tt.mode,
				Keys: Keys{Count: subjects}, Skew: tt.skew, Seed: 3, SharedClock: env.Target.Info.SharedClock,
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			rep, err := verify.Check(contract, rec.log.Log(res.Subjects, res.Clients))
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			t.Logf("%s: %+v; definite %d, possible %d, behind %v", tt.algorithm, res.Counts, rep.Definite(), rep.Possible(), res.Behind)
			if res.Counts.Allowed == 0 || (!tt.wantFlag && res.Counts.Denied == 0) {
				t.Errorf("want admissions and (for a correct limiter) denials at twice the limit: %+v", res.Counts)
			}
			if got := rep.Definite() > 0; got != tt.wantFlag {
				t.Errorf("definite violations %d; want flagged = %v", rep.Definite(), tt.wantFlag)
			}
		})
	}
}
