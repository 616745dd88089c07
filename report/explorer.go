package report

import (
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// The violation explorer of report.html: for each entry whose result holds an excerpt
// (verify.Excerpt), the requests of the scope that broke the contract, one lane per client, each
// a bar over its decision interval coloured by what happened to it, the worst window as a band,
// the running count of its permits against the allowance, and the faults and node events of the
// measurement as annotation lanes; hover shows a request, a click pins it, the wheel and a drag
// zoom and pan the time axis. It is drawn by explorerScript from the data in the page (inline
// JSON): the page stays one file that fetches nothing.

// explorerView is one explorer: its heading and summary for the page, and its data for the
// script.
type explorerView struct {
	Index             int
	ID, Heading, Text string
	Class             string
	Open              bool
	Data              explorerData
}

// explorerData is what explorerScript draws: the excerpt, with the lanes' clock skews, the
// measurement's faults and node events, and the definite violations' times (µs from the start
// of the measured part, those within the excerpt's span).
type explorerData struct {
	*verify.Excerpt
	Title  string       `json:"title"`
	Skews  []string     `json:"skews"`
	Faults []annotation `json:"faults,omitempty"`
	Events []annotation `json:"events,omitempty"`
	Marks  []int64      `json:"marks,omitempty"`
}

// annotation is something that happened during the measurement, for an annotation lane: a fault
// acting from FromUS to ToUS and recovering until UntilUS, or a node event seen between FromUS
// and ToUS.
type annotation struct {
	Label   string `json:"label"`
	FromUS  int64  `json:"from_us"`
	ToUS    int64  `json:"to_us"`
	UntilUS int64  `json:"until_us,omitempty"`
}

// explorerViews returns the explorers of r: the entries with a definite violation first, then
// those with a possible one, each in r's order; the first is open.
func explorerViews(r *result.Result) []explorerView {
	var out []explorerView
	for _, kind := range []string{"definite", "possible"} {
		for i := range r.Entries {
			e := &r.Entries[i]
			if x := e.Excerpt; x != nil && x.Violation == kind {
				out = append(out, newExplorer(r, e, len(out)))
			}
		}
	}
	if len(out) > 0 {
		out[0].Open = true
	}
	return out
}

func newExplorer(r *result.Result, e *result.Entry, i int) explorerView {
	x := e.Excerpt
	label := r.LabelOf(e)
	heading := fmt.Sprintf("%s on %s: %s violation of %s", e.Algorithm, e.Topology, x.Violation, x.Contract)
	d := explorerData{Excerpt: x, Title: heading, Skews: laneSkews(r, x)}
	v := e.Verification
	for _, f := range v.Faults {
		if f.ToS != 0 || f.UntilS != 0 {
			d.Faults = append(d.Faults, annotation{Label: f.Name, FromUS: micro(f.FromS), ToUS: micro(f.ToS), UntilUS: micro(f.UntilS)})
		}
	}
	for _, ev := range v.Disruptions {
		d.Events = append(d.Events, annotation{Label: ev.What, FromUS: micro(ev.FromS), ToUS: micro(ev.ToS)})
	}
	for _, s := range v.ViolationTimesS {
		if t := micro(s); t >= x.SpanFromUS && t <= x.SpanToUS {
			d.Marks = append(d.Marks, t)
		}
	}
	return explorerView{Index: i, ID: "explore-" + e.Name(), Heading: heading, Text: excerptText(x), Class: labelClass(label), Data: d}
}

// excerptText says in words what an explorer of x shows: the scope, its permits against the
// allowance and when, and what the excerpt left out.
func excerptText(x *verify.Excerpt) string {
	text := fmt.Sprintf("%s: %s permits where %s %s allowed, between %s and %s.", upperFirst(scopeName(x)), Count(x.Permits),
		Count(x.Allowed), Plural(x.Allowed, "was", "were"), seconds(float64(x.FromUS)/1e6), seconds(float64(x.ToUS)/1e6))
	if x.Omitted > 0 {
		text += fmt.Sprintf(" %s %s of the span left out (the excerpt holds at most %s, those nearest the window kept)",
			Count(x.Omitted), Plural(x.Omitted, "request", "requests"), Count(verify.MaxExcerpt))
		if x.CountPartial {
			text += ", some of them admissions in the window: the running count shown is short of the checker's"
		}
		text += "."
	}
	return text
}

// micro converts seconds to whole µs.
func micro(s float64) int64 { return int64(math.Round(s * 1e6)) }

// laneSkews returns, for each lane of x, its client's clock offset in words ("+2s", "0s"), or ""
// when the scenario does not skew clocks or the lane is not a client.
func laneSkews(r *result.Result, x *verify.Excerpt) []string {
	out := make([]string, len(x.Lanes))
	st := r.Scenario.Settings
	if st == nil || st.ClockSkew.IsZero() || st.Clients == 0 {
		return out
	}
	for i, c := range x.LaneClients {
		if c < 0 {
			continue
		}
		d := st.ClockSkew.Offset(c, st.Clients)
		out[i] = d.String()
		if d > 0 {
			out[i] = "+" + out[i]
		}
	}
	return out
}

// explorerData returns the data of every explorer, in order, for the page's inline JSON.
func explorersData(xs []explorerView) []explorerData {
	out := make([]explorerData, len(xs))
	for i, x := range xs {
		out[i] = x.Data
	}
	return out
}

// writeExplorersMarkdown writes the Violations section of report.md: what each explorer of
// report.html shows, in words.
func writeExplorersMarkdown(b *strings.Builder, xs []explorerView) {
	if len(xs) == 0 {
		return
	}
	b.WriteString("## Violations\n\n")
	b.WriteString("report.html draws each of these in an explorer: the requests of the subject that broke the contract, one lane per client, the worst window and the running count of its permits against the allowance.\n\n")
	for _, x := range xs {
		fmt.Fprintf(b, "- **%s**. %s\n", MarkdownText(x.Heading), MarkdownText(x.Text))
	}
	b.WriteString("\n")
}

// explorerLegend explains an explorer, under the explorers of report.html.
const explorerLegend = "Each lane is one client (with its clock's offset when the scenario skews clocks); each bar a request over " +
	"its decision interval on the clock the algorithm decided by (a client-clock algorithm's times are each client's own), " +
	"green admitted, grey denied, amber unknown outcome, red failed; a bar with a black edge is a decision whose exact time " +
	"the server reported. The red band is the worst window; below it, the admissions of the broken scope that certainly " +
	"fall inside it, counted one after the other, against what the contract allows there. Red marks on the axis are " +
	"definite violations. Hover over a request for its details, click to pin them; the wheel zooms, a drag pans, the " +
	"buttons zoom to the window or the whole excerpt."

// explorerCSS is the style of the explorers.
const explorerCSS = `
.xp{position:relative;margin:.5rem 0 1rem;max-width:100%}
.xp-tools{display:flex;gap:.4rem;align-items:center;flex-wrap:wrap;font-size:.85rem;margin-bottom:.3rem}
.xp-tools button{font:inherit;padding:.1rem .6rem;border:1px solid #aaa;border-radius:.3rem;background:#f6f6f6;cursor:pointer}
.xp svg{display:block;width:100%;border:1px solid #ddd;background:#fff;cursor:crosshair;user-select:none;touch-action:none}
.xp-tip{position:absolute;pointer-events:none;background:#fff;border:1px solid #888;border-radius:.3rem;padding:.3rem .5rem;font-size:.8rem;box-shadow:0 2px 6px rgba(0,0,0,.2);white-space:pre;z-index:2}
.xp-pin{font-size:.85rem;background:#f6f6f6;border-left:4px solid #888;padding:.3rem .6rem;margin-top:.3rem;white-space:pre-wrap}
.xp-pin.on{border-left-color:#d62728;background:#fff4f4}
details.x>summary{cursor:pointer;font-weight:600;margin:.6rem 0 .2rem}
`

// explorersTemplate defines the templates of the explorers' section ("explorers": heading,
// legend and one <details> per explorer, over .Explorers and .ExplorerLegend) and of their data
// and script ("explorers-script": .ExplorerData and .Script), which report.html places at the
// end of its body and ExplorersHTML right after the section.
const explorersTemplate = `{{define "explorers"}}{{if .Explorers}}<h2>Violations</h2>
<p class="legend">{{.ExplorerLegend}}</p>
{{range .Explorers}}<details class="x" id="{{.ID}}"{{if .Open}} open{{end}}><summary><span class="badge {{.Class}}">{{.Heading}}</span></summary>
<p>{{.Text}}</p>
<div class="xp" data-i="{{.Index}}"><div class="xp-tools"><button type="button" data-z="in">zoom in</button><button type="button" data-z="out">zoom out</button><button type="button" data-z="window">the worst window</button><button type="button" data-z="all">the whole excerpt</button><span>wheel: zoom, drag: pan, click: pin</span></div>
<svg class="xp-svg" role="img" aria-label="{{.Heading}}"></svg><div class="xp-tip" hidden></div><div class="xp-pin">Click a request to pin its details here.</div></div>
<noscript><p>The explorer is drawn by the page's own script, which is off; the sentence above says what it shows.</p></noscript>
</details>
{{end}}{{end}}{{end}}{{define "explorers-script"}}{{if .Explorers}}<script type="application/json" id="lb-explorers">{{.ExplorerData}}</script>
<script>{{.Script}}</script>{{end}}{{end}}`

var explorersSection = template.Must(template.New("section").Parse(explorersTemplate + `{{template "explorers" .}}{{template "explorers-script" .}}`))

// ExplorerOf is a violation explorer for a page other than report.html (a hunt's report.html,
// package hunt): the excerpt it draws, its heading, and the class of its badge in the reports'
// style sheet ("pass", "fail", "caught", "inconclusive").
type ExplorerOf struct {
	Excerpt *verify.Excerpt
	Heading string
	Class   string
}

// ExplorersHTML renders the Violations section of a page built on PageHead for xs, as report.html
// draws it (the first open): each explorer, its sentence, the legend, the explorers' inline data
// and the script that draws them. Nothing external: the script and the data are in the page.
// "" when xs is empty. A page holds at most one such section.
func ExplorersHTML(xs []ExplorerOf) (template.HTML, error) {
	if len(xs) == 0 {
		return "", nil
	}
	v := struct {
		Explorers      []explorerView
		ExplorerLegend string
		ExplorerData   []explorerData
		Script         template.JS
	}{ExplorerLegend: explorerLegend, Script: explorerScript}
	for i, x := range xs {
		v.Explorers = append(v.Explorers, explorerView{Index: i, ID: fmt.Sprintf("explore-%d", i), Heading: x.Heading,
			Text: excerptText(x.Excerpt), Class: x.Class, Open: i == 0,
			Data: explorerData{Excerpt: x.Excerpt, Title: x.Heading, Skews: make([]string, len(x.Excerpt.Lanes))}})
	}
	v.ExplorerData = explorersData(v.Explorers)
	var b strings.Builder
	if err := explorersSection.Execute(&b, v); err != nil {
		return "", fmt.Errorf("render the violation explorers: %w", err)
	}
	return template.HTML(b.String()), nil // rendered, escaped, by html/template above
}

// explorerScript draws the explorers from the page's inline JSON: explorerJS, trusted as it is.
var explorerScript = template.JS(explorerJS)
