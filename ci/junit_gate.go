package ci

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/limitbench/limitbench/gate"
	"github.com/limitbench/limitbench/report"
	"github.com/limitbench/limitbench/result"
)

// GateSuites returns the JUnit suites of a gate report: one per algorithm × topology compared,
// in the report's order, with one testcase per row (its outcome as the package documentation
// says) and each row's medians, change, interval, detectable change and verdict as properties
// named <metric>.<figure>.
func GateSuites(g *gate.Report) []Suite {
	var out []Suite
	for i := 0; i < len(g.Rows); {
		first := g.Rows[i]
		j := i
		for j < len(g.Rows) && g.Rows[j].Algorithm == first.Algorithm && g.Rows[j].Topology == first.Topology {
			j++
		}
		props := []Property{
			{Name: "scenario", Value: g.Scenario},
			{Name: "algorithm", Value: first.Algorithm},
			{Name: "topology", Value: first.Topology},
			{Name: "same_machine", Value: strconv.FormatBool(g.SameMachine)},
			{Name: "baseline_machine", Value: g.BaselineMachine},
			{Name: "current_machine", Value: g.CurrentMachine},
		}
		var cases []Case
		for _, r := range g.Rows[i:j] {
			cases = append(cases, rowCase(g, r))
			props = append(props, rowProperties(r)...)
		}
		out = append(out, NewSuite(fmt.Sprintf("gate %s: %s on %s", g.Scenario, first.Algorithm, first.Topology), props, cases))
		i = j
	}
	return out
}

// rowCase returns the testcase of one gate row.
func rowCase(g *gate.Report, r gate.Row) Case {
	c := Case{Name: fmt.Sprintf("%s on %s: %s", r.Algorithm, r.Topology, r.Metric), Classname: "limitbench.gate." + g.Scenario,
		SystemOut: rowWords(r)}
	msg := fmt.Sprintf("%s on %s: %s %s", r.Algorithm, r.Topology, r.Metric, r.Verdict)
	if r.Note != "" {
		msg += " (" + r.Note + ")"
	}
	switch {
	case g.Policy.Fails(r.Verdict):
		c.Failure = failure(msg, []string{rowWords(r)})
	case r.Verdict == gate.Inconclusive:
		c.Skipped = skip(msg, []string{rowWords(r)})
	}
	return c
}

// rowWords describes a row in one sentence: the medians, the change with its interval and the
// detectable change against the threshold, or the outcomes of a verdict row.
func rowWords(r gate.Row) string {
	if r.Metric == result.Verdict {
		s := fmt.Sprintf("verdict %s → %s: %s", r.OldOutcome, r.NewOutcome, r.Verdict)
		if r.OldContract != "" || r.NewContract != "" {
			s += fmt.Sprintf(" (contracts: %s → %s)", r.OldContract, r.NewContract)
		}
		return s
	}
	unit := r.Unit
	if r.Figures == gate.FiguresRelative {
		unit = "× the reference"
	}
	n := report.Number
	return fmt.Sprintf("%s (%s figures): median %s → %s %s, change %s%s, 99%% CI [%s, %s]%s, detectable %s%s, threshold %s%s: %s",
		r.Metric, r.Figures, n(r.OldMedian), n(r.NewMedian), unit, signed(r.Delta), r.DeltaUnit, signed(r.DeltaLow), signed(r.DeltaHigh),
		r.DeltaUnit, n(r.MDE), r.DeltaUnit, n(r.Threshold), r.DeltaUnit, r.Verdict)
}

// rowProperties returns a row's figures as properties named <metric>.<figure>.
func rowProperties(r gate.Row) []Property {
	m := string(r.Metric)
	if r.Metric == result.Verdict {
		return []Property{{Name: m + ".old", Value: r.OldOutcome}, {Name: m + ".new", Value: r.NewOutcome},
			{Name: m + ".gate_verdict", Value: string(r.Verdict)}}
	}
	return []Property{
		{Name: m + ".figures", Value: string(r.Figures)},
		{Name: m + ".unit", Value: r.Unit},
		{Name: m + ".old_median", Value: num(r.OldMedian)},
		{Name: m + ".new_median", Value: num(r.NewMedian)},
		{Name: m + ".delta_" + deltaUnitName(r), Value: num(r.Delta)},
		{Name: m + ".ci_low_" + deltaUnitName(r), Value: num(r.DeltaLow)},
		{Name: m + ".ci_high_" + deltaUnitName(r), Value: num(r.DeltaHigh)},
		{Name: m + ".detectable_" + deltaUnitName(r), Value: num(r.MDE)},
		{Name: m + ".threshold_" + deltaUnitName(r), Value: num(r.Threshold)},
		{Name: m + ".gate_verdict", Value: string(r.Verdict)},
	}
}

// deltaUnitName names a row's delta unit in a property name: pct or pt.
func deltaUnitName(r gate.Row) string {
	if r.DeltaUnit == "pt" {
		return "pt"
	}
	return "pct"
}

// signed formats x as report.Number does, with a sign when it is positive: "+25", "-3.5", "0".
func signed(x float64) string {
	s := report.Number(x)
	if x > 0 && strings.Trim(s, "0.") != "" {
		return "+" + s
	}
	return s
}

// num formats x in the shortest form that reads back exactly; an infinite value as "+Inf" or
// "-Inf".
func num(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
