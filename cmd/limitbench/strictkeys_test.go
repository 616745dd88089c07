package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limitbench/limitbench/result"
)

// strictKeysScenario holds two custom scripts: counter.lua, which touches only the key it is
// given, and one that also counts in a key it derives from KEYS[1], which Dragonfly, Kvrocks and
// Upstash refuse.
const strictKeysScenario = `version: 1
name: strict-keys
topologies: [single]
duration: 1s
warmup: 0s
clients: 4
arrival: {rate: 100}
keys: {count: 2}
limit: {limit: 10, window: 1s}
algorithms:
  - name: portable
    script: counter.lua
    keys: ["count:{{tag}}"]
    args: ["{{window_ms}}", "{{cost}}"]
    allowed: {element: 1, at_most: "{{limit}}"}
    time: {element: 2, unit: us}
    contract: {kind: fixed-window, limit: "{{limit}}", window: "{{window_ms}}ms"}
  - name: derived-key
    script: derived.lua
    keys: ["count:{{tag}}"]
    args: ["{{window_ms}}", "{{cost}}"]
    allowed: {element: 1, at_most: "{{limit}}"}
    time: {element: 2, unit: us}
    contract: {kind: first-hit-window, limit: "{{limit}}", window: "{{window_ms}}ms", granularity: 1ms}
`

// derivedLua counts a first-hit window in KEYS[1] .. ':n', a key the caller never passed.
const derivedLua = `local k = KEYS[1] .. ':n'
local n = redis.call('INCRBY', k, ARGV[2])
if n == tonumber(ARGV[2]) then redis.call('PEXPIRE', k, ARGV[1]) end
local t = redis.call('TIME')
return {n, tonumber(t[1]) * 1000000 + tonumber(t[2])}
`

// TestRunStrictKeys (issue 29): behind --strict-keys, a script that touches a key not passed in
// KEYS is refused at that command, and its entry gets a portability warning naming the command
// and the key, never a violation; a script that touches only its KEYS runs as without the guard.
// Without the flag the same script runs undisturbed. FCALL cannot be guarded: exit 2.
func TestRunStrictKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Redis under load")
	}
	dir := t.TempDir()
	counter := filepath.Join("..", "..", "examples", "custom", "counter.lua")
	src, err := os.ReadFile(counter)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "counter.lua", string(src))
	writeFile(t, dir, "derived.lua", derivedLua)
	scenario := writeFile(t, dir, "strict.yaml", strictKeysScenario)

	code, stderr, res := runScenario(t, "--strict-keys", "--no-reference", scenario)
	if res == nil {
		t.Fatalf("exit %d, no result:\n%s", code, stderr)
	}
	by := map[string]result.Entry{}
	for _, e := range res.Entries {
		by[e.Algorithm] = e
	}
	p, d := by["portable"], by["derived-key"]
	if !p.StrictKeys || !d.StrictKeys {
		t.Errorf("strict_keys: portable %v, derived-key %v; want both marked", p.StrictKeys, d.StrictKeys)
	}
	if len(warningsOf(p, result.WarningStrictKeys)) != 0 || p.Errors != 0 || p.Verification.Verdict == "fail" {
		t.Errorf("portable: warnings %v, %d errors, %s; want none, none, no fail", p.Warnings, p.Errors, p.Verification.Verdict)
	}
	w := warningsOf(d, result.WarningStrictKeys)
	if len(w) != 1 || !strings.Contains(w[0], "not portable: INCRBY touched key limitbench:") || !strings.Contains(w[0], ":n, which is not in KEYS") {
		t.Errorf("derived-key: warnings %v; want one naming INCRBY and the key it derived", d.Warnings)
	}
	if d.Allowed != 0 || d.Verification.DefiniteViolations != 0 || code != exitFailed {
		t.Errorf("derived-key: %d allowed, %d definite, exit %d; want every request refused, no violation, exit 1 (its errors)",
			d.Allowed, d.Verification.DefiniteViolations, code)
	}

	// Without the guard the script runs: no error, no warning.
	code, stderr, res = runScenario(t, "--no-reference", "--algorithms", "derived-key", scenario)
	if res == nil || len(res.Entries) != 1 || res.Entries[0].Errors != 0 || res.Entries[0].StrictKeys ||
		len(warningsOf(res.Entries[0], result.WarningStrictKeys)) != 0 || res.Entries[0].Allowed == 0 {
		t.Errorf("derived-key without --strict-keys: exit %d, %+v\n%s", code, res, stderr)
	}

	// FCALL is not guarded: refused before anything starts, naming the field.
	var so, se bytes.Buffer
	code = run([]string{"run", "--strict-keys", "--call", "fcall", "--algorithms", "gcra", "--out", filepath.Join(dir, "fcall"), scenario}, &so, &se)
	if code != exitBadInput || !strings.Contains(se.String(), "strict.yaml: call: --strict-keys guards scripts called with EVALSHA") {
		t.Errorf("--strict-keys --call fcall: exit %d; want 2 explaining\n%s", code, se.String())
	}
	se.Reset()
	fn := filepath.Join("..", "..", "examples", "custom", "function.yaml")
	code = run([]string{"run", "--strict-keys", "--out", filepath.Join(dir, "fn"), fn}, &so, &se)
	if code != exitBadInput || !strings.Contains(se.String(), "function.yaml:") || !strings.Contains(se.String(), "which --strict-keys does not guard") {
		t.Errorf("--strict-keys with a function library: exit %d; want 2 naming the entry\n%s", code, se.String())
	}
}

// warningsOf returns the messages of e's warnings of kind.
func warningsOf(e result.Entry, kind string) []string {
	var out []string
	for _, w := range e.Warnings {
		if w.Kind == kind {
			out = append(out, w.Message)
		}
	}
	return out
}
