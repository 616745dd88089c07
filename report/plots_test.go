package report

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// figureByName returns the figure of figs with name, failing the test when there is none.
func figureByName(t *testing.T, figs []Figure, name string) Figure {
	t.Helper()
	for _, f := range figs {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no figure %s", name)
	return Figure{}
}

// svgSegment matches a two-point stroked path as vgsvg writes glyph strokes: "Mx,yLx,y".
var svgSegment = regexp.MustCompile(`<path d="M([-\d.]+),([-\d.]+)L([-\d.]+),([-\d.]+)"\s+style="fill:none;stroke:(#[0-9A-Fa-f]{6})`)

// violationCrosses returns the centres of the red crosses (violation markers) in an accuracy SVG:
// each cross is two stroked segments sharing a centre.
func violationCrosses(svg []byte) [][2]float64 {
	var out [][2]float64
	seen := map[[2]float64]int{}
	for _, m := range svgSegment.FindAllStringSubmatch(string(svg), -1) {
		if !strings.EqualFold(m[5], "#e00000") {
			continue
		}
		var v [4]float64
		for i := range v {
			v[i], _ = strconv.ParseFloat(m[i+1], 64)
		}
		c := [2]float64{math.Round((v[0]+v[2])*50) / 100, math.Round((v[1]+v[3])*50) / 100}
		if seen[c]++; seen[c] == 2 {
			out = append(out, c)
		}
	}
	return out
}

// TestAccuracyPlotMarksViolations: the accuracy plot of an entry with definite violations has one
// red cross per violation time (plus one in the legend), left to right in time order, and the plot
// of an entry without violations has none.
func TestAccuracyPlotMarksViolations(t *testing.T) {
	r := readFixture(t, "result.json")
	figs, err := Figures(r)
	if err != nil {
		t.Fatal(err)
	}
	var flagged *result.Entry
	for i := range r.Entries {
		if r.Entries[i].Algorithm == "fixed-window-published" {
			flagged = &r.Entries[i]
		}
	}
	times := flagged.Verification.ViolationTimesS
	if len(times) < 2 || flagged.Verification.DefiniteViolations == 0 {
		t.Fatalf("fixture: fixed-window-published has violation times %v; want at least two", times)
	}
	f := figureByName(t, figs, "accuracy-fixed-window-published-single")
	crosses := violationCrosses(f.SVG)
	if len(crosses) != len(times)+1 {
		t.Fatalf("accuracy SVG has %d red crosses; want %d (one per violation time %v, one in the legend)", len(crosses), len(times)+1, times)
	}
	if !strings.Contains(string(f.SVG), "definite violation (37)") {
		t.Error("accuracy SVG lacks the legend entry \"definite violation (37)\"")
	}
	// The legend's cross is the right-most; the data crosses follow the violation times: the x
	// distance between two crosses is proportional to the time between them.
	sort.Slice(crosses, func(i, j int) bool { return crosses[i][0] < crosses[j][0] })
	data := crosses[:len(times)]
	perSecond := (data[1][0] - data[0][0]) / (times[1] - times[0])
	for i := 2; i < len(data); i++ {
		want := data[0][0] + perSecond*(times[i]-times[0])
		if math.Abs(data[i][0]-want) > 1 {
			t.Errorf("cross %d at x=%.2f; want %.2f for t=%gs", i, data[i][0], want, times[i])
		}
	}
	if perSecond <= 0 {
		t.Errorf("crosses are not in time order: %v for times %v", data, times)
	}
	for _, clean := range []string{"accuracy-gcra-single", "accuracy-sliding-log-single"} {
		if n := len(violationCrosses(figureByName(t, figs, clean).SVG)); n != 0 {
			t.Errorf("%s has %d red crosses; want none (no definite violation)", clean, n)
		}
	}
}

// svgBar matches a filled rectangle as vgsvg writes a horizontal bar: M x0,y0 L x0,y1 L x1,y1 L x1,y0 Z.
var svgBar = regexp.MustCompile(`<path d="M([-\d.]+),([-\d.]+)L[-\d.]+,[-\d.]+L([-\d.]+),[-\d.]+L[-\d.]+,[-\d.]+Z"\s+style="fill:(#[0-9A-Fa-f]{6})"`)

// TestComparePlotPanels: the compare plot has its panels (p99, Redis time and CPU per decision,
// bytes per subject, efficiency; no throughput, since every entry of the fixture completed its
// offered rate), in that order from the top, with one bar per algorithm in each, and bar lengths
// in proportion to the entries' figures.
func TestComparePlotPanels(t *testing.T) {
	r := readFixture(t, "result.json")
	figs, err := Figures(r)
	if err != nil {
		t.Fatal(err)
	}
	f := figureByName(t, figs, "compare-single")
	svg := string(f.SVG)
	if strings.Contains(svg, ">Throughput") || !strings.Contains(f.Title, "each completed its offered rate") {
		t.Errorf("compare plot %q has a throughput panel, or its title does not say why not", f.Title)
	}
	panels := []struct {
		title string
		value func(e *result.Entry) float64
	}{
		{"p99 latency from intended send (ms)", func(e *result.Entry) float64 { return e.LatencyUS.P99 }},
		{"Redis time per decision (µs, commandstats)", func(e *result.Entry) float64 { return e.Server.USecPerCall }},
		{"Redis CPU per decision (µs)", func(e *result.Entry) float64 { return e.Server.CPUUSecPerDecision }},
		{"Memory per subject (bytes)", func(e *result.Entry) float64 { return e.Server.BytesPerKey }},
		{"Efficiency (admitted / ideal)", func(e *result.Entry) float64 { return e.Accuracy.Efficiency }},
	}
	last := -1
	for _, p := range panels {
		i := strings.Index(svg, ">"+xmlEscape(p.title)+"<")
		if i < 0 {
			t.Errorf("compare SVG lacks the panel %q", p.title)
			continue
		}
		if i < last {
			t.Errorf("panel %q is out of order", p.title)
		}
		last = i
	}
	// bars[colour] lists each bar as {top y, length}; SVG y grows upwards here (the figure is
	// flipped), so the top panel's bar has the largest y.
	bars := map[string][][2]float64{}
	for _, m := range svgBar.FindAllStringSubmatch(svg, -1) {
		x0, _ := strconv.ParseFloat(m[1], 64)
		y, _ := strconv.ParseFloat(m[2], 64)
		x1, _ := strconv.ParseFloat(m[3], 64)
		bars[strings.ToLower(m[4])] = append(bars[strings.ToLower(m[4])], [2]float64{y, x1 - x0})
	}
	length := map[string][]float64{} // algorithm → bar length per panel, top to bottom
	for i := range r.Entries {
		e := &r.Entries[i]
		c := AlgorithmColor(e.Algorithm)
		bs := bars[strings.ToLower(colorHex(c.R, c.G, c.B))]
		if len(bs) != len(panels) {
			t.Errorf("%s has %d bars in the compare plot; want %d, one per panel", e.Algorithm, len(bs), len(panels))
			continue
		}
		sort.Slice(bs, func(i, j int) bool { return bs[i][0] > bs[j][0] })
		for _, b := range bs {
			length[e.Algorithm] = append(length[e.Algorithm], b[1])
		}
	}
	// Within a panel, bar length / figure is the same for every algorithm (one scale per panel).
	for pi, p := range panels {
		scale := 0.0
		for i := range r.Entries {
			e := &r.Entries[i]
			v, ls := p.value(e), length[e.Algorithm]
			if v <= 0 || len(ls) != len(panels) {
				continue
			}
			s := ls[pi] / v
			if scale == 0 {
				scale = s
				continue
			}
			if math.Abs(s-scale) > 0.02*scale {
				t.Errorf("panel %q: %s's bar is %.1f long for %g; the scale of other bars says %.1f", p.title, e.Algorithm, ls[pi], v, v*scale)
			}
		}
		if scale == 0 {
			t.Errorf("panel %q: no bar with a value to check", p.title)
		}
	}
}

// TestLatencyPlotLines: each algorithm's line in the latency SVG rises (latency never falls as the
// percentile grows) and goes left to right.
func TestLatencyPlotLines(t *testing.T) {
	r := readFixture(t, "result.json")
	figs, err := Figures(r)
	if err != nil {
		t.Fatal(err)
	}
	f := figureByName(t, figs, "latency-single")
	point := regexp.MustCompile(`[ML]([-\d.]+),([-\d.]+)`)
	lines := 0
	for _, m := range strokePath.FindAllStringSubmatch(string(f.SVG), -1) {
		if strings.Count(m[1], "L") <= 2 {
			continue // a legend thumbnail or an axis tick
		}
		isAlg := false
		for _, a := range f.Algorithms {
			c := AlgorithmColor(a)
			isAlg = isAlg || strings.EqualFold(colorHex(c.R, c.G, c.B), m[2])
		}
		if !isAlg {
			continue
		}
		lines++
		px, py := math.Inf(-1), math.Inf(-1)
		for _, p := range point.FindAllStringSubmatch(m[1], -1) {
			x, _ := strconv.ParseFloat(p[1], 64)
			y, _ := strconv.ParseFloat(p[2], 64)
			if x < px-0.01 || y < py-0.01 {
				t.Errorf("line in %s goes back at (%g, %g) after (%g, %g)", m[2], x, y, px, py)
				break
			}
			px, py = x, y
		}
	}
	if lines != len(r.Entries) {
		t.Errorf("latency SVG has %d algorithm lines; want %d, one per entry", lines, len(r.Entries))
	}
}

// svgShade matches a filled, partly transparent rectangle (a fault band or its legend swatch):
// M x0,y0 L x1,y0 L x1,y1 L x0,y1 Z with a fill-opacity.
var svgShade = regexp.MustCompile(`<path d="M([-\d.]+),([-\d.]+)L([-\d.]+),[-\d.]+L[-\d.]+,([-\d.]+)L[-\d.]+,[-\d.]+Z"\s+style="fill:#[0-9A-Fa-f]{6};fill-opacity:([\d.]+)"`)

// shades returns the x extents of the filled rectangles of an SVG whose opacity is a's (alpha
// of 255), left to right.
func shades(svg []byte, a uint8) [][2]float64 {
	var out [][2]float64
	for _, m := range svgShade.FindAllStringSubmatch(string(svg), -1) {
		op, _ := strconv.ParseFloat(m[5], 64)
		if math.Abs(op-float64(a)/255) > 0.003 {
			continue
		}
		x0, _ := strconv.ParseFloat(m[1], 64)
		x1, _ := strconv.ParseFloat(m[3], 64)
		out = append(out, [2]float64{math.Min(x0, x1), math.Max(x0, x1)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// linePoints returns the points of the stroked paths of colour c with more than two points (data
// lines, not legend swatches or ticks) of an SVG.
func linePoints(svg []byte, c string) [][][2]float64 {
	point := regexp.MustCompile(`[ML]([-\d.]+),([-\d.]+)`)
	var out [][][2]float64
	for _, m := range strokePath.FindAllStringSubmatch(string(svg), -1) {
		if !strings.EqualFold(m[2], c) || strings.Count(m[1], "L") < 2 {
			continue
		}
		var pts [][2]float64
		for _, p := range point.FindAllStringSubmatch(m[1], -1) {
			x, _ := strconv.ParseFloat(p[1], 64)
			y, _ := strconv.ParseFloat(p[2], 64)
			pts = append(pts, [2]float64{x, y})
		}
		out = append(out, pts)
	}
	return out
}

// TestAccuracyPlotShadesFaultWindows: an entry with an injected fault has its window shaded on the
// accuracy plot, the time it acted in FaultColor and its recovery in RecoveryColor, each once under
// the lines and once in the legend, at the fault's times on the time axis; a fault that never
// started shades nothing, and an entry without faults has no shading and no fault legend.
func TestAccuracyPlotShadesFaultWindows(t *testing.T) {
	r := readFixture(t, "result.json")
	e := &r.Entries[1]
	e.Verification.Faults = []verify.FaultReport{
		{Name: "restart master at 5s", Kind: "restart", FromS: 5, ToS: 6, UntilS: 8},
		{Name: "pause replica at 30s", Kind: "pause", Error: "not started"}, // never started: no times
	}
	figs, err := Figures(r)
	if err != nil {
		t.Fatal(err)
	}
	svg := figureByName(t, figs, "accuracy-"+e.Name()).SVG
	for _, want := range []string{">fault acting<", ">fault recovery<"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("accuracy SVG lacks the legend entry %s", want)
		}
	}
	acted, recovery := shades(svg, FaultColor.A), shades(svg, RecoveryColor.A)
	if len(acted) != 2 || len(recovery) != 2 {
		t.Fatalf("accuracy SVG has %d fault and %d recovery shades; want 2 each (the window, the legend swatch)", len(acted), len(recovery))
	}
	// The band is left of the legend swatch. Time 0 is where the offered line starts.
	band, rec := acted[0], recovery[0]
	offered := linePoints(svg, "#999999")
	if len(offered) != 1 {
		t.Fatalf("accuracy SVG has %d offered lines; want 1", len(offered))
	}
	x0 := offered[0][0][0]
	perS := (band[1] - band[0]) / (6 - 5)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"fault start", band[0], x0 + 5*perS},
		{"recovery start", rec[0], band[1]},
		{"recovery end", rec[1], x0 + 8*perS},
		{"timeline end", offered[0][len(offered[0])-1][0], x0 + 20*perS}, // 20 bins of 1 s
	} {
		if math.Abs(c.got-c.want) > 0.1 {
			t.Errorf("%s at x=%.2f; want %.2f (t=0 at %.2f, %.2f per second)", c.name, c.got, c.want, x0, perS)
		}
	}
	for _, clean := range r.Entries[2:] {
		svg := figureByName(t, figs, "accuracy-"+clean.Name()).SVG
		if n, m := len(shades(svg, FaultColor.A)), len(shades(svg, RecoveryColor.A)); n+m != 0 || strings.Contains(string(svg), ">fault") {
			t.Errorf("%s: %d fault and %d recovery shades, or a fault legend; want none without faults", clean.Name(), n, m)
		}
	}
}

// TestAccuracyPlotShowsABurst: a 2 s timeline of 20 ms bins with a burst in one bin draws the
// burst as a step of its own, exactly one bin wide, and the violations at the burst sit on it; a
// violation whose time is after the timeline is not drawn but counted in the legend.
func TestAccuracyPlotShowsABurst(t *testing.T) {
	r := readFixture(t, "result.json")
	e := &r.Entries[1]
	const bins, binS, burst = 100, 0.02, 37
	tl := result.Timeline{Series: load.Series{BinS: binS}}
	for i := range bins {
		adm := int64(2)
		if i == burst {
			adm = 12
		}
		tl.Offered = append(tl.Offered, 4)
		tl.Admitted = append(tl.Admitted, adm)
		tl.Denied = append(tl.Denied, 4-adm)
		tl.Errors = append(tl.Errors, 0)
		tl.Limit = append(tl.Limit, 2)
	}
	tl.Offered[burst], tl.Denied[burst] = 12, 0
	e.Timeline = tl
	// The burst bin's start, inside it, and a window that ends after the timeline (widened by a
	// clock granularity): no bin to mark it on.
	e.Verification.ViolationTimesS = []float64{0.74, 0.751, 2.5}
	e.Verification.DefiniteViolations = 3
	figs, err := Figures(r)
	if err != nil {
		t.Fatal(err)
	}
	svg := figureByName(t, figs, "accuracy-"+e.Name()).SVG
	c := AlgorithmColor(e.Algorithm)
	lines := linePoints(svg, colorHex(c.R, c.G, c.B))
	if len(lines) != 1 {
		t.Fatalf("accuracy SVG has %d admitted lines; want 1", len(lines))
	}
	pts := lines[0]
	// A post-step line of n bins: a point per bin start and one at the end, each joined by a
	// horizontal then a vertical segment.
	x0, x1 := pts[0][0], pts[len(pts)-1][0]
	perBin := (x1 - x0) / bins
	var top [2]float64 // the burst's step: its left end
	for i := 0; i+1 < len(pts); i++ {
		if pts[i][1] == pts[i+1][1] && pts[i+1][0] > pts[i][0] && pts[i][1] > top[1] {
			top = pts[i]
			if w := pts[i+1][0] - pts[i][0]; math.Abs(w-perBin) > 0.05 {
				t.Errorf("the highest step is %.2f wide; want one bin, %.2f", w, perBin)
			}
		}
	}
	if want := x0 + burst*perBin; math.Abs(top[0]-want) > 0.05 {
		t.Errorf("the highest step starts at x=%.2f; want the burst bin's start %.2f", top[0], want)
	}
	crosses := violationCrosses(svg)
	sort.Slice(crosses, func(i, j int) bool { return crosses[i][0] < crosses[j][0] })
	if len(crosses) != 3 {
		t.Fatalf("%d red crosses; want 3 (two violations on the timeline, the legend)", len(crosses))
	}
	if !strings.Contains(string(svg), ">(1 of them off the time axis)<") {
		t.Error("the legend does not say that one violation is off the time axis")
	}
	for i, cr := range crosses[:2] {
		if math.Abs(cr[1]-top[1]) > 0.05 || cr[0] < top[0]-0.05 || cr[0] > top[0]+perBin+0.05 {
			t.Errorf("cross %d at (%.2f, %.2f); want on the burst's step from (%.2f, %.2f), %.2f wide", i, cr[0], cr[1], top[0], top[1], perBin)
		}
	}
}

func TestBinOf(t *testing.T) {
	tests := []struct {
		v, binS float64
		want    int
	}{
		{0, 0.02, 0},
		{0.3, 0.1, 3}, // 0.3/0.1 = 2.9999999999999996
		{0.7, 0.1, 7}, // 6.999999999999999
		{0.74, 0.02, 37},
		{0.759, 0.02, 37},
		{0.76, 0.02, 38},
		{9.5, 1, 9},
	}
	for _, tt := range tests {
		if got := binOf(tt.v, tt.binS); got != tt.want {
			t.Errorf("binOf(%g, %g) = %d; want %d", tt.v, tt.binS, got, tt.want)
		}
	}
}

// TestAccuracyPlotCorrectUnderAllowance (issue 31): the accuracy plot of every correct algorithm
// of the demo (the built-in ones without a known flaw, on both topologies) never draws a bin
// over the allowance it draws: in the data it is drawn from (each limit's use per bin against
// its allowance) and in the figure itself, where no point of the algorithm's line in the top
// panel lies above the allowance line.
func TestAccuracyPlotCorrectUnderAllowance(t *testing.T) {
	r := readFixture(t, "demo-result.json")
	checked := 0
	for i := range r.Entries {
		e := &r.Entries[i]
		a, err := algorithms.Lookup(e.Algorithm)
		if err != nil || a.Describe().Flaw != "" {
			continue
		}
		if len(e.Timeline.Use) == 0 {
			t.Fatalf("%s: the demo's result has no use per bin", e.Name())
		}
		for _, u := range e.Timeline.Use {
			for bin, v := range u.Held {
				if v > u.Allowance {
					t.Errorf("%s, %s: bin %d holds %g, over the allowance %g the plot draws", e.Name(), u.Contract, bin, v, u.Allowance)
				}
			}
		}
		if msg := overAllowanceLine(t, r, e); msg != "" {
			t.Errorf("%s: %s", e.Name(), msg)
		}
		checked++
	}
	if checked < 10 {
		t.Errorf("checked %d plots; want every correct algorithm on both topologies", checked)
	}
	// The figure check sees a line over its allowance: a use planted over it is caught.
	e := r.Entry("gcra", "single")
	e.Timeline.Use[0].Held[len(e.Timeline.Use[0].Held)/2] = e.Timeline.Use[0].Allowance * 1.5
	if msg := overAllowanceLine(t, r, e); msg == "" {
		t.Error("a use planted 50% over the allowance is not seen above the allowance line of the figure")
	}
}

// overAllowanceLine renders e's accuracy plot and describes the first point of e's line in its
// top panel that lies above the allowance line, or returns "" when none does (SVG y grows
// upwards: the figure is flipped).
func overAllowanceLine(t *testing.T, r *result.Result, e *result.Entry) string {
	t.Helper()
	spec := useAccuracySpec(r, e)
	if err := spec.render(); err != nil {
		t.Fatal(err)
	}
	var allowY []float64
	for _, m := range strokePath.FindAllStringSubmatch(string(spec.SVG), -1) {
		if !strings.EqualFold(m[2], "#000000") {
			continue
		}
		var xs, ys []float64
		for _, p := range regexp.MustCompile(`[ML]([-\d.]+),([-\d.]+)`).FindAllStringSubmatch(m[1], -1) {
			x, _ := strconv.ParseFloat(p[1], 64)
			y, _ := strconv.ParseFloat(p[2], 64)
			xs, ys = append(xs, x), append(ys, y)
		}
		if len(xs) == 2 && ys[0] == ys[1] && xs[1]-xs[0] > 300 { // the allowance: a long level line
			allowY = append(allowY, ys[0])
		}
	}
	if len(allowY) == 0 {
		t.Fatalf("%s: no allowance line in the accuracy SVG", e.Name())
	}
	c := AlgorithmColor(e.Algorithm)
	lines := linePoints(spec.SVG, colorHex(c.R, c.G, c.B))
	if len(lines) < 2 {
		t.Fatalf("%s: %d lines of its colour; want the use (top panel) and admitted/s (bottom)", e.Name(), len(lines))
	}
	// The top panel's lines are above the bottom panel's.
	sort.Slice(lines, func(i, j int) bool { return minY(lines[i]) > minY(lines[j]) })
	top := slices.Max(allowY)
	for _, line := range lines[:len(e.Timeline.Use)] {
		for _, p := range line {
			if p[1] > top+0.01 {
				return fmt.Sprintf("the use line reaches y=%.2f, above the allowance line at y=%.2f", p[1], top)
			}
		}
	}
	return ""
}

func minY(pts [][2]float64) float64 {
	m := math.Inf(1)
	for _, p := range pts {
		m = math.Min(m, p[1])
	}
	return m
}
