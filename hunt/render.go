package hunt

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/limitbench/limitbench/report"
	"github.com/limitbench/limitbench/result"
)

// view is what both formats of a hunt's report show, already formatted.
type view struct {
	Title, Intro, CutShort string
	Rows                   []row
	Sections               []section
	// Explorers, in report.html only, is the Violations section: an interactive explorer of each
	// entry's excerpt (report.ExplorersHTML), definite violations first.
	Explorers template.HTML
}

// row is an entry's line in the report's table.
type row struct {
	Algorithm, Topology, Contract, Trials, Best, Label, Class, Sizes, Repro string
}

// section is an entry's section of the report.
type section struct {
	Heading, Label, Class string
	// Lines are sentences of plain text; Repro is a command or file name, shown as code.
	Lines     []string
	ReproText string
	Repro     string
	Figure    *report.FigureView
}

func newView(f *File, figs []report.Figure, inline bool) view {
	v := view{Title: "limitbench hunt: " + f.Scenario}
	v.Intro = fmt.Sprintf("Scenario %s, seed %d, budget %ss per algorithm", f.Scenario, f.Seed, report.Number(f.BudgetS))
	if f.Trials > 0 {
		v.Intro += fmt.Sprintf(" or %d trials", f.Trials)
	}
	v.Intro += fmt.Sprintf(", schedules of at most %ss. A score is the largest ratio of permits admitted to permits allowed over any window or interval of the contract; above 1 is a definite violation.", report.Number(f.SpanS))
	if f.CutShort {
		v.CutShort = "the hunt was interrupted: this is what was found so far."
	}
	byName := map[string]report.Figure{}
	for _, fg := range figs {
		byName[fg.Name] = fg
	}
	for i := range f.Entries {
		e := &f.Entries[i]
		r, s := entryView(e)
		if fg, ok := byName[FigureName(e)]; ok {
			fv := &report.FigureView{Name: fg.Name, Title: fg.Title}
			if inline {
				fv.PNG = template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(fg.PNG))
			}
			s.Figure = fv
		}
		v.Rows = append(v.Rows, r)
		v.Sections = append(v.Sections, s)
	}
	return v
}

// explorers returns the explorers of f's excerpts (Entry.Excerpt): the definite violations
// first, then the possible ones, each in f's order.
func explorers(f *File) []report.ExplorerOf {
	var out []report.ExplorerOf
	for _, kind := range []string{"definite", "possible"} {
		for i := range f.Entries {
			e := &f.Entries[i]
			if x := e.Excerpt; x != nil && x.Violation == kind {
				r, _ := entryView(e)
				out = append(out, report.ExplorerOf{Excerpt: x, Class: r.Class,
					Heading: fmt.Sprintf("%s on %s: %s violation of %s, trial %d", e.Algorithm, e.Topology, kind, x.Contract, trialOf(e))})
			}
		}
	}
	return out
}

// entryView returns e's row and section, without its figure.
func entryView(e *Entry) (row, section) {
	label, class := "held", "pass"
	if e.Violation != nil {
		label, class = "violation", "fail"
		if e.ExpectedViolation {
			label, class = "violation (expected)", "caught"
		}
	}
	r := row{Algorithm: e.Algorithm, Topology: e.Topology, Contract: e.Contract,
		Trials: fmt.Sprintf("%d (%s)", e.Trials, e.Stop), Best: fmt.Sprintf("%.3f", e.BestScore), Label: label, Class: class}
	s := section{Heading: e.Algorithm + " on " + e.Topology, Label: label, Class: class}
	s.Lines = append(s.Lines, fmt.Sprintf("Families: %s. Time zero at %ss past a multiple of %ss.", strings.Join(e.Families, ", "),
		report.Number(e.Align.Offset.Seconds()), report.Number(e.Align.Every.Seconds())))
	if e.Corpus > 0 {
		s.Lines = append(s.Lines, fmt.Sprintf("Replayed %d %s of the corpus before searching.", e.Corpus,
			report.Plural(int64(e.Corpus), "reproducer", "reproducers")))
	}
	if len(e.SkewsS) > 0 {
		skews := make([]string, len(e.SkewsS))
		for i, k := range e.SkewsS {
			skews[i] = report.Number(k) + "s"
		}
		s.Lines = append(s.Lines, "Client clock offsets allowed: "+strings.Join(skews, ", ")+".")
	}
	if e.Violation != nil {
		violationView(e, &r, &s)
	} else {
		s.Lines = append(s.Lines, approachLine(e))
	}
	if b := e.Best; b != nil && b.Trace != "" && e.Violation == nil {
		s.Lines = append(s.Lines, fmt.Sprintf("Best schedule: %s (family %s, trial %d, %d requests).", b.Trace, b.Family, b.Trial, b.Size.Rows))
	}
	if c := e.FaultCost; c != nil {
		s.Lines = append(s.Lines, faultCostLine(c))
	}
	return r, s
}

