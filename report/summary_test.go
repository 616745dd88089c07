package report

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/internal/golden"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/verify"
	"github.com/limitbench/limitbench/result"
)

// TestSummaryTableGolden: the summary table `limitbench run` prints for the fixture results is
// testdata/summary.txt.
func TestSummaryTableGolden(t *testing.T) {
	var got bytes.Buffer
	for _, f := range []string{"result.json", "result-b.json"} {
		r, err := result.Read(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteSummary(&got, r); err != nil {
			t.Fatal(err)
		}
	}
	golden.Check(t, filepath.Join("testdata", "summary.txt"), got.Bytes())
}

// Issue 14, items 3 and 9: the summary gives each entry's errors with their share of the
// requests, then one line per entry with errors naming each class with its first error's text
// (Redis's own words), then one line per warning, such as keys left behind on an external Redis.
func TestSummaryErrorsAndWarnings(t *testing.T) {
	r := &result.Result{Entries: []result.Entry{
		{Algorithm: "gcra", Topology: "single", Requests: 1000, Allowed: 100, Denied: 310, Errors: 580, Unknown: 10,
			ErrorClasses: []load.ErrorClass{
				{Kind: "OOM", Outcome: "failed", Count: 580, First: "gcra: OOM command not allowed when used memory > 'maxmemory'.", FirstAtS: 0.41},
				{Kind: "timeout", Outcome: "unknown", Count: 10, First: "gcra: i/o timeout", FirstAtS: 2},
			},
			Warnings:     []result.Warning{{Kind: result.WarningKeysLeft, Message: "3 keys under p: were left behind; remove them: X"}},
			Verification: verify.Summary{Verdict: verify.Inconclusive}},
		{Algorithm: "sliding-log", Topology: "single", Requests: 1000, Allowed: 100, Denied: 900,
			Verification: verify.Summary{Verdict: verify.Pass}},
	}}
	var got bytes.Buffer
	if err := WriteSummary(&got, r); err != nil {
		t.Fatal(err)
	}
	want := `ALGORITHM    TOPOLOGY  THROUGHPUT/s  P50  P99  ADMITTED/IDEAL  ERRORS     DEFINITE  VERDICT       CONTRACT
gcra         single    0             0s   0s   -               590 (59%)  0         inconclusive  none
sliding-log  single    0             0s   0s   -               0          0         pass          none
errors: gcra single: 580 OOM (failed, first at 0.41s: "gcra: OOM command not allowed when used memory > 'maxmemory'."); 10 timeout (unknown, first at 2s: "gcra: i/o timeout")
warning: gcra single: 3 keys under p: were left behind; remove them: X
`
	if diff := cmp.Diff(want, got.String()); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, r, nil); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"580 OOM (failed, first at 0.41s:", "Warning: 3 keys under p: were left behind"} {
		if !strings.Contains(md.String(), s) {
			t.Errorf("report.md lacks %q", s)
		}
	}
}
