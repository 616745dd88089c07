package main

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/limitbench/limitbench/capacity"
	"github.com/limitbench/limitbench/internal/golden"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
	"github.com/limitbench/limitbench/result"
)

// cliCase is one invocation of the built binary whose exit code and first line of stderr are a
// golden file, testdata/input/<name>.golden: the command line, "exit N", then the line. In all
// three, the test's temporary directory reads $TMP and the address of its Redis $REDIS.
type cliCase struct {
	name string
	args []string
	code int
}

// runGoldens runs each case with the binary from this package's directory (so ../../scenarios
// is the suite) and checks it against its golden file; within forbids a case to take longer (it
// must fail before anything starts). subs are the replacements ($TMP, $REDIS) of the goldens.
func runGoldens(t *testing.T, bin string, cases []cliCase, within time.Duration, subs map[string]string) {
	t.Helper()
	sub := func(s string) string {
		for placeholder, v := range subs {
			s = strings.ReplaceAll(s, v, placeholder)
		}
		return s
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, tc.args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			start := time.Now()
			err := cmd.Run()
			took := time.Since(start)
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(stderr.String(), "\n")
			got := fmt.Sprintf("limitbench %s\nexit %d\n%s\n", sub(quoteArgs(tc.args)), code, sub(first))
			golden.Check(t, filepath.Join("testdata", "input", tc.name+".golden"), []byte(got))
			if code != tc.code {
				t.Errorf("exit %d; want %d; stderr:\n%s", code, tc.code, stderr.String())
			}
			if took > within {
				t.Errorf("took %s; want the problem found within %s, before anything starts", took.Round(time.Millisecond), within)
			}
		})
	}
}

// quoteArgs joins args as a shell would read them.
func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = a
		if a == "" || strings.ContainsAny(a, " <>?&\"'") {
			q[i] = "'" + a + "'"
		}
	}
	return strings.Join(q, " ")
}

// TestBadInputGoldens: every value out of the load's bounds, from a flag, an external URL the
// server cannot serve, an objective a capacity sweep cannot look for and an --out that cannot
// take the results is bad input, exit 2, reported in limitbench's words on the first line of
// stderr before anything starts (issue 14: --rate 1e14 spun for ever, --duration 1ns passed with
// a billion per second, --rate NaN and --clients 1000000000 were "Redis lost", /99 was
// "unreachable", ?foo=bar was ignored, --slo "p99 > 2ms" ran a whole sweep, and an --out that
// is a file failed after the run).
func TestBadInputGoldens(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	tmp := t.TempDir()
	file := writeFile(t, tmp, "file", "not a directory\n")
	held := filepath.Join(tmp, "held")
	writeFile(t, mkdir(t, held), result.FileName, "{}\n")
	heldCapacity := filepath.Join(tmp, "held-capacity")
	writeFile(t, mkdir(t, heldCapacity), capacity.File, "{}\n")
	smoke := suite + "smoke.yaml"
	runArgs := func(args ...string) []string {
		return append(append([]string{"run", "--backend", "process", "--out", filepath.Join(tmp, "out")}, args...), smoke)
	}
	cases := []cliCase{
		{"rate-too-high", runArgs("--rate", "1e14"), exitBadInput},
		{"rate-nan", runArgs("--rate", "NaN"), exitBadInput},
		{"rate-inf", runArgs("--rate", "+Inf"), exitBadInput},
		{"clients-billion", runArgs("--clients", "1000000000"), exitBadInput},
		{"duration-1ns", runArgs("--duration", "1ns"), exitBadInput},
		{"duration-too-long", runArgs("--duration", "25h"), exitBadInput},
		{"url-unknown-option", []string{"run", "--redis", "redis://127.0.0.1:1/0?foo=bar", "--out", filepath.Join(tmp, "out"), smoke}, exitBadInput},
		{"capacity-slo-backwards", []string{"capacity", "--algorithm", "gcra", "--slo", "p99 > 2ms", "--out", filepath.Join(tmp, "out")}, exitBadInput},
		{"capacity-slo-never", []string{"capacity", "--algorithm", "gcra", "--slo", "p99 < 0ms", "--out", filepath.Join(tmp, "out")}, exitBadInput},
		{"out-is-a-file", []string{"run", "--backend", "process", "--out", file, smoke}, exitBadInput},
		{"out-cannot-be-created", []string{"run", "--backend", "process", "--out", filepath.Join(file, "sub"), smoke}, exitBadInput},
		{"out-holds-a-result", []string{"run", "--backend", "process", "--out", held, smoke}, exitBadInput},
		{"capacity-out-is-a-file", []string{"capacity", "--algorithm", "gcra", "--out", file}, exitBadInput},
		{"capacity-out-holds-a-result", []string{"capacity", "--algorithm", "gcra", "--out", heldCapacity}, exitBadInput},
		{"report-out-holds-a-result", []string{"report", "--out", held, "../../report/testdata/result.json"}, exitBadInput},
		{"same-names-one-out", []string{"run", "--out", filepath.Join(tmp, "out"), smoke, smoke}, exitBadInput},
		// Issue 19: WAIT for more replicas than the topology has is refused before anything starts.
		{"wait-replicas-single", runArgs("--wait-replicas", "1"), exitBadInput},
		{"capacity-wait-replicas", []string{"capacity", "--algorithm", "gcra", "--out", filepath.Join(tmp, "out"), suite + "wait-replicas.yaml"}, exitBadInput},
		{"hunt-wait-replicas", []string{"hunt", "--out", filepath.Join(tmp, "out"), suite + "wait-replicas.yaml"}, exitBadInput},
		// Issue 28 item 10: a hunt does not replay a scenario's fixed faults (it places its own,
		// --faults), and a budget too short for one trial cannot hunt; both refused before
		// anything starts, not "held after 0 trials". So is a fault kind a hunt does not place,
		// and faults on an external Redis.
		{"hunt-faults", []string{"hunt", "--out", filepath.Join(tmp, "out"), suite + "restart.yaml"}, exitBadInput},
		{"hunt-budget-1ns", []string{"hunt", "--budget", "1ns", "--out", filepath.Join(tmp, "out"), smoke}, exitBadInput},
		{"hunt-faults-kill", []string{"hunt", "--faults", "restart,kill", "--out", filepath.Join(tmp, "out"), smoke}, exitBadInput},
		{"hunt-faults-external", []string{"hunt", "--faults", "restart", "--redis", "redis://127.0.0.1:1", "--out", filepath.Join(tmp, "out"), smoke}, exitBadInput},
		{"hunt-faults-failover-single", []string{"hunt", "--faults", "failover", "--out", filepath.Join(tmp, "out"), smoke}, exitBadInput},
		{"wait-replicas-beyond-sentinel", []string{"run", "--backend", "process", "--out", filepath.Join(tmp, "out"),
			"--wait-replicas", "2", suite + "wait-replicas.yaml"}, exitBadInput},
	}
	runGoldens(t, bin, cases, 5*time.Second, map[string]string{"$TMP": tmp})
	if _, err := os.Stat(filepath.Join(tmp, "out")); err == nil {
		t.Errorf("a refused command left its --out directory behind")
	}
}