// faultCostLine says what the costliest placement of faults let through, apart from any flaw of
// the algorithm's.
func faultCostLine(c *FaultCost) string {
	line := fmt.Sprintf("The faults cost %d %s beyond the contract at most, at trial %d (%s)", c.Permits,
		report.Plural(c.Permits, "permit", "permits"), c.Schedule.Trial, strings.Join(c.Schedule.Faults, ", "))
	if c.Schedule.Trace != "" {
		line += ", schedule " + c.Schedule.Trace
	}
	return line + ": a loss of the limiter's state let them through, which a limiter that keeps its state in Redis cannot prevent; this is not a flaw of the algorithm's."
}

// violationView adds to r and s how e's violation broke the contract, how it was shrunk and
// confirmed, and how to replay it.
func violationView(e *Entry, r *row, s *section) {
	vi := e.Violation
	w := vi.Worst
	line := fmt.Sprintf("Broke %s at trial %d (family %s, %d mutations): %d definite %s; the worst admitted %d permits where %d were allowed, over %s",
		w.Limit, vi.Schedule.Trial, vi.Schedule.Family, vi.Schedule.Mutations, vi.Definite, report.Plural(vi.Definite, "violation", "violations"),
		w.Permits, w.Allowed, spanOf(e, w.Lo, w.Hi))
	s.Lines = append(s.Lines, line+scopeText(w.Subject, w.Client)+".")
	if fs := vi.Schedule.Faults; len(fs) > 0 {
		s.Lines = append(s.Lines, fmt.Sprintf("Its schedule placed faults (%s), and the violation lies between two losses of the limiter's state: the algorithm broke its contract, not the faults.",
			strings.Join(fs, ", ")))
	}
	r.Sizes = fmt.Sprintf("%d rows", vi.Schedule.Size.Rows)
	sh := vi.Shrunk
	if sh == nil {
		return
	}
	r.Sizes += fmt.Sprintf(" → %d rows, %d clients", sh.Size.Rows, sh.Size.Clients)
	minimal := ""
	if sh.Minimal {
		minimal = " (1-minimal: without any one of its requests, no replay broke the contract)"
	}
	s.Lines = append(s.Lines, fmt.Sprintf("Shrunk from %s to %s%s in %d replays; reproducer trace %s.",
		requestsText(vi.Schedule.Size.size()), requestsText(sh.Size.size()), minimal, sh.Replays, sh.Trace))
	if c := sh.Confirm; c != nil {
		s.Lines = append(s.Lines, confirmLine(c))
	}
	if sh.Scenario != "" {
		r.Repro = "limitbench run " + sh.Scenario
		s.ReproText, s.Repro = "Replay it, from this report's directory, with:", r.Repro
	} else {
		r.Repro = sh.Trace
	}
}

