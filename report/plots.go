package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// Figure kinds of a run's report.
const (
	KindLatency  = "latency"
	KindAccuracy = "accuracy"
	KindCompare  = "compare"
)

// pngDPI is the resolution of PNG figures.
const pngDPI = 110

// Figure is one rendered plot, in both formats.
type Figure struct {
	// Name is the file stem: latency-<topology>, accuracy-<algorithm>-<topology> or
	// compare-<topology>. Files are Name+".png" and Name+".svg".
	Name string
	// Kind is KindLatency, KindAccuracy or KindCompare.
	Kind string
	// Title says what the figure shows, for alt text; Caption, when set, says it at length for
	// the caption (Title otherwise).
	Title, Caption string
	// Topology and Algorithm say which entries it shows (Algorithm only for accuracy figures).
	Topology, Algorithm string
	// Algorithms lists the algorithms drawn, in drawing order.
	Algorithms []string
	PNG, SVG   []byte
}

// figureSpec is a figure before rendering: a size and a function drawing onto a canvas.
type figureSpec struct {
	Figure
	w, h vg.Length
	draw func(dc draw.Canvas)
}

// RenderFigure returns f drawn by draw on a canvas of w × h as PNG and SVG (f's PNG and SVG
// replaced), in the reports' style and resolution: the way every limitbench figure is rendered.
// gonum panics on some degenerate input; that becomes an error.
func RenderFigure(f Figure, w, h vg.Length, draw func(dc draw.Canvas)) (Figure, error) {
	spec := figureSpec{Figure: f, w: w, h: h, draw: draw}
	err := spec.render()
	return spec.Figure, err
}

// render draws f as PNG and SVG. gonum panics on some degenerate input; that becomes an error.
func (f *figureSpec) render() (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("render %s: %v", f.Name, p)
		}
	}()
	png := vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(f.w, f.h), vgimg.UseDPI(pngDPI))}
	svg := vgsvg.New(f.w, f.h)
	for _, c := range []interface {
		vg.CanvasWriterTo
	}{png, svg} {
		f.draw(draw.Crop(draw.New(c), vg.Points(6), -vg.Points(6), vg.Points(4), -vg.Points(8)))
		var buf bytes.Buffer
		if _, err := c.WriteTo(&buf); err != nil {
			return fmt.Errorf("render %s: %w", f.Name, err)
		}
		if _, ok := c.(vgimg.PngCanvas); ok {
			f.PNG = buf.Bytes()
		} else {
			f.SVG = buf.Bytes()
		}
	}
	return nil
}

// Figures renders every plot of r: for each topology, the latency nines plot (when any entry has a
// latency histogram) and the comparison bars; for each entry with a timeline, its accuracy plot.
func Figures(r *result.Result) ([]Figure, error) {
	specs, err := figureSpecs(r)
	if err != nil {
		return nil, err
	}
	out := make([]Figure, 0, len(specs))
	for i := range specs {
		if err := specs[i].render(); err != nil {
			return nil, err
		}
		out = append(out, specs[i].Figure)
	}
	return out, nil
}

// figureSpecs lists r's figures without rendering them, in report order.
func figureSpecs(r *result.Result) ([]figureSpec, error) {
	var specs []figureSpec
	for _, topo := range topologies(r) {
		entries := entriesOn(r, topo)
		lat, err := latencySpec(r, topo, entries)
		if err != nil {
			return nil, err
		}
		if lat != nil {
			specs = append(specs, *lat)
		}
		specs = append(specs, compareSpec(r, topo, entries))
		for _, e := range entries {
			switch {
			case len(e.Timeline.Use) > 0:
				specs = append(specs, useAccuracySpec(r, e))
			case len(e.Timeline.Offered) > 0:
				specs = append(specs, rateAccuracySpec(r, e))
			}
		}
	}
	return specs, nil
}

// topologies returns the topologies of r's entries in first-seen order.
func topologies(r *result.Result) []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range r.Entries {
		if !seen[e.Topology] {
			seen[e.Topology] = true
			out = append(out, e.Topology)
		}
	}
	return out
}

