package report

import (
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
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
	var flagged *Entry
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

// TestComparePlotPanels: the compare plot has its five panels (throughput, p99, Redis CPU per
// decision, bytes per subject, efficiency), in that order from the top, with one bar per algorithm
// in each, and bar lengths in proportion to the entries' figures.
func TestComparePlotPanels(t *testing.T) {
	r := readFixture(t, "result.json")
	figs, err := Figures(r)
	if err != nil {
		t.Fatal(err)
	}
	f := figureByName(t, figs, "compare-single")
	svg := string(f.SVG)
	panels := []struct {
		title string
		value func(e *Entry) float64
	}{
		{"Throughput (decisions/s)", func(e *Entry) float64 { return e.ThroughputRPS }},
		{"p99 latency from intended send (ms)", func(e *Entry) float64 { return e.LatencyUS.P99 }},
		{"Redis CPU per decision (µs)", func(e *Entry) float64 { return e.Server.CPUUSecPerDecision }},
		{"Memory per subject (bytes)", func(e *Entry) float64 { return e.Server.BytesPerKey }},
		{"Efficiency (admitted / ideal)", func(e *Entry) float64 { return e.Accuracy.Efficiency }},
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
