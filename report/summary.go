package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// WriteSummary writes the summary table of r to w within TerminalWidth columns, one row per
// entry: algorithm, topology, throughput, p99 latency (from the intended send time), admitted
// over what an exact limiter admitted, errors (failed and unknown requests, with their share of
// the requests), definite violations and the verdict-table label (wrapped when the table would be
// wider). Under the table, wrapped to the width: the algorithm recommended on each topology by
// Recommend's rule and why each entry that did not pass got its verdict (Why); then, whole (they
// quote Redis and carry commands to copy), one line per entry with errors naming each class with
// the text of its first error (ErrorsLine), and one line per warning. It writes nothing for a
// result without entries.
func WriteSummary(w io.Writer, r *result.Result) error { return writeSummary(w, r, false) }

// WriteWideSummary is WriteSummary with every column (p50 latency and the contract verified, its
// granularity included: a pass that holds only within a stated clock granularity says so) and
// nothing wrapped, whatever the width: `limitbench run --wide`.
func WriteWideSummary(w io.Writer, r *result.Result) error { return writeSummary(w, r, true) }

func writeSummary(w io.Writer, r *result.Result, wide bool) error {
	if len(r.Entries) == 0 {
		return nil
	}
	t := Table{Header: []string{"ALGORITHM", "TOPOLOGY", "RATE/s", "P99", "ADMITTED/IDEAL", "ERRORS", "DEFINITE", "VERDICT"},
		Right: []bool{false, false, true, true, true, true, true, false}, Wrap: 7}
	width := TerminalWidth
	if wide {
		t.Header = []string{"ALGORITHM", "TOPOLOGY", "THROUGHPUT/s", "P50", "P99", "ADMITTED/IDEAL", "ERRORS", "DEFINITE", "VERDICT", "CONTRACT"}
		t.Right = []bool{false, false, true, true, true, true, true, true, false, false}
		t.Wrap, width = -1, 0
	}
	for i := range r.Entries {
		e := &r.Entries[i]
		ideal := "-"
		if e.Accuracy.IdealAllowed > 0 {
			ideal = fmt.Sprintf("%d/%d", e.Allowed, e.Accuracy.IdealAllowed)
		}
		row := []string{e.Algorithm, e.Topology, fmt.Sprintf("%.0f", e.ThroughputRPS), Micros(e.LatencyUS.P99), ideal, errorsCell(e),
			fmt.Sprint(e.Verification.DefiniteViolations), r.LabelOf(e)}
		if wide {
			row = []string{e.Algorithm, e.Topology, fmt.Sprintf("%.0f", e.ThroughputRPS), Micros(e.LatencyUS.P50), Micros(e.LatencyUS.P99),
				ideal, errorsCell(e), fmt.Sprint(e.Verification.DefiniteViolations), r.LabelOf(e), orDefault(e.Verification.Contract, "none")}
		}
		t.Rows = append(t.Rows, row)
	}
	var b strings.Builder
	if err := t.Write(&b, width); err != nil {
		return err
	}
	for _, line := range summaryNotes(r) {
		b.WriteString(Paragraph(line[0], line[1], width))
	}
	// Errors and warnings are not wrapped: they quote Redis's words, which a user searches for,
	// and a warning's command is copied whole.
	for i := range r.Entries {
		e := &r.Entries[i]
		if line := ErrorsLine(e); line != "" {
			fmt.Fprintf(&b, "errors: %s %s: %s\n", e.Algorithm, e.Topology, line)
		}
	}
	for i := range r.Entries {
		e := &r.Entries[i]
		for _, wn := range e.Warnings {
			fmt.Fprintf(&b, "warning: %s %s: %s\n", e.Algorithm, e.Topology, wn.Message)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// summaryNotes returns the summary's wrapped lines under its table, each as its lead and its
// text: the recommendations and the reasons of every entry that did not pass.
func summaryNotes(r *result.Result) [][2]string {
	var out [][2]string
	for _, topo := range topologies(r) {
		verified := false
		for _, e := range entriesOn(r, topo) {
			verified = verified || (!r.IsReference(e) && e.Verification.Contract != "" && e.Verification.Contract != "none")
		}
		if !verified {
			continue
		}
		rec := Recommend(r, topo)
		if rec == "" {
			rec = "none qualifies"
		}
		out = append(out, [2]string{"recommended on " + topo + ": ", rec + " (the least Redis time per decision among the passes with an efficiency of at least 99%)"})
	}
	for i := range r.Entries {
		e := &r.Entries[i]
		if label := r.LabelOf(e); label != string(verify.Pass) && label != result.LabelReference {
			if why := Why(r, e); why != "" {
				out = append(out, [2]string{fmt.Sprintf("why %s %s (%s): ", e.Algorithm, e.Topology, label), why})
			}
		}
	}
	return out
}

// errorsCell is the summary table's errors of e: failed and unknown requests and their share of
// e's requests ("590 (59%)"), or "0".
func errorsCell(e *result.Entry) string {
	n := e.Errors + e.Unknown
	if n == 0 || e.Requests == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", n, Percent(float64(n)/float64(e.Requests)))
}

// ErrorsLine describes e's errors by class in words, the most frequent first, each with the text
// of its first error and when it came: `590 OOM (failed, first at 0.41s: "gcra: OOM command not
// allowed when used memory > 'maxmemory'.")`; "" when e has none.
func ErrorsLine(e *result.Entry) string {
	parts := make([]string, 0, len(e.ErrorClasses))
	for _, c := range e.ErrorClasses {
		parts = append(parts, fmt.Sprintf("%d %s (%s, first at %ss: %q)", c.Count, c.Kind, c.Outcome, Number(c.FirstAtS), c.First))
	}
	return strings.Join(parts, "; ")
}
