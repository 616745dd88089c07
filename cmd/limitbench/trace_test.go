package main

import (
	"path/filepath"
	"testing"
	"time"
)

// TestBadTraceGoldens: a scenario whose arrival.trace cannot be replayed is bad input (exit 2)
// naming the trace file, line and column of its first problem, before anything starts; so is
// --seed with a trace, as the scenario's seed: is.
func TestBadTraceGoldens(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	tmp := t.TempDir()
	scenario := func(name, trace, body string) string {
		writeFile(t, tmp, name+".csv", body)
		return writeFile(t, tmp, name+".yaml", "arrival: {trace: "+trace+"}\nalgorithms: [gcra]\n")
	}
	run := func(path string) []string {
		return []string{"run", "--backend", "process", "--out", filepath.Join(tmp, "out"), path}
	}
	cases := []cliCase{
		{"trace-bad-offset", run(scenario("offset", "offset.csv", "offset,client,subject,cost\n0s,a,u,1\nsoon,a,u,1\n")), exitBadInput},
		{"trace-offsets-decrease", run(scenario("decrease", "decrease.csv", "offset,client,subject,cost\n1s,a,u,1\n500ms,a,u,1\n")), exitBadInput},
		{"trace-bad-cost", run(scenario("cost", "cost.csv", "offset,client,subject,cost\n0s,a,u,70000\n")), exitBadInput},
		{"trace-no-header", run(scenario("header", "header.csv", "0s,a,u,1\n")), exitBadInput},
		{"trace-missing", run(scenario("missing", "absent.csv", "")), exitBadInput},
		{"trace-bad-jsonl", run(writeFile(t, tmp, "j.yaml", "arrival: {trace: j.jsonl}\n")), exitBadInput},
		// Issue 28 item 8: the scenario's seed: was refused with a trace, --seed was not.
		{"trace-seed-flag", append(run(scenario("seeded", "seeded.csv", "offset,client,subject,cost\n0s,a,u,1\n"))[:5], "--seed", "7", filepath.Join(tmp, "seeded.yaml")), exitBadInput},
	}
	writeFile(t, tmp, "j.jsonl", "{\"offset\": \"0s\", \"client\": \"a\", \"subject\": \"u\", \"cost\": 1}\n{\"offset\": \"1s\", \"client\": 7}\n")
	runGoldens(t, bin, cases, 5*time.Second, map[string]string{"$TMP": tmp})
}
