package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixture copies report/testdata/<name> into dir and returns its path.
func reportFixture(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "report", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	a := reportFixture(t, dir, "result.json")
	b := reportFixture(t, dir, "result-b.json")
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"schema":"something else"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmpDir := filepath.Join(dir, "cmp")
	for _, tc := range []struct {
		name      string
		args      []string
		code      int
		stderr    string   // substring of stderr
		wantFiles []string // files that must exist afterwards
	}{
		{"one result rebuilds in place", []string{"report", a}, 0, "", []string{"report.md", "report.html", "latency-single.png", "gcra-single.hgrm"}},
		{"two results compare", []string{"report", "--out", cmpDir, a, b}, 0, "", []string{"cmp/comparison.md", "cmp/comparison.html"}},
		{"missing file", []string{"report", filepath.Join(dir, "nope.json")}, 2, "nope.json", nil},
		{"invalid file", []string{"report", a, bad}, 2, "bad.json", nil},
		{"no file", []string{"report"}, 2, "no result file", nil},
		{"bad flag", []string{"report", "--bogus", a}, 2, "bogus", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, &stdout, &stderr); code != tc.code {
				t.Fatalf("limitbench %v exited %d; want %d\nstderr: %s", tc.args, code, tc.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("stderr %q does not mention %q", stderr.String(), tc.stderr)
			}
			for _, f := range tc.wantFiles {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Errorf("after limitbench %v: %v", tc.args, err)
				}
			}
		})
	}
	md, err := os.ReadFile(filepath.Join(cmpDir, "comparison.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| gcra | single | pass |", " → ", "result-b.json against"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("comparison.md lacks %q:\n%s", want, md)
		}
	}
}
