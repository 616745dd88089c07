package runner

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/scenarios"
	"github.com/limitbench/limitbench/verify"
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

// TestCheckpointDuringMeasurement: with CheckpointEvery, Checkpoint also sees each measurement
// while it runs: the measurements finished and, marked in progress, the one under way, each
// checkpoint valid, cut short as a checkpoint, never a pass for the entry under way; the calls
// never overlap, and the final result has no entry in progress. With repeats, a measurement whose
// algorithm has finished repeats is left out, and the note says so.
func TestCheckpointDuringMeasurement(t *testing.T) {
	needRedis(t)
	run := func(t *testing.T, names []string, repeat int) []*result.Result {
		s := scenarioOf(t, redisenv.TopologySingle, names, func(s *scenarios.Scenario) {
			s.Duration, s.Warmup = 1200*time.Millisecond, 200*time.Millisecond
			s.Clients = 2
			s.Arrival = &arrival.Arrival{Rate: 200}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var mu sync.Mutex
		busy := false
		var seen []*result.Result
		out, err := Run(ctx, Options{Scenario: s, Env: redisenv.Config{Backend: redisenv.BackendProcess}, NoReference: true,
			Repeat: repeat, CheckpointEvery: 250 * time.Millisecond,
			Checkpoint: func(r *result.Result) {
				mu.Lock()
				if busy {
					t.Error("Checkpoint called while another call was under way")
				}
				busy = true
				mu.Unlock()
				time.Sleep(5 * time.Millisecond) // a write takes a while
				mu.Lock()
				seen = append(seen, r)
				busy = false
				mu.Unlock()
			}})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		for _, e := range out.Result.Entries {
			if e.InProgress {
				t.Errorf("final result: %s is in progress", e.Name())
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for i, r := range seen {
			if err := r.Validate(); err != nil {
				t.Errorf("checkpoint %d does not validate: %v", i, err)
			}
			if !r.CutShort || !strings.HasPrefix(r.CutShortNote, "checkpoint: ") {
				t.Errorf("checkpoint %d: cut short %v, note %q; want cut short as a checkpoint", i, r.CutShort, r.CutShortNote)
			}
		}
		return seen
	}
	t.Run("algorithms", func(t *testing.T) {
		seen := run(t, []string{"gcra", "sliding-log"}, 1)
		// Each checkpoint's entries, one word each: the algorithm, + when in progress.
		var shapes []string
		for i, r := range seen {
			var words []string
			for _, e := range r.Entries {
				w := e.Algorithm
				if e.InProgress {
					w += "+"
					if e.Verification.Verdict == verify.Pass {
						t.Errorf("checkpoint %d: %s in progress passes", i, e.Name())
					}
					if !strings.Contains(r.CutShortNote, "in_progress") {
						t.Errorf("checkpoint %d: note %q does not mention the entry in progress", i, r.CutShortNote)
					}
				}
				words = append(words, w)
			}
			shapes = append(shapes, strings.Join(words, " "))
		}
		t.Logf("checkpoints: %q; the first's note: %s", shapes, seen[0].CutShortNote)
		for _, want := range []string{"gcra+", "gcra", "gcra sliding-log+", "gcra sliding-log"} {
			if !slices.Contains(shapes, want) {
				t.Errorf("checkpoints %q; want one of entries %q", shapes, want)
			}
		}
		for i, sh := range shapes {
			if strings.Count(sh, "+") > 1 {
				t.Errorf("checkpoint %d: %q has more than one entry in progress", i, sh)
			}
		}
	})
	t.Run("repeats", func(t *testing.T) {
		seen := run(t, []string{"gcra"}, 2)
		leftOut := false
		for _, r := range seen {
			if len(r.Entries) == 1 && !r.Entries[0].InProgress && strings.Contains(r.CutShortNote, "repeat 2 of gcra on single was under way") {
				leftOut = true
			}
		}
		if !leftOut {
			t.Errorf("no checkpoint during repeat 2 says it was left out")
		}
	})
}
