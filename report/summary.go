package report

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteSummary writes the summary table of r to w, one row per entry: algorithm, topology,
// throughput, p50 and p99 latency (from the intended send time), admitted over what an exact
// limiter admitted, definite violations, the verdict-table label and the contract verified
// (granularity included: a pass that holds only within a stated clock granularity says so). It
// writes nothing for a result without entries.
func WriteSummary(w io.Writer, r *Result) error {
	if len(r.Entries) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ALGORITHM\tTOPOLOGY\tTHROUGHPUT/s\tP50\tP99\tADMITTED/IDEAL\tDEFINITE\tVERDICT\tCONTRACT")
	for i := range r.Entries {
		e := &r.Entries[i]
		ideal := "-"
		if e.Accuracy.IdealAllowed > 0 {
			ideal = fmt.Sprintf("%d/%d", e.Allowed, e.Accuracy.IdealAllowed)
		}
		label := r.LabelOf(e)
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%s\t%s\t%s\t%d\t%s\t%s\n", e.Algorithm, e.Topology, e.ThroughputRPS,
			Micros(e.LatencyUS.P50), Micros(e.LatencyUS.P99), ideal, e.Verification.DefiniteViolations, label,
			orDefault(e.Verification.Contract, "none"))
	}
	return tw.Flush()
}
