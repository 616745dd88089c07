package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"strings"

	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// Names of the report files WriteAll writes.
const (
	MarkdownFile = "report.md"
	HTMLFile     = "report.html"
)

// WriteAll writes everything a run leaves in dir: result.json, <algorithm>-<topology>.hgrm and
// <algorithm>-<topology>-service.hgrm for each entry with histograms, every figure as PNG and SVG,
// report.md and report.html. It records the file names in r.Files and each entry's Files before
// writing result.json, so result.json lists them. It stops at the first error.
func WriteAll(dir string, r *result.Result) error {
	if r.Schema == "" {
		r.Schema = result.SchemaVersion
	}
	figs, err := Figures(r)
	if err != nil {
		return err
	}
	r.Files = result.RunFiles{Result: result.FileName, Markdown: MarkdownFile, HTML: HTMLFile}
	for i := range r.Entries {
		e := &r.Entries[i]
		e.Files = result.Files{}
		for _, h := range []struct {
			enc  string
			name string
			dst  *string
		}{
			{e.Histograms.Latency, e.Name() + ".hgrm", &e.Files.Histogram},
			{e.Histograms.Service, e.Name() + "-service.hgrm", &e.Files.ServiceHistogram},
		} {
			hist, err := result.DecodeHistogram(h.enc)
			if err != nil {
				return fmt.Errorf("%s: %w", e.Name(), err)
			}
			if hist == nil {
				continue
			}
			var buf bytes.Buffer
			if err := WriteHGRM(&buf, hist, MicrosPerMilli); err != nil {
				return err
			}
			if err := result.WriteFile(filepath.Join(dir, h.name), buf.Bytes()); err != nil {
				return err
			}
			*h.dst = h.name
			r.Files.Histograms = append(r.Files.Histograms, h.name)
		}
	}
	for _, f := range figs {
		for _, out := range []struct {
			ext string
			b   []byte
		}{{".png", f.PNG}, {".svg", f.SVG}} {
			name := f.Name + out.ext
			if err := result.WriteFile(filepath.Join(dir, name), out.b); err != nil {
				return err
			}
			r.Files.Plots = append(r.Files.Plots, name)
			if f.Kind == KindAccuracy {
				for i := range r.Entries {
					if e := &r.Entries[i]; e.Algorithm == f.Algorithm && e.Topology == f.Topology {
						e.Files.Accuracy = append(e.Files.Accuracy, name)
					}
				}
			}
		}
	}
	var md, html bytes.Buffer
	if err := WriteMarkdown(&md, r, figs); err != nil {
		return err
	}
	if err := WriteHTML(&html, r, figs); err != nil {
		return err
	}
	if err := result.WriteFile(filepath.Join(dir, MarkdownFile), md.Bytes()); err != nil {
		return err
	}
	if err := result.WriteFile(filepath.Join(dir, HTMLFile), html.Bytes()); err != nil {
		return err
	}
	return r.Write(dir)
}

// view is what both report formats show, already formatted.
type view struct {
	Title       string
	Description string
	Summary     string
	Scenario    []row
	Environment []row
	CutShort    string
	Partial     string // a merge without some segments: which, and what that means for the verdicts
	// Decisions is the decision summary, one per topology; Whys the cause of every entry that
	// needs one (Why), in r's order.
	Decisions []decisionView
	Whys      []whyRow
	// Explorers are the violation explorers (HTML; report.md says what each shows).
	Explorers []explorerView
	Fairness  []fairnessRow
	Verdicts  []verdictRow
	Faults    []faultRow
	Findings  []findingGroup
	// Topologies holds the figures, by topology.
	Topologies []figureGroup
	Generators [][]string // a merged result's per-generator table (generatorTable), else nil
	// RuleText, DecisionLegend, WhyLegend and ExplorerLegend are the sections' legends.
	RuleText, DecisionLegend, ExplorerLegend string
}

