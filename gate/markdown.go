package gate

import (
	"fmt"
	"github.com/limitbench/limitbench/result"
	"io"
	"math"
	"strconv"
	"strings"
)

// summary returns the report's one line: what failed or could not be ruled out, the counts, the
// figures compared, and whether the gate fails.
func (g *Report) summary() string {
	var b strings.Builder
	regs, incs := g.RowsWith(Regression), g.RowsWith(Inconclusive)
	switch {
	case len(regs) > 0:
		fmt.Fprintf(&b, "limitbench gate: REGRESSION in scenario %s:", g.Scenario)
		listRows(&b, regs, func(r Row) string {
			if r.Metric == result.Verdict {
				return fmt.Sprintf("%s/%s verdict %s → %s", r.Algorithm, r.Topology, r.OldOutcome, r.NewOutcome)
			}
			return fmt.Sprintf("%s/%s %s %s", r.Algorithm, r.Topology, r.Metric, formatDelta(r))
		})
	case len(incs) > 0:
		fmt.Fprintf(&b, "limitbench gate: INCONCLUSIVE in scenario %s: cannot rule out a regression in", g.Scenario)
		listRows(&b, incs, func(r Row) string {
			if r.Metric == result.Verdict {
				return fmt.Sprintf("%s/%s verdict %s → %s", r.Algorithm, r.Topology, r.OldOutcome, r.NewOutcome)
			}
			return fmt.Sprintf("%s/%s %s (up to %s, threshold %s)", r.Algorithm, r.Topology, r.Metric,
				formatSigned(r, worseEnd(r)), formatThreshold(r))
		})
	default:
		fmt.Fprintf(&b, "limitbench gate: no regression in scenario %s.", g.Scenario)
	}
	if len(g.LoadDiffers) > 0 {
		fmt.Fprintf(&b, " The runs' loads differ (%s): every change below is the load's as much as the code's.", describeLoads(g.LoadDiffers))
	}
	c := g.Counts
	fmt.Fprintf(&b, " %d rows: %d regression%s, %d inconclusive, %d improvement%s, %d insignificant, %d ok; ",
		len(g.Rows), c.Regressions, plural(c.Regressions), c.Inconclusive, c.Improvements, plural(c.Improvements), c.Insignificant, c.OK)
	relative := 0
	for _, r := range g.Rows {
		if r.Figures == FiguresRelative {
			relative++
		}
	}
	switch {
	case !g.SameMachine:
		b.WriteString("relative figures (machines differ).")
	case relative > 0:
		fmt.Fprintf(&b, "same machine, %d row%s on ratios to the reference.", relative, plural(relative))
	default:
		b.WriteString("raw figures (same machine).")
	}
	switch {
	case g.Failed:
		b.WriteString(" The gate fails.")
	case c.Inconclusive > 0:
		b.WriteString(" Inconclusive rows do not fail the gate (--fail-inconclusive makes them fail).")
	}
	return b.String()
}

// worseEnd returns the end of r's interval on the worse side, signed as the delta is.
func worseEnd(r Row) float64 {
	for _, d := range metricDefs {
		if d.metric == r.Metric {
			return signedReach(r, d)
		}
	}
	return r.DeltaHigh
}

