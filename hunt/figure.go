package hunt

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/limitbench/limitbench/report"
)

// FigureKind is the report.Figure kind of a hunt's best schedule.
const FigureKind = "hunt"

// Figures renders, for every entry of f with a plot (Entry.Plot), the figure of its best
// schedule, named by FigureName: on top the permits requested and admitted per time bin of the
// trial, the contract's allowance for one bin, and the window the verifier marked (red for the
// worst definite violation, blue for the closest approach); below, the running total of the
// admissions in that window against what the contract allows it up to each instant. Entries
// without a plot have no figure. The figures depend only on f.
func Figures(f *File) ([]report.Figure, error) {
	var out []report.Figure
	for i := range f.Entries {
		e := &f.Entries[i]
		if e.Plot == nil || len(e.Plot.Admitted) == 0 {
			continue
		}
		fig, err := figure(e)
		if err != nil {
			return nil, err
		}
		out = append(out, fig)
	}
	return out, nil
}

// FigureName is the file stem of the figure of e's best schedule: hunt-<algorithm>-<topology>.
func FigureName(e *Entry) string {
	return "hunt-" + fileSafe(e.Algorithm) + "-" + e.Topology
}

var (
	violationRed  = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	violationFill = color.RGBA{R: 0xfb, G: 0xdc, B: 0xdc, A: 0xff}
	closestFill   = color.RGBA{R: 0xdc, G: 0xe8, B: 0xfb, A: 0xff}
	requestedGrey = color.RGBA{R: 0x99, G: 0x99, B: 0x99, A: 0xff}
	dashed        = []vg.Length{vg.Points(4), vg.Points(3)}
)

// timeAxis labels the time axis of a hunt figure's lowest panel.
const timeAxis = "time since the trial's start (s)"

// figure renders e's figure: the bins panel, and the window panel below it when the verifier
// marked a window with admissions in it.
func figure(e *Entry) (report.Figure, error) {
	what := "best schedule"
	if e.Violation != nil {
		what = "violating schedule"
	}
	title := fmt.Sprintf("Hunt of %s on %s: %s, trial %d", e.Algorithm, e.Topology, what, trialOf(e))
	f := report.Figure{Name: FigureName(e), Kind: FigureKind, Title: title, Topology: e.Topology, Algorithm: e.Algorithm,
		Algorithms: []string{e.Algorithm}}
	top := binsPanel(e, title)
	panels, h := []*panel{top}, 6.5*vg.Inch
	if w := e.Plot.Window; w != nil && len(w.Steps) > 0 {
		panels = append(panels, windowPanel(e))
	} else {
		// Nothing certain to mark (no admission, or none the verifier could place in one window):
		// the bins alone.
		top.p.X.Label.Text = timeAxis
		top.p.Title.Text += " (no window to mark)"
		f.Title = top.p.Title.Text
		h = 4 * vg.Inch
	}
	return report.RenderFigure(f, 11*vg.Inch, h, drawPanels(panels))
}

// panel is one plot of a hunt figure and its legend, which is drawn in a column to its right.
type panel struct {
	p      *plot.Plot
	legend plot.Legend
}

func newPanel(title, x, y string) *panel {
	return &panel{p: report.NewPlot(title, x, y), legend: report.NewLegend()}
}

// line adds a line through xys, named in the legend unless name is empty. A series with NaN or
// Inf in it is left out rather than fail the report.
func (pn *panel) line(name string, xys plotter.XYs, c color.Color, width vg.Length, dashes []vg.Length, step plotter.StepKind) {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return
	}
	l.Color, l.Width, l.Dashes, l.StepStyle = c, width, dashes, step
	pn.p.Add(l)
	if name != "" {
		pn.legend.Add(name, l)
	}
}

// binsPanel is the top panel of e's figure: the permits requested and admitted per bin, the
// allowance per bin at the contract's long-run rate, and the marked window shaded.
func binsPanel(e *Entry, title string) *panel {
	p := e.Plot
	top := newPanel(title, "", fmt.Sprintf("permits per %s ms bin", report.Number(p.BinS*1000)))
	x0, x1 := p.FirstS, p.FirstS+float64(len(p.Admitted))*p.BinS
	top.p.X.Min, top.p.X.Max = x0, x1
	top.p.Y.Min = 0
	ymax := p.AllowedPerBin
	for _, v := range p.Requested {
		ymax = math.Max(ymax, float64(v))
	}
	ymax = math.Max(1, ymax) * 1.15
	top.p.Y.Max = ymax
	if w := p.Window; w != nil {
		fill := closestFill
		name := fmt.Sprintf("closest approach: %d admitted, %s allowed", w.Permits, report.Number(w.Allowed))
		if w.Violation {
			fill = violationFill
			name = fmt.Sprintf("violation: %d admitted, %s allowed", w.Permits, report.Number(w.Allowed))
		}
		hi := math.Max(w.HiS, w.LoS+p.BinS/4) // an instant still shows
		if poly, err := plotter.NewPolygon(plotter.XYs{{X: w.LoS, Y: 0}, {X: hi, Y: 0}, {X: hi, Y: ymax}, {X: w.LoS, Y: ymax}}); err == nil {
			poly.Color = fill
			poly.LineStyle.Width = 0
			top.p.Add(poly)
			top.legend.Add(name, poly)
		}
	}
	bins := func(v []int64) plotter.XYs {
		xys := make(plotter.XYs, 0, len(v)+1)
		for i, c := range v {
			xys = append(xys, plotter.XY{X: p.FirstS + float64(i)*p.BinS, Y: float64(c)})
		}
		return append(xys, plotter.XY{X: x1, Y: float64(v[len(v)-1])})
	}
	top.line("requested", bins(p.Requested), requestedGrey, vg.Points(1.2), nil, plotter.PostStep)
	top.line("admitted", bins(p.Admitted), report.AlgorithmColor(e.Algorithm), vg.Points(1.8), nil, plotter.PostStep)
	if p.AllowedPerBin > 0 {
		top.line("allowed per bin (long-run rate)", plotter.XYs{{X: x0, Y: p.AllowedPerBin}, {X: x1, Y: p.AllowedPerBin}},
			color.Black, vg.Points(1.2), dashed, plotter.NoStep)
	}
	return top
}