// atOnce runs n copies of the binary bin with args, in dir, at once, and returns each one's exit
// code and combined output.
func atOnce(t *testing.T, n int, bin, dir string, args ...string) (codes []int, outputs []string) {
	t.Helper()
	codes, outputs = make([]int, n), make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			cmd := exec.Command(bin, args...)
			cmd.Dir = dir
			b, err := cmd.CombinedOutput()
			outputs[i] = string(b)
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				codes[i] = ee.ExitCode()
			} else if err != nil {
				codes[i] = -1
				outputs[i] += err.Error()
			}
		})
	}
	wg.Wait()
	return codes, outputs
}

// mkdir creates dir and returns it.
func mkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRedisInputGoldens: against a real Redis, a database the server does not have is bad input
// (exit 2, within a second of asking), and an unreachable server is exit 3 whose first line of
// stderr is limitbench's own words, not a go-redis log line (issue 14).
func TestRedisInputGoldens(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts Redis")
	}
	bin := buildBinary(t)
	server := redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess})
	u := url.URL{Scheme: "redis", User: url.UserPassword("default", server.Password), Host: server.Masters()[0]}
	tmp := t.TempDir()
	out := filepath.Join(tmp, "out")
	smoke := suite + "smoke.yaml"
	cases := []cliCase{
		{"database-out-of-range", []string{"run", "--quiet", "--redis", u.String() + "/99", "--out", out, smoke}, exitBadInput},
		{"unreachable", []string{"run", "--quiet", "--redis", "redis://127.0.0.1:1", "--out", out, smoke}, exitEnv},
		{"unreachable-cluster-seeds", []string{"run", "--quiet", "--redis", "redis://127.0.0.1:1,127.0.0.1:2", "--topology", "cluster", "--out", out, smoke}, exitEnv},
	}
	runGoldens(t, bin, cases, 5*time.Second, map[string]string{"$TMP": tmp, "$REDIS": server.Masters()[0], "$PASSWORD": server.Password})
}

