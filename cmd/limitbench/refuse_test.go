package main

import (
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
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

// TestFaultGoldens is the regression test of issue 28 items 5 and 6. Two pauses of one node at
// overlapping times are refused before anything starts (the second was cut short by the first's
// resume, and result.json recorded it as scheduled). A fault target that names no node of the
// environment (master:9 on a 3-master cluster, a node: address that is none of its servers)
// failed only when due, inside result.json, with exit 0: it is exit 2 naming the file, line and
// field once the environment is up, before the first measurement (against a real cluster and a
// real external redis-server).
func TestFaultGoldens(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts Redis")
	}
	bin := buildBinary(t)
	tmp := t.TempDir()
	server := redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess})
	u := url.URL{Scheme: "redis", User: url.UserPassword("default", server.Password), Host: server.Masters()[0]}
	scenario := func(name, topology, faults string) string {
		return writeFile(t, tmp, name+".yaml", "version: 1\nname: "+name+"\ntopologies: ["+topology+
			"]\nduration: 2s\narrival: {rate: 100}\nlimit: {limit: 10, window: 1s}\nalgorithms: [gcra]\nfaults:\n"+faults)
	}
	run := func(name string, args ...string) []string {
		return append(append([]string{"run", "--quiet", "--no-reference", "--out", filepath.Join(tmp, name)}, args...),
			filepath.Join(tmp, name+".yaml"))
	}
	scenario("two-pauses", "single", "  - {at: 500ms, kind: pause, duration: 1s}\n  - {at: 1s, kind: pause, target: masters, duration: 500ms}\n")
	scenario("master-9", "cluster", "  - {at: 500ms, kind: pause, target: \"master:9\", duration: 500ms}\n")
	scenario("unknown-node", "single", "  - {at: 500ms, kind: latency, target: \"node:127.0.0.1:1\", duration: 500ms, latency: 5ms}\n")
	cases := []cliCase{
		{"faults-overlap", run("two-pauses", "--backend", "process"), exitBadInput},
		{"fault-target-shard", run("master-9", "--backend", "process"), exitBadInput},
		{"fault-target-node", run("unknown-node", "--redis", u.String()), exitBadInput},
	}
	runGoldens(t, bin, cases, 2*time.Minute, map[string]string{"$TMP": tmp, "$REDIS": server.Masters()[0], "$PASSWORD": server.Password})
	for _, name := range []string{"two-pauses", "master-9", "unknown-node"} {
		if _, err := os.Stat(filepath.Join(tmp, name, result.FileName)); err == nil {
			t.Errorf("%s: refused before any measurement, yet %s was written", name, result.FileName)
		}
	}
}
