package verify

import (
	"slices"
	"strings"
)

// The reasons for inconclusive that JoinSummaries treats as a part's own: a part of a history
// split by scope may hold no admission, or never press the contract, where the whole did.
const (
	// ReasonNoAdmission is JudgeWith's reason when no request was admitted.
	ReasonNoAdmission = "no request was admitted"
	// ReasonNeverPressed is Measurement.Sections's reason when the contract was never pressed.
	ReasonNeverPressed = "the contract was never pressed"
)

// notePrefix begins the reasons that are notes: they say something of the run but decide no
// verdict (the reference model's replay, Redis changes that kept the state).
const notePrefix = "note: "

// JoinSummaries returns the verification of a history from the verifications of its parts,
// each part the history's events of a set of scopes (subjects, or clients across subjects), the
// sets disjoint and covering every scope: the shards of a sharded merge. Violations are
// counted per scope, so the parts' counts add up (definite, possible, attributed, unplaced,
// fault excess, errors outside faults, and the pressure's windows, full windows, denials and
// crossings); the worst excess is the largest of the parts', with its Where; the violation
// times are the parts' together, in order. A definite violation in any part is one of the
// whole: a part that failed fails the join. Otherwise the join passes when every part passed or
// was inconclusive only for a part's own reasons (ReasonNoAdmission, ReasonNeverPressed) while
// some part admitted a request and pressed the contract (or none had to: speed only); else it
// is inconclusive. The reasons are every part's, each once (a note, "note: ...", decides no
// verdict and is the part's own: two parts' replay notes each count their own decisions). The finding is that of the part with
// the worst outcome (fail, then possible violations, then the worst excess), or of a part that
// pressed the contract. Contract, thresholds, disruptions and faults are the first part's (a
// sharded merge gives every shard the same).
func JoinSummaries(parts []Summary) Summary {
	if len(parts) == 0 {
		return Summary{}
	}
	out := parts[0]
	out.Reasons, out.ViolationTimesS = nil, nil
	out.DefiniteViolations, out.PossibleViolations, out.WorstExcess, out.Where = 0, 0, 0, ""
	out.ViolationTimesOmitted, out.AttributedViolations, out.Unplaced, out.FaultExcess, out.OutsideFaultErrors = 0, 0, 0, 0, 0
	var p *Pressure
	admitted, local := false, true
	anyFail, allPass := false, true
	best := -1
	for i := range parts {
		v := &parts[i]
		out.DefiniteViolations += v.DefiniteViolations
		out.PossibleViolations += v.PossibleViolations
		out.AttributedViolations += v.AttributedViolations
		out.Unplaced += v.Unplaced
		out.FaultExcess += v.FaultExcess
		out.OutsideFaultErrors += v.OutsideFaultErrors
		out.ViolationTimesOmitted += v.ViolationTimesOmitted
		out.ViolationTimesS = append(out.ViolationTimesS, v.ViolationTimesS...)
		if v.WorstExcess > out.WorstExcess {
			out.WorstExcess, out.Where = v.WorstExcess, v.Where
		}
		if v.Pressure != nil {
			if p == nil {
				p = &Pressure{}
			}
			p.Windows += v.Pressure.Windows
			p.Full += v.Pressure.Full
			p.Denials += v.Pressure.Denials
			p.Crossings += v.Pressure.Crossings
			p.Pressed = p.Pressed || v.Pressure.Pressed
		}
		for _, r := range v.Reasons {
			if !slices.Contains(out.Reasons, r) {
				out.Reasons = append(out.Reasons, r)
			}
		}
		switch v.Verdict {
		case Fail:
			anyFail = true
		case Inconclusive:
			allPass = false
		}
		if !slices.Contains(v.Reasons, ReasonNoAdmission) {
			admitted = true
		}
		for _, r := range v.Reasons {
			if v.Verdict == Inconclusive && r != ReasonNoAdmission && r != ReasonNeverPressed && !strings.HasPrefix(r, notePrefix) {
				local = false
			}
		}
		if best < 0 || worse(v, &parts[best]) {
			best = i
		}
	}
	slices.Sort(out.ViolationTimesS)
	out.Finding = parts[best].Finding
	if p != nil {
		if p.Windows > 0 {
			p.FullShare = round3(float64(p.Full) / float64(p.Windows))
		}
		out.Pressure = p
	}
	pressed := p == nil || p.Pressed
	switch {
	case anyFail:
		out.Verdict = Fail
	case allPass || (local && admitted && pressed):
		out.Verdict = Pass
		out.Reasons = slices.DeleteFunc(out.Reasons, func(r string) bool { return r == ReasonNoAdmission || r == ReasonNeverPressed })
		if parts[best].Verdict != Pass || !parts[best].pressedOr() {
			for i := range parts { // a part that pressed the contract says what the join found
				if parts[i].Verdict == Pass && parts[i].pressedOr() && parts[i].PossibleViolations == 0 {
					out.Finding = parts[i].Finding
					break
				}
			}
		}
	default:
		out.Verdict = Inconclusive
	}
	return out
}

// pressedOr reports whether v's pressure says the contract was pressed (true without one).
func (v *Summary) pressedOr() bool { return v.Pressure == nil || v.Pressure.Pressed }

// worse reports whether a's outcome is worse than b's, for the finding of a join: a fail, then
// more possible violations, then a larger worst excess.
func worse(a, b *Summary) bool {
	if (a.Verdict == Fail) != (b.Verdict == Fail) {
		return a.Verdict == Fail
	}
	if a.PossibleViolations != b.PossibleViolations {
		return a.PossibleViolations > b.PossibleViolations
	}
	return a.WorstExcess > b.WorstExcess
}

// JoinAccuracy returns the accuracy of a history from its parts', split by scope as for
// JoinSummaries: the exact limiter's admissions and the false denials add up, the worst window
// is the largest of the parts', and the efficiency is the parts' weighted by their exact
// limiter's admissions (admitted = efficiency × ideal per part: the parts' figures are rounded
// to three decimals, so the join is within 0.001 of the unsplit figure).
func JoinAccuracy(parts []AccuracySummary) AccuracySummary {
	var out AccuracySummary
	var admitted float64
	for _, a := range parts {
		out.IdealAllowed += a.IdealAllowed
		out.FalseDenials += a.FalseDenials
		out.MaxWindowRatio = max(out.MaxWindowRatio, a.MaxWindowRatio)
		admitted += a.Efficiency * float64(a.IdealAllowed)
	}
	if out.IdealAllowed > 0 {
		out.Efficiency = round3(admitted / float64(out.IdealAllowed))
	}
	return out
}
