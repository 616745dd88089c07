package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestHuntFaultsCorrectLimiters: issue 29 item 4 against a real Redis. A hunt that places
// restarts and evictions of the master among its requests (--faults) finds no violation of the
// corrected fixed-window and gcra: every violation it sees reaches across a loss of the state,
// which is the fault's. What the faults cost is reported apart: hunt.json's fault_cost with its
// schedule, and a line in report.md. A seeded hunt's first schedules (two of each family) are
// the same whatever the trials measure, and with seed 1 one of gcra's first eight forces its
// keys out just after its bucket was drained: the loss hands out a full bucket again, so gcra's
// entry must show a fault cost.
func TestHuntFaultsCorrectLimiters(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and hunts on a real Redis")
	}
	t.Parallel() // a child process, no state of this one: overlaps the other waits
	bin := buildBinary(t)
	tmp := t.TempDir()
	scenario := writeFile(t, tmp, "nem.yaml", "limit: {limit: 20, window: 1s}\nalgorithms: [fixed-window, gcra]\n")
	out := filepath.Join(tmp, "out")
	code, stdout, stderr := runBin(t, bin, "hunt", "--backend", "process", "--faults", "restart,evict", "--budget", "12s",
		"--trials", "8", "--out", out, scenario)
	if code != exitOK {
		t.Fatalf("hunt exit %d; want 0: no violation is the algorithms'\n%s\n%s", code, stdout, stderr)
	}
	hf, by := readHunt(t, out)
	if !slices.Equal(hf.Faults, []string{"restart", "evict"}) {
		t.Errorf("hunt.json faults %v; want the kinds given", hf.Faults)
	}
	placed := false
	for _, name := range []string{"fixed-window", "gcra"} {
		e := by[name]
		if e.Violation != nil {
			t.Errorf("%s: violation charged to the algorithm: %+v\n%s", name, e.Violation, stderr)
		}
		if e.BestScore > 1 || e.Trials < 2 {
			t.Errorf("%s: best score %g after %d trials; want at most 1", name, e.BestScore, e.Trials)
		}
		if b := e.Best; b != nil && len(b.Faults) > 0 {
			placed = true
		}
		if c := e.FaultCost; c != nil {
			placed = true
			if c.Permits <= 0 || len(c.Schedule.Faults) == 0 || len(c.Faults) == 0 || !c.Faults[0].StateLost {
				t.Errorf("%s: fault cost %+v; want permits above 0 from faults that lost the state", name, c)
			}
			if _, err := os.Stat(filepath.Join(out, c.Schedule.Trace)); err != nil {
				t.Errorf("%s: the fault cost's schedule was not written: %v", name, err)
			}
			t.Logf("%s: the faults cost %d permits (trial %d: %v)", name, c.Permits, c.Schedule.Trial, c.Schedule.Faults)
		}
	}
	if by["gcra"].FaultCost == nil {
		t.Errorf("gcra: no fault cost; one of its first schedules loses the state just after the bucket was drained\n%s", stderr)
	}
	if !placed {
		t.Error("no schedule placed a fault")
	}
	md, _ := os.ReadFile(filepath.Join(out, "report.md"))
	if by["gcra"].FaultCost != nil && !strings.Contains(string(md), "not a flaw of the algorithm") {
		t.Errorf("report.md does not say what the faults cost apart from the algorithm:\n%s", md)
	}
}

// TestHuntClockJumps: issue 29 item 4's clock jumps against a real Redis. redisson-per-client
// keeps its state per subject and client on the caller's clock, so steady offsets do not fool
// it; a hunt that may make a client's clock jump (--faults clock-jump) breaks it, its reproducer
// keeps the jump (the trace's skew column changes for that client), and `limitbench run` of the
// reproducer finds the violation again.
func TestHuntClockJumps(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and hunts on a real Redis")
	}
	t.Parallel() // a child process, no state of this one: overlaps the other waits
	bin := buildBinary(t)
	tmp := t.TempDir()
	scenario := writeFile(t, tmp, "jump.yaml", `limit: {limit: 20, window: 1s}
clock_skew: [0s, 2s, -2s]
algorithms: [redisson-per-client]
expect:
  may_violate: [redisson-per-client]
`)
	out := filepath.Join(tmp, "out")
	code, stdout, stderr := runBin(t, bin, "hunt", "--backend", "process", "--faults", "clock-jump", "--budget", "30s", "--out", out, scenario)
	if code != exitOK {
		t.Fatalf("hunt exit %d; want 0 (the violation is tolerated)\n%s\n%s", code, stdout, stderr)
	}
	_, by := readHunt(t, out)
	e := by["redisson-per-client"]
	if e.Violation == nil || e.Violation.Shrunk == nil {
		t.Fatalf("no shrunk violation of redisson-per-client: %+v\n%s", e, stderr)
	}
	sh := e.Violation.Shrunk
	if sh.Size.Faults == 0 {
		t.Errorf("the reproducer (%+v) keeps no clock jump", sh.Size)
	}
	csv, err := os.ReadFile(filepath.Join(out, sh.Trace))
	if err != nil {
		t.Fatal(err)
	}
	offsets := map[string]map[string]bool{} // client → the skews of its rows
	for _, line := range strings.Split(strings.TrimSpace(string(csv)), "\n")[1:] {
		f := strings.Split(line, ",")
		if offsets[f[1]] == nil {
			offsets[f[1]] = map[string]bool{}
		}
		offsets[f[1]][f[4]] = true
	}
	jumped := false
	for _, o := range offsets {
		jumped = jumped || len(o) > 1
	}
	if !jumped {
		t.Errorf("no client of the reproducer's trace changes its skew:\n%s", csv)
	}
	t.Logf("trial %d: %v; reproducer %d rows", e.Violation.Schedule.Trial, e.Violation.Schedule.Faults, sh.Size.Rows)
	code, stdout, stderr, res := replayReproducer(t, bin, filepath.Join(out, sh.Scenario), filepath.Join(tmp, "replay"))
	switch {
	case len(res.Entries) == 1 && res.Entries[0].Verification.Verdict == "inconclusive" &&
		strings.Contains(strings.Join(res.Entries[0].Verification.Reasons, " "), "fell behind"):
		t.Logf("replay fell behind its schedule: %v", res.Entries[0].Verification.Reasons)
	case len(res.Entries) != 1 || res.Entries[0].Verification.Verdict != "fail" || code != exitOK:
		t.Errorf("replay: exit %d, entries %+v; want 0 and redisson-per-client failing its contract\n%s\n%s", code, res.Entries, stdout, stderr)
	}
}
