package capacity

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/limitbench/limitbench/report"
)

// summaryRows are the headline figures, label and value, shared by the text and Markdown forms.
func (c *Result) summaryRows() [][2]string {
	rows := [][2]string{
		{"algorithm", fmt.Sprintf("%s on %s (%s, Redis %s)", c.Algorithm, c.Topology, c.Environment.Backend, c.Environment.RedisVersion)},
	}
	slo := c.SLO
	if slo == "" {
		slo = "none"
	}
	rows = append(rows, [2]string{"objective", fmt.Sprintf("%s; achieved ≥ %.0f%% of offered; generator on schedule", slo, c.FollowRatio*100)})
	rows = append(rows, [2]string{"sustainable rate", report.Rate(c.SustainableRPS) + "/s" + c.boundText()})
	if c.Masters > 1 {
		rows = append(rows, [2]string{"per shard", fmt.Sprintf("%s/s (%d masters)", report.Rate(c.ShardRPS), c.Masters)})
	}
	if c.Probe != nil {
		clients := 0
		if st := c.Scenario.Settings; st != nil {
			clients = st.Clients
		}
		rows = append(rows, [2]string{"closed-loop saturation", fmt.Sprintf("%s/s (%d clients, p99 %s)",
			report.Rate(c.Probe.AchievedRPS), clients, report.Micros(c.Probe.LatencyUS.P99))})
	}
	rows = append(rows,
		[2]string{"Redis CPU per decision", fmt.Sprintf("%.2f µs (Redis's own time per call %.2f µs)", c.CPUUSecPerDecision, c.USecPerCall)},
		[2]string{"bytes per subject", c.memoryText()},
		[2]string{"CPU pinning", c.Pinning.Note},
		[2]string{"CPU idle states", c.Pinning.awakeText()},
		[2]string{"machine noise", c.Noise.text()},
		[2]string{"steps", fmt.Sprintf("%d of %gs each (after %gs warmup), bisected to %.0f%%", len(c.Steps), c.StepS, c.WarmupS, c.Resolution*100)},
	)
	return rows
}

// awakeText says what was done with the CPUs' idle states; results written before the field
// existed say nothing.
func (p Pinning) awakeText() string {
	if p.AwakeNote == "" {
		return "not recorded"
	}
	return p.AwakeNote
}

func (c *Result) boundText() string {
	if c.FirstBadRPS == 0 {
		return " (no step failed)"
	}
	return fmt.Sprintf(" (%s/s failed: %s)", report.Rate(c.FirstBadRPS), c.Bound)
}

func (c *Result) memoryText() string {
	m := c.Memory
	if m.Subjects == 0 {
		s := "not measured"
		if m.Note != "" {
			s += ": " + m.Note
		}
		return s
	}
	s := fmt.Sprintf("%s (used_memory delta over %d subjects, %d request(s) each); MEMORY USAGE %s",
		report.Bytes(m.BytesPerSubject), m.Subjects, m.RequestsPerSubject, report.Bytes(m.MemoryUsagePerSubject))
	if m.LoadBytesPerSubject > 0 {
		s += fmt.Sprintf("; under the sweep's load %s", report.Bytes(m.LoadBytesPerSubject))
	}
	if m.Note != "" {
		s += "; " + m.Note
	}
	return s
}

