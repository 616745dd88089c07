package report

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/internal/golden"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
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
	want := `ALGORITHM    TOPOLOGY  RATE/s  P99  ADMITTED/IDEAL     ERRORS  DEFINITE  VERDICT
gcra         single         0   0s               -  590 (59%)         0  inconclusive
sliding-log  single         0   0s               -          0         0  pass
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

// TestSummaryFitsATerminal (issue 31): the summary of the widest verdict table a run makes
// (every built-in algorithm, a custom script, every label, both topologies, long counts) fits
// 120 columns, line by line (errors and warnings, which quote Redis, are left whole), with the reason of every entry that did not pass under it; with
// --wide (WriteWideSummary) every column is there, the contract too, on one line per entry.
func TestSummaryFitsATerminal(t *testing.T) {
	r := wideResult(t)
	var got bytes.Buffer
	if err := WriteSummary(&got, r); err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(strings.TrimSuffix(got.String(), "\n"), "\n") {
		if n := utf8.RuneCountInString(line); n > TerminalWidth {
			t.Errorf("line %d is %d columns wide; want at most %d:\n%s", i+1, n, TerminalWidth, line)
		}
	}
	for i := range r.Entries {
		e := &r.Entries[i]
		label := r.LabelOf(e)
		if label == string(verify.Pass) || label == result.LabelReference || Why(r, e) == "" {
			continue
		}
		if lead := fmt.Sprintf("why %s %s (%s): ", e.Algorithm, e.Topology, label); !strings.Contains(got.String(), lead) {
			t.Errorf("the summary lacks the reason of %s (%q)", e.Name(), lead)
		}
	}
	var wide bytes.Buffer
	if err := WriteWideSummary(&wide, r); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(wide.String(), "\n")
	for i := range r.Entries {
		e := &r.Entries[i]
		if row := lines[i+1]; !strings.HasPrefix(row, e.Algorithm+" ") || !strings.HasSuffix(row, e.Verification.Contract) {
			t.Errorf("wide row %d = %q; want %s ... %s on one line", i+1, row, e.Algorithm, e.Verification.Contract)
		}
	}
}
