package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/limitbench/limitbench/verify"
)

// TestRunSentinel runs a scenario on a real Sentinel group (one master, one replica, three
// Sentinels started by limitbench), through go-redis's failover client.
func TestRunSentinel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server and three redis-sentinel processes")
	}
	body := `version: 1
name: sentinel
description: gcra and token-bucket behind Sentinel.
topologies: [sentinel]
duration: 1s
clients: 2
arrival: {rate: 400}
limit: {limit: 100, window: 1s}
algorithms: [gcra, token-bucket]
`
	p := filepath.Join(t.TempDir(), "sentinel.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stderr, res := runScenario(t, "--backend", "process", "--no-reference", p)
	checkExit(t, code, stderr)
	if res == nil {
		t.Fatalf("no result.json; stderr:\n%s", stderr)
	}
	if res.Environment.Topology != "sentinel" {
		t.Errorf("environment topology %q; want sentinel", res.Environment.Topology)
	}
	if res.Environment.Nodes != 2 {
		t.Errorf("%d nodes; want 2 (the master and its replica)", res.Environment.Nodes)
	}
	if len(res.Entries) != 2 {
		t.Fatalf("%d entries; want 2", len(res.Entries))
	}
	for _, e := range res.Entries {
		if e.Topology != "sentinel" || e.Requests == 0 || e.Allowed == 0 || e.Errors+e.Unknown > 0 {
			t.Errorf("%s: topology %s, %d requests, %d allowed, %d errors, %d unknown", e.Algorithm, e.Topology,
				e.Requests, e.Allowed, e.Errors, e.Unknown)
		}
		if e.Verification.Verdict == verify.Fail {
			t.Errorf("%s failed: %v", e.Algorithm, e.Verification.Reasons)
		}
	}

}
