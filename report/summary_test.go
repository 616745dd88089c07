package report

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/limitbench/limitbench/internal/golden"
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
	golden.Check(t, filepath.Join("testdata", "summary.txt"), got.Bytes())
}
