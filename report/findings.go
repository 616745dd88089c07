package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// busiest describes the accuracy's worst window (Accuracy.MaxWindowRatio) under contract, or ""
// when it was not measured. Above 1 is more than the limit in a sliding window, which a passing
// algorithm can show for a reason its contract states (a fixed window across a boundary, a clock
// granularity as coarse as half its window) or because the figure takes each request at the
// middle of its decision interval, warmup included, where the verifier takes the intervals of
// the measured part: Why says which, with the numbers.
func busiest(contract string, r float64) string {
	if r <= 0 {
		return ""
	}
	if strings.HasPrefix(contract, "token-bucket") {
		s := fmt.Sprintf("at its fullest, its bucket was %s drawn", Percent(r))
		if r > 1.005 {
			s += " at the requests' midpoints (see Why)"
		}
		return s
	}
	kind := "sliding"
	if strings.HasPrefix(contract, "first-hit-window") {
		kind = "first-hit" // Accuracy measures the windows its own requests opened
	}
	s := fmt.Sprintf("its busiest %s window held %s of its limit", kind, Percent(r))
	c, err := algorithms.ParseContract(contract)
	switch {
	case r <= 1.005:
	case err == nil && c.Kind == algorithms.FixedWindow && r <= 2.0005:
		s += ", which fixed windows allow across a window boundary (up to 200%)"
	case err == nil && c.Kind == algorithms.SlidingWindow && 2*c.Granularity >= c.Window && r <= float64(2*c.Granularity/c.Window+1):
		s += ", which its clock granularity keeps the verifier from proving over (see Why)"
	default:
		s += " at the requests' midpoints (see Why)"
	}
	return s
}

// Findings returns short plain-language statements about e derived from its numbers and, for
// comparisons, from the other entries of r on the same topology: the verdict and how far it
// over-admitted, accuracy against an exact limiter, memory, latency and Redis cost relative to the
// best on the topology (or to the reference script), and anything the run dropped or lost.
//
// The reference script's entry gets what it is and its own figures only; it is left out of the
// comparisons with other entries.
func Findings(r *result.Result, e *result.Entry) []string {
	if r.IsReference(e) {
		return referenceFindings(e)
	}
	v := e.Verification
	out := verdictFindings(e)

	if held := heldThresholds(v.Thresholds); held != "" {
		out = append(out, "Thresholds held: "+held+".")
	}

	if a := e.Accuracy; a.IdealAllowed > 0 && a.Efficiency > 0 {
		switch {
		case a.Efficiency < 0.98:
			out = append(out, fmt.Sprintf("Admitted only %s of what an exact limiter would have (%s false %s).",
				Percent(a.Efficiency), Count(a.FalseDenials), Plural(a.FalseDenials, "denial", "denials")))
		case a.Efficiency > 1.02:
			out = append(out, fmt.Sprintf("Admitted %s what an exact limiter would have.", Ratio(a.Efficiency)))
		default:
			out = append(out, fmt.Sprintf("Admitted %s of what an exact limiter would have.", Percent(a.Efficiency)))
		}
	}

	out = append(out, peerFindings(r, e)...)

	if bad := e.Errors + e.Unknown; bad > 0 && e.Requests > 0 {
		var parts []string
		if e.Errors > 0 {
			parts = append(parts, Count(e.Errors)+" "+Plural(e.Errors, "error", "errors"))
		}
		if e.Unknown > 0 {
			parts = append(parts, Count(e.Unknown)+" unknown "+Plural(e.Unknown, "outcome", "outcomes"))
		}
		line := fmt.Sprintf("%s (%s of requests)", strings.Join(parts, " and "), Percent(float64(bad)/float64(e.Requests)))
		if classes := ErrorsLine(e); classes != "" {
			line += ": " + classes
		}
		out = append(out, sentence(line))
	}
	if v.Epochs > 0 || len(v.Disruptions) > 0 {
		var changed []string
		for _, d := range v.Disruptions {
			w := d.What
			if d.StateLost {
				w += ", state possibly lost"
			}
			changed = append(changed, w)
		}
		s := "Redis changed under the load: " + strings.Join(changed, "; ")
		if v.Epochs > 0 {
			s += fmt.Sprintf(". The history was verified in %d parts, apart, where the state may have been lost", v.Epochs)
			if v.AttributedViolations > 0 {
				s += fmt.Sprintf("; %s definite %s across the loss %s attributed to it, not to the algorithm",
					Count(v.AttributedViolations), Plural(v.AttributedViolations, "violation", "violations"),
					Plural(v.AttributedViolations, "is", "are"))
			}
		}
		out = append(out, sentence(s))
	}
	for _, w := range e.Warnings {
		out = append(out, sentence("Warning: "+w.Message))
	}
	if e.Dropped > 0 {
		out = append(out, fmt.Sprintf("%s planned %s never sent (dropped).", Count(e.Dropped), Plural(e.Dropped, "request was", "requests were")))
	}
	if e.Late > 0 {
		out = append(out, fmt.Sprintf("%s %s sent late (%s of requests).", Count(e.Late), Plural(e.Late, "request was", "requests were"), Percent(e.LateFraction)))
	}
	return out
}