// entriesOn returns r's entries on topo, in r's order.
func entriesOn(r *result.Result, topo string) []*result.Entry {
	var out []*result.Entry
	for i := range r.Entries {
		if r.Entries[i].Topology == topo {
			out = append(out, &r.Entries[i])
		}
	}
	return out
}

// NewPlot returns a plot in the reports' style with title and axis labels x and y.
func NewPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	return p
}

// NewLegend returns a legend in the reports' style: anchored top left, 10-point text. The
// figures draw it in a column of its own beside the plot it names, never over data.
func NewLegend() plot.Legend {
	l := plot.NewLegend()
	l.Left = true
	l.Top = true
	l.TextStyle.Font.Size = vg.Points(10)
	l.Padding = vg.Points(2)
	return l
}

// withLegend draws p on the left and the legend in its own column on the right, so the legend never
// covers data.
func withLegend(p *plot.Plot, l plot.Legend, legendW vg.Length) func(dc draw.Canvas) {
	return func(dc draw.Canvas) {
		left, right := dc, dc
		left.Max.X = dc.Max.X - legendW
		right.Min.X = dc.Max.X - legendW + vg.Points(8)
		right.Max.Y = dc.Max.Y - vg.Points(30) // below the title line
		p.Draw(left)
		l.Draw(right)
	}
}

// nines are the x positions 1/(1−q) of the nines plot's ticks and their labels.
var nines = []plot.Tick{
	{Value: 1, Label: "0%"}, {Value: 10, Label: "90%"}, {Value: 100, Label: "99%"},
	{Value: 1e3, Label: "99.9%"}, {Value: 1e4, Label: "99.99%"}, {Value: 1e5, Label: "99.999%"},
	{Value: 1e6, Label: "99.9999%"}, {Value: 1e7, Label: "99.99999%"},
}

