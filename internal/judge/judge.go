// Package judge holds a run to its scenario's expectations and thresholds, the one place where
// they are judged: which algorithms must be flagged (expect.violations) or may be
// (expect.may_violate), and each threshold ("p99 < 5ms", "gcra: efficiency > 0.95") checked against
// the figures of every entry it applies to, with the default errors threshold (DefaultErrors)
// wherever the scenario sets none. A threshold's metric reads its value from an entry itself
// (result.Metric.Evaluate, also the capacity sweep's objective); judge owns the failures that
// make a run exit 1 and how a metric's value is shown (FormatMetric). What a
// threshold does to a verdict is the verifier's (verify.Summary.AddThreshold); the verdicts
// themselves come from the verifier.
package judge

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/report"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/scenarios"
	"github.com/limitbench/limitbench/verify"
)

// DefaultErrors is the errors threshold of every entry for which the scenario sets none (no
// "errors" threshold for all algorithms or for the entry's): at most 1% of the measured requests
// may end in an error or an unknown outcome. A run whose requests mostly fail tells little about
// the algorithm: the verifier checked only what completed. When it breaks, the verdict is
// inconclusive (a pass cannot stand; a fail stays a fail), never fail, and the run exits 1; a
// scenario's own errors threshold replaces it and, like every threshold, fails the verdict when
// it breaks ("errors <= 100%" turns the check off).
var DefaultErrors = mustThreshold("errors <= 1%")

func mustThreshold(s string) scenarios.Threshold {
	t, err := scenarios.ParseThreshold(s)
	if err != nil {
		panic(err)
	}
	return t
}

