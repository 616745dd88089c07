package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limitbench/limitbench/gate"
	"github.com/limitbench/limitbench/result"
)

// githubEnv sets the environment of a GitHub Actions step with its workspace at ws and returns
// the path of its step summary.
func githubEnv(t *testing.T, ws string) string {
	t.Helper()
	summary := filepath.Join(t.TempDir(), "summary.md")
	t.Setenv("GITHUB_ACTIONS", "true")
	t.Setenv("GITHUB_WORKSPACE", ws)
	t.Setenv("GITHUB_STEP_SUMMARY", summary)
	return summary
}

// runIn runs limitbench in-process and returns its exit code, stdout and stderr.
func runIn(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var so, se bytes.Buffer
	code := run(args, &so, &se)
	t.Logf("limitbench %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, inert(so.String()), inert(se.String()))
	return code, so.String(), se.String()
}

// inert keeps the workflow commands in a test's output from acting on a GitHub runner that runs
// the tests: "::error ..." is logged as "·::error ...".
func inert(s string) string {
	return strings.ReplaceAll("\n"+s, "\n::", "\n·::")[1:]
}

// TestGateFormats: --format bmf and benchmark-action write the rows with a figure; --json and
// --format json agree; a bad format, or --json with another, is bad input.
func TestGateFormats(t *testing.T) {
	base, cur := gateFixture("baseline"), gateFixture("current-slower")
	code, bmf, _ := runIn(t, "gate", "--baseline", base, "--format", "bmf", cur)
	var m map[string]map[string]gate.BMFValue
	if err := json.Unmarshal([]byte(bmf), &m); code != exitFailed || err != nil || m["saturation/gcra/single"]["throughput"].Lower == nil {
		t.Errorf("--format bmf: exit %d, %v, %v; want 1 and gcra's throughput with bounds", code, err, m)
	}
	code, ba, _ := runIn(t, "gate", "--baseline", base, "--format", "benchmark-action", cur)
	var entries []gate.BenchmarkActionEntry
	if err := json.Unmarshal([]byte(ba), &entries); code != exitFailed || err != nil || len(entries) == 0 || entries[0].Name != "saturation/gcra/single throughput" {
		t.Errorf("--format benchmark-action: exit %d, %v, %+v; want 1 and gcra's throughput first", code, err, entries)
	}
	_, j1, _ := runIn(t, "gate", "--baseline", base, "--json", cur)
	_, j2, _ := runIn(t, "gate", "--baseline", base, "--format", "json", cur)
	if j1 != j2 || !strings.HasPrefix(j1, "{") {
		t.Errorf("--json and --format json differ, or are not JSON")
	}
	for _, args := range [][]string{{"--format", "yaml"}, {"--json", "--format", "bmf"}} {
		code, _, stderr := runIn(t, append(append([]string{"gate", "--baseline", base}, args...), cur)...)
		if code != exitBadInput || !strings.Contains(stderr, "--format") {
			t.Errorf("gate %v: exit %d; want 2 naming --format\n%s", args, code, stderr)
		}
	}
}

// TestGateJUnitMetricsGitHub: the gate's rows as JUnit, the current run's figures and the rows'
// verdicts as metrics, and on GitHub its table in the step summary and one annotation per
// regression: on stdout with the Markdown, on stderr when stdout is JSON.
func TestGateJUnitMetricsGitHub(t *testing.T) {
	ws := t.TempDir()
	summary := githubEnv(t, ws)
	dir := t.TempDir()
	junit, metrics := filepath.Join(dir, "gate.xml"), filepath.Join(dir, "metrics.txt")
	code, stdout, _ := runIn(t, "gate", "--baseline", gateFixture("baseline"), "--junit", junit, "--metrics-report", metrics,
		gateFixture("current-slower"))
	if code != exitFailed {
		t.Fatalf("exit %d; want 1", code)
	}
	if got := junitCounts(t, junit); got != [4]int{12, 3, 0, 0} {
		t.Errorf("JUnit (tests, failures, errors, skipped) = %v; want 12 rows, 3 regressions", got)
	}
	b, _ := os.ReadFile(metrics)
	for _, want := range []string{`limitbench_gate_rows{scenario="saturation",verdict="regression"} 3`,
		`limitbench_definite_violations{scenario="saturation",algorithm="gcra",topology="single"} 0`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics report lacks %q:\n%s", want, b)
		}
	}
	if n := strings.Count(stdout, "\n::error "); n != 3 {
		t.Errorf("%d ::error annotations on stdout; want 3 (one per regression):\n%s", n, stdout)
	}
	s, _ := os.ReadFile(summary)
	if !strings.Contains(string(s), "**limitbench gate: REGRESSION in scenario saturation:") {
		t.Errorf("the step summary lacks the gate's table:\n%s", s)
	}
	code, stdout, stderr := runIn(t, "gate", "--baseline", gateFixture("baseline"), "--format", "json", gateFixture("current-slower"))
	var g gate.Report
	if err := json.Unmarshal([]byte(stdout), &g); code != exitFailed || err != nil || strings.Count(stderr, "::error ") != 3 {
		t.Errorf("--format json on GitHub: exit %d, stdout JSON: %v, %d annotations on stderr; want 1, JSON, 3", code, err, strings.Count(stderr, "::error "))
	}
}

