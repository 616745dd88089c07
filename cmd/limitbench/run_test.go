package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/report"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// suite is the path of the standard scenarios from this package's directory.
const suite = "../../scenarios/"

func TestRunBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := "version: 1\nname: t\nduration: 1s\nclients: 2\narrival: {rate: 10}\nalgorithms: [gcra]\n"
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"no scenario", nil, []string{"no scenario file given"}},
		{"missing file", []string{filepath.Join(dir, "nope.yaml")}, []string{"nope.yaml"}},
		{"malformed yaml", []string{write("malformed.yaml", "version: 1\nname: [\n")}, []string{"malformed.yaml:"}},
		{"unknown field", []string{write("unknown.yaml", base+"clinets: 3\n")}, []string{"unknown.yaml:7", "clinets", `did you mean "clients"`}},
		{"negative rate", []string{write("rate.yaml", strings.Replace(base, "rate: 10", "rate: -5", 1))}, []string{"rate.yaml:5", "arrival.rate"}},
		{"zero window", []string{write("window.yaml", base+"limit: {limit: 10, window: 0s}\n")}, []string{"window.yaml:7", "limit.window"}},
		{"unknown algorithm", []string{write("alg.yaml", strings.Replace(base, "[gcra]", "[gcar]", 1))}, []string{"alg.yaml:6", `did you mean "gcra"`}},
		{"bad call", []string{write("call.yaml", base+"call: eval\n")}, []string{"call.yaml:7", "call", `unknown call "eval"`}},
		{"bad --call", []string{"--call", "evil", suite + "smoke.yaml"}, []string{"--call", `unknown call "evil"`}},
		{"depth without pipeline", []string{write("depth.yaml", base+"pipeline_depth: 8\n")}, []string{"depth.yaml:7", "pipeline_depth"}},
		{"bad threshold", []string{write("th.yaml", base+"thresholds: [\"p99 << 5ms\"]\n")}, []string{"th.yaml:7", "thresholds"}},
		{"bad repeat", []string{"--repeat", "0", suite + "smoke.yaml"}, []string{"--repeat must be >= 1"}},
		{"bad --metrics-addr", []string{"--metrics-addr", "9464", suite + "smoke.yaml"}, []string{`--metrics-addr "9464": want host:port`}},
		{"bad --otlp-endpoint", []string{"--otlp-endpoint", "127.0.0.1:4318", suite + "smoke.yaml"}, []string{"--otlp-endpoint", "want an http or https URL"}},
		{"repeat neither number nor auto", []string{"--repeat", "often", suite + "smoke.yaml"}, []string{"--repeat", `want a number of rounds or auto, got "often"`}},
		{"budget without auto", []string{"--repeat", "6", "--repeat-budget", "1m", suite + "smoke.yaml"}, []string{"apply to --repeat auto"}},
		{"zero budget", []string{"--repeat", "auto", "--repeat-budget", "0s", suite + "smoke.yaml"}, []string{"--repeat-budget must be positive"}},
		{"baseline of another scenario", []string{"--repeat", "auto", "--baseline", "../../gate/testdata/baseline", suite + "smoke.yaml"}, []string{"--baseline", `not "smoke"`}},
		{"bad auto thresholds", []string{"--repeat", "auto", "--metric-threshold", "p99=fast", suite + "smoke.yaml"}, []string{"--metric-threshold"}},
		{"negative procs", []string{"--procs", "-1", suite + "smoke.yaml"}, []string{"--procs must be >= 0"}},
		{"negative --checkpoint-every", []string{"--checkpoint-every", "-1s", suite + "smoke.yaml"}, []string{"--checkpoint-every must be 0", "got -1s"}},
		{"too short --checkpoint-every", []string{"--checkpoint-every", "100ms", suite + "smoke.yaml"}, []string{"--checkpoint-every", "at least 1s, got 100ms"}},
		{"--checkpoint-every not a duration", []string{"--checkpoint-every", "often", suite + "smoke.yaml"}, []string{"-checkpoint-every"}},
		{"--checkpoint-every on a segment", []string{"--segment", "0/2", "--checkpoint-every", "30s", suite + "smoke.yaml"}, []string{"--checkpoint-every does not apply to a segment"}},
		{"bad backend", []string{"--backend", "vm", suite + "smoke.yaml"}, []string{`unknown backend "vm"`}},
		{"bad override", []string{"--rate", "-1", suite + "smoke.yaml"}, []string{"--rate"}},
		{"unknown topology", []string{"--topology", "sentinal", suite + "smoke.yaml"}, []string{"smoke.yaml", `unknown topology "sentinal"; use single, cluster or sentinel`}},
		{"sentinel on external", []string{"--topology", "sentinel", "--redis", "127.0.0.1:1", suite + "smoke.yaml"}, []string{"smoke.yaml: topology sentinel", "needs backend process or container"}},
		{"replicas on single", []string{"--topology", "single,sentinel", "--replicas", "2", "--backend", "process", suite + "smoke.yaml"}, []string{"smoke.yaml: topology single", "replicas need topology cluster or sentinel"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"run"}, tt.args...), &stdout, &stderr)
			if code != exitBadInput {
				t.Errorf("run %v = exit %d; want %d; stderr:\n%s", tt.args, code, exitBadInput, stderr.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("run %v: stderr lacks %q:\n%s", tt.args, w, stderr.String())
				}
			}
		})
	}
}

