//go:build linux || darwin

package bench_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// issue13Loop is the extra work of issue 13's example: a 3,000-iteration Lua loop put in front of
// the script.
const issue13Loop = "local extra = 0\nfor i = 1, 3000 do extra = extra + i end\n"

// withExtraWork returns script with work put in front of its first statement (after its header
// comment).
func withExtraWork(t testing.TB, script, work string) string {
	t.Helper()
	const first = "local t = redis.call('TIME')"
	i := strings.Index(script, first)
	if i < 0 {
		t.Fatalf("script has no %q to put extra work in front of", first)
	}
	return script[:i] + work + script[i:]
}

// TestGateIssue13Example runs issue 13's example end to end through the CLI, beside a process
// that keeps one CPU about half busy: `limitbench run --backend process --repeat 6` of the custom
// fixed-window script in testdata/gate/issue13 (16 clients, 100 subjects, 2 s per repeat), the same
// again with a 3,000-iteration Lua loop put in front of the script, and `limitbench gate`. Before
// issue 13 every row was "unstable" (a side's spread over 10%) and the gate passed a 4× slowdown;
// it must now exit 1 with regression rows. It takes about a minute; -short skips it.
func TestGateIssue13Example(t *testing.T) {
	gateNeedRedis(t)
	bin := buildLimitbench(t)
	src := filepath.Join("testdata", "gate", "issue13")
	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join(src, "fixed_window.lua"))
	if err != nil {
		t.Fatal(err)
	}
	scenario, err := os.ReadFile(filepath.Join(src, "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	scenarioPath, scriptPath := filepath.Join(dir, "scenario.yaml"), filepath.Join(dir, "fixed_window.lua")
	write := func(path string, b []byte) {
		t.Helper()
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(scenarioPath, scenario)
	write(scriptPath, script)

	busy := startCompetitor(t, 50)
	start := time.Now()
	run := func(out string) {
		t.Helper()
		code, stdout, stderr := runLimitbench(t, bin, 5*time.Minute,
			"run", "--backend", "process", "--repeat", "6", "--quiet", "--out", filepath.Join(dir, out), scenarioPath)
		t.Logf("limitbench run (%s): exit %d\n%s", out, code, stdout)
		if code != 0 && code != 1 {
			t.Fatalf("limitbench run (%s): exit %d\nstdout:\n%s\nstderr:\n%s", out, code, stdout, stderr)
		}
	}
	run("baseline")
	write(scriptPath, []byte(withExtraWork(t, string(script), issue13Loop)))
	run("current")
	code, stdout, stderr := runLimitbench(t, bin, time.Minute, "gate", "--baseline", filepath.Join(dir, "baseline"), filepath.Join(dir, "current"))
	cpu := busy.stop()
	// The competitor's share is logged, not asserted: on a machine busier still it gets less.
	t.Logf("limitbench gate: exit %d in %s, beside a competitor using %.2f CPU\n%s%s", code, time.Since(start).Round(time.Second), cpu, stdout, stderr)
	if code != 1 {
		t.Errorf("limitbench gate exit %d; want 1 (a regression)", code)
	}
	if !strings.HasPrefix(stdout, "**limitbench gate: REGRESSION in scenario issue13") {
		t.Errorf("summary is not a regression:\n%s", stdout)
	}
	for _, line := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(line, "| issue13 | my-fixed-window | single | cpu ") {
			if !strings.Contains(line, "**regression**") {
				t.Errorf("the CPU row is not a regression: %s", line)
			}
			return
		}
	}
	t.Errorf("no CPU row in the gate's output:\n%s", stdout)
}
