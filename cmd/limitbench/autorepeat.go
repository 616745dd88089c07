package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/limitbench/limitbench/gate"
	"github.com/limitbench/limitbench/internal/runner"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/scenarios"
)

// defaultRepeatBudget is --repeat-budget's default: the time each topology's rounds may take
// under --repeat auto.
const defaultRepeatBudget = 10 * time.Minute

// repeatFlag is --repeat: a number of rounds, or "auto" (gate.MinSamples rounds, then more
// until every gated figure can decide, see autoRepeat).
type repeatFlag struct {
	n    int
	auto bool
}

func (r *repeatFlag) String() string {
	if r.auto {
		return "auto"
	}
	return strconv.Itoa(r.n)
}

func (r *repeatFlag) Set(s string) error {
	if s == "auto" {
		r.n, r.auto = gate.MinSamples, true
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("want a number of rounds or auto, got %q", s)
	}
	r.n, r.auto = n, false
	return nil
}

// autoFlags are the flags of --repeat auto beside --repeat.
type autoFlags struct {
	budget   time.Duration
	baseline string
	policy   string
}

// autoRepeat runs the sequential procedure of --repeat auto for one scenario: a gate.Sequence
// per topology, its looks said on log and recorded for result.json.
type autoRepeat struct {
	flags    autoFlags
	baseline *result.Result
	policy   gate.Policy
	seqs     map[string]*gate.Sequence
	looks    []result.SequentialTopology
	err      error
	logf     func(format string, args ...any)
}

// newAutoRepeat checks the flags of --repeat auto against scenario s: the baseline is readable
// and ran s, the thresholds parse. Every error is bad input.
func newAutoRepeat(f autoFlags, s *scenarios.Scenario, logf func(string, ...any)) (*autoRepeat, error) {
	a := &autoRepeat{flags: f, seqs: map[string]*gate.Sequence{}, logf: logf, policy: gate.DefaultPolicy()}
	if f.budget <= 0 {
		return nil, fmt.Errorf("--repeat-budget must be positive, got %v", f.budget)
	}
	if f.policy != "" {
		th, err := gate.ParseThresholds(f.policy)
		if err != nil {
			return nil, fmt.Errorf("--metric-threshold: %w", err)
		}
		a.policy.Thresholds = th
	}
	if f.baseline != "" {
		b, err := result.Read(resultPath(f.baseline))
		if err != nil {
			return nil, fmt.Errorf("--baseline: %w", err)
		}
		if b.Scenario.Name != s.Name {
			return nil, fmt.Errorf("--baseline %s ran scenario %q, not %q", f.baseline, b.Scenario.Name, s.Name)
		}
		a.baseline = b
	}
	return a, nil
}

// more is runner.Options.More: it looks at the rounds of r's topology and says whether to run
// another.
func (a *autoRepeat) more(r runner.Rounds) bool {
	seq := a.seqs[r.Topology]
	if seq == nil {
		seq = &gate.Sequence{Budget: a.flags.budget, Baseline: a.baseline, Policy: a.policy}
		a.seqs[r.Topology] = seq
	}
	look, stop, err := seq.Look(r.Result, r.Topology, r.Done, r.Elapsed, r.Last)
	a.record(look)
	switch {
	case err != nil:
		a.err = fmt.Errorf("--repeat auto on %s: %w", r.Topology, err)
		a.logf("auto: %s after %d rounds: cannot judge the rounds (%v); stopping", r.Topology, r.Done, err)
	case look.Decided:
		a.logf("auto: %s after %d rounds: every gated figure can decide at its threshold (level %.2g); stopping", r.Topology, r.Done, look.Level)
	case stop:
		a.logf("auto: %s after %d rounds: the budget %v is spent before %s could decide; stopping", r.Topology, r.Done, a.flags.budget, strings.Join(look.Undecided, ", "))
	default:
		a.logf("auto: %s after %d rounds: %s cannot decide yet; another round", r.Topology, r.Done, strings.Join(look.Undecided, ", "))
	}
	return !stop
}

// record keeps the last look of each topology.
func (a *autoRepeat) record(look result.SequentialTopology) {
	for i := range a.looks {
		if a.looks[i].Topology == look.Topology {
			a.looks[i] = look
			return
		}
	}
	a.looks = append(a.looks, look)
}

// sequential is what result.json records of the procedure; nil when no look was made.
func (a *autoRepeat) sequential() *result.Sequential {
	if len(a.looks) == 0 {
		return nil
	}
	return &result.Sequential{Rule: gate.SequentialRule, Alpha: gate.Alpha, BudgetS: a.flags.budget.Seconds(),
		Baseline: a.flags.baseline, Topologies: a.looks}
}

// summary writes one line per topology: whether every gated figure could decide, or which could
// not within the budget.
func (a *autoRepeat) summary(w io.Writer) {
	for _, l := range a.looks {
		if l.Decided {
			fmt.Fprintf(w, "repeat auto: %s: every gated figure can decide at its threshold after %d rounds (%.0fs)\n", l.Topology, l.Rounds, l.ElapsedS)
			continue
		}
		fmt.Fprintf(w, "repeat auto: %s: budget %v spent after %d rounds; could not decide: %s\n", l.Topology, a.flags.budget, l.Rounds, strings.Join(l.Undecided, ", "))
	}
}

// autoRepeats returns the procedure of --repeat auto of each scenario of loaded, or every
// problem with its flags (bad input).
func autoRepeats(f autoFlags, loaded []*scenarios.Scenario) ([]*autoRepeat, []error) {
	if f.baseline != "" && len(loaded) > 1 {
		return nil, []error{errors.New("--baseline is the baseline of one scenario: give one scenario with it")}
	}
	var autos []*autoRepeat
	var problems []error
	for _, s := range loaded {
		a, err := newAutoRepeat(f, s, func(string, ...any) {})
		if err != nil {
			problems = append(problems, err)
		}
		autos = append(autos, a)
	}
	return autos, problems
}