func TestRunUnreachableExternal(t *testing.T) {
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := run([]string{"run", "--backend", "external", "--redis", "redis://127.0.0.1:1", "--out", t.TempDir(),
		suite + "smoke.yaml"}, &stdout, &stderr)
	if took := time.Since(start); code != exitEnv || took > 5*time.Second {
		t.Errorf("run against redis://127.0.0.1:1 = exit %d after %s; want exit %d within 5s; stderr:\n%s",
			code, took.Round(time.Millisecond), exitEnv, stderr.String())
	}
	if !strings.Contains(stderr.String(), "127.0.0.1:1") {
		t.Errorf("the message does not name the address:\n%s", stderr.String())
	}
}

// runScenario runs limitbench run in-process and returns its exit code, stderr and result.
func runScenario(t *testing.T, args ...string) (int, string, *result.Result) {
	t.Helper()
	code, _, stderr, res := runCLI(t, t.TempDir(), true, args...)
	return code, stderr, res
}

// onlyFellBehind reports whether every problem listed in stderr is a load generator that fell
// behind its schedule: on a loaded machine that makes a run inconclusive, which is the honest
// answer and not a defect of the algorithm.
func onlyFellBehind(stderr string) bool {
	lines := regexp.MustCompile(`(?m)^  \S+: .*$`).FindAllString(stderr, -1)
	if len(lines) == 0 {
		return false
	}
	for _, l := range lines {
		if !strings.Contains(l, "inconclusive: the load generator fell behind") {
			return false
		}
	}
	return true
}

// checkExit accepts exit 0, or exit 1 caused only by runs the loaded machine could not keep on
// schedule (logged).
func checkExit(t *testing.T, code int, stderr string) {
	t.Helper()
	switch {
	case code == exitOK:
	case code == exitFailed && onlyFellBehind(stderr):
		t.Logf("the machine was too loaded to keep the schedule; verdicts were inconclusive, not failed")
	default:
		t.Errorf("exit %d; want 0", code)
	}
}

func TestRunSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every algorithm against real Redis")
	}
	for _, topo := range []string{"single", "cluster"} {
		t.Run(topo, func(t *testing.T) {
			// Twice smoke's rate, so that one second presses every contract (a token bucket's
			// burst and refill included) as smoke's own two seconds and warmup do.
			code, stderr, res := runScenario(t, "--topology", topo, "--duration", "1s", "--rate", "600", suite+"smoke.yaml")
			checkExit(t, code, stderr)
			// The generator leaves a CPU to each local redis-server, at least one for itself (see
			// cpus.Apply).
			servers := 1
			if topo == "cluster" {
				servers = 3
			}
			if want := max(1, runtime.NumCPU()-servers); res.Environment.GOMAXPROCS != want {
				t.Errorf("GOMAXPROCS %d during the run on %d CPUs with %d local servers; want %d", res.Environment.GOMAXPROCS, runtime.NumCPU(), servers, want)
			}
			got := map[string]result.Entry{}
			for _, e := range res.Entries {
				if e.Topology != topo {
					t.Errorf("entry %s has topology %s", e.Name(), e.Topology)
				}
				got[e.Algorithm] = e
			}
			for _, a := range algorithms.All() {
				d := a.Describe()
				e, ok := got[d.Name]
				if !ok {
					t.Errorf("no entry for %s", d.Name)
					continue
				}
				if e.Requests == 0 || e.Errors+e.Unknown > 0 {
					t.Errorf("%s: %d requests, %d errors, %d unknown", d.Name, e.Requests, e.Errors, e.Unknown)
				}
				if d.Flaw == "" && e.Verification.Verdict == verify.Fail {
					t.Errorf("corrected algorithm %s failed: %v", d.Name, e.Verification.Reasons)
				}
			}
			if _, ok := got[algorithms.ReferenceName]; !ok {
				t.Errorf("no entry for the reference script")
			}
		})
	}
}