// windowPanel is the lower panel of e's figure, zoomed on the marked window with a margin
// either side: the running total of the admissions in it against the allowance up to each
// instant, and for a violation a cross where the total passed the allowance.
func windowPanel(e *Entry) *panel {
	p, w := e.Plot, e.Plot.Window
	bottom := newPanel("", timeAxis, "permits in the marked window")
	bottom.p.Y.Min = 0
	lo, hi := w.LoS, math.Max(w.HiS, w.LoS)
	pad := math.Max((hi-lo)/10, p.BinS)
	bottom.p.X.Min, bottom.p.X.Max = lo-pad, hi+pad
	allowedAt := func(t float64) float64 { return w.AllowedAtLo + w.AllowedPerS*(math.Min(math.Max(t, lo), hi)-lo) }
	xys := plotter.XYs{{X: lo - pad, Y: 0}}
	for _, s := range w.Steps {
		xys = append(xys, plotter.XY{X: s.AtS, Y: float64(s.Permits)})
	}
	xys = append(xys, plotter.XY{X: hi + pad, Y: float64(w.Steps[len(w.Steps)-1].Permits)})
	algColor := report.AlgorithmColor(e.Algorithm)
	bottom.line("admitted in it ("+scopeOf(w)+")", xys, algColor, vg.Points(1.8), nil, plotter.PostStep)
	// The allowance over the window; an instant's (lo = hi) is drawn across the margins.
	a0, a1 := lo, hi
	if hi-lo < pad {
		a0, a1 = lo-pad/2, hi+pad/2
	}
	bottom.line("allowed by "+w.Limit, plotter.XYs{{X: a0, Y: allowedAt(a0)}, {X: a1, Y: allowedAt(a1)}}, color.Black, vg.Points(1.2), dashed, plotter.NoStep)
	if w.Violation {
		// The instant the running total passed its allowance.
		for _, s := range w.Steps {
			if float64(s.Permits) > allowedAt(s.AtS) {
				if sc, err := plotter.NewScatter(plotter.XYs{{X: s.AtS, Y: float64(s.Permits)}}); err == nil {
					sc.Color, sc.Shape, sc.Radius = violationRed, draw.CrossGlyph{}, vg.Points(5)
					bottom.p.Add(sc)
					bottom.legend.Add("over the allowance", sc)
				}
				break
			}
		}
	}
	bottom.p.Y.Max = math.Max(1, math.Max(float64(w.Permits), allowedAt(hi))) * 1.25
	return bottom
}

// drawPanels draws panels one above the other, aligned, each with its legend in a column to its
// right (the first one's below the title line), never over data.
func drawPanels(panels []*panel) func(dc draw.Canvas) {
	const legendW = 3 * vg.Inch
	return func(dc draw.Canvas) {
		left := dc
		left.Max.X -= legendW
		tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadY: vg.Points(10)}
		grid := make([][]*plot.Plot, len(panels))
		for i, pn := range panels {
			grid[i] = []*plot.Plot{pn.p}
		}
		cs := plot.Align(grid, tiles, left)
		for i, pn := range panels {
			pn.p.Draw(cs[i][0])
		}
		for i, pn := range panels {
			c := cs[i][0]
			c.Min.X, c.Max.X = dc.Max.X-legendW+vg.Points(8), dc.Max.X
			if i == 0 {
				c.Max.Y -= vg.Points(30)
			}
			pn.legend.Draw(c)
		}
	}
}

// trialOf is the trial of e's figure: the violation's, else the best schedule's.
func trialOf(e *Entry) int {
	if v := e.Violation; v != nil {
		return v.Schedule.Trial
	}
	if e.Best != nil {
		return e.Best.Trial
	}
	return 0
}

// scopeOf names the scope of w's admissions.
func scopeOf(w *PlotWindow) string {
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
