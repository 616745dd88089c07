package runner

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/scenarios"
)

// TestRepeatInterleaves: with Repeat 2 the runner measures round by round, A B C A B C (the
// reference first in each round), and every entry keeps one sample per repeat.
func TestRepeatInterleaves(t *testing.T) {
	needRedis(t)
	s := scenarioOf(t, redisenv.TopologySingle, []string{"gcra", "sliding-log"}, func(s *scenarios.Scenario) {
		s.Duration, s.Warmup = 400*time.Millisecond, 0
		s.Clients = 2
		s.Arrival = &arrival.Arrival{Rate: 100}
	})
	var mu sync.Mutex
	var order []string
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := Run(ctx, Options{
		Scenario: s, Env: redisenv.Config{Backend: redisenv.BackendProcess}, Repeat: 2,
		Done: func(e *result.Entry, repeat int) {
			mu.Lock()
			defer mu.Unlock()
			order = append(order, fmt.Sprintf("%s#%d", e.Algorithm, repeat))
		},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	ref := algorithms.ReferenceName
	want := []string{ref + "#1", "gcra#1", "sliding-log#1", ref + "#2", "gcra#2", "sliding-log#2"}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("measurement order (-want +got):\n%s", diff)
	}
	if len(out.Result.Entries) != 3 {
		t.Fatalf("%d entries; want 3 (reference, gcra, sliding-log)", len(out.Result.Entries))
	}
	for _, e := range out.Result.Entries {
		var repeats []int
		for _, smp := range e.Samples {
			repeats = append(repeats, smp.Repeat)
			if smp.ThroughputRPS <= 0 {
				t.Errorf("%s repeat %d: throughput %g; want a measured sample", e.Name(), smp.Repeat, smp.ThroughputRPS)
			}
		}
		if !cmp.Equal(repeats, []int{1, 2}) {
			t.Errorf("%s: samples for repeats %v; want [1 2]", e.Name(), repeats)
		}
	}
}

// TestRepeatMore: after the Repeat-th round More is asked, round by round, with the rounds so far
// merged (every algorithm's repeats as samples, related to the reference); the rounds go on
// while it says so.
func TestRepeatMore(t *testing.T) {
	needRedis(t)
	s := scenarioOf(t, redisenv.TopologySingle, []string{"gcra"}, func(s *scenarios.Scenario) {
		s.Duration, s.Warmup = 200*time.Millisecond, 0
		s.Clients = 2
		s.Arrival = &arrival.Arrival{Rate: 100}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var asked []Rounds
	out, err := Run(ctx, Options{
		Scenario: s, Env: redisenv.Config{Backend: redisenv.BackendProcess}, Repeat: 2,
		More: func(r Rounds) bool {
			asked = append(asked, r)
			return r.Done < 3
		},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(asked) != 2 || asked[0].Done != 2 || asked[1].Done != 3 {
		t.Fatalf("More asked %d times; want after rounds 2 and 3", len(asked))
	}
	for i, r := range asked {
		// Last is one round's time, not the rounds' so far (a bug once made it all of them).
		if r.Topology != "single" || r.Last <= 0 || r.Last >= r.Elapsed {
			t.Errorf("asked %d: topology %q, elapsed %v, last round %v", i, r.Topology, r.Elapsed, r.Last)
		}
		gcra := r.Result.Entry("gcra", "single")
		if gcra == nil || len(gcra.Samples) != r.Done || gcra.Relative == nil {
			t.Errorf("asked %d: gcra so far %+v; want %d samples, related to the reference", i, gcra, r.Done)
		}
	}
	for _, e := range out.Result.Entries {
		if len(e.Samples) != 3 {
			t.Errorf("%s: %d samples; want 3 rounds", e.Name(), len(e.Samples))
		}
	}
}