func TestRunClockSkewExpectations(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against real Redis")
	}
	code, stderr, res := runScenario(t, "--duration", "3s", suite+"clock-skew.yaml")
	checkExit(t, code, stderr)
	for _, e := range res.Entries {
		want := e.Algorithm == "token-bucket-published" || e.Algorithm == "redisson"
		if want && e.Verification.DefiniteViolations == 0 {
			t.Errorf("%s: no definite violation under ±2s skew", e.Name())
		}
		if e.Algorithm == "token-bucket" || e.Algorithm == "gcra" || e.Algorithm == "sliding-log" {
			if e.Verification.DefiniteViolations > 0 {
				t.Errorf("%s: %d definite violations; a server-clock algorithm must pass", e.Name(), e.Verification.DefiniteViolations)
			}
		}
	}

	// Without redisson among the expected violations, its violation fails the run.
	data, err := os.ReadFile(suite + "clock-skew.yaml")
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(data), "violations: [token-bucket-published, redisson]", "violations: [token-bucket-published]", 1)
	if edited == string(data) {
		t.Fatal("clock-skew.yaml no longer has the expected violations line this test edits")
	}
	path := filepath.Join(t.TempDir(), "clock-skew.yaml")
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stderr, _ = runScenario(t, "--duration", "3s", "--algorithms", "token-bucket-published,redisson", path)
	if code != exitFailed || !strings.Contains(stderr, "redisson-single: failed") {
		t.Errorf("with redisson not expected: exit %d; want %d naming redisson-single:\n%s", code, exitFailed, stderr)
	}
}

func TestRunInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs against real Redis")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH: %v", err)
	}
	bin := buildBinary(t)
	out := t.TempDir()
	cmd := exec.Command(bin, "run", "--backend", "process", "--out", out, suite+"smoke.yaml")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Interrupt in the middle of the third algorithm.
	deadline := time.Now().Add(60 * time.Second)
	for strings.Count(stderr.String(), "\ndone ") < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		// Show where it hangs: a Go program prints every goroutine on SIGQUIT.
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		<-done
		t.Fatalf("run did not exit within 60 s of SIGINT; stderr:\n%s", stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitFailed {
		t.Errorf("run after SIGINT: %v; want exit %d; stderr:\n%s", err, exitFailed, stderr.String())
	}
	res, rerr := result.Read(filepath.Join(out, "result.json"))
	if rerr != nil {
		t.Fatalf("result.json after SIGINT: %v; stderr:\n%s", rerr, stderr.String())
	}
	if !res.CutShort || len(res.Entries) < 2 || len(res.Entries) >= len(algorithms.All())+1 {
		t.Errorf("result after SIGINT: cut_short %v with %d entries; want cut short with the measured part", res.CutShort, len(res.Entries))
	}
	addr := regexp.MustCompile(`process single: (127\.0\.0\.1:\d+)`).FindStringSubmatch(stderr.String())
	if addr == nil {
		t.Fatalf("no server address in stderr:\n%s", stderr.String())
	}
	if pids := redisServersOn(addr[1]); len(pids) > 0 {
		t.Errorf("redis-server %v still serves %s after the interrupted run", pids, addr[1])
	}
	// Issue 31: limitbench's own words, each message on a line of its own.
	if strings.Contains(stderr.String(), "context canceled") {
		t.Errorf("stderr after SIGINT says Go's \"context canceled\":\n%s", stderr.String())
	}
	if !regexp.MustCompile(`(?m)^limitbench run: stopping cleanly; signal again to quit at once$`).MatchString(stderr.String()) {
		t.Errorf("stderr lacks the stop message on a line of its own:\n%s", stderr.String())
	}
}