// latencySpec is the percentile ("nines") plot of topo: x = 1/(1−q) on a log scale, y = latency
// from intended send time in ms, one line per algorithm with a latency histogram. nil when none has.
func latencySpec(r *result.Result, topo string, entries []*result.Entry) (*figureSpec, error) {
	title := fmt.Sprintf("Latency by percentile, %s on %s (%s)", r.Scenario.Name, topo, r.Environment.Backend)
	p := NewPlot(title, "percentile (log scale of 1/(1−q))", "latency from intended send (ms)")
	p.X.Scale = plot.LogScale{}
	l := NewLegend()
	var algs []string
	xmax := 1e4
	for _, e := range entries {
		h, err := e.LatencyHistogram()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		if h == nil || h.TotalCount() == 0 {
			continue
		}
		var xys plotter.XYs
		for _, b := range h.CumulativeDistributionWithTicks(HGRMTicksPerHalfDistance) {
			if b.Quantile >= 100 {
				continue
			}
			xys = append(xys, plotter.XY{X: 1 / (1 - b.Quantile/100), Y: float64(b.ValueAt) / MicrosPerMilli})
		}
		// The maximum sits at the 1-in-N level.
		if n := float64(h.TotalCount()); len(xys) == 0 || n > xys[len(xys)-1].X {
			xys = append(xys, plotter.XY{X: math.Max(n, 1), Y: float64(h.Max()) / MicrosPerMilli})
		}
		xmax = math.Max(xmax, xys[len(xys)-1].X)
		line, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		line.Color = AlgorithmColor(e.Algorithm)
		line.Width = vg.Points(1.8)
		line.Dashes = algorithmDashes(e.Algorithm)
		p.Add(line)
		l.Add(e.Algorithm, line)
		algs = append(algs, e.Algorithm)
	}
	if len(algs) == 0 {
		return nil, nil
	}
	p.X.Min, p.X.Max = 1, xmax
	p.Y.Min = 0
	var ticks []plot.Tick
	for _, t := range nines {
		if t.Value <= xmax*1.0001 {
			ticks = append(ticks, t)
		}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	return &figureSpec{
		Figure: Figure{Name: "latency-" + topo, Kind: KindLatency, Title: title, Topology: topo, Algorithms: algs},
		w:      10 * vg.Inch, h: 5.5 * vg.Inch,
		draw: withLegend(p, l, 2.4*vg.Inch),
	}, nil
}

// rateAccuracySpec plots one entry of a result written before the timeline recorded each
// limit's use (Timeline.Use) over time: offered/s, admitted/s and the contract's limit/s, each
// bin a step from its start to its end (so a cross is on its bin's step), with a red cross at
// each definite violation, on the admitted step of the bin it fell in (one whose time is outside
// the timeline is counted in the legend instead), and each injected fault's window shaded
// (faultWindows). The time axis is the timeline's. A per-bin rate against the contract's
// long-run rate is all such a result allows; it can show a correct limiter above its line (a
// window's burst), which the use plot (useAccuracySpec) never does.
func rateAccuracySpec(r *result.Result, e *result.Entry) figureSpec {
	t := e.Timeline
	title := fmt.Sprintf("Admissions over time, %s on %s: %s", e.Algorithm, e.Topology, e.Verification.Contract)
	p := NewPlot(title, "time since start (s)", "requests per second")
	l := NewLegend()
	end := float64(len(t.Offered)) * t.BinS
	faultWindows(p, &l, e.Verification.Faults, end)
	addStep(p, &l, "offered/s", binSteps(toFloats(t.Offered), t.BinS, t.BinS), color.RGBA{R: 0x99, G: 0x99, B: 0x99, A: 0xff}, vg.Points(1.5), nil)
	adm := binSteps(toFloats(t.Admitted), t.BinS, t.BinS)
	addStep(p, &l, "admitted/s", adm, AlgorithmColor(e.Algorithm), vg.Points(2), nil)
	if hasLimit(t.Limit) {
		addStep(p, &l, "contract limit/s", binSteps(t.Limit, t.BinS, t.BinS), color.Black, vg.Points(1.2), []vg.Length{vg.Points(4), vg.Points(3)})
	}
	if ts := e.Verification.ViolationTimesS; len(ts) > 0 {
		xys := make(plotter.XYs, 0, len(ts))
		outside := 0
		for _, v := range ts {
			i := binOf(v, t.BinS)
			if i < 0 || i >= len(t.Admitted) {
				// A window that ends after the last bin (widened by the clock granularity) or
				// an aligned window that began before the first: no bin to mark it on.
				outside++
				continue
			}
			xys = append(xys, plotter.XY{X: v, Y: adm[i].Y})
		}
		s, err := plotter.NewScatter(xys)
		if err != nil || len(xys) == 0 {
			s = &plotter.Scatter{} // only for the legend: nothing to draw
		}
		s.GlyphStyle.Shape = draw.CrossGlyph{}
		s.GlyphStyle.Color = color.RGBA{R: 0xe0, A: 0xff}
		s.GlyphStyle.Radius = vg.Points(4)
		if len(s.XYs) > 0 {
			p.Add(s)
		}
		l.Add(fmt.Sprintf("definite violation (%d)", e.Verification.DefiniteViolations), s)
		if outside > 0 {
			l.Add(fmt.Sprintf("(%d of them off the time axis)", outside))
		}
	}
	p.X.Min = 0
	if end > 0 {
		p.X.Max = end
	}
	// Room above the highest line, so that none runs along the frame.
	ymax := 1.0
	for i := range t.Offered {
		ymax = math.Max(ymax, float64(max(t.Offered[i], t.Admitted[i]))/t.BinS)
		if i < len(t.Limit) {
			ymax = math.Max(ymax, t.Limit[i]/t.BinS)
		}
	}
	p.Y.Min, p.Y.Max = 0, ymax*1.15
	return figureSpec{
		Figure: Figure{
			Name: "accuracy-" + e.Name(), Kind: KindAccuracy, Title: title,
			Topology: e.Topology, Algorithm: e.Algorithm, Algorithms: []string{e.Algorithm},
		},
		w: 10 * vg.Inch, h: 4.5 * vg.Inch,
		draw: withLegend(p, l, 2.2*vg.Inch),
	}
}

// binOf returns the index of the bin of width binS seconds that the time v (seconds) falls in.
// Times are written to the millisecond and bins are whole milliseconds, so a time on a bin's
// start that the division puts a hair below it (0.3/0.1 = 2.9999999999999996) counts in that
// bin, as the timeline counted it.
func binOf(v, binS float64) int {
	return int(math.Floor(v/binS + 1e-9))
}

// faultWindows shades, on p, the window of each injected fault of faults that started: the time
// it acted (FromS to ToS) in one light colour, its recovery (ToS to UntilS, as the Faults section
// says) in a lighter one, both under the lines, each with one legend entry in l. Times are
// seconds from the start of the measured part, like the timeline's; a window is clipped to
// [0, end] (end <= 0: not clipped on the right). Nothing is added without a started fault.
func faultWindows(p *plot.Plot, l *plot.Legend, faults []verify.FaultReport, end float64) {
	var acted, recovery []span
	for _, f := range faults {
		if f.ToS == 0 && f.UntilS == 0 {
			continue // never started (see verify.FaultReport)
		}
		acted = append(acted, span{f.FromS, f.ToS})
		if f.UntilS > f.ToS {
			recovery = append(recovery, span{f.ToS, f.UntilS})
		}
	}
	for _, b := range []*bands{
		{spans: acted, color: FaultColor, label: "fault acting"},
		{spans: recovery, color: RecoveryColor, label: "fault recovery"},
	} {
		if len(b.spans) == 0 {
			continue
		}
		b.end = end
		p.Add(b)
		l.Add(b.label, b)
	}
}

// span is an interval of the x axis, in data units.
type span struct{ from, to float64 }

// bands is a plotter of vertical bands across the whole height of the data area, one per span,
// filled with color; its legend thumbnail is a filled square.
type bands struct {
	spans []span
	color color.Color
	label string
	end   float64
}

var (
	_ plot.Plotter     = (*bands)(nil)
	_ plot.Thumbnailer = (*bands)(nil)
)

// Plot implements plot.Plotter.
func (b *bands) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for _, s := range b.spans {
		from, to := math.Max(s.from, math.Max(p.X.Min, 0)), math.Min(s.to, p.X.Max)
		if b.end > 0 {
			to = math.Min(to, b.end)
		}
		if !(to > from) {
			continue
		}
		x0, x1 := trX(from), trX(to)
		c.FillPolygon(b.color, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
	}
}

// Thumbnail implements plot.Thumbnailer.
func (b *bands) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(b.color, []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}})
}

