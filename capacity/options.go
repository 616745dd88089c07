package capacity

import (
	"fmt"
	"strings"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/cpus"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/measure"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/scenarios"
)

// Scenario returns the default load of `limitbench capacity`: the saturation scenario's
// clients, keys and limit (32 plain clients, 1,000 uniform subjects, 1,000 permits per second
// each, seed 1), without an arrival (each step sets its own constant rate). Its algorithms are
// the default ("all"); the sweep runs the one Options names.
func Scenario() *scenarios.Scenario {
	s := scenarios.Default()
	s.Name = "capacity"
	s.Description = "The saturation scenario's clients, keys and limit, driven open loop at a constant " +
		"rate per step: 32 plain clients over 1,000 uniform subjects, limit 1,000 per second each."
	s.Clients = 32
	s.Keys = load.Keys{Count: 1000, Distribution: load.Uniform}
	s.Limit = algorithms.Limit{Limit: 1000, Window: time.Second}
	s.Seed = 1
	return s
}

// Options configure Run. Scenario and Algorithm are required.
type Options struct {
	// Scenario is the load of every step (clients, client mode, keys, limit, cost, seed, skew);
	// its arrival, duration and warmup are replaced by each step's. Scenario() is the default
	// load.
	Scenario *scenarios.Scenario
	// Algorithm names the algorithm: a built-in one or a custom entry of Scenario.
	Algorithm string
	// SLO, when set, is the objective a step must meet to be good, such as "p99 < 2ms"; any
	// metric of a threshold may be used. Nil: only the throughput criterion applies.
	SLO *scenarios.Threshold
	// Env is the environment, started once for the whole sweep. An empty Topology takes the
	// scenario's first.
	Env redisenv.Config
	// Step is the measured length of each step (default 2 s); Warmup the warmup before it
	// (default Step/4, at most 1 s).
	Step, Warmup time.Duration
	// MemorySubjects is the number of subjects the memory step touches (default 10,000; fewer
	// when each needs many requests to reach its limit, see Run). Negative skips it.
	MemorySubjects int
	// MaxSteps bounds the open-loop steps (default 24).
	MaxSteps int
	// CPUs is where the command placed the load generator (cpus.Apply): the CPUs to pin the
	// local Redis servers to (none: Redis is not pinned, and NotPinned says why), the CPUs the
	// generator runs on, and whether the CPUs are held out of deep idle states. The sweep pins
	// the servers it starts; it never changes this process's CPUs or GOMAXPROCS.
	CPUs cpus.State
	// OnStep, when set, is called after each step.
	OnStep func(Step)
	// Logf, when set, receives one line per notable step.
	Logf func(format string, args ...any)
}

func (o *Options) defaults() {
	if o.Step <= 0 {
		o.Step = DefaultStep
	}
	if o.Warmup <= 0 {
		o.Warmup = min(o.Step/4, time.Second)
	}
	if o.MemorySubjects == 0 {
		o.MemorySubjects = DefaultMemorySubjects
	}
	if o.MaxSteps <= 0 {
		o.MaxSteps = DefaultMaxSteps
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
}

// DefaultSLO is the objective of `limitbench capacity` when none is given.
const DefaultSLO = "p99 < 2ms"

// ParseSLO parses the objective of a sweep of algorithm: a threshold such as "p99 < 2ms" (one
// naming an algorithm must name this one), or "none" for the throughput criterion alone (nil).
//
// The sweep looks for the highest rate that keeps the objective, so the objective must be one
// that a rising rate makes harder to keep: an upper bound (< or <=) on a latency or on errors,
// or a bound on efficiency. A lower bound on a latency or errors ("p99 > 2ms": the comparison
// backwards), any bound on throughput (what the sweep measures), and an objective no
// measurement can keep ("p99 < 0ms", see scenarios.Threshold.Unmeetable) are refused, so that
// a sweep never runs to a foregone "no rate met the objective".
func ParseSLO(text, algorithm string) (*scenarios.Threshold, error) {
	if strings.TrimSpace(text) == "none" {
		return nil, nil
	}
	th, err := scenarios.ParseThreshold(text)
	if err != nil {
		return nil, err
	}
	upper := th.Op == scenarios.Less || th.Op == scenarios.LessEqual
	switch {
	case th.Algorithm != "" && th.Algorithm != algorithm:
		return nil, fmt.Errorf("%q names algorithm %s, but the sweep sizes %s", text, th.Algorithm, algorithm)
	case th.Metric == result.Throughput:
		return nil, fmt.Errorf("%q bounds throughput, which the sweep itself measures; bound a latency, errors or efficiency, or use none", text)
	case (th.Metric.IsLatency() || th.Metric == result.ErrorRate) && !upper:
		return nil, fmt.Errorf("%q has the comparison backwards: %s grows with the rate, and the sweep looks for the highest rate that keeps it below a bound; write %s < or <=",
			text, th.Metric, th.Metric)
	}
	if err := th.Unmeetable(); err != nil {
		return nil, err
	}
	return &th, nil
}

// Algorithm resolves name among the scenario's custom entries and the built-in algorithms.
func Algorithm(s *scenarios.Scenario, name string) (algorithms.Algorithm, error) {
	for _, e := range s.Algorithms {
		if e.Custom != nil && e.Name == name {
			return measure.Resolve(s, e)
		}
	}
	return algorithms.Lookup(name)
}
