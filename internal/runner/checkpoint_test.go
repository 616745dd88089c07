package runner

import (
	"context"
	"testing"
	"time"

	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/scenarios"
)

// TestCheckpointAfterEachMeasurement: Checkpoint sees, after each measurement, the result so far
// (one entry more each time, repeats merged), marked cut short as a checkpoint, and never the
// runner's own Result: the final result is not cut short.
func TestCheckpointAfterEachMeasurement(t *testing.T) {
	needRedis(t)
	s := scenarioOf(t, redisenv.TopologySingle, []string{"gcra", "sliding-log"}, func(s *scenarios.Scenario) {
		s.Duration, s.Warmup = 300*time.Millisecond, 0
		s.Clients = 2
		s.Arrival = &arrival.Arrival{Rate: 100}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var seen []*result.Result
	out, err := Run(ctx, Options{Scenario: s, Env: redisenv.Config{Backend: redisenv.BackendProcess}, NoReference: true,
		Checkpoint: func(r *result.Result) { seen = append(seen, r) }})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(seen) != 2 {
		t.Fatalf("%d checkpoints; want one after each of 2 measurements", len(seen))
	}
	for i, r := range seen {
		if len(r.Entries) != i+1 || !r.CutShort || r.CutShortNote == "" {
			t.Errorf("checkpoint %d: %d entries, cut short %v (%q); want %d entries, cut short", i, len(r.Entries), r.CutShort,
				r.CutShortNote, i+1)
		}
		if r == out.Result {
			t.Errorf("checkpoint %d is the runner's own result", i)
		}
	}
	if out.Result.CutShort || len(out.Result.Entries) != 2 {
		t.Errorf("final result: cut short %v, %d entries; want a whole run of 2", out.Result.CutShort, len(out.Result.Entries))
	}
	if err := seen[1].Validate(); err != nil {
		t.Errorf("the last checkpoint does not validate: %v", err)
	}
}