func hasLimit(limit []float64) bool {
	for _, v := range limit {
		if v > 0 {
			return true
		}
	}
	return false
}

// efficiencyPanel is the title of the comparison figure's efficiency panel, which draws the exact
// limiter's 1.0 as a line.
const efficiencyPanel = "Efficiency (admitted / ideal)"

// comparePanel is one small multiple of the comparison figure.
type comparePanel struct {
	title string
	value func(e *result.Entry) float64
}

// compareSpec draws small multiples of horizontal bars, one bar per algorithm, for throughput,
// p99, Redis's own time per decision (commandstats), Redis CPU per decision, bytes per subject
// and efficiency. Throughput is left out, and the title says so, when every entry completed its
// offered rate (within 2%): in an open loop that figure is the schedule's, the same for all.
// A panel nobody measured is left out too.
func compareSpec(r *result.Result, topo string, entries []*result.Entry) figureSpec {
	panels, atOffered := comparePanels(entries)
	title := fmt.Sprintf("Algorithms compared, %s on %s", r.Scenario.Name, topo)
	if atOffered {
		title += " (each completed its offered rate)"
	}
	names := make([]string, len(entries))
	// Bars are drawn bottom-up; reverse so the first algorithm is on top.
	for i, e := range entries {
		names[len(entries)-1-i] = e.Algorithm
	}
	plots := make([][]*plot.Plot, len(panels))
	for pi, pn := range panels {
		plots[pi] = []*plot.Plot{comparePlot(pn, entries, names)}
	}
	rowH := vg.Points(40) + vg.Points(14)*vg.Length(len(entries))
	h := vg.Points(36) + rowH*vg.Length(len(panels))
	return figureSpec{
		Figure: Figure{
			Name: "compare-" + topo, Kind: KindCompare, Title: title, Topology: topo,
			Algorithms: reversed(names),
		},
		w: 9 * vg.Inch, h: h,
		draw: func(dc draw.Canvas) {
			ttl := plot.New().Title.TextStyle
			ttl.Font.Size = vg.Points(14)
			ttl.XAlign = draw.XCenter
			ttl.YAlign = draw.YTop
			dc.FillText(ttl, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y}, title)
			body := dc
			body.Max.Y -= vg.Points(26)
			tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadY: vg.Points(6), PadLeft: vg.Points(4), PadRight: vg.Points(12)}
			cs := plot.Align(plots, tiles, body)
			for i := range plots {
				plots[i][0].Draw(cs[i][0])
			}
		},
	}
}

