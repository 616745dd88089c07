package report

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// useAccuracySpec plots one entry against its contract, in two panels over one time axis. The
// top panel draws, for each limit of the contract, the most any scope certainly held in the
// limit's own window in each timeline bin (Timeline.Use: the running count in an aligned window,
// the count in a sliding one, the tokens drawn from a bucket) against the allowance a correct
// limiter stays within, so that a correct limiter never crosses its line; a red cross marks each
// definite violation (above the allowance, on its bin), and the axis reaches every violation.
// The bottom panel draws offered/s and admitted/s, scaled so that neither line runs along the
// frame. Injected faults are shaded on both.
func useAccuracySpec(r *result.Result, e *result.Entry) figureSpec {
	t := e.Timeline
	end := float64(len(t.Offered)) * t.BinS
	lo, hi := 0.0, end
	for _, v := range e.Verification.ViolationTimesS {
		lo, hi = math.Min(lo, v), math.Max(hi, v+t.BinS)
	}
	title := fmt.Sprintf("Against its contract, %s on %s: %s", e.Algorithm, e.Topology, e.Verification.Contract)
	unit := "permits in the contract's window"
	if strings.HasPrefix(e.Verification.Contract, "token-bucket") {
		unit = "tokens drawn from the bucket"
	}
	top := NewPlot(title, "", unit)
	bottom := NewPlot("", "time since start (s)", "requests per second")
	l := NewLegend()
	faultWindows(top, &l, e.Verification.Faults, end)
	var none plot.Legend
	faultWindows(bottom, &none, e.Verification.Faults, end)
	ymax := 1.0
	for i, u := range t.Use {
		name := "held"
		if len(t.Use) > 1 {
			name += ": " + u.Contract
		}
		dashes := []vg.Length(nil)
		if i > 0 {
			dashes = []vg.Length{vg.Points(5), vg.Points(2)}
		}
		addStep(top, &l, name, binSteps(u.Held, t.BinS, 1), AlgorithmColor(e.Algorithm), vg.Points(2), dashes)
		addLine(top, &l, "allowed: "+Number(u.Allowance), plotter.XYs{{X: lo, Y: u.Allowance}, {X: hi, Y: u.Allowance}},
			color.Black, vg.Points(1.2), []vg.Length{vg.Points(4), vg.Points(3)})
		ymax = math.Max(ymax, math.Max(u.Allowance, slices.Max(append([]float64{0}, u.Held...))))
	}
	addViolations(top, &l, e, t.Use)
	top.Y.Min, top.Y.Max = 0, ymax*1.15
	offered := binSteps(toFloats(t.Offered), t.BinS, t.BinS)
	admitted := binSteps(toFloats(t.Admitted), t.BinS, t.BinS)
	addStep(bottom, &l, "offered/s", offered, color.RGBA{R: 0x80, G: 0x80, B: 0x80, A: 0xff}, vg.Points(1.5), []vg.Length{vg.Points(2), vg.Points(2)})
	addStep(bottom, &l, "admitted/s", admitted, AlgorithmColor(e.Algorithm), vg.Points(1.5), nil)
	rmax := 1.0
	for _, p := range append(offered, admitted...) {
		rmax = math.Max(rmax, p.Y)
	}
	bottom.Y.Min, bottom.Y.Max = 0, rmax*1.15
	for _, p := range []*plot.Plot{top, bottom} {
		p.X.Min, p.X.Max = lo, math.Max(hi, lo+t.BinS)
	}
	caption := title + ". Top: " + useCaption(t.Use) + " Bottom: requests offered and admitted per second, per bin of " + Number(t.BinS*1000) + " ms."
	return figureSpec{
		Figure: Figure{Name: "accuracy-" + e.Name(), Kind: KindAccuracy, Title: title, Caption: caption,
			Topology: e.Topology, Algorithm: e.Algorithm, Algorithms: []string{e.Algorithm}},
		w: 10 * vg.Inch, h: 6.5 * vg.Inch,
		draw: stacked([]*plot.Plot{top, bottom}, l, 2.4*vg.Inch),
	}
}

