package report

import (
	"bytes"
	"encoding/xml"
	"image"
	"image/color"
	_ "image/png"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/internal/golden"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/result"
)

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return result.WriteFile(dst, b)
}

func readFixture(t *testing.T, name string) *result.Result {
	t.Helper()
	r, err := result.Read(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestResultRoundTrip(t *testing.T) {
	want := syntheticResult(t, 0)
	dir := t.TempDir()
	if err := want.Write(dir); err != nil {
		t.Fatal(err)
	}
	got, err := result.Read(filepath.Join(dir, result.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Read(Write(r)) differs (-want +got):\n%s", diff)
	}
	h, err := got.Entries[0].LatencyHistogram()
	if err != nil {
		t.Fatal(err)
	}
	if s := load.Summarize(h); s != got.Entries[0].LatencyUS {
		t.Errorf("load.Summarize(decoded histogram) = %+v; want %+v", s, got.Entries[0].LatencyUS)
	}
}

// TestMarkdownGolden: report.md of testdata/result.json is testdata/report.md, and so is that of
// testdata/result-v1-words.json, the same result as the previous version wrote it (its scenario
// also in words, which were hand-written for this fixture and said "50 keys"): the report reads
// a result of the previous version and puts its scenario in words from its settings.
func TestMarkdownGolden(t *testing.T) {
	for _, name := range []string{"result.json", "result-v1-words.json"} {
		t.Run(name, func(t *testing.T) {
			r := readFixture(t, name)
			specs, err := figureSpecs(r)
			if err != nil {
				t.Fatal(err)
			}
			figs := make([]Figure, len(specs))
			for i := range specs {
				figs[i] = specs[i].Figure
			}
			var buf bytes.Buffer
			if err := WriteMarkdown(&buf, r, figs); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "report.md"), buf.Bytes())
		})
	}
}

// strokePath matches an SVG path's data and stroke colour as vgsvg writes them.
var strokePath = regexp.MustCompile(`<path d="([^"]*)"\s+style="[^"]*stroke:(#[0-9A-Fa-f]{6})`)

func TestFigures(t *testing.T) {
	r := readFixture(t, "result.json")
	figs, err := Figures(r)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, f := range figs {
		kinds[f.Kind]++
		t.Run(f.Name, func(t *testing.T) {
			img, format, err := image.Decode(bytes.NewReader(f.PNG))
			if err != nil || format != "png" {
				t.Fatalf("PNG of %s does not decode: format %q, %v", f.Name, format, err)
			}
			if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 300 {
				t.Errorf("PNG of %s is %v; want at least 400x300", f.Name, b)
			}
			if err := xmlWellFormed(f.SVG); err != nil {
				t.Fatalf("SVG of %s is not well-formed XML: %v", f.Name, err)
			}
			if !bytes.Contains(f.SVG, []byte(f.Title)) && !bytes.Contains(f.SVG, []byte(xmlEscape(f.Title))) {
				t.Errorf("SVG of %s lacks its title %q", f.Name, f.Title)
			}
			if f.Kind != KindLatency {
				return
			}
			// One data line per algorithm: a path in the algorithm's colour with more than the two
			// points of a legend thumbnail.
			lines := map[string]int{}
			for _, m := range strokePath.FindAllStringSubmatch(string(f.SVG), -1) {
				if strings.Count(m[1], "L") > 2 {
					lines[strings.ToLower(m[2])]++
				}
			}
			for _, alg := range f.Algorithms {
				c := AlgorithmColor(alg)
				hex := strings.ToLower(colorHex(c.R, c.G, c.B))
				if lines[hex] != 1 {
					t.Errorf("latency SVG has %d data paths in %s's colour %s; want 1", lines[hex], alg, hex)
				}
			}
			if len(f.Algorithms) != len(r.Entries) {
				t.Errorf("latency plot shows %d algorithms; want %d", len(f.Algorithms), len(r.Entries))
			}
		})
	}
	want := map[string]int{KindLatency: 1, KindCompare: 1, KindAccuracy: len(r.Entries)}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("figure kinds (-want +got):\n%s", diff)
	}
}

func colorHex(r, g, b uint8) string {
	const hexdigits = "0123456789abcdef"
	out := []byte{'#'}
	for _, v := range []uint8{r, g, b} {
		out = append(out, hexdigits[v>>4], hexdigits[v&15])
	}
	return string(out)
}

func xmlEscape(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s)) // strings.Builder never fails
	return b.String()
}

