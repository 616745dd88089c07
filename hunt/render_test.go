package hunt

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/limitbench/limitbench/internal/golden"
	"github.com/limitbench/limitbench/report"
)

// huntFixture is the golden hunt.json (TestFileGolden): a simulated hunt that broke
// fixed-window-published and shrank it, and one of token-bucket that held.
func huntFixture(t *testing.T) *File {
	t.Helper()
	fh, err := os.Open(filepath.Join("testdata", "hunt.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	f, err := ReadFile(fh)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestMarkdownGolden: the hunt's report.md, exactly.
func TestMarkdownGolden(t *testing.T) {
	f := huntFixture(t)
	figs, err := Figures(f)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, f, figs); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "report.md"), buf.Bytes())
}

// TestWriteReport: the figures of both entries, report.md and a self-contained report.html with a
// section per algorithm, its figure inline, the violation's reproducer and the closest approach.
func TestWriteReport(t *testing.T) {
	f := huntFixture(t)
	dir := t.TempDir()
	names, err := WriteReport(dir, f)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"hunt-fixed-window-published-single.png", "hunt-fixed-window-published-single.svg",
		"hunt-token-bucket-single.png", "hunt-token-bucket-single.svg", report.MarkdownFile, report.HTMLFile}
	if !slices.Equal(names, want) {
		t.Errorf("WriteReport wrote %v; want %v", names, want)
	}
	for _, n := range want {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: %v (%d bytes)", n, err, len(b))
		}
		if strings.HasSuffix(n, ".png") {
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil || img.Bounds().Dx() < 800 {
				t.Errorf("%s: %v, %v", n, err, img)
			}
		}
	}
	html, _ := os.ReadFile(filepath.Join(dir, report.HTMLFile))
	h := string(html)
	for _, s := range []string{
		"<h3>fixed-window-published on single <span class=\"badge fail\">violation</span></h3>",
		"<h3>token-bucket on single <span class=\"badge pass\">held</span></h3>",
		"<code>limitbench run fixed-window-published-single-reproducer.yaml</code>",
		"Never broken. Closest approach 1.000 of token-bucket(25, 20/1s)",
		`<img src="data:image/png;base64,`,
	} {
		if !strings.Contains(h, s) {
			t.Errorf("report.html lacks %q", s)
		}
	}
	if n := strings.Count(h, "<figure>"); n != 2 {
		t.Errorf("report.html has %d figures; want 2", n)
	}
	for _, s := range []string{"http://", "https://", "<script src", `src="hunt-`} {
		if strings.Contains(h, s) {
			t.Errorf("report.html is not self-contained: it has %q", s)
		}
	}
	// The violating schedule's explorer: its section, its data and the script that draws it,
	// inline (report.TestExplorersHTMLInChromium drives it in a browser).
	for _, s := range []string{"<h2>Violations</h2>", "fixed-window-published on single: definite violation of fixed-window(20, 1m0s), trial",
		`<script type="application/json" id="lb-explorers">`, `<div class="xp" data-i="0">`} {
		if !strings.Contains(h, s) {
			t.Errorf("report.html lacks the explorer's %q", s)
		}
	}
	if n := strings.Count(h, `<div class="xp" data-i=`); n != 1 {
		t.Errorf("report.html has %d explorers; want 1, the violation's", n)
	}
}

// TestFiguresOnlyWithPlot: an entry without a plot (no trial ran, or a hunt.json written
// before plots) has no figure, and its section still says what was found.
func TestFiguresOnlyWithPlot(t *testing.T) {
	f := huntFixture(t)
	f.Entries[1].Plot = nil
	figs, err := Figures(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) != 1 || figs[0].Name != "hunt-fixed-window-published-single" || figs[0].Kind != FigureKind {
		t.Fatalf("figures %v; want the broken entry's only", figs)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, f, figs); err != nil {
		t.Fatal(err)
	}
	if strings.Count(md.String(), "![") != 1 || !strings.Contains(md.String(), "### token-bucket on single: held") {
		t.Errorf("report.md:\n%s", md.String())
	}
}

// TestFigureWithoutWindow: a best schedule whose admissions the verifier could place in no
// certain window (a contract known only to the whole second) is drawn as its bins alone.
func TestFigureWithoutWindow(t *testing.T) {
	f := huntFixture(t)
	f.Entries[1].Plot.Window = nil
	figs, err := Figures(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) != 2 || !strings.HasSuffix(figs[1].Title, "(no window to mark)") {
		for _, fg := range figs {
			t.Logf("figure %s: %q", fg.Name, fg.Title)
		}
		t.Fatalf("%d figures; want 2, the second titled as having no window", len(figs))
	}
	full, err := png.DecodeConfig(bytes.NewReader(figs[0].PNG))
	if err != nil {
		t.Fatal(err)
	}
	bare, err := png.DecodeConfig(bytes.NewReader(figs[1].PNG))
	if err != nil {
		t.Fatal(err)
	}
	if bare.Height >= full.Height || bare.Width != full.Width {
		t.Errorf("figure without a window is %dx%d, with one %dx%d; want it shorter (one panel)", bare.Width, bare.Height, full.Width, full.Height)
	}
}

// TestSectionWithoutCertainSet: an algorithm whose trials admitted permits that the verifier
// could place under no allowance for certain is not said to have admitted nothing.
func TestSectionWithoutCertainSet(t *testing.T) {
	f := huntFixture(t)
	e := &f.Entries[1]
	e.Closest, e.BestScore, e.Plot.Window = nil, 0, nil
	var md bytes.Buffer
	if err := WriteMarkdown(&md, f, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "could place no set of the admissions") || strings.Contains(md.String(), "no trial admitted anything") {
		t.Errorf("report.md:\n%s", md.String())
	}
	e.Plot = nil
	md.Reset()
	if err := WriteMarkdown(&md, f, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "no trial admitted anything") {
		t.Errorf("report.md without a plot:\n%s", md.String())
	}
}