// whyRow is the cause of one entry's verdict (Why).
type whyRow struct {
	Algorithm, Topology, Label, Class, Anchor, Text string
}

type row struct{ Key, Value string }

type verdictRow struct {
	Algorithm, Topology, Label, Class, Contract    string
	ContractParts                                  []string // Contract split at " and " (HTML: one a line)
	Definite, Possible, Worst, Efficiency, Through string
	P50, P99                                       string
}

type findingGroup struct {
	Heading, Class, Anchor string
	Items                  []string
}

type figureGroup struct {
	Topology string
	Figures  []FigureView
}

// FigureView is a figure as a report page shows it: its file stem, its title (alt text), its
// caption and, in HTML only, the PNG as a data: URI.
type FigureView struct {
	Name, Title, Caption string
	PNG                  template.URL // data: URI, HTML only
}

func newView(r *result.Result, figs []Figure, inline bool) view {
	s := r.Scenario
	v := view{Title: "limitbench report: " + orDefault(s.Name, "unnamed scenario"), Description: s.Description,
		Generators: generatorTable(r), Decisions: decisionViews(r), Explorers: explorerViews(r), Fairness: fairnessRows(r),
		RuleText: RuleText, DecisionLegend: decisionLegend, ExplorerLegend: explorerLegend}
	v.Scenario, v.Environment = scenarioRows(r), environmentRows(r)
	if r.CutShort {
		v.CutShort = orDefault(r.CutShortNote, "the run stopped before its planned end") + " The figures cover what was measured until then."
	}
	if len(r.MissingSegments) > 0 {
		v.Partial = fmt.Sprintf("merged without segment(s) %s, which did not finish: their requests are in no figure. "+
			"A definite violation among the segments merged stays definite where missing admissions can only add to it; every pass is inconclusive.",
			strings.Join(r.MissingSegments, ", "))
	}
	for i := range r.Entries {
		e := &r.Entries[i]
		out := r.LabelOf(e)
		v.Verdicts = append(v.Verdicts, newVerdictRow(e, out))
		v.Findings = append(v.Findings, findingGroup{
			Heading: e.Algorithm + " on " + e.Topology + ": " + out, Class: labelClass(out), Anchor: entryAnchor(e), Items: Findings(r, e),
		})
		if text := Why(r, e); text != "" {
			v.Whys = append(v.Whys, whyRow{Algorithm: e.Algorithm, Topology: e.Topology, Label: out, Class: labelClass(out),
				Anchor: entryAnchor(e), Text: text})
		}
	}
	v.Summary = summary(r)
	v.Faults = faultRows(r)
	v.Topologies = figureGroups(r, figs, inline)
	return v
}

// newVerdictRow is e's row of the verdict table, with its label out.
func newVerdictRow(e *result.Entry, out string) verdictRow {
	vr := verdictRow{
		Algorithm: e.Algorithm, Topology: e.Topology, Label: out, Class: labelClass(out),
		Contract:      orDefault(e.Verification.Contract, "none"),
		ContractParts: strings.Split(orDefault(e.Verification.Contract, "none"), " and "),
		Definite:      Count(e.Verification.DefiniteViolations), Possible: Count(e.Verification.PossibleViolations),
		Worst: "–", Efficiency: "–", Through: Number(e.ThroughputRPS),
		P50: Millis(e.LatencyUS.P50), P99: Millis(e.LatencyUS.P99),
	}
	if e.Accuracy.MaxWindowRatio > 0 {
		vr.Worst = Percent(e.Accuracy.MaxWindowRatio)
	}
	if e.Accuracy.Efficiency > 0 {
		vr.Efficiency = Percent(e.Accuracy.Efficiency)
	}
	return vr
}

