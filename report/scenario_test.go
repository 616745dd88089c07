package report

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limitbench/limitbench/internal/golden"
	"github.com/limitbench/limitbench/result"
)

// TestScenarioWords: the Scenario section of the reports puts each scenario section of
// scenarios/testdata/scenario-sections.json (every arrival form, key distribution, skew form and
// client mode, a custom script, expectations and thresholds) in words, from the structured
// description alone; testdata/scenario-words.txt holds them.
func TestScenarioWords(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "scenarios", "testdata", "scenario-sections.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got strings.Builder
	dec := json.NewDecoder(f)
	for {
		var s result.Scenario
		if err := dec.Decode(&s); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		for _, r := range scenarioRows(&result.Result{Scenario: s}) {
			got.WriteString(r.Key + ": " + r.Value + "\n")
		}
		got.WriteString("\n")
	}
	golden.Check(t, filepath.Join("testdata", "scenario-words.txt"), []byte(got.String()))
}