// confirmLine says how the reproducer fared in its confirmation replays.
func confirmLine(c *Confirmation) string {
	switch {
	case c.Broke == c.Replays && c.Back == 0:
		return fmt.Sprintf("The reproducer broke the contract again in %d of %d replays.", c.Broke, c.Replays)
	case c.Broke == c.Replays:
		return fmt.Sprintf("The smallest schedule shrinking kept broke the contract in fewer than all of %d replays, so the reproducer is %d %s larger; it broke the contract again in %d of %d.",
			c.Replays, c.Back, report.Plural(int64(c.Back), "step", "steps"), c.Broke, c.Replays)
	}
	return fmt.Sprintf("No shrunk schedule broke the contract in all of %d replays, so the reproducer is the violation as found, which broke it again in %d of %d: its failure depends on timing.",
		c.Replays, c.Broke, c.Replays)
}

// approachLine says where an entry never broken came closest.
func approachLine(e *Entry) string {
	switch c := e.Closest; {
	case c != nil:
		return fmt.Sprintf("Never broken. Closest approach %.3f of %s: %d permits admitted where %s were allowed, over %s%s.",
			c.Score, c.Limit, c.Permits, report.Number(c.Allowed), spanOf(e, c.Lo, c.Hi), scopeText(c.Subject, c.Client))
	case e.Plot != nil && slices.ContainsFunc(e.Plot.Admitted, func(n int64) bool { return n > 0 }):
		return fmt.Sprintf("Never broken; closest approach %.3f: the verifier could place no set of the admissions under one allowance of %s for certain (the decision times are known too coarsely), so the hunt could not tell how close it came.",
			e.BestScore, e.Contract)
	}
	return "Never broken; no trial admitted anything."
}

// spanOf writes [lo, hi] (µs since the Unix epoch) as seconds since the trial's time zero when
// e has a plot to place it on, else as the raw µs.
func spanOf(e *Entry, lo, hi int64) string {
	if p := e.Plot; p != nil {
		return fmt.Sprintf("[%.6f, %.6f] s of the trial", float64(lo-p.OriginUs)/1e6, float64(hi-p.OriginUs)/1e6)
	}
	return fmt.Sprintf("[%d, %d] µs", lo, hi)
}

// scopeText names a scope in a sentence: " for subject s and client c", or nothing.
func scopeText(subject, client string) string {
	s := ""
	if subject != "" {
		s += " for subject " + subject
	}
	if client != "" {
		s += " and client " + client
	}
	return s
}

