package verify

import (
	"fmt"
	"time"

	"github.com/limitbench/limitbench/algorithms"
)

// Verdict is what the verification of a run concludes: pass, fail or inconclusive (DESIGN.md,
// "Words"). It is the verdict of result.json's verification section and of each repeat.
type Verdict string

// The verdicts.
const (
	// Pass: no definite violation, and the run can support the verdict (nor did a threshold
	// break, once thresholds are judged: see Summary.AddThreshold).
	Pass Verdict = "pass"
	// Fail: at least one definite violation that the run's warnings cannot explain, or a broken
	// threshold.
	Fail Verdict = "fail"
	// Inconclusive: the run cannot support a verdict (see JudgeWith).
	Inconclusive Verdict = "inconclusive"
)

// Judgement is a verdict with the reasons for it, one sentence each.
type Judgement struct {
	Verdict Verdict
	Reasons []string
}

// Warnings are what the load generator reports about a run besides its log, as far as the
// verdict depends on them. The zero value is a clean run.
type Warnings struct {
	// Behind: the generator fell more than 1% behind its schedule (load.Result.Behind).
	Behind bool
	// Canceled: the run was stopped early (load.Result.Canceled).
	Canceled bool
	// ClockMismatch counts decisions whose server time was inconsistent with the harness clock
	// (load.Counts.ClockMismatch): their logged times are not to be trusted.
	ClockMismatch uint64
	// Dropped counts outcomes an aggregator discarded (load.Counts.Dropped; not ticks that were
	// never sent, which Behind covers): some may have been admissions missing from the log.
	Dropped uint64
	// StopReason, on a canceled run, says why it stopped when it was not an interruption (Redis
	// was lost, a permission was refused); "" otherwise.
	StopReason string
}

// Judge is JudgeWith(r, Warnings{Behind: fellBehind}): the verdict when the load generator
// reported nothing but whether it fell behind.
func Judge(r Report, fellBehind bool) Judgement {
	return JudgeWith(r, Warnings{Behind: fellBehind})
}

// JudgeWith returns the verdict on a checked run with the warnings w, by these rules:
//
//   - fail when a limit has a definite violation that the warnings cannot explain. Unknown
//     outcomes, dropped outcomes and a late schedule can only hide admissions, never create
//     one, so they never excuse a violation. Clock mismatches can: a mismatched decision's
//     logged time may be wrong, which can put it in a window it does not belong to. With m
//     mismatches, a violation is definite regardless only when removing any m admissions from
//     the worst violating set still leaves it over its allowance: Worst.Excess > m·MaxPermits
//     (removing admissions never raises a set's allowance). Otherwise the violation is reported
//     as a reason for inconclusive. First-hit-window's Chained violations also rest on the log
//     holding every request with its true time (a request left out or logged at a wrong time
//     could have opened a window elsewhere): with any dropped outcome or clock mismatch they
//     are a reason for inconclusive, and only the others (WorstUnchained) can fail the run.
//   - inconclusive, when nothing fails, if there is nothing to verify (contract none), no
//     request was admitted, the schedule fell behind, unknown outcomes could hide a definite
//     violation (LimitReport.UnknownCouldHide), any decision time mismatched the harness clock,
//     or any outcome was dropped: each of these leaves a pass unsupported.
//   - pass otherwise.
//
// A canceled run changes no verdict: the log holds what was measured, and the verdict is about
// that; a reason says so whatever the verdict (the only reason a pass can carry).
func JudgeWith(r Report, w Warnings) Judgement {
	fail, unsure := violations(r, w)
	if len(fail) > 0 {
		return Judgement{Verdict: Fail, Reasons: append(fail, canceledNote(w)...)}
	}
	unsure = append(unsure, support(r, w)...)
	if len(unsure) > 0 {
		return Judgement{Verdict: Inconclusive, Reasons: append(unsure, canceledNote(w)...)}
	}
	return Judgement{Verdict: Pass, Reasons: canceledNote(w)}
}

