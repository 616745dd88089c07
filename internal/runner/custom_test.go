package runner

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/measure"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/scenarios"
	"github.com/limitbench/limitbench/verify"
)

func needRedis(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs Redis under load for seconds; skipped with -short")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH: %v", err)
	}
}

// runShort runs s shortened to d (warmup 300 ms) on started redis-server processes, without the
// reference script.
func runShort(t *testing.T, s *scenarios.Scenario, d time.Duration) (*Conclusion, error) {
	t.Helper()
	s.Duration, s.Warmup = d, 300*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return Run(ctx, Options{Scenario: s, Env: redisenv.Config{Backend: redisenv.BackendProcess}, NoReference: true})
}

func entry(t *testing.T, res *result.Result, name, topo string) result.Entry {
	t.Helper()
	for _, e := range res.Entries {
		if e.Algorithm == name && e.Topology == topo {
			return e
		}
	}
	t.Fatalf("no entry for %s on %s", name, topo)
	return result.Entry{}
}

// onlyBehind reports whether reasons say nothing but that the load generator fell behind, which
// a loaded machine may cause and which is not the script's doing, besides notes (a node slow to
// answer the watch on this loaded machine, say), which decide no verdict.
func onlyBehind(reasons []string) bool {
	behind := false
	for _, r := range reasons {
		switch {
		case strings.Contains(r, "fell behind"):
			behind = true
		case strings.HasPrefix(r, "note: "):
		default:
			return false
		}
	}
	return behind
}

// TestCustomExamples runs every scenario of examples/custom as it is written (durations, load,
// scripts, rules and contracts) on each of its topologies, and checks that each script gets the
// verdict its description states: the scripts the scenario lists under expect.violations are
// flagged with a definite violation, every other one passes. One single node and one 3-master
// cluster are started for all the examples and reached as external targets, so that the test
// costs the examples' own seconds, not a cluster's start per example. A pass may be inconclusive
// only because this loaded machine fell behind the schedule; a planted flaw that a late schedule
// did not trigger is logged, not failed, for the same reason.
func TestCustomExamples(t *testing.T) {
	needRedis(t)
	files, err := filepath.Glob("../../examples/custom/*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("examples/custom: %v, %v; want at least 5 scenarios", files, err)
	}
	envs := map[redisenv.Topology]redisenv.Config{}
	for _, topo := range []redisenv.Topology{redisenv.TopologySingle, redisenv.TopologyCluster} {
		server, err := redisenv.Start(context.Background(), redisenv.Config{Backend: redisenv.BackendProcess, Topology: topo})
		if err != nil {
			t.Fatalf("start %s: %v", topo, err)
		}
		t.Cleanup(func() {
			if err := server.Stop(context.Background()); err != nil {
				t.Errorf("stop %s: %v", topo, err)
			}
		})
		envs[topo] = redisenv.Config{Backend: redisenv.BackendExternal,
			URL: strings.Join(server.Masters(), ","), Password: server.Password}
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			s, err := scenarios.Load(file)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(s.Description, "Expected verdict") {
				t.Errorf("the description does not state the expected verdicts: %q", s.Description)
			}
			for _, a := range s.Algorithms {
				if !strings.Contains(s.Description, a.Name) && len(s.Algorithms) > 1 {
					t.Errorf("the description does not name %s", a.Name)
				}
			}
			for _, topo := range s.Topologies {
				env, ok := envs[topo]
				if !ok {
					t.Fatalf("topology %s: the test starts only single and cluster", topo)
				}
				one := *s
				one.Topologies = []redisenv.Topology{topo}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				out, err := Run(ctx, Options{Scenario: &one, Env: env, NoReference: true})
				cancel()
				if err != nil {
					t.Fatalf("Run on %s: %v", topo, err)
				}
				checkExample(t, s, out, string(topo))
			}
		})
	}
}

// checkExample checks the verdicts of one example scenario's run on topo against what its
// description states (see TestCustomExamples).
func checkExample(t *testing.T, s *scenarios.Scenario, out *Conclusion, topo string) {
	t.Helper()
	for _, a := range s.Algorithms {
		e := entry(t, out.Result, a.Name, topo)
		v := e.Verification
		if !e.Custom || e.Allowed == 0 || e.Errors != 0 || e.Unknown != 0 {
			t.Errorf("%s on %s: custom %v, %d allowed, %d errors, %d unknown; want custom, > 0, 0, 0 (%v)",
				a.Name, topo, e.Custom, e.Allowed, e.Errors, e.Unknown, v.Reasons)
		}
		if slices.Contains(s.Expect.Violations, a.Name) {
			switch {
			case v.Verdict == verify.Fail && v.DefiniteViolations > 0 && v.ExpectedViolation:
			case v.Verdict == verify.Inconclusive && onlyBehind(v.Reasons):
				t.Logf("%s on %s: the machine fell behind the schedule, and the flaw did not show: %v", a.Name, topo, v.Reasons)
			default:
				t.Errorf("%s on %s: verdict %s with %d definite violations, expected %v (%v); want fail, caught",
					a.Name, topo, v.Verdict, v.DefiniteViolations, v.ExpectedViolation, v.Reasons)
			}
			continue
		}
		switch {
		case v.Verdict == verify.Pass:
		case v.Verdict == verify.Inconclusive && onlyBehind(v.Reasons):
			t.Logf("%s on %s: inconclusive only because the machine is loaded: %v", a.Name, topo, v.Reasons)
		default:
			t.Errorf("%s on %s: verdict %s, %d definite violations (%v); want pass", a.Name, topo, v.Verdict, v.DefiniteViolations, v.Reasons)
		}
	}
	for _, f := range out.Failures {
		for _, n := range s.Expect.Violations {
			if strings.Contains(f, n) && strings.Contains(f, ": failed: ") {
				t.Errorf("failure %q: the violation of %s is expected and must not fail the scenario", f, n)
			}
		}
	}
}

