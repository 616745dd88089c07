package gate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/result"
)

// withScenario writes testdata/<name>/result.json into a fresh directory with its scenario
// section replaced by the one of the result.json at from, taken as written, and reads it back.
func withScenario(t *testing.T, name, from string) *result.Result {
	t.Helper()
	var doc, src map[string]json.RawMessage
	for _, f := range []struct {
		path string
		into *map[string]json.RawMessage
	}{{filepath.Join("testdata", name, result.FileName), &doc}, {from, &src}} {
		b, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, f.into); err != nil {
			t.Fatal(err)
		}
	}
	doc["scenario"] = src["scenario"]
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), result.FileName)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := result.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestGateReadsPreviousVersion: results whose scenario section is as the previous version wrote
// it, in words beside its settings (result/testdata/v1-words-result.json), gate exactly as the
// same results written by this version (result/testdata/full-result.json).
func TestGateReadsPreviousVersion(t *testing.T) {
	previous := filepath.Join("..", "result", "testdata", "v1-words-result.json")
	current := filepath.Join("..", "result", "testdata", "full-result.json")
	compare := func(scenario string) *Report {
		g, err := Compare(withScenario(t, "baseline", scenario), withScenario(t, "current-slower", scenario), DefaultPolicy())
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	want, got := compare(current), compare(previous)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the gate of results of the previous version differs (-this version +previous):\n%s", diff)
	}
	if !got.Regressed() {
		t.Error("baseline against current-slower: no regression found")
	}
}