// TestRunSecondSignalQuits: the first SIGINT starts a clean stop; a second one, sent while that
// stop is under way, ends the process at once, and its redis-server dies with it (Pdeathsig).
func TestRunSecondSignalQuits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs against real Redis")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH: %v", err)
	}
	bin := buildBinary(t)
	cmd := exec.Command(bin, "run", "--backend", "process", "--out", t.TempDir(), suite+"smoke.yaml")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFor := func(what string) {
		deadline := time.Now().Add(60 * time.Second)
		for !strings.Contains(stderr.String(), what) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in stderr within 60 s:\n%s", what, stderr.String())
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	waitFor("\ndone ")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitFor("signal again to quit at once")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGINT {
			t.Errorf("run after two SIGINTs: %v; want killed by SIGINT; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("run did not quit within 30 s of the second SIGINT; stderr:\n%s", stderr.String())
	}
	addr := regexp.MustCompile(`process single: (127\.0\.0\.1:\d+)`).FindStringSubmatch(stderr.String())
	if addr == nil {
		t.Fatalf("no server address in stderr:\n%s", stderr.String())
	}
	// Pdeathsig delivers SIGKILL to the server when its parent dies; give the kernel a moment.
	deadline := time.Now().Add(10 * time.Second)
	for len(redisServersOn(addr[1])) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if pids := redisServersOn(addr[1]); len(pids) > 0 {
		t.Errorf("redis-server %v still serves %s after the harness quit", pids, addr[1])
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestRunCustomScriptSyntaxError(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH: %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.lua"), []byte("local n = 1\nif n = 2 then return 1 end\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	scenario := `version: 1
name: bad-script
duration: 1s
clients: 2
arrival: {rate: 20}
algorithms:
  - gcra
  - name: mine
    script: bad.lua
    keys: ["k:{{tag}}"]
    args: ["{{limit}}"]
    allowed: {equals: 1}
    contract: {kind: sliding-window, limit: 100, window: 1s}
`
	path := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(path, []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := run([]string{"run", "--backend", "process", "--quiet", "--out", filepath.Join(dir, "out"), path}, &stdout, &stderr)
	if code != exitBadInput {
		t.Errorf("run with a Lua syntax error = exit %d; want %d; stderr:\n%s", code, exitBadInput, stderr.String())
	}
	// The message names the scenario file, the entry's line and field, the script's file and line,
	// and Redis's own message.
	want := "limitbench run: " + path + ":9: algorithms[1].script: " + filepath.Join(dir, "bad.lua") + ":2: ERR Error compiling script"
	if !strings.HasPrefix(stderr.String(), want) {
		t.Errorf("stderr does not start with %q:\n%s", want, stderr.String())
	}
	// The script is checked before anything is measured: gcra must not have run first.
	if took := time.Since(start); took > 5*time.Second || strings.Contains(stdout.String(), "gcra") {
		t.Errorf("the bad script was found after %s, stdout:\n%s\nwant it found before any measurement", took, stdout.String())
	}
}

// writeFile writes body to dir/name and returns the path.
func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunErrorGoldens: `limitbench run` on every invalid scenario of scenarios/testdata/errors
// prints exactly the golden message (the one scenarios.Load's golden test checks) and exits 2.
func TestRunErrorGoldens(t *testing.T) {
	t.Chdir("../../scenarios") // the goldens name the files relative to the scenarios package
	files, err := filepath.Glob("testdata/errors/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no error scenarios: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			golden, err := os.ReadFile(strings.TrimSuffix(file, ".yaml") + ".golden")
			if err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := run([]string{"run", "--out", t.TempDir(), file}, &stdout, &stderr)
			if code != exitBadInput {
				t.Errorf("run %s = exit %d; want %d", file, code, exitBadInput)
			}
			if got, want := stderr.String(), "limitbench run: "+string(golden); got != want {
				t.Errorf("run %s: stderr differs from the golden message\ngot:\n%s\nwant:\n%s", file, got, want)
			}
			if stdout.Len() > 0 {
				t.Errorf("run %s printed to stdout:\n%s", file, stdout.String())
			}
		})
	}
}

// TestRunThresholdBroken: a broken threshold exits 1 and turns the entry's verdict to fail in
// result.json and report.md, with the threshold and the measured value.
func TestRunThresholdBroken(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against real Redis")
	}
	dir := t.TempDir()
	path := writeFile(t, dir, "th.yaml", `version: 1
name: threshold
duration: 1s
clients: 2
arrival: {rate: 50}
limit: {limit: 100, window: 1s}
algorithms: [gcra, sliding-log]
thresholds: ["gcra: p99 < 1us", "errors <= 100%"]
`)
	out := filepath.Join(dir, "out")
	code, stderr, res := runScenarioIn(t, out, "--no-reference", path)
	if code != exitFailed {
		t.Errorf("exit %d; want %d", code, exitFailed)
	}
	if !strings.Contains(stderr, `gcra-single: threshold "gcra: p99 < 1us" broken: p99 = `) {
		t.Errorf("stderr does not name the broken threshold:\n%s", stderr)
	}
	var gcra *result.Entry
	for i := range res.Entries {
		if res.Entries[i].Algorithm == "gcra" {
			gcra = &res.Entries[i]
		}
	}
	if gcra == nil {
		t.Fatal("no gcra entry")
	}
	v := gcra.Verification
	if v.Verdict != verify.Fail || len(v.Thresholds) != 2 || v.Thresholds[0].Status != verify.ThresholdBroken ||
		v.Thresholds[1].Status != verify.ThresholdHeld {
		t.Errorf("gcra verification: verdict %s, thresholds %+v; want fail with the p99 threshold broken and the errors one held",
			v.Verdict, v.Thresholds)
	}
	md, err := os.ReadFile(filepath.Join(out, report.MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| gcra | single | **fail** |", `Failed: threshold "gcra: p99 &lt; 1us" broken: p99 = `,
		"| thresholds | gcra: p99 &lt; 1us; errors &lt;= 100% |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	if res.Scenario.Settings == nil || res.Scenario.Settings.Limit.Limit != 100 ||
		!slices.Equal(res.Scenario.Settings.Thresholds, []string{"gcra: p99 < 1us", "errors <= 100%"}) {
		t.Errorf("result.json scenario settings = %+v; want the limit and the thresholds", res.Scenario.Settings)
	}
}

// runScenarioIn runs limitbench run in-process with --out out and returns its exit code, stderr and
// result.
func runScenarioIn(t *testing.T, out string, args ...string) (int, string, *result.Result) {
	t.Helper()
	code, _, stderr, res := runCLI(t, out, true, args...)
	return code, stderr, res
}

// runCLI runs `limitbench run --backend process --out out [--quiet] args...` in-process, logs
// its output and returns its exit code, stdout, stderr and result.json. It skips t without
// redis-server.
func runCLI(t *testing.T, out string, quiet bool, args ...string) (code int, stdout, stderr string, res *result.Result) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH: %v", err)
	}
	flags := []string{"run", "--backend", "process", "--out", out}
	if quiet {
		flags = append(flags, "--quiet")
	}
	var so, se bytes.Buffer
	code = run(append(flags, args...), &so, &se)
	t.Logf("limitbench run %s: exit %d\n%s%s", strings.Join(args, " "), code, so.String(), se.String())
	res, err := result.Read(filepath.Join(out, result.FileName))
	if err != nil {
		t.Fatalf("result.json: %v", err)
	}
	return code, so.String(), se.String(), res
}

// TestRunInterruptedBeforeMeasuring: a run interrupted before anything was measured writes a valid
// result.json marked cut short, with no entries, and says that nothing was measured.
func TestRunInterruptedBeforeMeasuring(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Ctrl-C before the environment is up
	out := filepath.Join(t.TempDir(), "out")
	var stdout, stderr bytes.Buffer
	err := runRun(ctx, []string{"--backend", "process", "--quiet", "--out", out, suite + "smoke.yaml"}, &stdout, &stderr)
	if code := exitCode(err); code != exitFailed {
		t.Errorf("interrupted run = %v (exit %d); want exit %d", err, code, exitFailed)
	}
	res, rerr := result.Read(filepath.Join(out, result.FileName))
	if rerr != nil {
		t.Fatalf("result.json after an early interrupt: %v", rerr)
	}
	if !res.CutShort || len(res.Entries) != 0 || res.Scenario.Name != "smoke" {
		t.Errorf("result: cut_short %v, %d entries, scenario %q; want cut short, no entries, smoke", res.CutShort, len(res.Entries), res.Scenario.Name)
	}
	if err == nil || !strings.Contains(err.Error(), "nothing was measured") || strings.Contains(err.Error(), "results so far") {
		t.Errorf("message %v; want it to say that nothing was measured", err)
	}
	if msg := ownWords(err); strings.Contains(msg, "context canceled") {
		t.Errorf("the message printed is %q; want limitbench's words, not Go's \"context canceled\"", msg)
	}
	if !strings.Contains(stdout.String(), "results: "+out) {
		t.Errorf("stdout does not say where the result is:\n%s", stdout.String())
	}
}

// TestRunRepeatSamples: run --repeat 2 keeps both samples of every entry in result.json, and the
// done lines come round by round (A B A B).
func TestRunRepeatSamples(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against real Redis")
	}
	_, _, stderr, res := runCLI(t, t.TempDir(), false, "--repeat", "2", "--duration", "500ms",
		"--algorithms", "gcra,fixed-window", suite+"smoke.yaml")
	for _, e := range res.Entries {
		var repeats []int
		for _, smp := range e.Samples {
			repeats = append(repeats, smp.Repeat)
		}
		if !slices.Equal(repeats, []int{1, 2}) {
			t.Errorf("%s: samples of repeats %v in result.json; want [1 2]", e.Name(), repeats)
		}
	}
	if len(res.Entries) != 3 {
		t.Errorf("%d entries; want reference, gcra and fixed-window", len(res.Entries))
	}
	done := regexp.MustCompile(`(?m)^done (\S+) single #(\d)`).FindAllStringSubmatch(stderr, -1)
	var order []string
	for _, m := range done {
		order = append(order, m[1]+"#"+m[2])
	}
	want := []string{"reference#1", "gcra#1", "fixed-window#1", "reference#2", "gcra#2", "fixed-window#2"}
	if !slices.Equal(order, want) {
		t.Errorf("done lines in order %v; want %v", order, want)
	}
}

