package report

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

func TestCompare(t *testing.T) {
	a, b := readFixture(t, "result.json"), readFixture(t, "result-b.json")
	b.Entries[0].Verification.Verdict = verify.Fail // gcra regressed
	// token-bucket not run the second time
	b.Entries = slices.DeleteFunc(b.Entries, func(e result.Entry) bool { return e.Algorithm == "token-bucket" })
	c, err := Compare([]*result.Result{a, b})
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := c.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	for _, want := range []string{
		"| gcra | single | **pass → fail** |",
		"| sliding-log | single | pass |",
		"| token-bucket | single | only in baseline (inconclusive) |",
		"demo 2026-03-14T10:26:53Z (#2) against demo 2026-03-14T09:26:53Z (#1)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("comparison.md lacks %q:\n%s", want, out)
		}
	}
	rows := c.Sections()[0].Rows
	if got := rows[1]; !strings.Contains(got.P99, "0.961 → ") || !strings.Contains(got.P99, "%)") {
		t.Errorf("sliding-log p99 delta = %q; want 0.961 → new (±x%%)", got.P99)
	}
	if got := rows[1].Throughput; !strings.Contains(got, " → ") {
		t.Errorf("sliding-log throughput delta = %q; want base → new", got)
	}
	dir := t.TempDir()
	if err := WriteComparison(dir, c); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(filepath.Join(dir, ComparisonHTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(html, []byte("pass → fail")) {
		t.Error("comparison.html does not show the verdict change")
	}
	if _, err := Compare([]*result.Result{a}); !errors.Is(err, ErrTooFewResults) {
		t.Errorf("Compare(one result) error = %v; want ErrTooFewResults", err)
	}
}

func TestDelta(t *testing.T) {
	for _, tc := range []struct {
		name         string
		base, now    float64
		higherBetter bool
		want, class  string
	}{
		{"faster", 100, 150, true, "100 → 150 (+50.0%)", "up"},
		{"slower", 100, 80, true, "100 → 80 (-20.0%)", "down"},
		{"noise", 100, 102, true, "100 → 102 (+2.0%)", ""},
		{"more memory", 100, 200, false, "100 → 200 (+100.0%)", "down"},
		{"both zero", 0, 0, true, "–", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, class := delta(tc.base, tc.now, Number, tc.higherBetter)
			if got != tc.want || class != tc.class {
				t.Errorf("delta(%v, %v) = (%q, %q); want (%q, %q)", tc.base, tc.now, got, class, tc.want, tc.class)
			}
		})
	}
}
