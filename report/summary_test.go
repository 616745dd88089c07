package report

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestSummaryTableGolden: the summary table `limitbench run` prints for the fixture results is
// testdata/summary.txt.
func TestSummaryTableGolden(t *testing.T) {
	var got bytes.Buffer
	for _, f := range []string{"result.json", "result-b.json"} {
		r, err := ReadResult(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteSummary(&got, r); err != nil {
			t.Fatal(err)
		}
	}
	golden := filepath.Join("testdata", "summary.txt")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("summary table differs from %s:\n%s\nwant:\n%s", golden, got.Bytes(), want)
	}
}