// TestRunDoneLines: each measurement's done line shows its final label: an expected violation that
// was caught says so, the reference script says reference, a tolerated one says tolerated.
func TestRunDoneLines(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against real Redis")
	}
	_, _, stderr, res := runCLI(t, t.TempDir(), false, "--duration", "3s",
		"--algorithms", "token-bucket-published,gcra", suite+"clock-skew.yaml")
	for _, e := range res.Entries {
		label := res.LabelOf(&e)
		line := regexp.MustCompile(`(?m)^done ` + regexp.QuoteMeta(e.Algorithm) + ` single: .*, (.*)$`).FindStringSubmatch(stderr)
		if line == nil || line[1] != label {
			t.Errorf("done line of %s = %q; want it to end with the final label %q", e.Algorithm, line, label)
		}
	}
	if !strings.Contains(stderr, "token-bucket-published single:") || !strings.Contains(stderr, ", expected violation caught\n") {
		t.Errorf("no done line says the expected violation was caught:\n%s", stderr)
	}
	if !strings.Contains(stderr, "done reference single:") || !strings.Contains(stderr, ", reference\n") {
		t.Errorf("the reference's done line does not say reference:\n%s", stderr)
	}
}

// TestRunCustomNeverMatches: a custom script whose reply the allowed rule never reads as an
// admission is inconclusive (exit 1), and its raw reply is in report.md as well as result.json.
func TestRunCustomNeverMatches(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against real Redis")
	}
	dir := t.TempDir()
	writeFile(t, dir, "granted.lua", "return 'GRANTED'\n")
	path := writeFile(t, dir, "never.yaml", `version: 1
name: never-matches
duration: 1s
clients: 2
arrival: {rate: 40}
algorithms:
  - name: mine
    script: granted.lua
    keys: ["k:{{tag}}"]
    allowed: {equals: 1}
    contract: {kind: sliding-window, limit: 10, window: 1s}
`)
	out := filepath.Join(dir, "out")
	code, _, res := runScenarioIn(t, out, "--no-reference", path)
	if code != exitFailed {
		t.Errorf("exit %d; want %d", code, exitFailed)
	}
	want := `first raw reply: "GRANTED"`
	if len(res.Entries) != 1 || res.Entries[0].Verification.Verdict != verify.Inconclusive ||
		!strings.Contains(strings.Join(res.Entries[0].Verification.Reasons, "\n"), want) {
		t.Fatalf("result.json entries %+v; want mine inconclusive with %q", res.Entries, want)
	}
	md, err := os.ReadFile(filepath.Join(out, report.MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"| mine | single | inconclusive |", want} {
		if !strings.Contains(string(md), w) {
			t.Errorf("report.md lacks %q:\n%s", w, md)
		}
	}
	if c := res.Scenario.Settings.Custom; len(c) != 1 || c[0].Script != "granted.lua" || c[0].Allowed.String() != `{equals: "1"}` {
		t.Errorf("result.json custom settings = %+v; want granted.lua with its allowed rule", c)
	}
}

