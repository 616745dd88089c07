package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// The decision summary: which algorithm to pick on this workload, by a stated rule.

// MinEfficiency is the least efficiency (admitted over what an exact limiter with the same
// contract admits) of an algorithm Recommend may pick.
const MinEfficiency = 0.99

// RuleText states the rule Recommend applies, for the reports.
const RuleText = "The recommended algorithm is the one that costs Redis the least time per decision " +
	"(commandstats) among those that pass, having pressed their contract, with no possible violation, an efficiency of at least 99% " +
	"against an exact limiter with the same contract, and that the scenario does not expect to violate " +
	"(expect.violations, expect.may_violate); ties go to the lower p99 latency."

// Disqualified returns why e, an entry of r, cannot be recommended (see Recommend), in a few
// words, or "" when it qualifies.
func Disqualified(r *result.Result, e *result.Entry) string {
	v := e.Verification
	var expected []string
	if st := r.Scenario.Settings; st != nil {
		expected = append(slices.Clone(st.Expect.Violations), st.Expect.MayViolate...)
	}
	switch label := r.LabelOf(e); {
	case r.IsReference(e):
		return "reference script"
	case label != string(verify.Pass):
		return "not a pass"
	case v.Pressure != nil && !v.Pressure.Pressed:
		return "contract not exercised"
	case v.PossibleViolations > 0:
		return fmt.Sprintf("%s possible %s", Count(v.PossibleViolations), Plural(v.PossibleViolations, "violation", "violations"))
	case slices.Contains(expected, e.Algorithm):
		return "expected to violate"
	case e.Accuracy.IdealAllowed == 0 || e.Accuracy.Efficiency <= 0:
		return "efficiency not measured"
	case e.Accuracy.Efficiency < MinEfficiency:
		return "efficiency " + Percent(e.Accuracy.Efficiency)
	case e.Server.USecPerCall <= 0:
		return "Redis time not measured"
	}
	return ""
}

// Recommend returns the algorithm the decision summary recommends on topology, one of r's
// topologies, by RuleText: among r's entries on topology that qualify (Disqualified returns ""
// for them: a pass, no possible violation, an efficiency measured and at least MinEfficiency,
// Redis's own time per decision measured, not the reference script and not named by the
// scenario's expect.violations or expect.may_violate), the one with the least
// Server.USecPerCall; equal ones by the lower p99 latency, then by name. It returns "" when none
// qualifies. Only r is read, so the figure a test computes from result.json is the report's.
func Recommend(r *result.Result, topology string) string {
	var best *result.Entry
	for _, e := range entriesOn(r, topology) {
		if Disqualified(r, e) != "" {
			continue
		}
		if best == nil || cmp.Or(
			cmp.Compare(e.Server.USecPerCall, best.Server.USecPerCall),
			cmp.Compare(e.LatencyUS.P99, best.LatencyUS.P99),
			strings.Compare(e.Algorithm, best.Algorithm)) < 0 {
			best = e
		}
	}
	if best == nil {
		return ""
	}
	return best.Algorithm
}

// decisionView is the decision summary of one topology.
type decisionView struct {
	Topology string
	// Recommended names the recommended algorithm, "" when none qualifies; Verdict says so in a
	// sentence.
	Recommended, Verdict string
	Rows                 []decisionRow
}

// decisionRow is one algorithm of a decision table; each figure with whether it is the best of
// its column.
type decisionRow struct {
	Algorithm, Label, Class string
	Recommended             bool
	// Qualifies is "yes" or why not (Disqualified).
	Qualifies                                    string
	Efficiency, Worst, Server, Memory, P99       cell
	Anchor                                       string // the id of its details in report.html
	FalseDenials                                 string
	efficiency, worst, server, memory, p99, gap  float64
	hasEfficiency, hasWorst, hasServer, hasBytes bool
}

// cell is one figure of the decision table.
type cell struct {
	Text string
	Best bool
}

