package report

import (
	"fmt"
	"github.com/limitbench/limitbench/result"
	"strings"
)

// faultRow is one injected fault in one measurement, for the Faults section of the reports.
type faultRow struct {
	Algorithm, Topology, Fault, Nodes, Window string
	// State says whether the fault lost the limiter's state, and how.
	State                               string
	Excess, Violations, Unknown, Failed string
	NoScript, BackAfter, Error          string
}

// faultRows returns a row per fault of every entry of r that injected faults, in entry order.
func faultRows(r *result.Result) []faultRow {
	var out []faultRow
	for i := range r.Entries {
		e := &r.Entries[i]
		for _, f := range e.Verification.Faults {
			row := faultRow{Algorithm: e.Algorithm, Topology: e.Topology, Fault: f.Name, Nodes: strings.Join(f.Nodes, " "),
				Window: "not injected", State: "kept", Excess: Count(f.Excess), Violations: Count(f.Violations),
				Unknown: Count(f.Unknown), Failed: Count(f.Failed), NoScript: Count(f.NoScript), BackAfter: "–", Error: f.Error}
			if f.UntilS != 0 || f.ToS != 0 {
				row.Window = fmt.Sprintf("%.3fs–%.3fs, recovery to %.3fs", f.FromS, f.ToS, f.UntilS)
			}
			if f.StateLost {
				row.State = "may be lost: " + f.StateLoss
			}
			if f.Omitted > 0 {
				row.Excess += fmt.Sprintf(" (%d violations not listed)", f.Omitted)
			}
			if f.BackAfterS >= 0 {
				row.BackAfter = fmt.Sprintf("%.3fs", f.BackAfterS)
			}
			out = append(out, row)
		}
	}
	return out
}

// faultsLegend explains the Faults table.
const faultsLegend = "Each fault the scenario injected, in each measurement. window: when it acted and the end of its " +
	"recovery, seconds from the start of the measured part; violations and admissions inside it are the fault's. " +
	"excess: permits admitted beyond the contract because of it (summed over the contract's limits, the largest " +
	"excess of a definite violation in its window; a state lost at a restart shows here, not as the algorithm's " +
	"violation). unknown: requests in its window whose outcome is unknown, never counted as admissions. " +
	"back after: from its end until a request sent then was decided."

// writeFaultsMarkdown writes the Faults section of report.md, when r injected faults.
func writeFaultsMarkdown(b *strings.Builder, r *result.Result) {
	rows := faultRows(r)
	if len(rows) == 0 {
		return
	}
	b.WriteString("## Faults\n\n")
	b.WriteString("| algorithm | topology | fault | nodes | window | state | excess | violations | unknown | failed | NOSCRIPT | back after | error |\n")
	b.WriteString("|---|---|---|---|---|---|--:|--:|--:|--:|--:|--:|---|\n")
	for _, f := range rows {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			MarkdownCell(f.Algorithm), MarkdownCell(f.Topology), MarkdownCell(f.Fault), MarkdownCell(f.Nodes),
			MarkdownCell(f.Window), MarkdownCell(f.State), f.Excess, f.Violations, f.Unknown, f.Failed, f.NoScript,
			f.BackAfter, MarkdownCell(f.Error))
	}
	fmt.Fprintf(b, "\n%s\n\n", MarkdownText(faultsLegend))
}

// faultsHTML is the Faults section of report.html (a template fragment over view).
const faultsHTML = `{{if .Faults}}<h2>Faults</h2>
<div class="wrap"><table class="v">
<thead><tr><th>algorithm</th><th>topology</th><th>fault</th><th>nodes</th><th>window</th><th>state</th><th>excess</th><th>violations</th><th>unknown</th><th>failed</th><th>NOSCRIPT</th><th>back after</th><th>error</th></tr></thead>
<tbody>{{range .Faults}}
<tr><td>{{.Algorithm}}</td><td>{{.Topology}}</td><td>{{.Fault}}</td><td>{{.Nodes}}</td><td>{{.Window}}</td><td>{{.State}}</td><td class="n">{{.Excess}}</td><td class="n">{{.Violations}}</td><td class="n">{{.Unknown}}</td><td class="n">{{.Failed}}</td><td class="n">{{.NoScript}}</td><td class="n">{{.BackAfter}}</td><td>{{.Error}}</td></tr>{{end}}
</tbody></table></div>
<p>` + faultsLegend + `</p>
{{end}}`