// TestRunJUnitMetricsGitHub: a run whose threshold breaks writes a JUnit failure with the finding,
// the metrics report, its report in the step summary, and an annotation at the threshold's line;
// with --segment the flags are refused (merge judges).
func TestRunJUnitMetricsGitHub(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH: %v", err)
	}
	ws := t.TempDir()
	scenario := writeFile(t, ws, "thr.yaml", `version: 1
name: thr
duration: 300ms
clients: 2
algorithms: [gcra]
thresholds:
  - "p50 < 1us"
`)
	summary := githubEnv(t, ws)
	dir := t.TempDir()
	junit, metrics := filepath.Join(dir, "run.xml"), filepath.Join(dir, "metrics.txt")
	code, stdout, _ := runIn(t, "run", "--backend", "process", "--quiet", "--no-reference", "--out", filepath.Join(dir, "out"),
		"--junit", junit, "--metrics-report", metrics, scenario)
	if code != exitFailed {
		t.Fatalf("exit %d; want 1 (p50 < 1us breaks)", code)
	}
	res, err := result.Read(filepath.Join(dir, "out", result.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if got := junitCounts(t, junit); got != [4]int{len(res.Entries), len(res.Entries), 0, 0} {
		t.Errorf("JUnit (tests, failures, errors, skipped) = %v; want every entry of result.json a failure", got)
	}
	b, _ := os.ReadFile(junit)
	if !strings.Contains(string(b), `p50 &lt; 1us`) {
		t.Errorf("the JUnit failure does not name the broken threshold:\n%s", b)
	}
	b, _ = os.ReadFile(metrics)
	if !strings.Contains(string(b), `limitbench_latency_p99_seconds{scenario="thr",algorithm="gcra",topology="single"} `) {
		t.Errorf("metrics report lacks gcra's p99:\n%s", b)
	}
	if !strings.Contains(stdout, "::error file=thr.yaml,line=7,title=limitbench%3A gcra on single::threshold \"p50 < 1us\" broken: ") {
		t.Errorf("no annotation at the threshold's line (thr.yaml:7) on stdout:\n%s", stdout)
	}
	if s, _ := os.ReadFile(summary); !strings.Contains(string(s), "# limitbench report: thr") || strings.Contains(string(s), "## Plots") {
		t.Errorf("the step summary is not the report without its plots:\n%s", s)
	}
	code, _, stderr := runIn(t, "run", "--segment", "0/2", "--junit", junit, scenario)
	if code != exitBadInput || !strings.Contains(stderr, "give them to limitbench merge") {
		t.Errorf("run --segment --junit: exit %d; want 2\n%s", code, stderr)
	}
}

// TestHuntJUnit: a hunt that breaks an algorithm the scenario does not expect to break writes a
// JUnit failure naming the reproducer, its figures as metrics, and an annotation at the
// algorithm's line.
func TestHuntJUnit(t *testing.T) {
	if testing.Short() {
		t.Skip("hunts on a real Redis")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH: %v", err)
	}
	ws := t.TempDir()
	scenario := writeFile(t, ws, "strict.yaml", "limit: {limit: 20, window: 1s}\nclock_skew: [0s, 2s, -2s]\nalgorithms: [sliding-log-published]\n")
	githubEnv(t, ws)
	dir := t.TempDir()
	junit, metrics := filepath.Join(dir, "hunt.xml"), filepath.Join(dir, "metrics.txt")
	code, stdout, _ := runIn(t, "hunt", "--backend", "process", "--quiet", "--budget", "4s", "--out", filepath.Join(dir, "out"),
		"--junit", junit, "--metrics-report", metrics, scenario)
	if code != exitFailed {
		t.Fatalf("exit %d; want 1 (an unexpected violation)", code)
	}
	if got := junitCounts(t, junit); got != [4]int{1, 1, 0, 0} {
		t.Errorf("JUnit (tests, failures, errors, skipped) = %v; want the one violation a failure", got)
	}
	if b, _ := os.ReadFile(metrics); !strings.Contains(string(b), `limitbench_hunt_violation_found{scenario="strict",algorithm="sliding-log-published",topology="single"} 1`) {
		t.Errorf("metrics report lacks the violation found:\n%s", b)
	}
	if !strings.Contains(stdout, "::error file=strict.yaml,line=3,title=limitbench hunt%3A sliding-log-published on single::sliding-log-published on single broke ") {
		t.Errorf("no annotation at the algorithm's line (strict.yaml:3) on stdout:\n%s", stdout)
	}
}