// useCaption says what the top panel counts, for the figure's caption.
func useCaption(us []verify.WindowUse) string {
	var parts []string
	for _, u := range us {
		parts = append(parts, fmt.Sprintf("%s: %s, against %s.", u.Contract, u.Measure, Number(u.Allowance)))
	}
	return strings.Join(parts, " ") + " Only admissions certainly inside a window count, so a limiter that keeps its contract stays at or below its line."
}

// stacked draws ps one above the other with aligned axes on the left and the legend l in a
// column of width legendW on the right.
func stacked(ps []*plot.Plot, l plot.Legend, legendW vg.Length) func(dc draw.Canvas) {
	return func(dc draw.Canvas) {
		left, right := dc, dc
		left.Max.X = dc.Max.X - legendW
		right.Min.X = dc.Max.X - legendW + vg.Points(8)
		right.Max.Y = dc.Max.Y - vg.Points(30)
		rows := make([][]*plot.Plot, len(ps))
		for i, p := range ps {
			rows[i] = []*plot.Plot{p}
		}
		cs := plot.Align(rows, draw.Tiles{Rows: len(ps), Cols: 1, PadY: vg.Points(8)}, left)
		for i, p := range ps {
			p.Draw(cs[i][0])
		}
		l.Draw(right)
	}
}

// binSteps returns per bin i the point (i·binS, v_i / per), and one more at the last bin's end,
// to be drawn as PostStep: the value holds over the whole bin.
func binSteps(v []float64, binS, per float64) plotter.XYs {
	xys := make(plotter.XYs, 0, len(v)+1)
	for i, x := range v {
		xys = append(xys, plotter.XY{X: float64(i) * binS, Y: x / per})
	}
	if len(v) > 0 {
		xys = append(xys, plotter.XY{X: float64(len(v)) * binS, Y: xys[len(v)-1].Y})
	}
	return xys
}

func toFloats(v []int64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// addStep adds xys to p as a post-step line named name in l.
func addStep(p *plot.Plot, l *plot.Legend, name string, xys plotter.XYs, c color.Color, width vg.Length, dashes []vg.Length) {
	if line := addLine(p, l, name, xys, c, width, dashes); line != nil {
		line.StepStyle = plotter.PostStep
	}
}

// addLine adds xys to p as a line named name in l; nil (nothing added) for NaN or Inf data.
func addLine(p *plot.Plot, l *plot.Legend, name string, xys plotter.XYs, c color.Color, width vg.Length, dashes []vg.Length) *plotter.Line {
	line, err := plotter.NewLine(xys)
	if err != nil {
		return nil
	}
	line.Color, line.Width, line.Dashes = c, width, dashes
	p.Add(line)
	l.Add(name, line)
	return line
}

// addViolations marks each definite violation of e with a red cross on p: at its time, at the
// first limit's use in its bin when that is over the allowance, else on the allowance line.
func addViolations(p *plot.Plot, l *plot.Legend, e *result.Entry, us []verify.WindowUse) {
	ts := e.Verification.ViolationTimesS
	if len(ts) == 0 || len(us) == 0 {
		return
	}
	u := us[0]
	xys := make(plotter.XYs, 0, len(ts))
	for _, v := range ts {
		y := u.Allowance
		if i := binOf(v, e.Timeline.BinS); i >= 0 && i < len(u.Held) && u.Held[i] > y {
			y = u.Held[i]
		}
		xys = append(xys, plotter.XY{X: v, Y: y})
	}
	s, err := plotter.NewScatter(xys)
	if err != nil {
		return
	}
	s.GlyphStyle.Shape = draw.CrossGlyph{}
	s.GlyphStyle.Color = color.RGBA{R: 0xe0, A: 0xff}
	s.GlyphStyle.Radius = vg.Points(4)
	p.Add(s)
	name := fmt.Sprintf("definite violation (%s)", Count(e.Verification.DefiniteViolations))
	if n := e.Verification.ViolationTimesOmitted; n > 0 {
		name += fmt.Sprintf(", %s not listed", Count(n))
	}
	l.Add(name, s)
}
