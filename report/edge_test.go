package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// TestReferenceOutcome: the reference script's entry is labelled as the reference, whatever its
// verdict, and is kept out of the summary's verdict counts.
func TestReferenceOutcome(t *testing.T) {
	r := &result.Result{Reference: "reference", Entries: []result.Entry{
		{Algorithm: "gcra", Topology: "single", Verification: verify.Summary{Verdict: verify.Pass}},
		{Algorithm: "reference", Topology: "single", Verification: verify.Summary{Verdict: verify.Inconclusive, Contract: "none"}},
	}}
	if got := r.LabelOf(&r.Entries[1]); got != result.LabelReference {
		t.Errorf("OutcomeOf(reference) = %q; want %q", got, result.LabelReference)
	}
	if got := r.LabelOf(&r.Entries[0]); got != "pass" {
		t.Errorf("OutcomeOf(gcra) = %q; want pass", got)
	}
	want := "1 entry: 1 pass; plus 1 reference entry (calibration, not verified)."
	if got := summary(r); got != want {
		t.Errorf("summary = %q; want %q", got, want)
	}
	if f := Findings(r, &r.Entries[1]); len(f) == 0 || !strings.Contains(f[0], "reference script") || strings.Contains(strings.Join(f, " "), "No verdict") {
		t.Errorf("Findings(reference) = %q; want it described as the reference script, not as inconclusive", f)
	}
	r.Reference = ""
	if got := r.LabelOf(&r.Entries[1]); got != "inconclusive" {
		t.Errorf("OutcomeOf without a reference = %q; want the entry's own inconclusive", got)
	}
}

// TestWriteAllSparse: a result with little in it (no histograms, no timeline, nothing measured on
// the server, two topologies, cut short) still gives a complete report.
func TestWriteAllSparse(t *testing.T) {
	r := &result.Result{
		Scenario:    result.Scenario{Name: "sparse"},
		Environment: result.Environment{Backend: "external", Topology: "single,cluster"},
		CutShort:    true, CutShortNote: "Interrupted (Ctrl-C) after 3 s.",
		Entries: []result.Entry{
			{Algorithm: "my-script", Topology: "single", Custom: true, Verification: verify.Summary{Verdict: verify.Inconclusive, Reasons: []string{"no admissions"}}},
			{Algorithm: "gcra", Topology: "cluster", Verification: verify.Summary{Verdict: verify.Pass, ExpectedViolation: true},
				Timeline: result.Timeline{Series: load.Series{BinS: 0.5, Offered: []int64{3, 4}, Admitted: []int64{3, 4}, Denied: []int64{0, 0}, Errors: []int64{0, 0}}}},
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
	if _, err := result.Read(filepath.Join(dir, result.FileName)); err != nil {
		t.Fatal(err)
	}
}
