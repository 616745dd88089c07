package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limitbench/limitbench/report"
	"github.com/limitbench/limitbench/verify"
)

// Issue 19: the standard wait-replicas scenario on gcra, on real Sentinels, with WAIT 1 after
// every request and again with --wait-replicas 0: with it, result.json records the WAIT and the
// entry counts its short ones (fewer than all: the replica acknowledged the requests before the
// failover), and the report's scenario section names it; without it, neither appears. Never a
// fail either way.
func TestRunWaitReplicasScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("fails a real Sentinel group over under load, twice")
	}
	for _, tc := range []struct {
		name string
		args []string
		wait bool
	}{
		{"with", nil, true},
		{"without", []string{"--wait-replicas", "0"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			args := append(append([]string{"--algorithms", "gcra", "--no-reference"}, tc.args...), suite+"wait-replicas.yaml")
			code, stderr, res := runScenarioIn(t, out, args...)
			if code != exitOK && code != exitFailed {
				t.Fatalf("exit %d:\n%s", code, stderr)
			}
			e := res.Entries[0]
			if v := e.Verification; v.Verdict == verify.Fail || v.DefiniteViolations != 0 || len(v.Faults) != 1 {
				t.Fatalf("verdict %s, %d definite, faults %+v (%v)", v.Verdict, v.DefiniteViolations, v.Faults, v.Reasons)
			}
			md, err := os.ReadFile(filepath.Join(out, report.MarkdownFile))
			if err != nil {
				t.Fatal(err)
			}
			st := res.Scenario.Settings
			if !tc.wait {
				if st.Wait != nil || e.WaitShort != nil || strings.Contains(string(md), "wait for replicas") {
					t.Errorf("without WAIT: settings.wait %+v, wait_short %v, or the report names a WAIT", st.Wait, e.WaitShort)
				}
				return
			}
			if st.Wait == nil || st.Wait.Replicas != 1 || st.Wait.EffectiveTimeout().Milliseconds() != 100 {
				t.Fatalf("settings.wait = %+v; want 1 replica, 100 ms", st.Wait)
			}
			if e.WaitShort == nil || *e.WaitShort >= e.Requests {
				t.Errorf("wait_short = %v of %d requests; want a count, below the requests (the replica acknowledged before the failover)", e.WaitShort, e.Requests)
			}
			if !strings.Contains(string(md), "| wait for replicas | WAIT 1 100 after every request") {
				t.Errorf("report.md does not name the WAIT:\n%s", md)
			}
		})
	}
}