// WriteText writes the summary, the steps and the projection as aligned plain text, for a
// terminal.
func (c *Result) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	if warn := c.Noise.Warning(); warn != "" {
		fmt.Fprintf(tw, "warning: %s.\n\n", warn)
	}
	for _, r := range c.summaryRows() {
		fmt.Fprintf(tw, "%s:\t%s\n", r[0], r[1])
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "PHASE\tOFFERED/s\tACHIEVED/s\tP50\tP99\tCPU µs/decision\tRESULT")
	for _, s := range c.allSteps() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.2f\t%s\n", s.Phase, offeredText(s), report.Rate(s.AchievedRPS),
			report.Micros(s.LatencyUS.P50), report.Micros(s.LatencyUS.P99), s.CPUUSecPerDecision, stepResult(s))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "SUBJECTS\tMEMORY\t\tDECISIONS/s\tSHARDS")
	p := c.Projection
	for i := 0; i < max(len(p.Memory), len(p.Shards)); i++ {
		var a, b, d, e string
		if i < len(p.Memory) {
			a, b = report.Count(p.Memory[i].Subjects), report.Bytes(p.Memory[i].Bytes)
		}
		if i < len(p.Shards) {
			d, e = report.Rate(p.Shards[i].DecisionsPerSecond), fmt.Sprint(p.Shards[i].Shards)
		}
		fmt.Fprintf(tw, "%s\t%s\t\t%s\t%s\n", a, b, d, e)
	}
	if len(p.Shards) > 0 {
		fmt.Fprintf(tw, "shards = ceil(rate / (%s × %.1f)), %.0f%% headroom\n", report.Rate(c.ShardRPS), 1-p.Headroom, p.Headroom*100)
	}
	for _, n := range c.Notes {
		fmt.Fprintf(tw, "note: %s\n", n)
	}
	return tw.Flush()
}

// WriteMarkdown writes the same as WriteText as a Markdown document.
func (c *Result) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Capacity of %s on one %s shard\n\n", c.Algorithm, c.Topology)
	if warn := c.Noise.Warning(); warn != "" {
		fmt.Fprintf(&b, "> **Warning:** %s.\n\n", report.MarkdownCell(warn))
	}
	b.WriteString("| | |\n|---|---|\n")
	for _, r := range c.summaryRows() {
		fmt.Fprintf(&b, "| %s | %s |\n", r[0], report.MarkdownCell(r[1]))
	}
	b.WriteString("\n## Steps\n\n| phase | offered/s | achieved/s | p50 | p99 | CPU µs/decision | result |\n|---|--:|--:|--:|--:|--:|---|\n")
	for _, s := range c.allSteps() {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.2f | %s |\n", s.Phase, offeredText(s), report.Rate(s.AchievedRPS),
			report.Micros(s.LatencyUS.P50), report.Micros(s.LatencyUS.P99), s.CPUUSecPerDecision, report.MarkdownCell(stepResult(s)))
	}
	p := c.Projection
	if len(p.Memory) > 0 {
		b.WriteString("\n## Memory\n\n| subjects | memory |\n|--:|--:|\n")
		for _, m := range p.Memory {
			fmt.Fprintf(&b, "| %s | %s |\n", report.Count(m.Subjects), report.Bytes(m.Bytes))
		}
	}
	if len(p.Shards) > 0 {
		fmt.Fprintf(&b, "\n## Shards\n\nshards = ceil(rate / (%s × %.1f)): %.0f%% headroom on each shard's sustainable rate.\n\n| decisions/s | shards |\n|--:|--:|\n",
			report.Rate(c.ShardRPS), 1-p.Headroom, p.Headroom*100)
		for _, s := range p.Shards {
			fmt.Fprintf(&b, "| %s | %d |\n", report.Rate(s.DecisionsPerSecond), s.Shards)
		}
	}
	if slices.Contains(c.Files, FigureName+".png") {
		fmt.Fprintf(&b, "\n![Achieved rate and p99 against offered rate](%s.png)\n", FigureName)
	}
	for i, n := range c.Notes {
		if i == 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "- note: %s\n", report.MarkdownCell(n))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// allSteps returns the probe (if any) then the steps.
func (c *Result) allSteps() []Step {
	var out []Step
	if c.Probe != nil {
		out = append(out, *c.Probe)
	}
	return append(out, c.Steps...)
}

func offeredText(s Step) string {
	if s.Phase == PhaseProbe {
		return "closed loop"
	}
	return report.Rate(s.OfferedRPS)
}

func stepResult(s Step) string {
	switch {
	case s.Phase == PhaseProbe:
		return "saturation"
	case s.Good && s.Note != "":
		return "good: " + s.Note
	case s.Good:
		return "good"
	case s.Superseded:
		return "bad: " + s.Reason + "; measured again"
	}
	return "bad: " + s.Reason
}
