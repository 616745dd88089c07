// Package judge holds a run to its scenario's expectations and thresholds, the one place where
// they are judged: which algorithms must be flagged (expect.violations) or may be
// (expect.may_violate), and each threshold ("p99 < 5ms", "gcra: efficiency > 0.95") checked against
// the figures of every entry it applies to, with the default errors threshold (DefaultErrors)
// wherever the scenario sets none. It owns the value of each threshold metric in an entry
// (Evaluate, also the capacity sweep's objective) and the failures that make a run exit 1. What a
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
	"github.com/limitbench/limitbench/internal/verify"
	"github.com/limitbench/limitbench/report"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/scenarios"
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
		errorsSet = errorsSet || th.Metric == scenarios.ErrorRate
		if reason := check(e, th, false); reason != "" {
			fails = append(fails, fmt.Sprintf("%s: %s", e.Name(), reason))
		}
	}
	if !errorsSet {
		if _, missing := Evaluate(e, scenarios.ErrorRate); missing == "" {
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
		Status: verify.ThresholdHeld, Shown: FormatMetric(scenarios.ErrorRate, val)}
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
	val, missing := Evaluate(e, th.Metric)
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
		if th.Metric == scenarios.ErrorRate && len(e.ErrorClasses) > 0 {
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

// Value returns the value of m for e in the unit Threshold uses (µs, requests/s, fraction), and
// false when e holds no data to evaluate m (see Evaluate).
func Value(e *result.Entry, m scenarios.Metric) (float64, bool) {
	v, missing := Evaluate(e, m)
	return v, missing == ""
}

// Evaluate returns the value of m for e in the unit Threshold uses (µs, requests/s, fraction), or,
// when e holds no data to evaluate m, why not: no request measured (throughput, errors), no
// decision completed (latencies), no contract or nothing an exact limiter would have admitted
// (efficiency).
func Evaluate(e *result.Entry, m scenarios.Metric) (float64, string) {
	completed := e.Allowed + e.Denied
	switch m {
	case scenarios.P50, scenarios.P90, scenarios.P99, scenarios.P999, scenarios.Max:
		if completed == 0 || e.Histograms.Latency == "" && e.LatencyUS == (load.Latency{}) {
			return 0, "no decision completed, so there is no latency to compare"
		}
		switch m {
		case scenarios.P50:
			return e.LatencyUS.P50, ""
		case scenarios.P90:
			return e.LatencyUS.P90, ""
		case scenarios.P99:
			return e.LatencyUS.P99, ""
		case scenarios.P999:
			return e.LatencyUS.P999, ""
		}
		return e.LatencyUS.Max, ""
	case scenarios.Throughput:
		if e.Requests == 0 || e.DurationS <= 0 {
			return 0, "no request was measured"
		}
		return e.ThroughputRPS, ""
	case scenarios.Efficiency:
		switch {
		case e.Verification.Contract == "" || e.Verification.Contract == string(algorithms.NoContract):
			return 0, "the algorithm has no contract, so there is no exact limiter to compare with"
		case e.Accuracy.IdealAllowed == 0:
			return 0, "an exact limiter would have admitted nothing (no request completed, or accuracy was not computed)"
		}
		return e.Accuracy.Efficiency, ""
	case scenarios.ErrorRate:
		if e.Requests == 0 {
			return 0, "no request was measured"
		}
		return float64(e.Errors+e.Unknown) / float64(e.Requests), ""
	case scenarios.FaultExcess:
		if len(e.Verification.Faults) == 0 {
			return 0, "no fault was injected in this measurement"
		}
		return float64(e.Verification.FaultExcess), ""
	}
	return 0, fmt.Sprintf("unknown metric %q", m)
}

// FormatMetric renders v, a value of m, with its unit: a latency as a duration rounded to the
// µs ("1.5ms"), anything else with four significant digits.
func FormatMetric(m scenarios.Metric, v float64) string {
	if m.IsLatency() {
		return report.MicrosExact(v)
	}
	return fmt.Sprintf("%.4g", v)
}
