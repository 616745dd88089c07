package capacity

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/limitbench/limitbench/report"
)

var errNothingToPlot = errors.New("nothing to plot")

// Figure draws the sweep: on top, achieved against offered rate (with the line where
// they are equal, the closed-loop saturation and the sustainable rate); below, p99 latency from
// the intended send time against offered rate, with the objective when it bounds a latency.
func Figure(c *Result) (report.Figure, error) {
	steps := make([]Step, 0, len(c.Steps))
	for _, s := range c.Steps {
		if s.OfferedRPS > 0 {
			steps = append(steps, s)
		}
	}
	if len(steps) == 0 {
		return report.Figure{}, errNothingToPlot
	}
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].OfferedRPS < steps[j].OfferedRPS })
	xmax := steps[len(steps)-1].OfferedRPS * 1.05
	algColor := report.AlgorithmColor(c.Algorithm)
	grey := color.RGBA{R: 0x99, G: 0x99, B: 0x99, A: 0xff}
	red := color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	dashed := []vg.Length{vg.Points(5), vg.Points(3)}
	title := fmt.Sprintf("Capacity of %s on one Redis shard (%s, %s)", c.Algorithm, c.Topology, c.Environment.Backend)

	top, bottom := capacityPlots(title, xmax)
	pen := figurePen{algColor: algColor, red: red}
	line, points, bad := pen.line, pen.points, pen.bad

	var achieved, p99, badA, badL plotter.XYs
	ymax := 0.0
	for _, s := range steps {
		achieved = append(achieved, plotter.XY{X: s.OfferedRPS, Y: s.AchievedRPS})
		lat := math.Max(s.LatencyUS.P99, 1) / report.MicrosPerMilli // the log scale needs > 0
		p99 = append(p99, plotter.XY{X: s.OfferedRPS, Y: lat})
		if !s.Good {
			badA = append(badA, plotter.XY{X: s.OfferedRPS, Y: s.AchievedRPS})
			badL = append(badL, plotter.XY{X: s.OfferedRPS, Y: lat})
		}
		ymax = math.Max(ymax, s.AchievedRPS)
	}
	line(top, "achieved = offered", plotter.XYs{{X: 0, Y: 0}, {X: xmax, Y: xmax}}, grey, vg.Points(1), dashed)
	if c.Probe != nil && c.Probe.AchievedRPS > 0 {
		sat := c.Probe.AchievedRPS
		line(top, fmt.Sprintf("closed-loop saturation %s/s", report.Rate(sat)), plotter.XYs{{X: 0, Y: sat}, {X: xmax, Y: sat}}, color.Black, vg.Points(1), []vg.Length{vg.Points(2), vg.Points(2)})
		ymax = math.Max(ymax, sat)
	}
	points(top, "achieved", achieved)
	bad(top, badA)
	top.Y.Max = ymax * 1.1

	points(bottom, "p99", p99)
	bad(bottom, badL)
	if c.SLOBoundUS > 0 {
		slo := c.SLOBoundUS / report.MicrosPerMilli
		line(bottom, "objective "+c.SLO, plotter.XYs{{X: 0, Y: slo}, {X: xmax, Y: slo}}, red, vg.Points(1.2), dashed)
	}
	lo, hi := latencyRange(p99, c.SLOBoundUS/report.MicrosPerMilli)
	bottom.Y.Min, bottom.Y.Max = lo/1.5, hi*1.5
	if c.SustainableRPS > 0 {
		x := c.SustainableRPS
		line(top, fmt.Sprintf("sustainable %s/s", report.Rate(x)), plotter.XYs{{X: x, Y: 0}, {X: x, Y: top.Y.Max}}, algColor, vg.Points(1), dashed)
		line(bottom, "", plotter.XYs{{X: x, Y: bottom.Y.Min}, {X: x, Y: bottom.Y.Max}}, algColor, vg.Points(1), dashed)
	}

	f := report.Figure{Name: FigureName, Kind: FigureKind, Title: title, Topology: c.Topology,
		Algorithm: c.Algorithm, Algorithms: []string{c.Algorithm}}
	return report.RenderFigure(f, 10*vg.Inch, 7*vg.Inch, func(dc draw.Canvas) {
		tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Points(10)}
		cs := plot.Align([][]*plot.Plot{{top}, {bottom}}, tiles, dc)
		top.Draw(cs[0][0])
		bottom.Draw(cs[1][0])
	})
}

// capacityPlots returns the figure's two plots, titled title, over offered rates [0, xmax]: on
// top achieved against offered, below p99 latency on a log scale, each legend where the data is
// not (achieved runs from bottom left to top right, latency rises to the right).
func capacityPlots(title string, xmax float64) (top, bottom *plot.Plot) {
	top = report.NewPlot(title, "", "achieved decisions/s")
	bottom = report.NewPlot("", "offered rate (requests/s)", "p99 latency (ms, log scale)")
	for _, p := range []*plot.Plot{top, bottom} {
		p.X.Min, p.X.Max = 0, xmax
		p.Legend.TextStyle.Font.Size = vg.Points(10)
		p.Legend.Padding = vg.Points(2)
	}
	top.Y.Min = 0
	top.Legend.Top, top.Legend.Left = false, false
	top.Legend.YOffs = vg.Points(8)
	bottom.Legend.Top, bottom.Legend.Left = false, false
	bottom.Legend.YOffs = vg.Points(8)
	bottom.Y.Scale = plot.LogScale{}
	bottom.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	return top, bottom
}

// figurePen draws the figure's series: the algorithm's in its color, failed steps in red.
type figurePen struct {
	algColor color.Color
	red      color.Color
}

// line adds the line through xys to p, in legend as name unless it is empty; a series with NaN
// or Inf is left out rather than fail the figure.
func (f figurePen) line(p *plot.Plot, name string, xys plotter.XYs, col color.Color, width vg.Length, dashes []vg.Length) {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return
	}
	l.Color, l.Width, l.Dashes = col, width, dashes
	p.Add(l)
	if name != "" {
		p.Legend.Add(name, l)
	}
}

// points adds the steps xys to p as the algorithm's line with points, in the legend as name.
func (f figurePen) points(p *plot.Plot, name string, xys plotter.XYs) {
	lp, sc, err := plotter.NewLinePoints(xys)
	if err != nil {
		return
	}
	lp.Color, lp.Width = f.algColor, vg.Points(1.8)
	sc.Color, sc.Shape, sc.Radius = f.algColor, draw.CircleGlyph{}, vg.Points(3)
	p.Add(lp, sc)
	p.Legend.Add(name, lp, sc)
}

// bad marks the failed steps xys on p with red crosses.
func (f figurePen) bad(p *plot.Plot, xys plotter.XYs) {
	if len(xys) == 0 {
		return
	}
	sc, err := plotter.NewScatter(xys)
	if err != nil {
		return
	}
	sc.Color, sc.Shape, sc.Radius = f.red, draw.CrossGlyph{}, vg.Points(5)
	p.Add(sc)
	p.Legend.Add("step failed", sc)
}

// latencyRange returns the smallest and largest of the p99 values and the objective (ms; 0 for
// none).
func latencyRange(p99 plotter.XYs, sloMS float64) (lo, hi float64) {
	lo, hi = math.Inf(1), 0
	for _, p := range p99 {
		lo, hi = math.Min(lo, p.Y), math.Max(hi, p.Y)
	}
	if sloMS > 0 {
		lo, hi = math.Min(lo, sloMS), math.Max(hi, sloMS)
	}
	return lo, hi
}
