package main

import (
	"errors"
	"flag"
	"fmt"
	"testing"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/measure"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/scenarios"
)

// TestExitCode: every sentinel the commands return maps to the exit code DESIGN.md fixes, wrapped
// or not; an interrupted run is 1 whatever else it wraps; an unmarked error is 1.
func TestExitCode(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("run demo: %w", err) }
	for _, tt := range []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, exitOK},
		{"help", flag.ErrHelp, exitOK},
		{"bad flag", badInput(errors.New("--repeat must be >= 1")), exitBadInput},
		{"bad scenario", wrap(scenarios.ErrInvalid), exitBadInput},
		{"bad script", wrap(measure.ErrBadScript), exitBadInput},
		{"bad environment config", wrap(redisenv.ErrBadConfig), exitBadInput},
		{"unknown algorithm", wrap(algorithms.ErrUnknownAlgorithm), exitBadInput},
		{"load out of bounds", measure.Mark(fmt.Errorf("run gcra: %w", load.ErrBadPlan)), exitBadInput},
		{"failed verdicts", failed(errors.New("2 problem(s)")), exitFailed},
		{"interrupted", wrap(measure.ErrInterrupted), exitFailed},
		{"interrupted while starting", fmt.Errorf("%w: %w", measure.ErrInterrupted, redisenv.ErrUnavailable), exitFailed},
		{"no environment", wrap(redisenv.ErrUnavailable), exitEnv},
		{"lost", wrap(measure.ErrLost), exitEnv},
		{"redis failed a step", measure.Mark(errors.New("prepare gcra: WRONGTYPE")), exitEnv},
		{"env command", envFailure(errors.New("environment lost")), exitEnv},
		{"write error", errors.New("write results: disk full"), exitFailed},
	} {
		if got := exitCode(tt.err); got != tt.want {
			t.Errorf("%s: exitCode(%v) = %d; want %d", tt.name, tt.err, got, tt.want)
		}
	}
}

// TestMark: an error of no sentinel is marked ErrRedis with its own message; one of measure's
// sentinels is returned as it is.
func TestMark(t *testing.T) {
	plain := errors.New("prepare gcra: WRONGTYPE")
	if got := measure.Mark(plain); !errors.Is(got, measure.ErrRedis) || !errors.Is(got, plain) || got.Error() != plain.Error() {
		t.Errorf("Mark(%v) = %v; want it marked ErrRedis with the same message", plain, got)
	}
	lost := fmt.Errorf("%w: after gcra", measure.ErrLost)
	if got := measure.Mark(lost); got != lost {
		t.Errorf("Mark(%v) = %v; want it unchanged", lost, got)
	}
	if measure.Mark(nil) != nil {
		t.Error("Mark(nil) != nil")
	}
}