// decisionViews returns the decision summary of every topology of r.
func decisionViews(r *result.Result) []decisionView {
	var out []decisionView
	for _, topo := range topologies(r) {
		d := decisionView{Topology: topo, Recommended: Recommend(r, topo)}
		for _, e := range entriesOn(r, topo) {
			if r.IsReference(e) {
				continue
			}
			d.Rows = append(d.Rows, newDecisionRow(r, e, d.Recommended))
		}
		if len(d.Rows) == 0 {
			continue
		}
		markBest(d.Rows)
		// Those that qualify first, cheapest first, as the rule ranks them; then the rest in
		// the order they ran.
		slices.SortStableFunc(d.Rows, func(a, b decisionRow) int {
			qa, qb := a.Qualifies == "yes", b.Qualifies == "yes"
			switch {
			case qa && qb:
				return cmp.Or(cmp.Compare(a.server, b.server), cmp.Compare(a.p99, b.p99), strings.Compare(a.Algorithm, b.Algorithm))
			case qa:
				return -1
			case qb:
				return 1
			}
			return 0
		})
		d.Verdict = "No algorithm qualifies on " + topo + ": none passes with no possible violation and an efficiency of at least 99%."
		if d.Recommended != "" {
			d.Verdict = fmt.Sprintf("Recommended on %s: %s.", topo, d.Recommended)
		}
		out = append(out, d)
	}
	return out
}

func newDecisionRow(r *result.Result, e *result.Entry, recommended string) decisionRow {
	label := r.LabelOf(e)
	row := decisionRow{Algorithm: e.Algorithm, Label: label, Class: labelClass(label), Recommended: e.Algorithm == recommended,
		Qualifies: orDefault(Disqualified(r, e), "yes"), Anchor: entryAnchor(e),
		Efficiency: cell{Text: "–"}, Worst: cell{Text: "–"}, Server: cell{Text: "–"}, Memory: cell{Text: "–"}, P99: cell{Text: "–"},
		FalseDenials: "–"}
	if a := e.Accuracy; a.IdealAllowed > 0 && a.Efficiency > 0 {
		row.hasEfficiency, row.efficiency, row.gap = true, a.Efficiency, math.Abs(a.Efficiency-1)
		row.Efficiency.Text, row.FalseDenials = Percent(a.Efficiency), Count(a.FalseDenials)
	}
	if w := e.Accuracy.MaxWindowRatio; w > 0 {
		row.hasWorst, row.worst, row.Worst.Text = true, w, Percent(w)
	}
	if s := e.Server.USecPerCall; s > 0 {
		row.hasServer, row.server, row.Server.Text = true, s, Number(s)
	}
	if b := e.Server.BytesPerKey; b > 0 {
		row.hasBytes, row.memory, row.Memory.Text = true, b, Bytes(b)
	}
	row.p99 = e.LatencyUS.P99
	if row.p99 > 0 {
		row.P99.Text = Millis(row.p99)
	}
	return row
}

// markBest marks, in each column, the best value among rows that have one: the efficiency
// closest to 100%, the lowest worst window, Redis time, memory and p99. Equal values are all
// marked.
func markBest(rows []decisionRow) {
	columns := []struct {
		has func(*decisionRow) bool
		val func(*decisionRow) float64
		set func(*decisionRow)
	}{
		{func(r *decisionRow) bool { return r.hasEfficiency }, func(r *decisionRow) float64 { return r.gap }, func(r *decisionRow) { r.Efficiency.Best = true }},
		{func(r *decisionRow) bool { return r.hasWorst }, func(r *decisionRow) float64 { return r.worst }, func(r *decisionRow) { r.Worst.Best = true }},
		{func(r *decisionRow) bool { return r.hasServer }, func(r *decisionRow) float64 { return r.server }, func(r *decisionRow) { r.Server.Best = true }},
		{func(r *decisionRow) bool { return r.hasBytes }, func(r *decisionRow) float64 { return r.memory }, func(r *decisionRow) { r.Memory.Best = true }},
		{func(r *decisionRow) bool { return r.p99 > 0 }, func(r *decisionRow) float64 { return r.p99 }, func(r *decisionRow) { r.P99.Best = true }},
	}
	for _, c := range columns {
		best := math.Inf(1)
		for i := range rows {
			if c.has(&rows[i]) {
				best = math.Min(best, c.val(&rows[i]))
			}
		}
		for i := range rows {
			if c.has(&rows[i]) && c.val(&rows[i]) == best {
				c.set(&rows[i])
			}
		}
	}
}

// entryAnchor is the id of e's details in report.html.
func entryAnchor(e *result.Entry) string { return "entry-" + e.Name() }
