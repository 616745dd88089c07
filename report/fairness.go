package report

import (
	"fmt"
	"strings"

	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// fairnessRow is one entry's fairness (verify.Fairness), in words, for the Fairness section.
type fairnessRow struct {
	Algorithm, Topology, Jain, Lowest, Most, Least, Starved string
}

// fairnessLegend explains the Fairness section.
const fairnessLegend = "For limits that several clients share (per subject): each client's share of the admissions " +
	"against its fair share (the max-min fair division of what was admitted among the clients that asked), Jain's " +
	"index of the admissions normalised by the fair shares (1: every client got its fair share; 1/n: one of n took " +
	"everything), averaged over the shared subjects weighted by admissions, and the subject with the lowest; and the " +
	"longest run of denials, one after the other, of a client that got less than its fair share of a subject."

// fairnessRows returns the fairness of every entry of r that has one, in r's order.
func fairnessRows(r *result.Result) []fairnessRow {
	var out []fairnessRow
	for i := range r.Entries {
		e := &r.Entries[i]
		f := e.Fairness
		if f == nil || r.IsReference(e) {
			continue
		}
		row := fairnessRow{Algorithm: e.Algorithm, Topology: e.Topology, Jain: fmt.Sprintf("%.3f over %d %s", f.Jain, f.Subjects, Plural(int64(f.Subjects), "subject", "subjects")),
			Lowest: "–", Most: "–", Least: "–", Starved: "none"}
		if f.JainMinSubject == "" && f.Jain == 0 {
			row.Jain = "– (nothing admitted)"
			out = append(out, row)
			continue
		}
		if f.JainMinSubject != "" {
			row.Lowest = fmt.Sprintf("%.3f (%s)", f.JainMin, f.JainMinSubject)
		}
		if most, least, ok := extremes(f.Clients); ok {
			row.Most, row.Least = shareWords(most), shareWords(least)
		}
		if s := f.Starved; s != nil {
			row.Starved = fmt.Sprintf("%s on %s: %s denials from %s to %s", s.Client, s.Subject, Count(s.Denials), seconds(s.FromS), seconds(s.ToS))
		}
		out = append(out, row)
	}
	return out
}

// extremes returns the clients with the largest and the smallest share over fair share.
func extremes(cs []verify.ClientShare) (most, least verify.ClientShare, ok bool) {
	ratio := func(c verify.ClientShare) float64 {
		if c.Fair <= 0 {
			return 0
		}
		return c.Share / c.Fair
	}
	for i, c := range cs {
		if i == 0 || ratio(c) > ratio(most) {
			most = c
		}
		if i == 0 || ratio(c) < ratio(least) {
			least = c
		}
	}
	return most, least, len(cs) > 0
}

// shareWords is a client's share against its fair share: "c3: 12.5% (fair 8.3%)".
func shareWords(c verify.ClientShare) string {
	return fmt.Sprintf("%s: %s (fair %s)", c.Client, Percent(c.Share), Percent(c.Fair))
}

// writeFairnessMarkdown writes the Fairness section of report.md, inside a collapsed block.
func writeFairnessMarkdown(b *strings.Builder, rows []fairnessRow) {
	if len(rows) == 0 {
		return
	}
	openDetails(b, "Fairness among clients sharing a limit")
	b.WriteString("## Fairness\n\n")
	b.WriteString("| algorithm | topology | Jain's index | lowest subject | most favoured | least favoured | longest run of denials under the fair share |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, f := range rows {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", MarkdownCell(f.Algorithm), MarkdownCell(f.Topology), f.Jain,
			MarkdownCell(f.Lowest), MarkdownCell(f.Most), MarkdownCell(f.Least), MarkdownCell(f.Starved))
	}
	fmt.Fprintf(b, "\n%s\n\n", MarkdownText(fairnessLegend))
	closeDetails(b)
}

// openDetails opens a collapsed block of report.md (GitHub renders <details>), its summary s;
// closeDetails closes it.
func openDetails(b *strings.Builder, s string) {
	fmt.Fprintf(b, "<details><summary>%s</summary>\n\n", strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s))
}

func closeDetails(b *strings.Builder) { b.WriteString("</details>\n\n") }