func xmlWellFormed(b []byte) error {
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func TestAlgorithmColorStable(t *testing.T) {
	seen := map[string]string{}
	for name := range builtinColors {
		c := AlgorithmColor(name)
		hex := colorHex(c.R, c.G, c.B)
		if other, dup := seen[hex]; dup {
			t.Errorf("%s and %s share colour %s", name, other, hex)
		}
		seen[hex] = name
	}
	if a, b := AlgorithmColor("my-custom-script"), AlgorithmColor("my-custom-script"); a != b {
		t.Errorf("AlgorithmColor is not deterministic: %v, %v", a, b)
	}
}

func TestWriteAll(t *testing.T) {
	r := readFixture(t, "result.json")
	dir := t.TempDir()
	if err := WriteAll(dir, r); err != nil {
		t.Fatal(err)
	}
	back, err := result.Read(filepath.Join(dir, result.FileName))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	names = append(names, back.Files.Result, back.Files.Markdown, back.Files.HTML)
	names = append(names, back.Files.Plots...)
	names = append(names, back.Files.Histograms...)
	for _, e := range back.Entries {
		if e.Files.Histogram != e.Name()+".hgrm" || e.Files.ServiceHistogram != e.Name()+"-service.hgrm" {
			t.Errorf("%s: files %+v; want its .hgrm names", e.Name(), e.Files)
		}
		if len(e.Files.Accuracy) != 2 {
			t.Errorf("%s: accuracy files %v; want PNG and SVG", e.Name(), e.Files.Accuracy)
		}
	}
	for _, want := range []string{"latency-single.png", "latency-single.svg", "compare-single.png", "accuracy-gcra-single.svg", "gcra-single.hgrm", "gcra-single-service.hgrm"} {
		if !contains(names, want) {
			t.Errorf("Files does not list %s: %v", want, names)
		}
	}
	for _, n := range names {
		if fi, err := os.Stat(filepath.Join(dir, n)); err != nil || fi.Size() == 0 {
			t.Errorf("listed file %s missing or empty: %v", n, err)
		}
	}
	f, err := os.Open(filepath.Join(dir, "gcra-single.hgrm"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := ReadHGRM(f)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.ValueAtQuantile(50), r.Entries[0].LatencyUS.P50/MicrosPerMilli; got != want {
		t.Errorf("gcra-single.hgrm p50 = %v ms; result.json says %v ms", got, want)
	}
	html, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	checkSelfContained(t, html)
	// The verdict table tells a tolerated failure, the reference and a broken threshold apart.
	for _, want := range []string{
		`<span class="badge tolerated">fail (tolerated)</span>`,
		`<span class="badge reference">reference</span>`,
		`sliding-counter on single: fail</span>`,
		`threshold &#34;sliding-counter: efficiency &gt; 0.95&#34; broken: efficiency = 0.93`,
		`fail (tolerated) is a violation by an algorithm the scenario lists under expect.may_violate`,
		`<th scope="row">thresholds</th><td>errors &lt; 1%; gcra: efficiency &gt; 0.9; sliding-counter: efficiency &gt; 0.95</td>`,
		`<th scope="row">limit</th><td>100 per 1 s`,
	} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// urlRef finds attribute values and CSS url() references in HTML.
var urlRef = regexp.MustCompile(`(?i)(?:src|href|srcset|action|poster|data)\s*=\s*["']?([^"'\s>]+)|url\(\s*['"]?([^'")]+)`)

// scriptTag matches an opening <script> tag; networkAPI the script APIs that reach beyond the page.
var (
	scriptTag  = regexp.MustCompile(`(?i)<script\b[^>]*>`)
	networkAPI = regexp.MustCompile(`\b(fetch|XMLHttpRequest|WebSocket|EventSource|sendBeacon|importScripts|Worker|SharedWorker|import)\s*\(|\bnew\s+(WebSocket|Worker|EventSource|XMLHttpRequest)\b|\b(location|document\.location)\s*(\.href)?\s*=|window\.open\b|\.src\s*=`)
)

// checkSelfContained fails unless html needs nothing external (issue 31: the report's rule was "no
// script", it is now "nothing external"): every reference in it is an inline data: URI or a
// fragment, no http(s) URL appears anywhere, every script is inline (no src) and uses no API
// that reaches beyond the page.
func checkSelfContained(t *testing.T, html []byte) {
	t.Helper()
	if m := regexp.MustCompile(`(?i)https?://`).Find(html); m != nil {
		t.Errorf("report.html mentions a URL (%q); it must not refer to any host", m)
	}
	for _, m := range urlRef.FindAllSubmatch(html, -1) {
		ref := string(m[1]) + string(m[2])
		if !strings.HasPrefix(ref, "data:") && !strings.HasPrefix(ref, "#") {
			t.Errorf("report.html refers to %q; want only data: URIs", ref)
		}
	}
	for _, want := range []string{`<meta name="viewport"`, "@media print", "<table", `src="data:image/png;base64,`} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	for _, tag := range scriptTag.FindAll(html, -1) {
		if bytes.Contains(bytes.ToLower(tag), []byte("src")) {
			t.Errorf("report.html loads a script (%s); scripts must be inline", tag)
		}
	}
	for _, js := range regexp.MustCompile(`(?is)<script\b[^>]*>(.*?)</script>`).FindAllSubmatch(html, -1) {
		if m := networkAPI.Find(js[1]); m != nil {
			t.Errorf("a script of report.html uses %q, which could reach beyond the page", m)
		}
	}
	if bytes.Contains(bytes.ToLower(html), []byte("<link")) || bytes.Contains(html, []byte("@import")) {
		t.Error("report.html links a style sheet or other resource; everything must be inline")
	}
}

func TestBusiest(t *testing.T) {
	tests := []struct {
		contract string
		ratio    float64
		want     string
	}{
		{"sliding-window(100, 1s)", 0, ""},
		{"sliding-window(100, 1s)", 1, "its busiest sliding window held 100% of its limit"},
		{"fixed-window(100, 1s)", 1.99, "its busiest sliding window held 199% of its limit, which fixed windows allow across a window boundary (up to 200%)"},
		{"sliding-window(20, 1s, granularity 1µs) and sliding-window(20, 1s, granularity 1µs) per subject+client", 2, "its busiest sliding window held 200% of its limit at the requests' midpoints (see Why)"},
		{"sliding-window(20, 1s, granularity 1s) and sliding-window(20, 1s, granularity 1s) per subject+client", 2, "its busiest sliding window held 200% of its limit, which its clock granularity keeps the verifier from proving over (see Why)"},
		{"sliding-window(20, 1s, granularity 1s)", 3.5, "its busiest sliding window held 350% of its limit at the requests' midpoints (see Why)"},
		{"first-hit-window(20, 1s, granularity 1ms)", 1.02, "its busiest first-hit window held 102% of its limit at the requests' midpoints (see Why)"},
		{"token-bucket(10, 100/1s)", 0.96, "at its fullest, its bucket was 96% drawn"},
	}
	for _, tt := range tests {
		if got := busiest(tt.contract, tt.ratio); got != tt.want {
			t.Errorf("busiest(%q, %g) = %q; want %q", tt.contract, tt.ratio, got, tt.want)
		}
	}
}

// TestAlgorithmColorsDistinct: every two built-in algorithms' colours are at least 25 apart in
// CIELAB (ΔE*76), so that a plot of all of them does not show near-identical lines (issue 31).
func TestAlgorithmColorsDistinct(t *testing.T) {
	lab := func(c color.RGBA) [3]float64 {
		lin := func(v uint8) float64 {
			x := float64(v) / 255
			if x <= 0.04045 {
				return x / 12.92
			}
			return math.Pow((x+0.055)/1.055, 2.4)
		}
		r, g, b := lin(c.R), lin(c.G), lin(c.B)
		x := (0.4124*r + 0.3576*g + 0.1805*b) / 0.95047
		y := 0.2126*r + 0.7152*g + 0.0722*b
		z := (0.0193*r + 0.1192*g + 0.9505*b) / 1.08883
		f := func(t float64) float64 {
			if t > 0.008856 {
				return math.Cbrt(t)
			}
			return 7.787*t + 16.0/116
		}
		return [3]float64{116*f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))}
	}
	names := slices.Sorted(maps.Keys(builtinColors))
	for i, a := range names {
		for _, b := range names[i+1:] {
			la, lb := lab(builtinColors[a]), lab(builtinColors[b])
			if d := math.Sqrt(math.Pow(la[0]-lb[0], 2) + math.Pow(la[1]-lb[1], 2) + math.Pow(la[2]-lb[2], 2)); d < 25 {
				t.Errorf("%s and %s are %.1f apart in CIELAB; want at least 25", a, b, d)
			}
		}
	}
}