// verdictFindings states e's verdict and how far it over-admitted, or what it kept.
func verdictFindings(e *result.Entry) []string {
	var out []string
	v := e.Verification
	worst := ""
	if e.Accuracy.MaxWindowRatio > 0 {
		worst = fmt.Sprintf("admitted %s its limit in the worst window", Ratio(e.Accuracy.MaxWindowRatio))
	}
	violations := fmt.Sprintf("%s definite %s", Count(v.DefiniteViolations), Plural(v.DefiniteViolations, "violation", "violations"))
	if v.WorstExcess > 0 {
		violations += fmt.Sprintf(", worst excess %s %s", Count(v.WorstExcess), Plural(v.WorstExcess, "permit", "permits"))
		if v.Where != "" {
			violations += " " + v.Where
		}
	}
	switch e.Label() {
	case result.LabelCaught:
		out = append(out, sentence("Caught as the scenario expected: "+join(worst, violations)))
	case result.LabelMissed:
		out = append(out, "Expected to be flagged, but no definite violation was found: the harness missed a planted bug.")
	case result.LabelTolerated:
		out = append(out, sentence("Failed, tolerated: the scenario lists it under expect.may_violate, so this verdict decides nothing: "+
			join(worst, violations)))
	case string(verify.Fail):
		if v.DefiniteViolations > 0 {
			out = append(out, sentence("Over-admitted: "+join(worst, violations)))
		}
		for _, reason := range v.Reasons {
			out = append(out, sentence("Failed: "+reason))
		}
	case string(verify.Pass):
		if p := v.Pressure; p != nil && !p.Pressed && v.Finding != "" {
			out = append(out, v.Finding) // a speed-only scenario's: the contract was not exercised
			break
		}
		s := "Never admitted more than " + orDefault(v.Contract, "its contract") + " allows"
		if v.PossibleViolations > 0 {
			s = "No definite violation of " + orDefault(v.Contract, "its contract") + ": no set of its admissions broke it in every placement of their decision times"
		}
		if w := busiest(v.Contract, e.Accuracy.MaxWindowRatio); w != "" {
			s += "; " + w
		}
		out = append(out, s+".")
		if v.PossibleViolations > 0 {
			out = append(out, fmt.Sprintf("%s possible %s could not be ruled out within the timing uncertainty; that alone does not fail a run.",
				Count(v.PossibleViolations), Plural(v.PossibleViolations, "violation", "violations")))
		}
		if p := v.Pressure; p != nil && p.Windows > 0 {
			out = append(out, fmt.Sprintf("Pressed: %s of %s %s reached the allowance, %s %s denied.",
				Count(p.Full), Count(p.Windows), Plural(p.Windows, "window", "windows"), Count(p.Denials), Plural(p.Denials, "request was", "requests were")))
		}
	case string(verify.Inconclusive):
		reasons := strings.Join(v.Reasons, "; ")
		out = append(out, sentence("No verdict: "+orDefault(reasons, "the run cannot support one")))
	}

	return out
}

