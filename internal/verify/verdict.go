package verify

import (
	"fmt"
	"time"

	"github.com/limitbench/limitbench/algorithms"
)

// Outcome is a verdict: pass, fail or inconclusive.
type Outcome string

// Outcomes of Judge.
const (
	// Pass: no definite violation, and the run can support the verdict.
	Pass Outcome = "pass"
	// Fail: at least one definite violation.
	Fail Outcome = "fail"
	// Inconclusive: the run cannot support a verdict (see Judge).
	Inconclusive Outcome = "inconclusive"
)

// Verdict is an outcome with the reasons for it, one sentence each.
type Verdict struct {
	Outcome Outcome
	Reasons []string
}

// Judge returns the verdict on a checked run. fellBehind is the load generator's flag that it fell
// more than 1% behind its schedule.
//
// The verdict is fail when any limit has a definite violation, whatever else happened: unknown
// outcomes and a late schedule only add admissions, so they cannot excuse one. Otherwise it is
// inconclusive when there is nothing to verify (contract none), no admission was made, the
// schedule fell behind, or unknown outcomes could hide a definite violation
// (LimitReport.UnknownCouldHide); and pass otherwise.
func Judge(r Report, fellBehind bool) Verdict {
	var fail, unsure []string
	verified := false
	for _, l := range r.Limits {
		if l.Contract.Kind == algorithms.NoContract {
			continue
		}
		verified = true
		if l.Definite > 0 {
			w := l.Worst
			fail = append(fail, fmt.Sprintf("%d definite violations of %s; worst: %d permits over %d allowed for %s in [%s, %s]",
				l.Definite, l.Contract, w.Permits, w.Allowed, scopeName(w.Subject, w.Client), stamp(w.Lo), stamp(w.Hi)))
		}
		if l.UnknownCouldHide {
			unsure = append(unsure, fmt.Sprintf("unknown outcomes could hide a definite violation of %s (up to %d permits over the limit, had they been admitted)",
				l.Contract, l.UnknownExcess))
		}
	}
	if len(fail) > 0 {
		return Verdict{Outcome: Fail, Reasons: fail}
	}
	if !verified {
		unsure = append(unsure, "no contract: nothing was verified")
	}
	if r.Admitted == 0 {
		unsure = append(unsure, "no request was admitted")
	}
	if fellBehind {
		unsure = append(unsure, "the load generator fell behind its schedule")
	}
	if len(unsure) > 0 {
		return Verdict{Outcome: Inconclusive, Reasons: unsure}
	}
	return Verdict{Outcome: Pass}
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