// listRows writes at most five rows with what, comma-separated, then "and N more", then ".".
func listRows(b *strings.Builder, rows []Row, what func(Row) string) {
	for i, r := range rows {
		if i == 5 {
			fmt.Fprintf(b, " and %d more", len(rows)-5)
			break
		}
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(" " + what(r))
	}
	b.WriteString(".")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Markdown writes the report for a pull-request comment: the one-line summary, a paragraph saying
// which figures were compared and by which rule, the table, and the notes.
func (g *Report) Markdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("**" + escape(g.Summary) + "**\n\n")
	switch {
	case !g.SameMachine:
		fmt.Fprintf(&b, "Figures: **relative** to the reference script `%s` (per-repeat ratios to it, measured in the same round, shown as ×); machines differ: baseline %s, current %s. Efficiency and verdicts are compared as they are.",
			g.Reference, escape(g.BaselineMachine), escape(g.CurrentMachine))
	case g.Reference != "":
		fmt.Fprintf(&b, "Figures: both runs on the same machine (%s); each row compares the raw figures or the per-repeat ratios to the reference script `%s` measured in the same round (metric marked ×ref), whichever detects smaller changes once the raw figures' drift (the reference's own change between the runs) is counted.",
			escape(g.BaselineMachine), g.Reference)
	default:
		fmt.Fprintf(&b, "Figures: **raw**; both runs on the same machine (%s); no reference script, so no per-repeat ratios.", escape(g.BaselineMachine))
	}
	inconclusive := "it passes (`--fail-inconclusive` makes it fail)"
	if g.Policy.FailInconclusive {
		inconclusive = "it fails (`--fail-inconclusive`)"
	}
	fmt.Fprintf(&b, " Thresholds %s. A **regression** (or improvement) is a change whose whole %.0f%% confidence interval (Hodges-Lehmann, from the Mann-Whitney U test) lies beyond its threshold, whatever the spread. A row whose interval reaches beyond the threshold while its samples cannot detect a change of threshold size (the detectable change, at %.0f%% power, is larger) is **inconclusive**: it cannot rule out a regression; %s.\n\n",
		g.Policy.Thresholds, (1-g.Alpha)*100, g.Power*100, inconclusive)
	fmt.Fprintf(&b, "| scenario | algorithm | topology | metric | old median | new median | delta | %.0f%% CI of delta | p-value | detectable | verdict |\n", (1-g.Alpha)*100)
	b.WriteString("|---|---|---|---|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range g.Rows {
		verdict := string(r.Verdict)
		switch r.Verdict {
		case Regression:
			verdict = "**regression**"
		case Inconclusive:
			verdict = "**inconclusive**"
		}
		if r.Note != "" {
			verdict += " (" + escape(r.Note) + ")"
		}
		if r.Metric == result.Verdict {
			fmt.Fprintf(&b, "| %s | %s | %s | verdict | %s | %s | — | — | — | — | %s |\n",
				escape(r.Scenario), escape(r.Algorithm), escape(r.Topology), escape(underContract(r.OldOutcome, r.OldContract)),
				escape(underContract(r.NewOutcome, r.NewContract)), verdict)
			continue
		}
		metric := string(r.Metric)
		if r.Figures == FiguresRelative {
			metric += " (×ref)"
		} else {
			metric += " (" + r.Unit + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			escape(r.Scenario), escape(r.Algorithm), escape(r.Topology), metric,
			formatValue(r, r.OldMedian), formatValue(r, r.NewMedian), formatDelta(r), formatCI(r), formatP(r.P),
			formatDetectable(r), verdict)
	}
	if len(g.Notes) > 0 {
		b.WriteString("\nNotes:\n")
		for _, n := range g.Notes {
			b.WriteString("- " + escape(n) + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// underContract is a verdict row's outcome with the contract it was reached under: "pass under
// fixed-window(10, 1s, granularity 1ms)"; the outcome alone without a contract.
func underContract(outcome, contract string) string {
	if contract == "" || contract == "none" {
		return outcome
	}
	return outcome + " under " + contract
}

// JSON writes g as indented JSON.
func (g *Report) JSON(w io.Writer) error { return writeJSON(w, g) }

func formatValue(r Row, v float64) string {
	switch {
	case r.Figures == FiguresRelative:
		return strconv.FormatFloat(v, 'f', 3, 64) + "×"
	case r.Metric == result.Efficiency:
		return strconv.FormatFloat(v*100, 'f', 2, 64) + "%"
	}
	a := math.Abs(v)
	switch {
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func formatDelta(r Row) string { return formatSigned(r, r.Delta) }

// formatSigned writes v, in r's delta unit, with a sign: "+1.5%", "-2.0pt".
func formatSigned(r Row, v float64) string { return signed(v) + r.DeltaUnit }

// formatAmount writes v, in r's delta unit, without a sign: "14.2%".
func formatAmount(r Row, v float64) string {
	if math.IsInf(v, 1) {
		return "∞" + r.DeltaUnit
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + r.DeltaUnit
}

// formatThreshold writes r's threshold with its unit: "10%", "1pt".
func formatThreshold(r Row) string {
	return strconv.FormatFloat(r.Threshold, 'f', -1, 64) + r.DeltaUnit
}

// formatDetectable writes r's MDE, and when it is above the threshold the repeats that would
// reach it: "4.2%", "18.3% (10% needs 20 repeats)".
func formatDetectable(r Row) string {
	s := formatAmount(r, r.MDE)
	if r.MDE <= r.Threshold {
		return s
	}
	if r.RepeatsNeeded == 0 {
		return s + " (no number of repeats reaches " + formatThreshold(r) + ")"
	}
	return fmt.Sprintf("%s (%s needs %d repeats)", s, formatThreshold(r), r.RepeatsNeeded)
}

// formatCI writes r's confidence interval of the delta as "[lo, hi]" with r's unit.
func formatCI(r Row) string {
	return "[" + signed(r.DeltaLow) + ", " + signed(r.DeltaHigh) + "]" + r.DeltaUnit
}

// signed writes v with one decimal and a sign ("+1.5", "-2.0", "0.0", "-∞").
func signed(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+∞"
	case math.IsInf(v, -1):
		return "-∞"
	}
	d := strconv.FormatFloat(v, 'f', 1, 64)
	switch {
	case d == "-0.0":
		d = "0.0"
	case v > 0 && d != "0.0":
		d = "+" + d
	}
	return d
}

func formatP(p float64) string {
	if p < 0.001 {
		return "<0.001"
	}
	return strconv.FormatFloat(p, 'f', 3, 64)
}

// escape keeps s from breaking a Markdown table cell.
func escape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
