package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/limitbench/limitbench/result"
)

// exampleScenario skips in -short mode, builds the binary, writes a scenario named name with body
// into a temporary directory beside a copy of each of the examples/custom files libs, and returns
// the binary, the directory and the scenario's path.
func exampleScenario(t *testing.T, name, body string, libs ...string) (bin, tmp, file string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary and runs against real Redis")
	}
	bin, tmp = buildBinary(t), t.TempDir()
	for _, lib := range libs {
		b, err := os.ReadFile(filepath.Join("../../examples/custom", lib))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, tmp, lib, string(b))
	}
	return bin, tmp, writeFile(t, tmp, name, body)
}

// TestRunSelectsCustomEntry is the regression test of issue 28 item 11: on a scenario whose
// custom entries have contracts of different kinds (a token bucket, then a first-hit window),
// --algorithms naming the second was refused with exit 2, blaming the token bucket's fields
// under the index the selected entry took; the selected entry runs, on a real redis-server, as
// the file does without the flag.
func TestRunSelectsCustomEntry(t *testing.T) {
	bin, tmp, file := exampleScenario(t, "mixed.yaml", `version: 1
name: mixed
topologies: [single]
duration: 2s
warmup: 0s
seed: 1
clients: 8
arrival:
  steps:
    - {for: 450ms, rate: 0}
    - {for: 100ms, rate: 10}
    - {for: 650ms, rate: 0}
    - {for: 50ms, rate: 400}
    - {for: 450ms, rate: 0}
    - {for: 50ms, rate: 400}
    - {for: 250ms, rate: 0}
  align: {every: 1s}
keys: {count: 1}
limit: {limit: 10, window: 1s}
algorithms:
  - {name: my-token-bucket, script: token_bucket.lua, keys: ["rl:{{tag}}:tokens", "rl:{{tag}}:ts"],
     args: ["{{burst}}", "{{limit}}", "{{window_ms}}", "{{cost}}"], allowed: {element: 1, equals: 1},
     time: {element: 3, unit: us}, contract: {kind: token-bucket, capacity: 10, rate: 10, per: 1s}}
  - {name: my-first-hit, script: first_hit.lua, keys: ["hits:{{tag}}"], args: ["{{window_ms}}", "{{cost}}"],
     allowed: {element: 1, at_most: "{{limit}}"}, time: {element: 2, unit: us},
     contract: {kind: first-hit-window, limit: 10, window: 1s, granularity: 1ms}}
`, "token_bucket.lua", "first_hit.lua")
	out := filepath.Join(tmp, "out")
	runGoldens(t, bin, []cliCase{
		{"algorithms-selects-custom", []string{"run", "--backend", "process", "--quiet", "--no-reference",
			"--algorithms", "my-first-hit", "--out", out, file}, exitOK},
	}, 2*time.Minute, map[string]string{"$TMP": tmp})
	res, err := result.Read(filepath.Join(out, result.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Entries) != 1 || res.Entries[0].Algorithm != "my-first-hit" {
		t.Errorf("result.json: %d entries; want my-first-hit's alone", len(res.Entries))
	}
}

// TestRunLibraryWithoutFunction is the regression test of issue 28 item 9: a function library
// that loads but does not register the scenario's function: was exit 3, as if Redis had failed;
// it is bad input, exit 2, naming the scenario's line, the library file and the function, before
// anything is measured (against a real redis-server, which loads the library).
func TestRunLibraryWithoutFunction(t *testing.T) {
	bin, tmp, file := exampleScenario(t, "nofunc.yaml", `version: 1
name: nofunc
topologies: [single]
duration: 1s
arrival: {rate: 100}
limit: {limit: 20, window: 1s}
algorithms:
  - {name: typo, library: function_lib.lua, function: alow, keys: ["log:{{tag}}"],
     args: ["{{limit}}", "{{window_ms}}", "{{uuid}}"], allowed: {element: 1, equals: 1},
     contract: {kind: sliding-window, limit: 20, window: 1s}}
`, "function_lib.lua")
	out := filepath.Join(tmp, "out")
	runGoldens(t, bin, []cliCase{
		{"library-without-function", []string{"run", "--backend", "process", "--quiet", "--no-reference", "--out", out, file}, exitBadInput},
	}, 2*time.Minute, map[string]string{"$TMP": tmp})
	if _, err := os.Stat(filepath.Join(out, result.FileName)); err == nil {
		t.Errorf("a run refused before any measurement wrote %s", result.FileName)
	}
}