// violations returns what the limits of r say about the verdict, with the warnings w: a reason
// to fail per limit with a definite violation that w's clock mismatches cannot explain, and a
// reason for inconclusive per limit whose violation they can, whose chained first-hit
// violations w's dropped outcomes or mismatches leave in doubt, or whose unknown outcomes could
// hide one (see JudgeWith).
func violations(r Report, w Warnings) (fail, unsure []string) {
	for _, l := range r.Limits {
		if l.Contract.Kind == algorithms.NoContract {
			continue
		}
		n, wh := l.Definite, l.Worst
		if l.Chained > 0 && (w.Dropped > 0 || w.ClockMismatch > 0) {
			unsure = append(unsure, fmt.Sprintf("%d definite violations of %s follow from the requests that opened its windows, "+
				"which %d dropped outcomes and %d mismatched decision times leave in doubt", l.Chained, l.Contract, w.Dropped, w.ClockMismatch))
			n, wh = l.Definite-l.Chained, l.WorstUnchained
		}
		if n > 0 {
			msg := fmt.Sprintf("%d definite violations of %s; worst: %d permits over %d allowed for %s in [%s, %s]",
				n, l.Contract, wh.Permits, wh.Allowed, scopeName(wh.Subject, wh.Client), stamp(wh.Lo), stamp(wh.Hi))
			if m := int64(w.ClockMismatch); m > 0 && wh.Excess <= m*max(r.MaxPermits, 1) {
				unsure = append(unsure, msg+fmt.Sprintf(", but %d decision times that mismatched the harness clock could account for an excess of %d",
					m, wh.Excess))
			} else {
				fail = append(fail, msg)
			}
		}
		if l.UnknownCouldHide {
			unsure = append(unsure, fmt.Sprintf("unknown outcomes could hide a definite violation of %s (up to %d permits over the limit, had they been admitted)",
				l.Contract, l.UnknownExcess))
		}
	}
	return fail, unsure
}

// support returns the reasons why a run without a failing limit cannot support a pass: no
// contract, no admission, a schedule that fell behind, clock mismatches, dropped outcomes.
func support(r Report, w Warnings) []string {
	var unsure []string
	verified := false
	for _, l := range r.Limits {
		verified = verified || l.Contract.Kind != algorithms.NoContract
	}
	if !verified {
		unsure = append(unsure, "no contract: nothing was verified")
	}
	if r.Admitted == 0 {
		unsure = append(unsure, ReasonNoAdmission)
	}
	if w.Behind {
		unsure = append(unsure, "the load generator fell behind its schedule")
	}
	if w.ClockMismatch > 0 {
		unsure = append(unsure, fmt.Sprintf("%d decision times were inconsistent with the harness clock", w.ClockMismatch))
	}
	if w.Dropped > 0 {
		unsure = append(unsure, fmt.Sprintf("%d outcomes were dropped by the recorders, and admissions among them would be missing from the check", w.Dropped))
	}
	return unsure
}

// canceledNote is the note a canceled run's verdict carries, whatever it is: why it stopped
// (Warnings.StopReason) or that it was canceled.
func canceledNote(w Warnings) []string {
	switch {
	case !w.Canceled:
		return nil
	case w.StopReason != "":
		return []string{"the run stopped early (" + w.StopReason + "): the verdict covers only what was measured before"}
	}
	return []string{"the run was canceled: the verdict covers only what was measured before"}
}

func scopeName(subject, client string) string {
	switch {
	case subject != "" && client != "":
		return fmt.Sprintf("subject %q client %q", subject, client)
	case client != "":
		return fmt.Sprintf("client %q", client)
	}
	return fmt.Sprintf("subject %q", subject)
}

// stamp renders µs since the Unix epoch as an RFC 3339 UTC time with µs.
func stamp(us int64) string {
	return time.UnixMicro(us).UTC().Format("2006-01-02T15:04:05.000000Z07:00")
}