// TestRunExternalLoopback: a run against an external server on a loopback address leaves a CPU to
// it, as a run against a started one does, says so on the line that reports GOMAXPROCS, and
// records it in result.json's environment; --procs overrides the choice.
func TestRunExternalLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against real Redis")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH: %v", err)
	}
	ctx := context.Background()
	server, err := redisenv.Start(ctx, redisenv.Config{Backend: redisenv.BackendProcess})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Stop(context.Background()) })
	addr := server.Masters()[0]
	url := "redis://:" + server.Password + "@" + addr
	for _, tt := range []struct {
		name  string
		args  []string
		procs int
		note  string
	}{
		{"policy", nil, max(1, runtime.NumCPU()-1), addr + " (a loopback address)"},
		{"--procs", []string{"--procs", "2"}, 2, "GOMAXPROCS 2: --procs"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--backend", "external", "--redis", url, "--duration", "500ms", "--algorithms", "gcra",
				"--no-reference", "--speed-only"}, tt.args...)
			code, _, stderr, res := runCLI(t, t.TempDir(), false, append(args, suite+"smoke.yaml")...)
			checkExit(t, code, stderr)
			env := res.Environment
			if env.GOMAXPROCS != tt.procs || env.LocalServers != 1 || !strings.Contains(env.GOMAXPROCSNote, tt.note) {
				t.Errorf("environment: GOMAXPROCS %d, local servers %d, note %q; want %d, 1, a note with %q",
					env.GOMAXPROCS, env.LocalServers, env.GOMAXPROCSNote, tt.procs, tt.note)
			}
			if !strings.Contains(stderr, env.GOMAXPROCSNote) {
				t.Errorf("stderr lacks the GOMAXPROCS line %q", env.GOMAXPROCSNote)
			}
		})
	}
}