// Run judges res against s and returns its failures, one sentence each: a failed verdict the
// scenario did not expect or tolerate, an expected violation that was not found (or an expected
// algorithm that was not run, unless the run was cut short), an inconclusive verdict of an
// algorithm with a contract, and every threshold that broke or cannot be evaluated. It marks each
// entry's expectations (Expectations) and checks every threshold against every entry it applies
// to, recording the checks in the entry's verification (verify.Summary.AddThreshold: a broken
// threshold turns the verdict to fail, one that cannot be evaluated turns a pass into
// inconclusive). The reference script's entry is not judged. Call it once per result.
func Run(s *scenarios.Scenario, res *result.Result) []string {
	var fails []string
	expected := map[string]bool{}
	for _, n := range s.Expect.Violations {
		expected[n] = true
	}
	seen := map[string]bool{}
	for i := range res.Entries {
		e := &res.Entries[i]
		if res.IsReference(e) {
			continue
		}
		Expectations(e, s)
		seen[e.Algorithm] = true
		v := e.Verification
		name := e.Name()
		switch {
		case v.ExpectedViolation:
			if v.DefiniteViolations == 0 {
				fails = append(fails, fmt.Sprintf("%s: expected a definite violation, found none (%s)", name, v.Verdict))
			}
		case v.MayViolate:
		case v.Verdict == verify.Fail:
			fails = append(fails, fmt.Sprintf("%s: failed: %s", name, strings.Join(v.Reasons, "; ")))
		case v.Verdict == verify.Inconclusive && v.Contract != string(algorithms.NoContract):
			fails = append(fails, fmt.Sprintf("%s: inconclusive: %s", name, strings.Join(v.Reasons, "; ")))
		}
	}
	if !res.CutShort {
		names := make([]string, 0, len(expected))
		for n := range expected {
			if !seen[n] {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		for _, n := range names {
			fails = append(fails, fmt.Sprintf("%s: expected a violation, but the algorithm was not run", n))
		}
	}
	for i := range res.Entries {
		e := &res.Entries[i]
		if res.IsReference(e) {
			continue
		}
		fails = append(fails, checkThresholds(e, s.Thresholds)...)
	}
	return fails
}

// Expectations sets e's ExpectedViolation and MayViolate from the scenario's expect section, so
// that e's label says whether a violation was expected or tolerated.
func Expectations(e *result.Entry, s *scenarios.Scenario) {
	e.Verification.ExpectedViolation = slices.Contains(s.Expect.Violations, e.Algorithm)
	e.Verification.MayViolate = slices.Contains(s.Expect.MayViolate, e.Algorithm)
}

// checkThresholds checks each of ths that applies to e (all, or those naming e's algorithm), and
// DefaultErrors when none of them is an errors threshold, records the checks in e.Verification
// (which applies them to the verdict, see verify.Summary.AddThreshold) and returns one failure
// per threshold that is broken or cannot be evaluated (the default only when it is broken).
func checkThresholds(e *result.Entry, ths []scenarios.Threshold) []string {
	var fails []string
	errorsSet := false
	for _, th := range ths {
		if th.Algorithm != "" && th.Algorithm != e.Algorithm {
			continue
		}
		errorsSet = errorsSet || th.Metric == result.ErrorRate
		if reason := check(e, th, false); reason != "" {
			fails = append(fails, fmt.Sprintf("%s: %s", e.Name(), reason))
		}
	}
	if !errorsSet {
		if _, missing := result.ErrorRate.Evaluate(e); missing == "" {
			if reason := checkDefaultErrors(e); reason != "" {
				fails = append(fails, fmt.Sprintf("%s: %s", e.Name(), reason))
			}
		}
	}
	return fails
}

// checkDefaultErrors checks DefaultErrors against e, as check does; in a measurement with
// injected faults it counts only the errors and unknown outcomes of requests sent outside every
// fault's window (verify.Summary.OutsideFaultErrors): those inside are the faults' own, counted
// in their reports.
func checkDefaultErrors(e *result.Entry) string {
	v := e.Verification
	if len(v.Faults) == 0 {
		return check(e, DefaultErrors, true)
	}
	val := float64(v.OutsideFaultErrors) / float64(e.Requests)
	c := verify.ThresholdCheck{Threshold: DefaultErrors.Text + " (outside the faults' windows)", Value: val, Default: true,
		Status: verify.ThresholdHeld, Shown: FormatMetric(result.ErrorRate, val)}
	var reason string
	if !DefaultErrors.Holds(val) {
		c.Status = verify.ThresholdBroken
		reason = fmt.Sprintf("default threshold %q (set an errors threshold to change it) broken outside the faults' windows: errors = %s",
			DefaultErrors.Text, c.Shown)
	}
	e.Verification.AddThreshold(c, reason)
	return reason
}

// check checks th (the default errors threshold when def) against e, records it in
// e.Verification and returns the reason it does not hold ("" when it holds).
func check(e *result.Entry, th scenarios.Threshold, def bool) string {
	val, missing := th.Metric.Evaluate(e)
	c := verify.ThresholdCheck{Threshold: th.Text, Value: val, Default: def}
	name := fmt.Sprintf("threshold %q", th.Text)
	if def {
		name = fmt.Sprintf("default threshold %q (set an errors threshold to change it)", th.Text)
	}
	var reason string
	switch {
	case missing != "":
		c.Status, c.Shown, c.Value = verify.ThresholdUnevaluated, missing, 0
		reason = fmt.Sprintf("%s cannot be evaluated: %s", name, missing)
	case th.Holds(val):
		c.Status, c.Shown = verify.ThresholdHeld, FormatMetric(th.Metric, val)
	default:
		c.Status, c.Shown = verify.ThresholdBroken, FormatMetric(th.Metric, val)
		reason = fmt.Sprintf("%s broken: %s = %s", name, th.Metric, c.Shown)
		if th.Metric == result.ErrorRate && len(e.ErrorClasses) > 0 {
			reason += "; " + ErrorsText(e.ErrorClasses, 3)
		}
	}
	e.Verification.AddThreshold(c, reason)
	return reason
}

// ErrorsText describes the first n error classes of classes (the most frequent first, as
// result.json lists them) in words, each with the text of its first error: `58812 OOM
// (failed; first: "gcra: OOM command not allowed when used memory > 'maxmemory'.")`, and how
// many classes more.
func ErrorsText(classes []load.ErrorClass, n int) string {
	var parts []string
	for i, c := range classes {
		if i == n {
			parts = append(parts, fmt.Sprintf("and %d more %s", len(classes)-n, plural(len(classes)-n, "class", "classes")))
			break
		}
		parts = append(parts, fmt.Sprintf("%d %s (%s; first: %q)", c.Count, c.Kind, c.Outcome, c.First))
	}
	return strings.Join(parts, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// FormatMetric renders v, a value of m, with its unit: a latency as a duration rounded to the
// µs ("1.5ms"), anything else with four significant digits.
func FormatMetric(m result.Metric, v float64) string {
	if m.IsLatency() {
		return report.MicrosExact(v)
	}
	return fmt.Sprintf("%.4g", v)
}