// TestRunDefaultOutUnique is the regression test of two runs started in the same second with the
// default --out writing into one folder (the first run's results lost without a word): two
// runs at once in one directory each get a results folder of their own.
func TestRunDefaultOutUnique(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs against real Redis")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH: %v", err)
	}
	bin := buildBinary(t)
	cwd := t.TempDir()
	smoke, err := filepath.Abs(suite + "smoke.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, outs := atOnce(t, 2, bin, cwd, "run", "--backend", "process", "--quiet", "--no-reference", "--algorithms", "gcra",
		"--duration", "200ms", smoke)
	dirs, err := filepath.Glob(filepath.Join(cwd, "results", "smoke-*", result.FileName))
	if err != nil || len(dirs) != 2 {
		t.Fatalf("results: %v (%v); want two folders with a result.json each; outputs:\n%s", dirs, err, strings.Join(outs, "\n"))
	}
}

// TestNewOutDir: default folders are new, whatever already exists; an explicit --out refuses a
// result of its kind unless forced; a folder created for nothing is removed.
func TestNewOutDir(t *testing.T) {
	parent := t.TempDir()
	var got []string
	for range 3 {
		d, err := newOutDir(parent, "smoke-20260101T000000Z")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, filepath.Base(d.path))
	}
	if want := []string{"smoke-20260101T000000Z", "smoke-20260101T000000Z-2", "smoke-20260101T000000Z-3"}; !slices.Equal(got, want) {
		t.Errorf("three default folders of one second: %v; want %v", got, want)
	}

	held := mkdir(t, filepath.Join(parent, "held"))
	writeFile(t, held, result.FileName, "{}\n")
	if _, err := explicitOutDir("--out", held, result.FileName, false, nil); exitCode(err) != exitBadInput {
		t.Errorf("explicitOutDir(a folder holding a result) = %v; want bad input", err)
	}
	if d, err := explicitOutDir("--out", held, result.FileName, true, nil); err != nil {
		t.Errorf("explicitOutDir(a folder holding a result, force) = %v; want it taken", err)
	} else {
		d.release()
	}
	if d, err := explicitOutDir("--out", held, capacity.File, false, nil); err != nil {
		t.Errorf("explicitOutDir(a folder holding a run's result, for a capacity result) = %v; want it taken", err)
	} else {
		d.release()
	}

	deep := filepath.Join(parent, "a", "b", "c")
	d, err := explicitOutDir("--out", deep, result.FileName, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	d.release()
	if _, err := os.Stat(filepath.Join(parent, "a")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after release of an unused %s: %v; want a, b and c removed", deep, err)
	}
	d, err = explicitOutDir("--out", deep, result.FileName, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, deep, "x", "kept\n")
	d.release()
	if _, err := os.Stat(filepath.Join(deep, "x")); err != nil {
		t.Errorf("release removed a folder holding a file: %v", err)
	}
}

// TestRunForce: --force writes into an --out that holds a result, replacing it.
func TestRunForce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against real Redis")
	}
	out := mkdir(t, filepath.Join(t.TempDir(), "held"))
	writeFile(t, out, result.FileName, "{}\n")
	code, _, stderr, res := runCLI(t, out, true, "--force", "--no-reference", "--algorithms", "gcra", "--duration", "200ms", "--speed-only", suite+"smoke.yaml")
	checkExit(t, code, stderr)
	if len(res.Entries) != 1 || res.Entries[0].Algorithm != "gcra" {
		t.Errorf("result.json after --force: %d entries; want the new run's gcra", len(res.Entries))
	}
}

// TestRunMaxRateStopsOnSignal: at the highest rate a scenario may ask for, far more than the
// generator can send, one SIGTERM still stops the run cleanly, with what was measured written
// (issue 14: at 1e15 per second the timekeeper spun and the first signal was ignored; a CI
// timeout's single SIGTERM then hung the job until SIGKILL).
func TestRunMaxRateStopsOnSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs against real Redis")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH: %v", err)
	}
	bin := buildBinary(t)
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(bin, "run", "--backend", "process", "--no-reference", "--algorithms", "gcra",
		"--rate", strconv.Itoa(load.MaxRate), "--duration", "1h", "--out", out, suite+"smoke.yaml")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(stderr.String(), "process single: ") {
		if time.Now().After(deadline) {
			t.Fatalf("no environment within 60 s:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // the warmup, then the measured part, at full tilt
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitFailed {
			t.Errorf("run after one SIGTERM: %v; want exit %d; stderr:\n%s", err, exitFailed, stderr.String())
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Signal(syscall.SIGQUIT) // a Go program prints every goroutine
		<-done
		t.Fatalf("run did not stop within 60 s of one SIGTERM; stderr:\n%s", stderr.String())
	}
	res, err := result.Read(filepath.Join(out, result.FileName))
	if err != nil {
		t.Fatalf("result.json after SIGTERM: %v; stderr:\n%s", err, stderr.String())
	}
	if !res.CutShort {
		t.Errorf("result.json not marked cut short")
	}
}