// writeScenario writes a one-script scenario on a single node into a temporary directory and
// loads it.
func writeScenario(t *testing.T, script, allowed string) *scenarios.Scenario {
	t.Helper()
	dir := t.TempDir()
	yaml := `name: custom-test
topologies: [single]
clients: 2
arrival: {rate: 100}
keys: {count: 2}
limit: {limit: 10, window: 1s}
algorithms:
  - name: mine
    script: mine.lua
    keys: ["x:{{tag}}"]
    allowed: ` + allowed + `
    contract: {kind: sliding-window, limit: 10, window: 1s}
`
	if err := os.WriteFile(filepath.Join(dir, "mine.lua"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "scenario.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := scenarios.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCustomNeverMatches: a script whose reply the allowed rule never reads as an admission
// (unreadable, or readable but never matching) gets an inconclusive verdict with the raw reply
// among the reasons, never a pass.
func TestCustomNeverMatches(t *testing.T) {
	needRedis(t)
	tests := []struct {
		name, script, allowed, want string
	}{
		{"unreadable", "return {1, 'ok'}", "{element: 3, equals: 1}", `replies could not be read (counted as unknown outcomes, warmup included); the first: allowed rule {element: 3, equals: "1"}: want element 3, the reply has 2; raw reply: [1, "ok"]`},
		{"no match", "return 'GRANTED'", "{equals: 1}", `first raw reply: "GRANTED"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runShort(t, writeScenario(t, tt.script, tt.allowed), time.Second)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			e := entry(t, out.Result, "mine", "single")
			v := e.Verification
			if v.Verdict != verify.Inconclusive || e.Allowed != 0 {
				t.Errorf("verdict %s with %d admissions (%v); want inconclusive with none", v.Verdict, e.Allowed, v.Reasons)
			}
			if !strings.Contains(strings.Join(v.Reasons, "\n"), tt.want) {
				t.Errorf("reasons %q do not contain %q (is withCustomNotes wired into measure?)", v.Reasons, tt.want)
			}
			if out.Passed() {
				t.Error("Conclusion.Passed() = true; want a failure for the inconclusive verdict")
			}
		})
	}
}

// Issue 14, item 3: a custom script that raises an error on every call gave "inconclusive: no
// request was admitted" and its error text appeared nowhere. Now its error class and first text
// are in the entry and in the failure (the default errors threshold breaks), still never a fail.
func TestCustomScriptErrorShown(t *testing.T) {
	needRedis(t)
	out, err := runShort(t, writeScenario(t, "error('the limiter broke')", "{equals: 1}"), time.Second)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	e := entry(t, out.Result, "mine", "single")
	if e.Verification.Verdict != verify.Inconclusive || len(e.ErrorClasses) != 1 || e.ErrorClasses[0].Kind != "ERR" ||
		!strings.Contains(e.ErrorClasses[0].First, "the limiter broke") || e.ErrorClasses[0].Count != uint64(e.Errors) {
		t.Fatalf("verdict %s, error classes %+v, %d errors; want inconclusive and every error in class ERR with the script's text",
			e.Verification.Verdict, e.ErrorClasses, e.Errors)
	}
	if !strings.Contains(strings.Join(out.Failures, "\n"), "the limiter broke") {
		t.Errorf("failures %q do not show the script's error text", out.Failures)
	}
}

// TestCustomSyntaxError: a Lua syntax error stops the run with ErrBadScript, naming the scenario
// file's line and field, the script's file and line, and Redis's own message.
func TestCustomSyntaxError(t *testing.T) {
	needRedis(t)
	s := writeScenario(t, "return 1\nlocal x = = 1\nreturn x", "{equals: 1}")
	_, err := runShort(t, s, time.Second)
	want := s.File + ":9: algorithms[0].script: " + filepath.Join(filepath.Dir(s.File), "mine.lua") +
		":2: ERR Error compiling script"
	var rerr redis.Error
	if !errors.Is(err, measure.ErrBadScript) || !strings.HasPrefix(err.Error(), want) || !errors.As(err, &rerr) {
		t.Fatalf("Run = %v; want ErrBadScript wrapping Redis's error, starting %q", err, want)
	}
}