// WriteMarkdown writes report.md for a hunt: the settings, one table row per algorithm and
// topology (its best score, whether it broke its contract, the reproducer's size against the
// schedule it was shrunk from, and how to replay it), then a section per algorithm with how it
// broke or where it came closest, and the figure of its best schedule (PNG shown, SVG linked).
// The output depends only on f and the figures' names and titles.
func WriteMarkdown(w io.Writer, f *File, figs []report.Figure) error {
	v := newView(f, figs, false)
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n%s\n\n", report.MarkdownText(v.Title), report.MarkdownText(v.Intro))
	if v.CutShort != "" {
		fmt.Fprintf(&b, "> **Cut short:** %s\n\n", report.MarkdownText(v.CutShort))
	}
	b.WriteString("## Hunt\n\n")
	b.WriteString("| algorithm | topology | contract | trials | best score | result | found → reproducer | reproducer |\n")
	b.WriteString("|---|---|---|--:|--:|---|---|---|\n")
	for _, r := range v.Rows {
		label := report.MarkdownCell(r.Label)
		if r.Class == "fail" {
			label = "**" + label + "**"
		}
		repro := ""
		if r.Repro != "" {
			repro = "`" + strings.ReplaceAll(r.Repro, "`", "") + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", report.MarkdownCell(r.Algorithm), report.MarkdownCell(r.Topology),
			report.MarkdownCell(r.Contract), r.Trials, r.Best, label, report.MarkdownCell(r.Sizes), repro)
	}
	for _, s := range v.Sections {
		fmt.Fprintf(&b, "\n### %s: %s\n\n", report.MarkdownText(s.Heading), report.MarkdownText(s.Label))
		for _, l := range s.Lines {
			fmt.Fprintf(&b, "%s\n", report.MarkdownText(l))
		}
		if s.Repro != "" {
			fmt.Fprintf(&b, "\n%s\n\n```sh\n%s\n```\n", report.MarkdownText(s.ReproText), s.Repro)
		}
		if fg := s.Figure; fg != nil {
			fmt.Fprintf(&b, "\n![%s](%s.png)\n\n[SVG version](%s.svg)\n", report.MarkdownText(fg.Title), fg.Name, fg.Name)
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write report.md: %w", err)
	}
	return nil
}

// WriteHTML writes report.html for a hunt: the same content as WriteMarkdown in one
// self-contained file, every figure inline as a PNG data: URI, the reports' inline CSS, and the
// violation explorer of each violating schedule (report.ExplorersHTML: inline data and script);
// no reference to any other file or host.
func WriteHTML(w io.Writer, f *File, figs []report.Figure) error {
	v := newView(f, figs, true)
	var err error
	if v.Explorers, err = report.ExplorersHTML(explorers(f)); err != nil {
		return err
	}
	if err := htmlReport.Execute(w, v); err != nil {
		return fmt.Errorf("write report.html: %w", err)
	}
	return nil
}

// WriteReport writes a hunt's report into dir: every figure of Figures as PNG and SVG, then
// report.md and report.html (report.MarkdownFile, report.HTMLFile). It returns the names of
// the files written, relative to dir, and stops at the first error.
func WriteReport(dir string, f *File) ([]string, error) {
	figs, err := Figures(f)
	if err != nil {
		return nil, err
	}
	var md, html bytes.Buffer
	if err := WriteMarkdown(&md, f, figs); err != nil {
		return nil, err
	}
	if err := WriteHTML(&html, f, figs); err != nil {
		return nil, err
	}
	var names []string
	write := func(name string, b []byte) error {
		if err := result.WriteFile(filepath.Join(dir, name), b); err != nil {
			return err
		}
		names = append(names, name)
		return nil
	}
	for _, fg := range figs {
		if err := write(fg.Name+".png", fg.PNG); err != nil {
			return names, err
		}
		if err := write(fg.Name+".svg", fg.SVG); err != nil {
			return names, err
		}
	}
	if err := write(report.MarkdownFile, md.Bytes()); err != nil {
		return names, err
	}
	return names, write(report.HTMLFile, html.Bytes())
}

var htmlReport = template.Must(template.New("hunt").Parse(report.PageHead + `<p>{{.Intro}}</p>
{{if .CutShort}}<p class="note"><strong>Cut short:</strong> {{.CutShort}}</p>{{end}}
<h2>Hunt</h2>
<div class="wrap"><table class="hunt">
<thead><tr><th>algorithm</th><th>topology</th><th>contract</th><th>trials</th><th>best score</th><th>result</th><th>found → reproducer</th><th>reproducer</th></tr></thead>
<tbody>{{range .Rows}}
<tr><td>{{.Algorithm}}</td><td>{{.Topology}}</td><td>{{.Contract}}</td><td class="n">{{.Trials}}</td><td class="n">{{.Best}}</td><td><span class="badge {{.Class}}">{{.Label}}</span></td><td>{{.Sizes}}</td><td>{{if .Repro}}<code>{{.Repro}}</code>{{end}}</td></tr>{{end}}
</tbody></table></div>
{{range .Sections}}<section><h3>{{.Heading}} <span class="badge {{.Class}}">{{.Label}}</span></h3>
{{range .Lines}}<p>{{.}}</p>
{{end}}{{if .Repro}}<p>{{.ReproText}} <code>{{.Repro}}</code></p>
{{end}}{{with .Figure}}<figure><img src="{{.PNG}}" alt="{{.Title}}"><figcaption>{{.Title}}</figcaption></figure>
{{end}}</section>
{{end}}{{.Explorers}}
</body>
</html>
`))