// peerFindings compares e with the other entries of its topology (the reference script's left
// out): memory, latency and Redis CPU.
func peerFindings(r *result.Result, e *result.Entry) []string {
	var out []string
	var peers []*result.Entry
	for _, p := range entriesOn(r, e.Topology) {
		if !r.IsReference(p) {
			peers = append(peers, p)
		}
	}
	if best, ok := lowest(peers, func(x *result.Entry) float64 { return x.Server.BytesPerKey }); ok && e.Server.BytesPerKey > 0 {
		if q := e.Server.BytesPerKey / best.Server.BytesPerKey; best != e && q >= 2 {
			out = append(out, fmt.Sprintf("Uses %s the memory per subject of %s (%s vs %s bytes).",
				Ratio(q), best.Algorithm, Number(e.Server.BytesPerKey), Number(best.Server.BytesPerKey)))
		} else if best == e && len(peers) > 1 {
			out = append(out, fmt.Sprintf("Least memory per subject on %s: %s bytes.", e.Topology, Number(e.Server.BytesPerKey)))
		}
	}

	// No figure relative to the reference script (Entry.Relative): the reference runs first on
	// its topology, on connections and a server not yet warm, so it is not measured under the
	// others' conditions (in the demo its p99 was 23 ms where the same commands later took 2 ms,
	// and the findings read "p99 0.1x the reference script"). Entries of one topology ran under
	// the same conditions, so latency is compared among them.
	if best, ok := lowest(peers, func(x *result.Entry) float64 { return x.LatencyUS.P99 }); ok && e.LatencyUS.P99 > 0 {
		if q := e.LatencyUS.P99 / best.LatencyUS.P99; best != e && q >= 1.5 {
			out = append(out, fmt.Sprintf("p99 latency %s ms, %s that of %s.", Millis(e.LatencyUS.P99), Ratio(q), best.Algorithm))
		} else if best == e && len(peers) > 1 {
			out = append(out, fmt.Sprintf("Lowest p99 latency on %s: %s ms.", e.Topology, Millis(e.LatencyUS.P99)))
		}
	}

	if best, ok := lowest(peers, func(x *result.Entry) float64 { return x.Server.CPUUSecPerDecision }); ok && e.Server.CPUUSecPerDecision > 0 {
		if q := e.Server.CPUUSecPerDecision / best.Server.CPUUSecPerDecision; best != e && q >= 2 {
			out = append(out, fmt.Sprintf("Costs Redis %s the CPU per decision of %s (%s vs %s µs).",
				Ratio(q), best.Algorithm, Number(e.Server.CPUUSecPerDecision), Number(best.Server.CPUUSecPerDecision)))
		}
	}

	return out
}

// heldThresholds lists the thresholds that held with their values: `"p99 < 5ms" (1.2ms)`. Broken
// and unevaluated ones are among the verdict's reasons.
func heldThresholds(checks []verify.ThresholdCheck) string {
	var parts []string
	for _, c := range checks {
		if c.Status == verify.ThresholdHeld {
			parts = append(parts, fmt.Sprintf("%q (%s)", c.Threshold, c.Shown))
		}
	}
	return strings.Join(parts, ", ")
}

// referenceFindings says what the reference script is and what it measured.
func referenceFindings(e *result.Entry) []string {
	out := []string{"The reference script: a bare INCR + PEXPIRE that admits everything, measured under the same load " +
		"to calibrate the other entries' relative figures. It is not a limiter and has no verdict."}
	if e.ThroughputRPS > 0 || e.LatencyUS.P99 > 0 {
		out = append(out, fmt.Sprintf("It completed %s decisions/s with p99 %s ms.", Number(e.ThroughputRPS), Millis(e.LatencyUS.P99)))
	}
	if e.Server.CPUUSecPerDecision > 0 {
		out = append(out, fmt.Sprintf("It cost Redis %s µs of CPU per call.", Number(e.Server.CPUUSecPerDecision)))
	}
	return out
}

// lowest returns the entry with the smallest positive f.
func lowest(entries []*result.Entry, f func(*result.Entry) float64) (*result.Entry, bool) {
	var best *result.Entry
	for _, e := range entries {
		if v := f(e); v > 0 && !math.IsInf(v, 0) && (best == nil || v < f(best)) {
			best = e
		}
	}
	return best, best != nil
}

func join(parts ...string) string {
	var nonEmpty []string
	for _, p := range parts {
		if p != "" {
			nonEmpty = append(nonEmpty, p)
		}
	}
	if len(nonEmpty) == 0 {
		return ""
	}
	if len(nonEmpty) == 1 {
		return nonEmpty[0]
	}
	return nonEmpty[0] + " (" + strings.Join(nonEmpty[1:], "; ") + ")"
}

func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasSuffix(s, ".") {
		return s
	}
	return s + "."
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