// figureGroups returns figs by topology, in r's order of topologies; with inline, each PNG as a
// data: URI.
func figureGroups(r *result.Result, figs []Figure, inline bool) []figureGroup {
	var out []figureGroup
	for _, topo := range topologies(r) {
		g := figureGroup{Topology: topo}
		for _, f := range figs {
			if f.Topology != topo {
				continue
			}
			fv := FigureView{Name: f.Name, Title: f.Title, Caption: orDefault(f.Caption, f.Title)}
			if inline {
				fv.PNG = template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(f.PNG))
			}
			g.Figures = append(g.Figures, fv)
		}
		if len(g.Figures) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// summaryOrder is the order labels are counted in the summary line: problems first.
var summaryOrder = []string{string(verify.Fail), result.LabelMissed, string(verify.Inconclusive), result.LabelTolerated, result.LabelCaught, string(verify.Pass), "unknown"}

// summary counts the verified entries by label, the reference script's apart: "5 entries: 1
// fail, 4 pass; plus 1 reference entry (calibration, not verified)."
func summary(r *result.Result) string {
	n := map[string]int{}
	verified, refs := 0, 0
	for i := range r.Entries {
		if r.IsReference(&r.Entries[i]) {
			refs++
			continue
		}
		verified++
		n[r.Entries[i].Label()]++
	}
	var parts []string
	for _, o := range summaryOrder {
		if n[o] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[o], o))
		}
	}
	s := fmt.Sprintf("%d %s", verified, Plural(int64(verified), "entry", "entries"))
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	if refs > 0 {
		s += fmt.Sprintf("; plus %d reference %s (calibration, not verified)", refs, Plural(int64(refs), "entry", "entries"))
	}
	return s + "."
}

// labelClass is the CSS class of a verdict-table label.
func labelClass(label string) string {
	switch label {
	case string(verify.Pass):
		return "pass"
	case result.LabelCaught:
		return "caught"
	case string(verify.Inconclusive):
		return "inconclusive"
	case result.LabelTolerated:
		return "tolerated"
	case result.LabelReference:
		return "reference"
	}
	return "fail"
}

// verdictLegend explains the verdict table's labels, in both report formats.
const verdictLegend = "Verdicts: pass means no definite violation and every threshold held; fail means a definite " +
	"violation or a broken threshold; inconclusive means the run cannot support a verdict (see the findings); " +
	"expected violation caught means a published bug was flagged as the scenario asked (missed means it was not); " +
	"fail (tolerated) is a violation by an algorithm the scenario lists under expect.may_violate, shown but " +
	"deciding nothing; reference is the calibration script (INCR + PEXPIRE) that relative figures compare with, " +
	"not verified. Worst window is the busiest window's admissions as a share of the contract's limit; " +
	"efficiency is admissions as a share of an exact limiter's on the same requests; latency is from each " +
	"request's intended send time."

