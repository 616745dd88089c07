package report

import (
	"fmt"
	"github.com/limitbench/limitbench/result"
	"strings"
)

// generatorsLegend explains a merged result's per-generator table.
const generatorsLegend = "One row per generator (segment) merged into this result: its requests, mean throughput and " +
	"late requests over the algorithms measured (the reference script left out), how late it reached the agreed " +
	"start, and its clock's offset to the Redis server's, with the offset's error (every decision time is on the " +
	"server's clock, the error included in its interval)."

// generatorTable returns r's per-generator table, its first row the header; nil when r is not a
// merged result.
func generatorTable(r *result.Result) [][]string {
	if len(r.Generators) == 0 {
		return nil
	}
	out := [][]string{{"segment", "requests", "throughput (/s)", "late", "late start (ms)", "clock offset (ms)", "± error (ms)"}}
	for _, g := range r.Generators {
		out = append(out, []string{
			fmt.Sprintf("%d", g.Segment), fmt.Sprintf("%d", g.Requests), Number(g.ThroughputRPS),
			fmt.Sprintf("%d (%s %%)", g.Late, Number(100*g.LateFraction)), Number(g.LateStartMS),
			Number(g.ClockOffsetUS / 1e3), Number(g.ClockErrorUS / 1e3),
		})
	}
	return out
}

// writeGeneratorsMarkdown writes the Generators section of report.md; nothing without a table.
func writeGeneratorsMarkdown(b *strings.Builder, table [][]string) {
	if len(table) == 0 {
		return
	}
	b.WriteString("## Generators\n\n" + MarkdownText(generatorsLegend) + "\n\n")
	b.WriteString("| " + strings.Join(table[0], " | ") + " |\n|" + strings.Repeat("--:|", len(table[0])) + "\n")
	for _, r := range table[1:] {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	b.WriteString("\n")
}
