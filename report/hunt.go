package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/limitbench/limitbench/hunt"
	"github.com/limitbench/limitbench/result"
)

// KindHunt is the figure kind of a hunt's best schedule.
const KindHunt = "hunt"

// HuntFigures renders, for every entry of f with a plot (hunt.Entry.Plot), the figure of its best
// schedule, named hunt-<algorithm>-<topology>: on top the permits requested and admitted per time
// bin of the trial, the contract's allowance for one bin, and the window the verifier marked
// (red for the worst definite violation, blue for the closest approach); below, the running total
// of the admissions in that window against what the contract allows it up to each instant. Entries
// without a plot have no figure. The figures depend only on f.
func HuntFigures(f *hunt.File) ([]Figure, error) {
	var out []Figure
	for i := range f.Entries {
		e := &f.Entries[i]
		if e.Plot == nil || len(e.Plot.Admitted) == 0 {
			continue
		}
		fig, err := huntFigure(e)
		if err != nil {
			return nil, err
		}
		out = append(out, fig)
	}
	return out, nil
}

// HuntFigureName is the file stem of the figure of e's best schedule.
func HuntFigureName(e *hunt.Entry) string {
	return "hunt-" + strings.NewReplacer("/", "_", `\`, "_", ":", "_", " ", "_").Replace(e.Algorithm) + "-" + e.Topology
}

var (
	violationRed  = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	violationFill = color.RGBA{R: 0xfb, G: 0xdc, B: 0xdc, A: 0xff}
	closestFill   = color.RGBA{R: 0xdc, G: 0xe8, B: 0xfb, A: 0xff}
	requestedGrey = color.RGBA{R: 0x99, G: 0x99, B: 0x99, A: 0xff}
)

func huntFigure(e *hunt.Entry) (Figure, error) {
	p := e.Plot
	algColor := AlgorithmColor(e.Algorithm)
	dashed := []vg.Length{vg.Points(4), vg.Points(3)}
	what := "best schedule"
	if e.Violation != nil {
		what = "violating schedule"
	}
	title := fmt.Sprintf("Hunt of %s on %s: %s, trial %d", e.Algorithm, e.Topology, what, trialOf(e))
	binMS := p.BinS * 1000
	top := NewPlot(title, "", fmt.Sprintf("permits per %s ms bin", Number(binMS)))
	bottom := NewPlot("", "time since the trial's start (s)", "permits in the marked window")
	x0, x1 := p.FirstS, p.FirstS+float64(len(p.Admitted))*p.BinS
	top.X.Min, top.X.Max = x0, x1
	top.Y.Min, bottom.Y.Min = 0, 0
	legends := map[*plot.Plot]*plot.Legend{}
	for _, pl := range []*plot.Plot{top, bottom} {
		l := newLegend()
		legends[pl] = &l
	}
	line := func(pl *plot.Plot, name string, xys plotter.XYs, c color.Color, width vg.Length, dashes []vg.Length, step plotter.StepKind) {
		l, err := plotter.NewLine(xys)
		if err != nil {
			return // NaN or Inf in the data: leave the series out rather than fail the report
		}
		l.Color, l.Width, l.Dashes, l.StepStyle = c, width, dashes, step
		pl.Add(l)
		if name != "" {
			legends[pl].Add(name, l)
		}
	}
	bins := func(v []int64) plotter.XYs {
		xys := make(plotter.XYs, 0, len(v)+1)
		for i, c := range v {
			xys = append(xys, plotter.XY{X: p.FirstS + float64(i)*p.BinS, Y: float64(c)})
		}
		return append(xys, plotter.XY{X: x1, Y: float64(v[len(v)-1])})
	}
	ymax := p.AllowedPerBin
	for _, v := range p.Requested {
		ymax = math.Max(ymax, float64(v))
	}
	ymax = math.Max(1, ymax) * 1.15
	top.Y.Max = ymax
	w := p.Window
	if w != nil {
		fill := closestFill
		name := fmt.Sprintf("closest approach: %d admitted, %s allowed", w.Permits, Number(w.Allowed))
		if w.Violation {
			fill = violationFill
			name = fmt.Sprintf("violation: %d admitted, %s allowed", w.Permits, Number(w.Allowed))
		}
		hi := math.Max(w.HiS, w.LoS+p.BinS/4) // an instant still shows
		if poly, err := plotter.NewPolygon(plotter.XYs{{X: w.LoS, Y: 0}, {X: hi, Y: 0}, {X: hi, Y: ymax}, {X: w.LoS, Y: ymax}}); err == nil {
			poly.Color = fill
			poly.LineStyle.Width = 0
			top.Add(poly)
			legends[top].Add(name, poly)
		}
	}
	line(top, "requested", bins(p.Requested), requestedGrey, vg.Points(1.2), nil, plotter.PostStep)
	line(top, "admitted", bins(p.Admitted), algColor, vg.Points(1.8), nil, plotter.PostStep)
	if p.AllowedPerBin > 0 {
		line(top, "allowed per bin (long-run rate)", plotter.XYs{{X: x0, Y: p.AllowedPerBin}, {X: x1, Y: p.AllowedPerBin}},
			color.Black, vg.Points(1.2), dashed, plotter.NoStep)
	}

	if w != nil && len(w.Steps) > 0 {
		// The lower panel zooms on the window, with a margin either side.
		lo, hi := w.LoS, math.Max(w.HiS, w.LoS)
		pad := math.Max((hi-lo)/10, p.BinS)
		bottom.X.Min, bottom.X.Max = lo-pad, hi+pad
		allowedAt := func(t float64) float64 { return w.AllowedAtLo + w.AllowedPerS*(math.Min(math.Max(t, lo), hi)-lo) }
		xys := plotter.XYs{{X: lo - pad, Y: 0}}
		for _, s := range w.Steps {
			xys = append(xys, plotter.XY{X: s.AtS, Y: float64(s.Permits)})
		}
		xys = append(xys, plotter.XY{X: hi + pad, Y: float64(w.Steps[len(w.Steps)-1].Permits)})
		line(bottom, "admitted in it ("+scopeOf(w)+")", xys, algColor, vg.Points(1.8), nil, plotter.PostStep)
		// The allowance over the window; an instant's (lo = hi) is drawn across the margins.
		a0, a1 := lo, hi
		if hi-lo < pad {
			a0, a1 = lo-pad/2, hi+pad/2
		}
		line(bottom, "allowed by "+w.Limit, plotter.XYs{{X: a0, Y: allowedAt(a0)}, {X: a1, Y: allowedAt(a1)}}, color.Black, vg.Points(1.2), dashed, plotter.NoStep)
		if w.Violation {
			// The instant the running total passed its allowance.
			for _, s := range w.Steps {
				if float64(s.Permits) > allowedAt(s.AtS) {
					if sc, err := plotter.NewScatter(plotter.XYs{{X: s.AtS, Y: float64(s.Permits)}}); err == nil {
						sc.Color, sc.Shape, sc.Radius = violationRed, draw.CrossGlyph{}, vg.Points(5)
						bottom.Add(sc)
						legends[bottom].Add("over the allowance", sc)
					}
					break
				}
			}
		}
		bottom.Y.Max = math.Max(1, math.Max(float64(w.Permits), allowedAt(hi))) * 1.25
	}

	f := Figure{Name: HuntFigureName(e), Kind: KindHunt, Title: title, Topology: e.Topology, Algorithm: e.Algorithm,
		Algorithms: []string{e.Algorithm}}
	const legendW = 3 * vg.Inch
	panels, h := []*plot.Plot{top, bottom}, 6.5*vg.Inch
	if w == nil || len(w.Steps) == 0 {
		// Nothing certain to mark (no admission, or none the verifier could place in one window):
		// the bins alone.
		top.X.Label.Text = bottom.X.Label.Text
		top.Title.Text += " (no window to mark)"
		f.Title = top.Title.Text
		panels, h = panels[:1], 4*vg.Inch
	}
	return RenderFigure(f, 11*vg.Inch, h, func(dc draw.Canvas) {
		left := dc
		left.Max.X -= legendW
		tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadY: vg.Points(10)}
		grid := make([][]*plot.Plot, len(panels))
		for i, pl := range panels {
			grid[i] = []*plot.Plot{pl}
		}
		cs := plot.Align(grid, tiles, left)
		for i, pl := range panels {
			pl.Draw(cs[i][0])
		}
		// Each panel's legend in a column to its right, below the title line, never over data.
		for i, pl := range panels {
			c := cs[i][0]
			c.Min.X, c.Max.X = dc.Max.X-legendW+vg.Points(8), dc.Max.X
			if i == 0 {
				c.Max.Y -= vg.Points(30)
			}
			legends[pl].Draw(c)
		}
	})
}

func trialOf(e *hunt.Entry) int {
	if v := e.Violation; v != nil {
		return v.Schedule.Trial
	}
	if e.Best != nil {
		return e.Best.Trial
	}
	return 0
}

func scopeOf(w *hunt.PlotWindow) string {
	var s []string
	if w.Subject != "" {
		s = append(s, "subject "+w.Subject)
	}
	if w.Client != "" {
		s = append(s, "client "+w.Client)
	}
	if len(s) == 0 {
		return "all subjects"
	}
	return strings.Join(s, ", ")
}

// huntView is what both formats of a hunt's report show, already formatted.
type huntView struct {
	Title, Intro, CutShort string
	Rows                   []huntRow
	Sections               []huntSection
}

type huntRow struct {
	Algorithm, Topology, Contract, Trials, Best, Label, Class, Sizes, Repro string
}

type huntSection struct {
	Heading, Label, Class string
	// Lines are sentences of plain text; Repro is a command or file name, shown as code.
	Lines     []string
	ReproText string
	Repro     string
	Figure    *figureView
}

func newHuntView(f *hunt.File, figs []Figure, inline bool) huntView {
	v := huntView{Title: "limitbench hunt: " + f.Scenario}
	v.Intro = fmt.Sprintf("Scenario %s, seed %d, budget %ss per algorithm", f.Scenario, f.Seed, Number(f.BudgetS))
	if f.Trials > 0 {
		v.Intro += fmt.Sprintf(" or %d trials", f.Trials)
	}
	v.Intro += fmt.Sprintf(", schedules of at most %ss. A score is the largest ratio of permits admitted to permits allowed over any window or interval of the contract; above 1 is a definite violation.", Number(f.SpanS))
	if f.CutShort {
		v.CutShort = "the hunt was interrupted: this is what was found so far."
	}
	byName := map[string]Figure{}
	for _, fg := range figs {
		byName[fg.Name] = fg
	}
	for i := range f.Entries {
		e := &f.Entries[i]
		label, class := "held", "pass"
		if e.Violation != nil {
			label, class = "violation", "fail"
			if e.ExpectedViolation {
				label, class = "violation (expected)", "caught"
			}
		}
		r := huntRow{Algorithm: e.Algorithm, Topology: e.Topology, Contract: e.Contract,
			Trials: fmt.Sprintf("%d (%s)", e.Trials, e.Stop), Best: fmt.Sprintf("%.3f", e.BestScore), Label: label, Class: class}
		s := huntSection{Heading: e.Algorithm + " on " + e.Topology, Label: label, Class: class}
		s.Lines = append(s.Lines, fmt.Sprintf("Families: %s. Time zero at %ss past a multiple of %ss.", strings.Join(e.Families, ", "),
			Number(e.Align.Offset.Seconds()), Number(e.Align.Every.Seconds())))
		if len(e.SkewsS) > 0 {
			skews := make([]string, len(e.SkewsS))
			for i, k := range e.SkewsS {
				skews[i] = Number(k) + "s"
			}
			s.Lines = append(s.Lines, "Client clock offsets allowed: "+strings.Join(skews, ", ")+".")
		}
		if vi := e.Violation; vi != nil {
			w := vi.Worst
			line := fmt.Sprintf("Broke %s at trial %d (family %s, %d mutations): %d definite %s; the worst admitted %d permits where %d were allowed, over %s",
				w.Limit, vi.Schedule.Trial, vi.Schedule.Family, vi.Schedule.Mutations, vi.Definite, Plural(vi.Definite, "violation", "violations"),
				w.Permits, w.Allowed, huntSpan(e, w.Lo, w.Hi))
			line += huntScope(w.Subject, w.Client) + "."
			s.Lines = append(s.Lines, line)
			r.Sizes = fmt.Sprintf("%d rows", vi.Schedule.Size.Rows)
			if sh := vi.Shrunk; sh != nil {
				r.Sizes += fmt.Sprintf(" → %d rows, %d clients", sh.Size.Rows, sh.Size.Clients)
				minimal := ""
				if sh.Minimal {
					minimal = " (1-minimal: dropping any one request loses the violation)"
				}
				s.Lines = append(s.Lines, fmt.Sprintf("Shrunk from %d to %d requests%s in %d replays; reproducer trace %s.",
					vi.Schedule.Size.Rows, sh.Size.Rows, minimal, sh.Replays, sh.Trace))
				if c := sh.Confirm; c != nil {
					switch {
					case c.Broke == c.Replays && c.Back == 0:
						s.Lines = append(s.Lines, fmt.Sprintf("The reproducer broke the contract again in %d of %d replays.", c.Broke, c.Replays))
					case c.Broke == c.Replays:
						s.Lines = append(s.Lines, fmt.Sprintf("The smallest schedule shrinking kept broke the contract in fewer than all of %d replays, so the reproducer is %d %s larger; it broke the contract again in %d of %d.",
							c.Replays, c.Back, Plural(int64(c.Back), "step", "steps"), c.Broke, c.Replays))
					default:
						s.Lines = append(s.Lines, fmt.Sprintf("No shrunk schedule broke the contract in all of %d replays, so the reproducer is the violation as found, which broke it again in %d of %d: its failure depends on timing.",
							c.Replays, c.Broke, c.Replays))
					}
				}
				if sh.Scenario != "" {
					r.Repro = "limitbench run " + sh.Scenario
					s.ReproText, s.Repro = "Replay it with:", r.Repro
				} else {
					r.Repro = sh.Trace
				}
			}
		} else if c := e.Closest; c != nil {
			s.Lines = append(s.Lines, fmt.Sprintf("Never broken. Closest approach %.3f of %s: %d permits admitted where %s were allowed, over %s%s.",
				c.Score, c.Limit, c.Permits, Number(c.Allowed), huntSpan(e, c.Lo, c.Hi), huntScope(c.Subject, c.Client)))
		} else if e.Plot != nil && slices.ContainsFunc(e.Plot.Admitted, func(n int64) bool { return n > 0 }) {
			s.Lines = append(s.Lines, fmt.Sprintf("Never broken; closest approach %.3f: the verifier could place no set of the admissions under one allowance of %s for certain (the decision times are known too coarsely), so the hunt could not tell how close it came.",
				e.BestScore, e.Contract))
		} else {
			s.Lines = append(s.Lines, "Never broken; no trial admitted anything.")
		}
		if b := e.Best; b != nil && b.Trace != "" && e.Violation == nil {
			s.Lines = append(s.Lines, fmt.Sprintf("Best schedule: %s (family %s, trial %d, %d requests).", b.Trace, b.Family, b.Trial, b.Size.Rows))
		}
		if fg, ok := byName[HuntFigureName(e)]; ok {
			fv := &figureView{Name: fg.Name, Title: fg.Title}
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

// huntSpan writes [lo, hi] (µs since the Unix epoch) as seconds since the trial's time zero when
// e has a plot to place it on, else as the raw µs.
func huntSpan(e *hunt.Entry, lo, hi int64) string {
	if p := e.Plot; p != nil {
		return fmt.Sprintf("[%.6f, %.6f] s of the trial", float64(lo-p.OriginUs)/1e6, float64(hi-p.OriginUs)/1e6)
	}
	return fmt.Sprintf("[%d, %d] µs", lo, hi)
}

func huntScope(subject, client string) string {
	s := ""
	if subject != "" {
		s += " for subject " + subject
	}
	if client != "" {
		s += " and client " + client
	}
	return s
}

// WriteHuntMarkdown writes report.md for a hunt: the settings, one table row per algorithm and
// topology (its best score, whether it broke its contract, the reproducer's size against the
// schedule it was shrunk from, and how to replay it), then a section per algorithm with how it
// broke or where it came closest, and the figure of its best schedule (PNG shown, SVG linked).
// The output depends only on f and the figures' names and titles.
func WriteHuntMarkdown(w io.Writer, f *hunt.File, figs []Figure) error {
	v := newHuntView(f, figs, false)
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n%s\n\n", MarkdownText(v.Title), MarkdownText(v.Intro))
	if v.CutShort != "" {
		fmt.Fprintf(&b, "> **Cut short:** %s\n\n", MarkdownText(v.CutShort))
	}
	b.WriteString("## Hunt\n\n")
	b.WriteString("| algorithm | topology | contract | trials | best score | result | found → reproducer | reproducer |\n")
	b.WriteString("|---|---|---|--:|--:|---|---|---|\n")
	for _, r := range v.Rows {
		label := MarkdownCell(r.Label)
		if r.Class == "fail" {
			label = "**" + label + "**"
		}
		repro := ""
		if r.Repro != "" {
			repro = "`" + strings.ReplaceAll(r.Repro, "`", "") + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", MarkdownCell(r.Algorithm), MarkdownCell(r.Topology),
			MarkdownCell(r.Contract), r.Trials, r.Best, label, MarkdownCell(r.Sizes), repro)
	}
	for _, s := range v.Sections {
		fmt.Fprintf(&b, "\n### %s: %s\n\n", MarkdownText(s.Heading), MarkdownText(s.Label))
		for _, l := range s.Lines {
			fmt.Fprintf(&b, "%s\n", MarkdownText(l))
		}
		if s.Repro != "" {
			fmt.Fprintf(&b, "\n%s\n\n```sh\n%s\n```\n", MarkdownText(s.ReproText), s.Repro)
		}
		if fg := s.Figure; fg != nil {
			fmt.Fprintf(&b, "\n![%s](%s.png)\n\n[SVG version](%s.svg)\n", MarkdownText(fg.Title), fg.Name, fg.Name)
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write report.md: %w", err)
	}
	return nil
}

// WriteHuntHTML writes report.html for a hunt: the same content as WriteHuntMarkdown in one
// self-contained file, every figure inline as a PNG data: URI, the reports' inline CSS, no
// JavaScript and no reference to any other file or host.
func WriteHuntHTML(w io.Writer, f *hunt.File, figs []Figure) error {
	if err := htmlHunt.Execute(w, newHuntView(f, figs, true)); err != nil {
		return fmt.Errorf("write report.html: %w", err)
	}
	return nil
}

// WriteHunt writes a hunt's report into dir: every figure of HuntFigures as PNG and SVG, then
// report.md and report.html. It returns the names of the files written, relative to dir, and
// stops at the first error.
func WriteHunt(dir string, f *hunt.File) ([]string, error) {
	figs, err := HuntFigures(f)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, fg := range figs {
		for _, out := range []struct {
			ext string
			b   []byte
		}{{".png", fg.PNG}, {".svg", fg.SVG}} {
			name := fg.Name + out.ext
			if err := result.WriteFile(filepath.Join(dir, name), out.b); err != nil {
				return names, err
			}
			names = append(names, name)
		}
	}
	var md, html bytes.Buffer
	if err := WriteHuntMarkdown(&md, f, figs); err != nil {
		return names, err
	}
	if err := WriteHuntHTML(&html, f, figs); err != nil {
		return names, err
	}
	for _, out := range []struct {
		name string
		b    []byte
	}{{MarkdownFile, md.Bytes()}, {HTMLFile, html.Bytes()}} {
		if err := result.WriteFile(filepath.Join(dir, out.name), out.b); err != nil {
			return names, err
		}
		names = append(names, out.name)
	}
	return names, nil
}

var htmlHunt = template.Must(template.New("hunt").Parse(pageHead + `<p>{{.Intro}}</p>
{{if .CutShort}}<p class="note"><strong>Cut short:</strong> {{.CutShort}}</p>{{end}}
<h2>Hunt</h2>
<div class="wrap"><table class="v">
<thead><tr><th>algorithm</th><th>topology</th><th>contract</th><th>trials</th><th>best score</th><th>result</th><th>found → reproducer</th><th>reproducer</th></tr></thead>
<tbody>{{range .Rows}}
<tr><td>{{.Algorithm}}</td><td>{{.Topology}}</td><td class="c">{{.Contract}}</td><td class="n">{{.Trials}}</td><td class="n">{{.Best}}</td><td><span class="badge {{.Class}}">{{.Label}}</span></td><td>{{.Sizes}}</td><td>{{if .Repro}}<code>{{.Repro}}</code>{{end}}</td></tr>{{end}}
</tbody></table></div>
{{range .Sections}}<section><h3>{{.Heading}} <span class="badge {{.Class}}">{{.Label}}</span></h3>
{{range .Lines}}<p>{{.}}</p>
{{end}}{{if .Repro}}<p>{{.ReproText}} <code>{{.Repro}}</code></p>
{{end}}{{with .Figure}}<figure><img src="{{.PNG}}" alt="{{.Title}}"><figcaption>{{.Title}}</figcaption></figure>
{{end}}</section>
{{end}}
</body>
</html>
`))
