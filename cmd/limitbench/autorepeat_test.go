package main

import (
	"strings"
	"testing"
)

// TestRunRepeatAuto: --repeat auto with a budget that the first 6 rounds already spend stops
// after them, says why on stdout, and records the procedure in result.json: 6 rounds, one look,
// its level all of the gate's (the last look takes what is left), undecided or decided.
func TestRunRepeatAuto(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against real Redis")
	}
	code, stdout, stderr, res := runCLI(t, t.TempDir(), false, "--repeat", "auto", "--repeat-budget", "1s", "--duration", "200ms",
		"--algorithms", "gcra", suite+"smoke.yaml")
	if code != exitOK && code != exitFailed {
		t.Fatalf("exit %d", code)
	}
	seq := res.Sequential
	if seq == nil || len(seq.Topologies) != 1 {
		t.Fatalf("result.json sequential %+v; want one topology", seq)
	}
	look := seq.Topologies[0]
	if look.Topology != "single" || look.Rounds != 6 || look.Looks != 1 || look.Level != seq.Alpha || seq.BudgetS != 1 {
		t.Errorf("sequential %+v, look %+v; want 6 rounds, one look at the whole level, budget 1s", seq, look)
	}
	for _, e := range res.Entries {
		if len(e.Samples) != 6 {
			t.Errorf("%s: %d samples; want 6", e.Name(), len(e.Samples))
		}
	}
	if !strings.Contains(stdout, "repeat auto: single: ") || !strings.Contains(stderr, "auto: single after 6 rounds: ") {
		t.Errorf("stdout and stderr do not say where the rounds stopped")
	}
}