// comparePanels returns the panels of the comparison figure of entries, and whether every entry
// completed its offered rate (then throughput is left out).
func comparePanels(entries []*result.Entry) ([]comparePanel, bool) {
	var panels []comparePanel
	atOffered := true
	for _, e := range entries {
		atOffered = atOffered && e.OfferedRPS > 0 && math.Abs(e.ThroughputRPS-e.OfferedRPS) <= 0.02*e.OfferedRPS
	}
	if !atOffered {
		panels = append(panels, comparePanel{"Throughput (decisions/s)", func(e *result.Entry) float64 { return e.ThroughputRPS }})
	}
	panels = append(panels, comparePanel{"p99 latency from intended send (ms)", func(e *result.Entry) float64 { return e.LatencyUS.P99 / MicrosPerMilli }})
	for _, p := range []comparePanel{
		{"Redis time per decision (µs, commandstats)", func(e *result.Entry) float64 { return e.Server.USecPerCall }},
		{"Redis CPU per decision (µs)", func(e *result.Entry) float64 { return e.Server.CPUUSecPerDecision }},
	} {
		if anyValue(entries, p.value) {
			panels = append(panels, p)
		}
	}
	return append(panels,
		comparePanel{"Memory per subject (bytes)", func(e *result.Entry) float64 { return e.Server.BytesPerKey }},
		comparePanel{efficiencyPanel, func(e *result.Entry) float64 { return e.Accuracy.Efficiency }},
	), atOffered
}

// comparePlot is one panel of the comparison figure: a horizontal bar per entry, names from the
// bottom up.
func comparePlot(pn comparePanel, entries []*result.Entry, names []string) *plot.Plot {
	p := NewPlot(pn.title, "", "")
	p.Title.TextStyle.Font.Size = vg.Points(11)
	for i, e := range entries {
		v := pn.value(e)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			v = 0
		}
		bc, err := plotter.NewBarChart(plotter.Values{v}, vg.Points(11))
		if err != nil {
			continue
		}
		bc.Horizontal = true
		bc.XMin = float64(len(entries) - 1 - i)
		bc.Color = AlgorithmColor(e.Algorithm)
		bc.LineStyle.Width = 0
		p.Add(bc)
	}
	p.NominalY(names...)
	p.X.Min = 0
	p.X.Max = 1 // an all-zero panel (not measured) still gets an axis
	for _, e := range entries {
		if v := pn.value(e); v*1.08 > p.X.Max && !math.IsInf(v, 0) {
			p.X.Max = v * 1.08
		}
	}
	if pn.title == efficiencyPanel && anyValue(entries, pn.value) {
		// Efficiency: show the exact limiter's 1.0 as a line.
		if ref, err := plotter.NewLine(plotter.XYs{{X: 1, Y: -0.5}, {X: 1, Y: float64(len(entries)) - 0.5}}); err == nil {
			ref.Color = color.Black
			ref.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
			p.Add(ref)
		}
	}
	return p
}

func anyValue(entries []*result.Entry, f func(*result.Entry) float64) bool {
	for _, e := range entries {
		if f(e) != 0 {
			return true
		}
	}
	return false
}

func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}
