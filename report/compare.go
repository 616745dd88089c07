package report

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/limitbench/limitbench/result"
	"html/template"
	"io"
	"math"
	"path/filepath"
	"strings"
	"time"
)

// Names of the comparison files WriteComparison writes.
const (
	ComparisonMarkdownFile = "comparison.md"
	ComparisonHTMLFile     = "comparison.html"
)

// ErrTooFewResults is returned by Compare when given fewer than two results.
var ErrTooFewResults = errors.New("report: a comparison needs at least two results")

// Comparison is run-against-run differences: every later result against the first (the baseline),
// entry by entry for the same algorithm on the same topology.
type Comparison struct {
	// Labels name the runs in Results order; Compare sets them from scenario and start time, and a
	// caller may replace them (for example with file names) before writing.
	Labels  []string
	Results []*result.Result
}

// Compare returns the comparison of results, the first being the baseline. It fails with
// ErrTooFewResults for fewer than two.
func Compare(results []*result.Result) (*Comparison, error) {
	if len(results) < 2 {
		return nil, ErrTooFewResults
	}
	c := &Comparison{Results: results}
	for i, r := range results {
		l := orDefault(r.Scenario.Name, "run")
		if !r.StartedAt.IsZero() {
			l += " " + r.StartedAt.UTC().Format(time.RFC3339)
		}
		c.Labels = append(c.Labels, fmt.Sprintf("%s (#%d)", l, i+1))
	}
	return c, nil
}

// DeltaRow is one algorithm × topology of one run against the baseline. Fields are formatted for
// display; Changed is true when the verdict differs.
type DeltaRow struct {
	Algorithm, Topology                             string
	Throughput, P50, P99, Efficiency, BytesPerKey   string
	BaseVerdict, Verdict                            string
	Changed                                         bool
	ThroughputClass, P50Class, P99Class, BytesClass string
	EfficiencyClass                                 string
	OnlyIn                                          string // "baseline" or "this run" when the entry is in one only
}

// DeltaSection is one run against the baseline.
type DeltaSection struct {
	Baseline, Run string
	Rows          []DeltaRow
}

// Sections returns one section per later run, rows in the run's entry order followed by entries
// only the baseline has.
func (c *Comparison) Sections() []DeltaSection {
	base := c.Results[0]
	var out []DeltaSection
	for i := 1; i < len(c.Results); i++ {
		r := c.Results[i]
		sec := DeltaSection{Baseline: c.Labels[0], Run: c.Labels[i]}
		for j := range r.Entries {
			e := &r.Entries[j]
			b := base.Entry(e.Algorithm, e.Topology)
			if b == nil {
				sec.Rows = append(sec.Rows, DeltaRow{Algorithm: e.Algorithm, Topology: e.Topology, Verdict: r.LabelOf(e), OnlyIn: "this run"})
				continue
			}
			row := DeltaRow{Algorithm: e.Algorithm, Topology: e.Topology, BaseVerdict: base.LabelOf(b), Verdict: r.LabelOf(e)}
			row.Changed = row.BaseVerdict != row.Verdict
			row.Throughput, row.ThroughputClass = delta(b.ThroughputRPS, e.ThroughputRPS, Number, true)
			row.P50, row.P50Class = delta(b.LatencyUS.P50, e.LatencyUS.P50, Millis, false)
			row.P99, row.P99Class = delta(b.LatencyUS.P99, e.LatencyUS.P99, Millis, false)
			row.Efficiency, row.EfficiencyClass = deltaPoints(b.Accuracy.Efficiency, e.Accuracy.Efficiency)
			row.BytesPerKey, row.BytesClass = delta(b.Server.BytesPerKey, e.Server.BytesPerKey, Number, false)
			sec.Rows = append(sec.Rows, row)
		}
		for j := range base.Entries {
			b := &base.Entries[j]
			if r.Entry(b.Algorithm, b.Topology) == nil {
				sec.Rows = append(sec.Rows, DeltaRow{Algorithm: b.Algorithm, Topology: b.Topology, BaseVerdict: base.LabelOf(b), OnlyIn: "baseline"})
			}
		}
		out = append(out, sec)
	}
	return out
}

// delta formats "base → new (+x%)" and classifies the change as "up" (better) or "down" (worse)
// when it exceeds 5%; higherBetter says which direction is better.
func delta(base, now float64, format func(float64) string, higherBetter bool) (string, string) {
	if base == 0 && now == 0 {
		return "–", ""
	}
	s := format(base) + " → " + format(now)
	if base == 0 {
		return s, ""
	}
	change := (now - base) / base
	s += fmt.Sprintf(" (%+.1f%%)", change*100)
	if math.Abs(change) < 0.05 {
		return s, ""
	}
	if (change > 0) == higherBetter {
		return s, "up"
	}
	return s, "down"
}

// deltaPoints formats an efficiency change in percentage points; closer to 1 is better.
func deltaPoints(base, now float64) (string, string) {
	if base == 0 && now == 0 {
		return "–", ""
	}
	d := (now - base) * 100
	s := fmt.Sprintf("%s → %s (%+.1f pt)", Percent(base), Percent(now), d)
	switch {
	case math.Abs(d) < 1:
		return s, ""
	case math.Abs(now-1) < math.Abs(base-1):
		return s, "up"
	}
	return s, "down"
}