// WriteMarkdown writes report.md for r: the decision summary (a table per topology, the rule
// and its pick) and why each entry that needs it got its verdict, what each violation explorer
// of report.html shows, then, each in a collapsed block: fairness, scenario and environment,
// the verdict table (with generators and faults), findings per entry, and the figures by file
// name (PNG shown, SVG linked). The output depends only on r and the figures' names and titles,
// so it is byte-identical for the same input.
func WriteMarkdown(w io.Writer, r *result.Result, figs []Figure) error {
	v := newView(r, figs, false)
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", MarkdownText(v.Title))
	if v.Description != "" {
		fmt.Fprintf(&b, "%s\n\n", MarkdownText(v.Description))
	}
	fmt.Fprintf(&b, "**Summary:** %s\n\n", MarkdownText(v.Summary))
	if v.CutShort != "" {
		fmt.Fprintf(&b, "> **Cut short:** %s\n\n", MarkdownText(v.CutShort))
	}
	if v.Partial != "" {
		fmt.Fprintf(&b, "> **Partial merge:** %s\n\n", MarkdownText(v.Partial))
	}
	writeDecisionMarkdown(&b, v)
	writeExplorersMarkdown(&b, v.Explorers)
	writeFairnessMarkdown(&b, v.Fairness)
	openDetails(&b, "Scenario and environment")
	for _, sec := range []struct {
		title string
		rows  []row
	}{{"Scenario", v.Scenario}, {"Environment", v.Environment}} {
		fmt.Fprintf(&b, "## %s\n\n| | |\n|---|---|\n", sec.title)
		for _, r := range sec.rows {
			fmt.Fprintf(&b, "| %s | %s |\n", MarkdownCell(r.Key), MarkdownCell(r.Value))
		}
		b.WriteString("\n")
	}
	closeDetails(&b)
	openDetails(&b, "Verdicts of every measurement")
	writeVerdictsMarkdown(&b, v)
	writeGeneratorsMarkdown(&b, v.Generators)
	writeFaultsMarkdown(&b, r)
	closeDetails(&b)
	openDetails(&b, "Findings, per algorithm")
	b.WriteString("## Findings\n\n")
	for _, g := range v.Findings {
		fmt.Fprintf(&b, "### %s\n\n", MarkdownText(g.Heading))
		for _, it := range g.Items {
			fmt.Fprintf(&b, "- %s\n", MarkdownText(it))
		}
		b.WriteString("\n")
	}
	closeDetails(&b)
	if len(v.Topologies) > 0 {
		openDetails(&b, "Plots")
		b.WriteString("## Plots\n\n")
		for _, g := range v.Topologies {
			fmt.Fprintf(&b, "### %s\n\n", MarkdownText(g.Topology))
			for _, f := range g.Figures {
				fmt.Fprintf(&b, "![%s](%s.png)\n\n", MarkdownText(f.Title), f.Name)
				if f.Caption != f.Title {
					fmt.Fprintf(&b, "%s\n\n", MarkdownText(f.Caption))
				}
				fmt.Fprintf(&b, "[SVG version](%s.svg)\n\n", f.Name)
			}
		}
		closeDetails(&b)
	}
	_, err := io.WriteString(w, strings.TrimRight(b.String(), "\n")+"\n")
	if err != nil {
		return fmt.Errorf("write report.md: %w", err)
	}
	return nil
}

// writeDecisionMarkdown writes the Decision and Why sections of report.md.
func writeDecisionMarkdown(b *strings.Builder, v view) {
	if len(v.Decisions) > 0 {
		fmt.Fprintf(b, "## Decision\n\n%s\n\n", MarkdownText(v.RuleText))
	}
	bold := func(c cell) string {
		if c.Best && c.Text != "–" {
			return "**" + MarkdownCell(c.Text) + "**"
		}
		return MarkdownCell(c.Text)
	}
	for _, d := range v.Decisions {
		fmt.Fprintf(b, "### %s\n\n**%s**\n\n", MarkdownText(d.Topology), MarkdownText(d.Verdict))
		b.WriteString("| algorithm | verdict | efficiency | false denials | worst window | Redis µs / decision | memory / subject | p99 (ms) | qualifies |\n")
		b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|---|\n")
		for _, r := range d.Rows {
			name := MarkdownCell(r.Algorithm)
			if r.Recommended {
				name = "**" + name + "** (recommended)"
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", name, MarkdownCell(r.Label), bold(r.Efficiency), r.FalseDenials,
				bold(r.Worst), bold(r.Server), bold(r.Memory), bold(r.P99), MarkdownCell(r.Qualifies))
		}
		b.WriteString("\n")
	}
	if len(v.Decisions) > 0 {
		fmt.Fprintf(b, "%s\n\n", MarkdownText(v.DecisionLegend))
	}
	if len(v.Whys) > 0 {
		b.WriteString("## Why\n\n")
		for _, w := range v.Whys {
			fmt.Fprintf(b, "- **%s on %s: %s.** %s\n", MarkdownText(w.Algorithm), MarkdownText(w.Topology), MarkdownText(w.Label), MarkdownText(w.Text))
		}
		b.WriteString("\n")
	}
}

