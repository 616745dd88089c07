package report

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limitbench/limitbench/result"
)

// Issue 19: a result whose entries injected faults has a Faults section in report.md and
// report.html, one row per fault and measurement; one without faults has none.
func TestFaultsSection(t *testing.T) {
	r, err := result.Read(filepath.Join("..", "result", "testdata", "full-result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var md, html bytes.Buffer
	if err := WriteMarkdown(&md, r, nil); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&html, r, nil); err != nil {
		t.Fatal(err)
	}
	row := "| my-limiter | cluster | restart master at 4.4s | 127.0.0.1:7000 | 4.400s–4.513s, recovery to 5.513s | " +
		"may be lost: 127.0.0.1:7000 restarted (run id 4f2a1b2c → 9c1e0d3f) (seen at 4.512s) | 48 (3 violations not listed) | 57 | 10 | 20 | 7 | 0.089s | 127.0.0.1:7001: not started |"
	for _, want := range []string{"## Faults\n", row} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md.String())
		}
	}
	if !strings.Contains(html.String(), "<h2>Faults</h2>") || !strings.Contains(html.String(), "<td>restart master at 4.4s</td>") {
		t.Errorf("report.html lacks the Faults section")
	}

	for i := range r.Entries {
		r.Entries[i].Verification.Faults = nil
	}
	md.Reset()
	html.Reset()
	if err := WriteMarkdown(&md, r, nil); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&html, r, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md.String(), "Faults") || strings.Contains(html.String(), "Faults") {
		t.Errorf("a result without faults has a Faults section")
	}
}