// TestRunFCall: run --call fcall calls the built-in algorithms (and the reference script) as
// Redis Functions: each entry records call fcall, the decisions verify, and no function library
// is left on the server afterwards.
func TestRunFCall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against real Redis")
	}
	ctx := context.Background()
	server, err := redisenv.Start(ctx, redisenv.Config{Backend: redisenv.BackendProcess})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Stop(context.Background()) })
	url := "redis://:" + server.Password + "@" + server.Masters()[0]
	code, _, stderr, res := runCLI(t, t.TempDir(), false, "--backend", "external", "--redis", url, "--duration", "1s",
		"--algorithms", "gcra,token-bucket,fixed-window,sliding-log", "--call", "fcall", "--speed-only", suite+"smoke.yaml")
	checkExit(t, code, stderr)
	if len(res.Entries) != 5 {
		t.Fatalf("%d entries; want 4 algorithms and the reference", len(res.Entries))
	}
	for _, e := range res.Entries {
		if e.Call != "fcall" {
			t.Errorf("%s: call %q; want fcall", e.Name(), e.Call)
		}
		if e.Requests == 0 || e.Errors+e.Unknown > 0 {
			t.Errorf("%s: %d requests, %d errors, %d unknown", e.Name(), e.Requests, e.Errors, e.Unknown)
		}
		if e.Algorithm != algorithms.ReferenceName && e.Verification.Verdict == verify.Fail {
			t.Errorf("%s failed: %v", e.Name(), e.Verification.Reasons)
		}
	}
	libs, err := server.Client.FunctionList(ctx, redis.FunctionListQuery{}).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(libs) != 0 {
		t.Errorf("%d function libraries left after the run, first %s", len(libs), libs[0].Name)
	}
}
