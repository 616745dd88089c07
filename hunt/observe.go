package hunt

import (
	"cmp"
	"fmt"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/verify"
)

// scored is one trial's measurement judged as the search judges it.
type scored struct {
	// Approach is the trial's score: the closest approach of the admissions to the contract
	// within one epoch of the history (between two losses of the limiter's state, verify.Cuts;
	// the whole history when nothing lost it). Only there is a violation the algorithm's: one
	// that reaches across a restart, failover or eviction is the loss's doing, as `limitbench
	// run` judges it.
	Approach verify.Approach
	// Report is verify.Check of the epoch the approach is in, when it is a violation (Score
	// above 1); the zero Report otherwise.
	Report verify.Report
	// Faults are what each fault the schedule placed did (verify.FaultReport: its window, the
	// permits it cost), nil without faults; Cost is the sum of their Excess: permits admitted
	// beyond the contract because a fault lost the state.
	Faults []verify.FaultReport
	Cost   int64
}

// judge scores the measurement m of a trial against c (see scored). report asks for the Check
// of a violating epoch. It reorders the events of m.Log, as verify.ApproachOf does.
func judge(c algorithms.Contract, m verify.Measurement, report bool) (scored, error) {
	var out scored
	if m.Log == nil {
		return out, fmt.Errorf("a trial measured no log")
	}
	cuts := verify.Cuts(m.Disruptions, m.Start)
	epochs := []*verify.Log{m.Log}
	if len(cuts) > 0 {
		// Split before ApproachOf reorders the events.
		if verify.HasFirstHit(c) {
			epochs, _ = verify.SplitAll(m.Log, cuts)
		} else {
			epochs, _ = verify.Split(m.Log, cuts)
		}
		// Only the first epoch starts where the log does; a later one may begin inside a
		// window its loss left open.
		epochs[0].Fresh = m.Log.Fresh
	}
	if len(m.Faults) > 0 {
		// Before the approach reorders the log: the fault judgement reads it in any order, but
		// the epochs share nothing with it.
		m.Contract = c
		sum, _ := m.Sections()
		out.Faults = sum.Faults
		for _, f := range sum.Faults {
			out.Cost += f.Excess
		}
	}
	best := -1
	for i, e := range epochs {
		if len(e.Events) == 0 {
			continue
		}
		ap, err := verify.ApproachOf(c, e)
		if err != nil {
			return out, err
		}
		if best < 0 || ap.Score > out.Approach.Score {
			best, out.Approach = i, ap
		}
	}
	if report && out.Approach.Score > 1 {
		rep, err := verify.Check(c, epochs[best])
		if err != nil {
			return out, err
		}
		out.Report = rep
	}
	return out, nil
}

// costOrder orders candidates by what their faults cost: more first, then earlier trial.
func costOrder(a, b *Candidate) int {
	if c := cmp.Compare(b.Cost, a.Cost); c != 0 {
		return c
	}
	return cmp.Compare(a.Trial, b.Trial)
}
