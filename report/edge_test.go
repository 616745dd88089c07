package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOutcome(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    Verification
		want string
	}{
		{"pass", Verification{Verdict: Pass}, "pass"},
		{"fail", Verification{Verdict: Fail, DefiniteViolations: 3}, "fail"},
		{"inconclusive", Verification{Verdict: Inconclusive}, "inconclusive"},
		{"caught", Verification{Verdict: Fail, DefiniteViolations: 3, ExpectedViolation: true}, "expected violation caught"},
		{"missed", Verification{Verdict: Pass, ExpectedViolation: true}, "expected violation missed"},
		{"expected but inconclusive", Verification{Verdict: Inconclusive, ExpectedViolation: true}, "inconclusive"},
		{"empty", Verification{}, "unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := Entry{Verification: tc.v}
			if got := e.Outcome(); got != tc.want {
				t.Errorf("Outcome(%+v) = %q; want %q", tc.v, got, tc.want)
			}
		})
	}
}

// TestWriteAllSparse: a result with little in it (no histograms, no timeline, nothing measured on
// the server, two topologies, cut short) still gives a complete report.
func TestWriteAllSparse(t *testing.T) {
	r := &Result{
		Scenario:    Scenario{Name: "sparse"},
		Environment: Environment{Backend: "external", Topology: "single,cluster"},
		CutShort:    true, CutShortNote: "Interrupted (Ctrl-C) after 3 s.",
		Entries: []Entry{
			{Algorithm: "my-script", Topology: "single", Custom: true, Verification: Verification{Verdict: Inconclusive, Reasons: []string{"no admissions"}}},
			{Algorithm: "gcra", Topology: "cluster", Verification: Verification{Verdict: Pass, ExpectedViolation: true},
				Timeline: Timeline{BinS: 0.5, Offered: []int64{3, 4}, Admitted: []int64{3, 4}, Denied: []int64{0, 0}, Errors: []int64{0, 0}}},
		},
	}
	dir := t.TempDir()
	if err := WriteAll(dir, r); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"**Cut short:** Interrupted (Ctrl-C) after 3 s.",
		"No verdict: no admissions.",
		"the harness missed a planted bug",
		"compare-single.png", "compare-cluster.png", "accuracy-gcra-cluster.png",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(string(md), "latency-") {
		t.Errorf("report.md shows a latency plot although no histogram was recorded:\n%s", md)
	}
	if _, err := ReadResult(filepath.Join(dir, ResultFile)); err != nil {
		t.Fatal(err)
	}
}