// writeVerdictsMarkdown writes the verdict table of report.md and its legend.
func writeVerdictsMarkdown(b *strings.Builder, v view) {
	b.WriteString("## Verdicts\n\n")
	b.WriteString("| algorithm | topology | verdict | contract | definite | possible | worst window | efficiency | throughput (/s) | p50 (ms) | p99 (ms) |\n")
	b.WriteString("|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range v.Verdicts {
		label := MarkdownCell(r.Label)
		if r.Class == "fail" {
			label = "**" + label + "**"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			MarkdownCell(r.Algorithm), MarkdownCell(r.Topology), label, MarkdownCell(r.Contract), r.Definite, r.Possible,
			r.Worst, r.Efficiency, r.Through, r.P50, r.P99)
	}
	fmt.Fprintf(b, "\n%s\n\n", MarkdownText(verdictLegend))
}

// decisionLegend explains the decision table.
const decisionLegend = "Efficiency: admissions as a share of what an exact limiter with the same contract admits of the same " +
	"requests; false denials: denials such a limiter would have admitted. Worst window: the busiest window's admissions " +
	"as a share of the limit, at the requests' midpoints (Why explains a pass above 100%). Redis µs / decision: " +
	"Redis's own time per decision (commandstats). Memory: per limited subject. p99: latency from each request's " +
	"intended send time. Bold: the best of its column (efficiency: the closest to 100%)."

// WriteHTML writes report.html for r: the same content as report.md in one self-contained file,
// with every figure inline as a PNG data: URI, inline CSS (screen, phone and print), and the
// violation explorers drawn by an inline script from inline JSON: nothing external, no
// reference to any other file or host.
func WriteHTML(w io.Writer, r *result.Result, figs []Figure) error {
	v := newView(r, figs, true)
	page := htmlView{view: v, ExplorerData: explorersData(v.Explorers), Script: explorerScript, FairnessLegend: fairnessLegend}
	if err := htmlReport.Execute(w, page); err != nil {
		return fmt.Errorf("write report.html: %w", err)
	}
	return nil
}

// htmlView is view with what only report.html has: the explorers' data and script.
type htmlView struct {
	view
	ExplorerData   []explorerData
	Script         template.JS
	FairnessLegend string
}

