package ci

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/gate"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/scenarios"
	"github.com/limitbench/limitbench/verify"
)

func TestAppendSummary(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "summary.md")
	if err := AppendSummary(path, "# first\n\nsmall", "r/report.md"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if string(b) != "\n# first\n\nsmall\n" {
		t.Errorf("small summary = %q", b)
	}
	// A summary larger than the limit, in lines of multi-byte runes, is cut at a line, says so
	// and where the whole is, and the file stays under 1 MiB with what was there before.
	line := strings.Repeat("é", 50) + "\n"
	big := strings.Repeat(line, SummaryLimit/len(line)+100)
	if err := AppendSummary(path, big, "r/report.md"); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(path)
	if len(b) >= SummaryLimit {
		t.Errorf("summary file is %d bytes; want under %d", len(b), SummaryLimit)
	}
	text := string(b)
	if !strings.HasPrefix(text, "\n# first\n\nsmall\n\n") {
		t.Errorf("what was there before is gone: %q", text[:40])
	}
	if !strings.HasSuffix(text, "cut to stay under GitHub's 1 MiB limit for a step's summary; the whole report is r/report.md.\n") {
		t.Errorf("the cut summary does not say so: %q", text[len(text)-200:])
	}
	body := strings.TrimPrefix(text, "\n# first\n\nsmall\n\n")
	body = body[:strings.Index(body, "\n\n> **Cut:**")]
	if strings.ReplaceAll(body, line, "") != "" || !strings.HasSuffix(body, line) {
		t.Errorf("the summary was not cut at a whole line")
	}
}

func TestAnnotationString(t *testing.T) {
	for _, tt := range []struct {
		a    Annotation
		want string
	}{
		{Annotation{File: "scenarios/x.yaml", Line: 12, Title: "limitbench: gcra on single", Message: "3 definite violations"},
			"::error file=scenarios/x.yaml,line=12,title=limitbench%3A gcra on single::3 definite violations"},
		{Annotation{File: "a,b.yaml", Message: "100% over\nnext line"}, "::error file=a%2Cb.yaml::100%25 over%0Anext line"},
		{Annotation{Line: 3, Message: "no file, so no line"}, "::error::no file, so no line"},
	} {
		if got := tt.a.String(); got != tt.want {
			t.Errorf("%+v.String() = %q; want %q", tt.a, got, tt.want)
		}
	}
}

// TestAnnotatorLimit: at most 10 errors, then one warning with how many more; fewer print as
// they are.
func TestAnnotatorLimit(t *testing.T) {
	for _, tt := range []struct {
		n, errs int
		warning string
	}{{3, 3, ""}, {10, 10, ""}, {11, 10, "1 more error than"}, {25, 10, "15 more errors than"}} {
		var n Annotator
		for i := range tt.n {
			n.Add(Annotation{File: "s.yaml", Line: i + 1, Message: "m"})
		}
		var b bytes.Buffer
		if err := n.Flush(&b); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if got := strings.Count(out, "::error "); got != tt.errs {
			t.Errorf("%d annotations: %d errors printed; want %d", tt.n, got, tt.errs)
		}
		warnings := strings.Count(out, "::warning ")
		if (tt.warning == "") != (warnings == 0) || warnings > 1 || !strings.Contains(out, tt.warning) {
			t.Errorf("%d annotations: want the warning %q once:\n%s", tt.n, tt.warning, out)
		}
		b.Reset()
		if err := n.Flush(&b); err != nil || b.Len() != 0 {
			t.Errorf("a second Flush printed %q, %v; want nothing", b.String(), err)
		}
	}
}

// placesScenario is a scenario file whose algorithms, thresholds and expectations are on known
// lines.
const placesScenario = `version: 1
name: places
duration: 1s
algorithms:
  - gcra
  - token-bucket
  - sliding-log-published
thresholds:
  - "p99 < 5ms"
  - "gcra: efficiency > 0.9"
expect:
  violations:
    - sliding-log-published
`