// WriteMarkdown writes the comparison as Markdown tables, one per run against the baseline.
func (c *Comparison) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# limitbench comparison\n\n")
	b.WriteString("Each run against the baseline, for the same algorithm on the same topology. Latency is from each request's intended send time; efficiency is admissions as a share of an exact limiter's.\n\n")
	for i, l := range c.Labels {
		role := "run"
		if i == 0 {
			role = "baseline"
		}
		r := c.Results[i]
		fmt.Fprintf(&b, "- %s: %s (%s, %s, Redis %s, harness %s)\n", role, MarkdownText(l), MarkdownText(r.Environment.Backend),
			MarkdownText(r.Environment.Topology), MarkdownText(r.Environment.RedisVersion), MarkdownText(strings.TrimSpace(r.Environment.HarnessVersion)))
	}
	b.WriteString("\n")
	for _, sec := range c.Sections() {
		fmt.Fprintf(&b, "## %s against %s\n\n", MarkdownText(sec.Run), MarkdownText(sec.Baseline))
		b.WriteString("| algorithm | topology | verdict | throughput (/s) | p50 (ms) | p99 (ms) | efficiency | bytes per subject |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|\n")
		for _, r := range sec.Rows {
			verdict := MarkdownCell(r.Verdict)
			switch {
			case r.OnlyIn == "baseline":
				verdict = "only in baseline (" + MarkdownCell(r.BaseVerdict) + ")"
			case r.OnlyIn != "":
				verdict = "only in this run (" + verdict + ")"
			case r.Changed:
				verdict = "**" + MarkdownCell(r.BaseVerdict) + " → " + verdict + "**"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", MarkdownCell(r.Algorithm), MarkdownCell(r.Topology), verdict,
				orDefault(r.Throughput, "–"), orDefault(r.P50, "–"), orDefault(r.P99, "–"), orDefault(r.Efficiency, "–"), orDefault(r.BytesPerKey, "–"))
		}
		b.WriteString("\n")
	}
	if _, err := io.WriteString(w, strings.TrimRight(b.String(), "\n")+"\n"); err != nil {
		return fmt.Errorf("write comparison.md: %w", err)
	}
	return nil
}

// WriteHTML writes the comparison as one self-contained HTML file (inline CSS, no JavaScript).
func (c *Comparison) WriteHTML(w io.Writer) error {
	type run struct{ Role, Label, Env string }
	data := struct {
		Title    string
		Runs     []run
		Sections []DeltaSection
	}{Title: "limitbench comparison", Sections: c.Sections()}
	for i, l := range c.Labels {
		role := "run"
		if i == 0 {
			role = "baseline"
		}
		e := c.Results[i].Environment
		data.Runs = append(data.Runs, run{role, l, fmt.Sprintf("%s, %s, Redis %s, harness %s", e.Backend, e.Topology, e.RedisVersion, e.HarnessVersion)})
	}
	if err := htmlComparison.Execute(w, data); err != nil {
		return fmt.Errorf("write comparison.html: %w", err)
	}
	return nil
}

// WriteComparison writes comparison.md and comparison.html into dir.
func WriteComparison(dir string, c *Comparison) error {
	var md, html bytes.Buffer
	if err := c.WriteMarkdown(&md); err != nil {
		return err
	}
	if err := c.WriteHTML(&html); err != nil {
		return err
	}
	if err := result.WriteFile(filepath.Join(dir, ComparisonMarkdownFile), md.Bytes()); err != nil {
		return err
	}
	return result.WriteFile(filepath.Join(dir, ComparisonHTMLFile), html.Bytes())
}

// deltaLines splits a delta ("1.2 → 1.5 (+25.0%)") before its change, so that a cell can break
// there: comparison.html fits a 1,400-pixel window (TestComparisonFitsA1400PixelWindow).
func deltaLines(s string) []string {
	if i := strings.Index(s, " ("); i > 0 {
		return []string{s[:i], s[i+1:]}
	}
	return []string{s}
}

var htmlComparison = template.Must(template.New("comparison").Funcs(template.FuncMap{"lines": deltaLines}).Parse(
	`{{define "delta"}}{{range $i, $l := lines .}}{{if $i}}<br>{{end}}<span class="l">{{$l}}</span>{{else}}–{{end}}{{end}}` + PageHead + `<p>Each run against the baseline, for the same algorithm on the same topology. Latency is from each request's intended send time; efficiency is admissions as a share of an exact limiter's. Green is better, red worse (changes over 5%, or 1 point of efficiency).</p>
<ul>{{range .Runs}}<li><strong>{{.Role}}:</strong> {{.Label}} ({{.Env}})</li>{{end}}</ul>
{{range .Sections}}<h2>{{.Run}} against {{.Baseline}}</h2>
<div class="wrap"><table class="v cmp">
<thead><tr><th>algorithm</th><th>topology</th><th>verdict</th><th>throughput (/s)</th><th>p50 (ms)</th><th>p99 (ms)</th><th>efficiency</th><th>bytes per subject</th></tr></thead>
<tbody>{{range .Rows}}
<tr><td class="a">{{.Algorithm}}</td><td>{{.Topology}}</td><td class="vd">{{if eq .OnlyIn "baseline"}}only in baseline ({{.BaseVerdict}}){{else if .OnlyIn}}only in this run ({{.Verdict}}){{else if .Changed}}<strong class="down">{{.BaseVerdict}} → {{.Verdict}}</strong>{{else}}{{.Verdict}}{{end}}</td><td class="n {{.ThroughputClass}}">{{template "delta" .Throughput}}</td><td class="n {{.P50Class}}">{{template "delta" .P50}}</td><td class="n {{.P99Class}}">{{template "delta" .P99}}</td><td class="n {{.EfficiencyClass}}">{{template "delta" .Efficiency}}</td><td class="n {{.BytesClass}}">{{template "delta" .BytesPerKey}}</td></tr>{{end}}
</tbody></table></div>
{{end}}
</body>
</html>
`))