// pageCSS is the inline style sheet of report.html and comparison.html.
const pageCSS = `
:root{color-scheme:light}
body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1a1a1a;background:#fff;margin:0 auto;padding:1rem;max-width:84rem}
p,ul,figure{max-width:72rem}
h1{font-size:1.6rem;margin:.2rem 0 .6rem}h2{font-size:1.3rem;margin-top:2rem;border-bottom:1px solid #ddd}h3{font-size:1.05rem;margin:1.2rem 0 .3rem}
.wrap{overflow-x:auto;-webkit-overflow-scrolling:touch;margin:.5rem 0}
table{border-collapse:collapse;font-size:.9rem;min-width:100%}
th,td{border:1px solid #ccc;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f2f2f2}td.c{white-space:nowrap}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.kv{min-width:0}table.kv th{width:12rem}
.badge{display:inline-block;padding:0 .45rem;border-radius:.3rem;font-weight:600;white-space:nowrap}h3 .badge{white-space:normal}
table.kv td,li,p{overflow-wrap:anywhere}table.v td,table.v th{white-space:nowrap}
table.verdicts{font-size:.85rem}table.verdicts th,table.verdicts td{white-space:normal;padding:.25rem .4rem}
table.verdicts th{vertical-align:bottom}table.verdicts th.g{text-align:center}table.verdicts td.n,table.verdicts td.a{white-space:nowrap}
table.verdicts .badge{white-space:normal}
.pass{background:#dff3df;color:#145214}.fail{background:#fbdcdc;color:#8a1010}.inconclusive{background:#fdf0c8;color:#6b4e00}.caught{background:#dce8fb;color:#123d80}
.tolerated{background:#f4e4f7;color:#5e1a6b}.reference{background:#e8e8e8;color:#333}
.note{background:#fdf0c8;border-left:4px solid #c99700;padding:.5rem .8rem}
.up{color:#145214}.down{color:#8a1010}
figure{margin:1rem 0 2rem}figure img{display:block;max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:.9rem;color:#444;margin-top:.3rem}
ul{padding-left:1.3rem}
table.decision th,table.decision td{white-space:normal}table.decision td.n,table.decision td.a{white-space:nowrap}table.decision td.best{font-weight:700;background:#e3f1e3}table.decision tr.rec td.a{font-weight:700}table.decision .badge{white-space:normal}
table.hunt td{overflow-wrap:anywhere}table.hunt td.n,table.hunt .badge{white-space:nowrap}table.cmp td{white-space:normal}table.cmp td.a,table.cmp .l{white-space:nowrap}table.cmp td.vd{min-width:9rem}
p.rec{font-size:1.05rem;margin:.3rem 0}p.legend{font-size:.88rem;color:#444}ul.why li{margin:.35rem 0}
@media (max-width:40rem){body{font-size:15px;padding:.6rem}table{font-size:.8rem}th,td{padding:.2rem .3rem}table.kv th{width:auto}}
@media print{body{max-width:none;padding:0;font-size:11pt}.wrap{overflow:visible}figure,table,tr,section{break-inside:avoid;page-break-inside:avoid}h2,h3{break-after:avoid;page-break-after:avoid}figure img{max-height:24cm;width:auto;max-width:100%;border:0}}
@page{margin:1.5cm}
`

// PageHead opens report.html, comparison.html and a hunt's report.html (package hunt): the
// document head with the reports' inline CSS and the page's heading, both the template's .Title.
const PageHead = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>` + pageCSS + explorerCSS + `</style>
</head>
<body>
<h1>{{.Title}}</h1>
`

var htmlReport = template.Must(template.New("report").Parse(explorersTemplate + `{{define "cell"}}<td class="n{{if .Best}} best{{end}}">{{.Text}}</td>{{end}}` +
	PageHead + `{{if .Description}}<p>{{.Description}}</p>{{end}}
