package report

import (
	"fmt"
	"github.com/limitbench/limitbench/result"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteSummary writes the summary table of r to w, one row per entry: algorithm, topology,
// throughput, p50 and p99 latency (from the intended send time), admitted over what an exact
// limiter admitted, errors (failed and unknown requests, with their share of the requests),
// definite violations, the verdict-table label and the contract verified (granularity included:
// a pass that holds only within a stated clock granularity says so). Under the table come one
// line per entry with errors, naming each class with the text of its first error (ErrorsLine),
// and one line per warning. It writes nothing for a result without entries.
func WriteSummary(w io.Writer, r *result.Result) error {
	if len(r.Entries) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ALGORITHM\tTOPOLOGY\tTHROUGHPUT/s\tP50\tP99\tADMITTED/IDEAL\tERRORS\tDEFINITE\tVERDICT\tCONTRACT")
	for i := range r.Entries {
		e := &r.Entries[i]
		ideal := "-"
		if e.Accuracy.IdealAllowed > 0 {
			ideal = fmt.Sprintf("%d/%d", e.Allowed, e.Accuracy.IdealAllowed)
		}
		label := r.LabelOf(e)
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", e.Algorithm, e.Topology, e.ThroughputRPS,
			Micros(e.LatencyUS.P50), Micros(e.LatencyUS.P99), ideal, errorsCell(e), e.Verification.DefiniteViolations, label,
			orDefault(e.Verification.Contract, "none"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for i := range r.Entries {
		e := &r.Entries[i]
		if line := ErrorsLine(e); line != "" {
			fmt.Fprintf(w, "errors: %s %s: %s\n", e.Algorithm, e.Topology, line)
		}
	}
	for i := range r.Entries {
		e := &r.Entries[i]
		for _, wn := range e.Warnings {
			fmt.Fprintf(w, "warning: %s %s: %s\n", e.Algorithm, e.Topology, wn.Message)
		}
	}
	return nil
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