func loadPlaces(t *testing.T) (*scenarios.Scenario, string) {
	t.Helper()
	root := t.TempDir()
	path := filepath.Join(root, "scenarios", "places.yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(placesScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := scenarios.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return s, root
}

func TestPlacesOf(t *testing.T) {
	s, root := loadPlaces(t)
	p := PlacesOf(s, root)
	want := Places{File: "scenarios/places.yaml",
		Algorithms: map[string]int{"": 4, "gcra": 5, "token-bucket": 6, "sliding-log-published": 7},
		Thresholds: map[string]int{"p99 < 5ms": 9, "gcra: efficiency > 0.9": 10},
		Expected:   map[string]int{"sliding-log-published": 13}}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("PlacesOf (-want +got):\n%s", diff)
	}
	if got := PlacesOf(s, "").File; got != filepath.ToSlash(s.File) {
		t.Errorf("PlacesOf without a root: file %q; want the scenario's path %q", got, s.File)
	}
}

// TestRunAnnotations: a definite violation at its algorithm's line, a broken threshold at the
// threshold's, a missed expected violation at its expect entry; nothing for passes, caught or
// tolerated violations, and for the reference.
func TestRunAnnotations(t *testing.T) {
	s, root := loadPlaces(t)
	p := PlacesOf(s, root)
	fail := verify.Summary{Verdict: verify.Fail, DefiniteViolations: 2, WorstExcess: 1, Where: `for subject "k" in [0s, 1s]`}
	caught := fail
	caught.ExpectedViolation = true
	slow := verify.Summary{Verdict: verify.Pass}
	slow.AddThreshold(verify.ThresholdCheck{Threshold: "p99 < 5ms", Status: verify.ThresholdBroken, Shown: "9ms"}, "broken")
	r := &result.Result{Reference: "reference", Entries: []result.Entry{
		entry("gcra", fail), entry("token-bucket", slow), entry("sliding-log-published", verify.Summary{Verdict: verify.Pass, ExpectedViolation: true}),
		entry("fixed-window", verify.Summary{Verdict: verify.Pass}), entry("sliding-counter", caught), entry("reference", fail)}}
	got := RunAnnotations(r, p)
	want := []Annotation{
		{File: "scenarios/places.yaml", Line: 5, Title: "limitbench: gcra on single",
			Message: `2 definite violations of sliding-window(100, 1s); worst excess 1 permits for subject "k" in [0s, 1s]`},
		{File: "scenarios/places.yaml", Line: 9, Title: "limitbench: token-bucket on single", Message: `threshold "p99 < 5ms" broken: 9ms`},
		{File: "scenarios/places.yaml", Line: 13, Title: "limitbench: sliding-log-published on single",
			Message: "expected to be flagged with a definite violation, but none was found: the harness missed a planted bug"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RunAnnotations (-want +got):\n%s", diff)
	}
	if got := RunAnnotations(r, Places{}); len(got) != 3 || got[0].File != "" || got[0].Line != 0 {
		t.Errorf("RunAnnotations without places = %+v; want the same three, with no file and no line", got)
	}
}

// TestGateAnnotations: one annotation per row that fails the gate, at its algorithm's line.
func TestGateAnnotations(t *testing.T) {
	g, err := gate.Compare(gateFixture(t, "baseline"), gateFixture(t, "current-slower"), gate.DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	p := Places{File: "scenarios/saturation.yaml", Algorithms: map[string]int{"": 3, "gcra": 7}}
	got := GateAnnotations(g, p)
	if len(got) != g.Counts.Regressions || len(got) == 0 {
		t.Fatalf("%d annotations; want one per regression (%d)", len(got), g.Counts.Regressions)
	}
	for _, a := range got {
		if a.File != "scenarios/saturation.yaml" || a.Line != 7 || !strings.HasPrefix(a.Title, "limitbench gate: gcra on single") ||
			!strings.HasSuffix(a.Message, ": regression") {
			t.Errorf("annotation %+v; want at gcra's line 7, its row in words", a)
		}
	}
}