<p><strong>Summary:</strong> {{.Summary}}</p>
{{if .CutShort}}<p class="note"><strong>Cut short:</strong> {{.CutShort}}</p>{{end}}
{{if .Partial}}<p class="note"><strong>Partial merge:</strong> {{.Partial}}</p>{{end}}
{{if .Decisions}}<h2>Decision</h2>
<p>{{.RuleText}}</p>
{{range .Decisions}}<h3>{{.Topology}}</h3>
<p class="rec"><strong>{{.Verdict}}</strong></p>
<div class="wrap"><table class="v decision">
<thead><tr><th>algorithm</th><th>verdict</th><th>efficiency</th><th>false denials</th><th>worst window</th><th>Redis µs / decision</th><th>memory / subject</th><th>p99 (ms)</th><th>qualifies</th></tr></thead>
<tbody>{{range .Rows}}
<tr{{if .Recommended}} class="rec"{{end}}><td class="a"><a href="#{{.Anchor}}">{{.Algorithm}}</a>{{if .Recommended}} ★{{end}}</td><td><span class="badge {{.Class}}">{{.Label}}</span></td>{{template "cell" .Efficiency}}<td class="n">{{.FalseDenials}}</td>{{template "cell" .Worst}}{{template "cell" .Server}}{{template "cell" .Memory}}{{template "cell" .P99}}<td>{{.Qualifies}}</td></tr>{{end}}
</tbody></table></div>
{{end}}<p class="legend">{{.DecisionLegend}}</p>{{end}}
{{if .Whys}}<h2>Why</h2>
<ul class="why">{{range .Whys}}<li><span class="badge {{.Class}}">{{.Algorithm}} on {{.Topology}}: {{.Label}}</span> {{.Text}}</li>{{end}}</ul>{{end}}
{{template "explorers" .}}
{{if .Fairness}}<details class="x"><summary>Fairness among clients sharing a limit</summary>
<div class="wrap"><table class="v">
<thead><tr><th>algorithm</th><th>topology</th><th>Jain's index</th><th>lowest subject</th><th>most favoured</th><th>least favoured</th><th>longest run of denials under the fair share</th></tr></thead>
<tbody>{{range .Fairness}}
<tr><td>{{.Algorithm}}</td><td>{{.Topology}}</td><td>{{.Jain}}</td><td>{{.Lowest}}</td><td>{{.Most}}</td><td>{{.Least}}</td><td>{{.Starved}}</td></tr>{{end}}
</tbody></table></div>
<p class="legend">{{.FairnessLegend}}</p></details>{{end}}
<details class="x"><summary>Scenario and environment</summary>
<h2>Scenario</h2>
<div class="wrap"><table class="kv">{{range .Scenario}}<tr><th scope="row">{{.Key}}</th><td>{{.Value}}</td></tr>{{end}}</table></div>
<h2>Environment</h2>
<div class="wrap"><table class="kv">{{range .Environment}}<tr><th scope="row">{{.Key}}</th><td>{{.Value}}</td></tr>{{end}}</table></div>
</details>
<details class="x"><summary>Verdicts of every measurement</summary>
<h2>Verdicts</h2>
<div class="wrap"><table class="v verdicts">
<thead><tr><th rowspan="2">algorithm</th><th rowspan="2">topology</th><th rowspan="2">verdict</th><th rowspan="2">contract</th><th colspan="2" class="g">violations</th><th rowspan="2">worst window</th><th rowspan="2">efficiency</th><th rowspan="2">throughput (/s)</th><th colspan="2" class="g">latency (ms)</th></tr>
<tr><th>definite</th><th>possible</th><th>p50</th><th>p99</th></tr></thead>
<tbody>{{range .Verdicts}}
<tr><td class="a">{{.Algorithm}}</td><td>{{.Topology}}</td><td><span class="badge {{.Class}}">{{.Label}}</span></td><td class="c">{{range $i, $p := .ContractParts}}{{if $i}}<br>and {{end}}{{$p}}{{end}}</td><td class="n">{{.Definite}}</td><td class="n">{{.Possible}}</td><td class="n">{{.Worst}}</td><td class="n">{{.Efficiency}}</td><td class="n">{{.Through}}</td><td class="n">{{.P50}}</td><td class="n">{{.P99}}</td></tr>{{end}}
</tbody></table></div>
<p>` + verdictLegend + `</p>
{{if .Generators}}<h2>Generators</h2>
<p>` + generatorsLegend + `</p>
<div class="wrap"><table class="v">
<thead><tr>{{range index .Generators 0}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range $i, $r := .Generators}}{{if $i}}<tr>{{range $r}}<td class="n">{{.}}</td>{{end}}</tr>{{end}}{{end}}
</tbody></table></div>{{end}}
` + faultsHTML + `</details>
<details class="x"><summary>Findings, per algorithm</summary>
<h2>Findings</h2>
{{range .Findings}}<section id="{{.Anchor}}"><h3><span class="badge {{.Class}}">{{.Heading}}</span></h3>
<ul>{{range .Items}}<li>{{.}}</li>{{end}}</ul></section>
{{end}}</details>
{{if .Topologies}}<details class="x"><summary>Plots</summary>
<h2>Plots</h2>
{{range .Topologies}}<h3>{{.Topology}}</h3>
{{range .Figures}}<figure><img src="{{.PNG}}" alt="{{.Title}}"><figcaption>{{.Caption}}</figcaption></figure>
{{end}}{{end}}</details>{{end}}
{{template "explorers-script" .}}
</body>
</html>
`))
