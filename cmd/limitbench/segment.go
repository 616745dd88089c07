package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/limitbench/limitbench/internal/segment"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/scenarios"
)

// segmentFlags are the flags of `limitbench run` that make it one segment of a segmented run.
type segmentFlags struct {
	segment     string
	segments    int
	runID       string
	startAt     string
	lead        time.Duration
	clockOffset time.Duration
}

// indexEnv is the environment variable --segments takes the segment from: a Kubernetes Indexed
// Job sets it in each pod.
const indexEnv = "JOB_COMPLETION_INDEX"

func (f *segmentFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.segment, "segment", "", "run segment I/N of the load (0 <= I < N): its share of the schedule, disjoint from the others'; `limitbench merge` joins the N results")
	fs.IntVar(&f.segments, "segments", 0, "run one of N segments, the segment number taken from $"+indexEnv+" (a Kubernetes Indexed Job's)")
	fs.StringVar(&f.runID, "run-id", "", "the id every segment of one run shares (letters, digits, . _ -; default from the scenario's hash and seed): use a new one for each run")
	fs.StringVar(&f.startAt, "start-at", "", "segments: start the first measurement at this RFC 3339 time (ahead of now, at most 24 hours ahead) instead of at the barrier in Redis")
	fs.DurationVar(&f.lead, "lead", segment.DefaultLead, "segments: how long after the first generator reaches a barrier the load starts")
	fs.DurationVar(&f.clockOffset, "test-clock-offset", 0, "segments, for testing only: move this generator's clock by this much")
}

// MaxStartAhead bounds how far ahead of now --start-at may be: a day, more than any scheduled
// job waits for its pods, and less than a typo in the date (a year off) makes a generator wait.
const MaxStartAhead = 24 * time.Hour

// checkStartAt refuses a --start-at that is not ahead of now (the first measurement would send
// its whole past share of the schedule at once, late) or more than MaxStartAhead ahead (the
// generator would wait until killed).
func checkStartAt(at, now time.Time) error {
	switch {
	case !at.After(now):
		return fmt.Errorf("--start-at %s is in the past: the first measurement would start late and send its overdue ticks at once; give a time ahead (at most %.0f hours), or leave --start-at out to start at the barrier",
			at.UTC().Format(time.RFC3339Nano), MaxStartAhead.Hours())
	case at.Sub(now) > MaxStartAhead:
		return fmt.Errorf("--start-at %s is more than %.0f hours ahead: the generator would wait that long; give a time within %.0f hours of now",
			at.UTC().Format(time.RFC3339Nano), MaxStartAhead.Hours(), MaxStartAhead.Hours())
	}
	return nil
}

// mergeable refuses, before anything starts, a segmented run of s that limitbench merge would
// refuse at the end: a custom script's entry (merge verifies built-in algorithms only). The
// error names the entry's file, line and field.
func mergeable(s *scenarios.Scenario) error {
	var lines []string
	for i, e := range s.Algorithms {
		if e.Custom != nil {
			lines = append(lines, s.ProblemAt(fmt.Sprintf("algorithms[%d]", i), fmt.Sprintf(
				"%s is a custom script, and limitbench merge verifies built-in algorithms only (custom scripts are not merged yet): run it without --segment, or leave it out with --algorithms",
				e.Name)).String())
		}
	}
	if len(lines) > 0 {
		return errors.New(strings.Join(lines, "\n"))
	}
	return nil
}

var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// config returns the segment the flags set, nil when none; set says which flags were given.
// Errors are bad input.
func (f *segmentFlags) config(set map[string]bool, loaded []*scenarios.Scenario, repeat int) (*segment.Segment, error) {
	var g *segment.Segment
	var err error
	switch {
	case set["segment"] && set["segments"]:
		return nil, errors.New("--segment and --segments: give one (--segments takes the segment from $" + indexEnv + ")")
	case set["segment"]:
		if g, err = segment.Parse(f.segment); err != nil {
			return nil, fmt.Errorf("--segment: %w", err)
		}
	case set["segments"]:
		if f.segments < 1 || f.segments > segment.MaxCount {
			return nil, fmt.Errorf("--segments must be in [1, %d], got %d", segment.MaxCount, f.segments)
		}
		v, ok := os.LookupEnv(indexEnv)
		if !ok {
			return nil, fmt.Errorf("--segments %d: $%s is not set (or give --segment I/N)", f.segments, indexEnv)
		}
		i, err := strconv.Atoi(v)
		if err != nil || i < 0 || i >= f.segments {
			return nil, fmt.Errorf("--segments %d: $%s is %q; want a whole number in [0, %d]", f.segments, indexEnv, v, f.segments-1)
		}
		g = &segment.Segment{Index: i, Count: f.segments}
	default:
		for _, name := range []string{"run-id", "start-at", "lead", "test-clock-offset"} {
			if set[name] {
				return nil, fmt.Errorf("--%s applies to a segmented run only (--segment or --segments)", name)
			}
		}
		return nil, nil
	}
	if len(loaded) != 1 {
		return nil, fmt.Errorf("a segmented run runs one scenario, got %d", len(loaded))
	}
	if repeat != 1 {
		return nil, fmt.Errorf("--repeat %d: a segmented run measures each algorithm once; repeat the whole run instead", repeat)
	}
	if err := mergeable(loaded[0]); err != nil {
		return nil, err
	}
	if err := g.Check(loaded[0].Plan()); err != nil {
		return nil, fmt.Errorf("%s: %w", loaded[0].File, err)
	}
	if f.lead <= 0 {
		return nil, fmt.Errorf("--lead must be > 0, got %s", f.lead)
	}
	g.RunID, g.Lead, g.ClockOffset = f.runID, f.lead, f.clockOffset
	if f.startAt != "" {
		if g.StartAt, err = time.Parse(time.RFC3339Nano, f.startAt); err != nil {
			return nil, fmt.Errorf("--start-at %q: want an RFC 3339 time such as 2026-11-24T22:00:00Z", f.startAt)
		}
		if err := checkStartAt(g.StartAt, time.Now()); err != nil {
			return nil, err
		}
	}
	if g.RunID == "" {
		g.RunID = segment.DefaultRunID(result.ScenarioHash(loaded[0].Describe("")))
	} else if !runIDPattern.MatchString(g.RunID) {
		return nil, fmt.Errorf("--run-id %q: want 1 to 64 letters, digits, '.', '_' or '-'", g.RunID)
	}
	return g, nil
}
