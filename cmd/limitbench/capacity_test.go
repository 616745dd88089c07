package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/limitbench/limitbench/capacity"
	"github.com/limitbench/limitbench/internal/redisenv"
)

func TestCapacityBadInput(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"no algorithm", nil, []string{"--algorithm is required"}},
		{"unknown algorithm", []string{"--algorithm", "gcar"}, []string{`"gcar"`, `"gcra"`}},
		{"bad slo", []string{"--algorithm", "gcra", "--slo", "p99 << 2ms"}, []string{"--slo", "p99 << 2ms"}},
		{"slo for another algorithm", []string{"--algorithm", "gcra", "--slo", "sliding-log: p99 < 2ms"}, []string{"names algorithm sliding-log"}},
		{"short step", []string{"--algorithm", "gcra", "--step", "10ms"}, []string{"--step must be at least 100ms"}},
		{"step too long", []string{"--algorithm", "gcra", "--step", "25h"}, []string{"--step must be at most 24h0m0s"}},
		{"negative subjects", []string{"--algorithm", "gcra", "--subjects", "-1"}, []string{"--subjects must be in [0, 16777216]"}},
		{"too many subjects", []string{"--algorithm", "gcra", "--subjects", "1000000000"}, []string{"--subjects must be in [0, 16777216]"}},
		// An objective the sweep cannot look for is refused up front, not after a sweep.
		{"slo backwards", []string{"--algorithm", "gcra", "--slo", "p99 > 2ms"}, []string{`--slo: "p99 > 2ms" has the comparison backwards`}},
		{"slo never met", []string{"--algorithm", "gcra", "--slo", "p99 < 0ms"}, []string{`--slo: "p99 < 0ms" can never hold`}},
		{"slo on throughput", []string{"--algorithm", "gcra", "--slo", "throughput > 1000"}, []string{"bounds throughput"}},
		{"errors backwards", []string{"--algorithm", "gcra", "--slo", "errors >= 1%"}, []string{"backwards"}},
		{"bad backend", []string{"--algorithm", "gcra", "--backend", "vm"}, []string{`unknown backend "vm"`}},
		{"bad topology", []string{"--algorithm", "gcra", "--topology", "ring"}, []string{`unknown topology "ring"`}},
		{"two scenarios", []string{"--algorithm", "gcra", suite + "smoke.yaml", suite + "demo.yaml"}, []string{"one scenario at most"}},
		{"missing scenario", []string{"--algorithm", "gcra", filepath.Join(dir, "nope.yaml")}, []string{"nope.yaml"}},
		{"zero clients", []string{"--algorithm", "gcra", "--clients", "0"}, []string{"set by --clients"}},
		{"bad call", []string{"--algorithm", "gcra", "--call", "eval"}, []string{"set by --call", `unknown call "eval"`}},
		{"bad flag", []string{"--algorithm", "gcra", "--stpe", "1s"}, []string{"-stpe"}},
		{"several problems at once", []string{"--algorithm", "gcar", "--slo", "p99 <"}, []string{`"gcar"`, "--slo"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"capacity", "--out", dir}, tt.args...), &stdout, &stderr)
			if code != exitBadInput {
				t.Errorf("capacity %v = exit %d; want %d; stderr:\n%s", tt.args, code, exitBadInput, stderr.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("capacity %v: stderr lacks %q:\n%s", tt.args, w, stderr.String())
				}
			}
		})
	}
}

// TestCapacityClusterHashTag: a custom script whose keys do not share a hash tag, in a scenario
// that lists only the single topology, is refused before a `--topology cluster` sweep starts,
// with the file, line and field, not found out as a stream of CROSSSLOT errors.
func TestCapacityClusterHashTag(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "limiter.lua"), []byte("return 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	scenario := filepath.Join(dir, "mine.yaml")
	yaml := `version: 1
name: mine
algorithms:
  - name: mine
    script: limiter.lua
    keys: ["rl:{{subject}}:tokens", "rl:{{subject}}:ts"]
    args: ["{{limit}}"]
    allowed: {equals: 1}
    contract: {kind: fixed-window, limit: 10, window: 1s}
`
	if err := os.WriteFile(scenario, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := run([]string{"capacity", "--algorithm", "mine", "--topology", "cluster", "--out", filepath.Join(dir, "out"), scenario}, &stdout, &stderr)
	want := scenario + ":6: algorithms[0].keys: "
	if code != exitBadInput || !strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), "hash tag") {
		t.Errorf("capacity --topology cluster with unshared keys = exit %d after %s; want %d and %q ... hash tag; stderr:\n%s",
			code, time.Since(start), exitBadInput, want, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Errorf("a refused sweep wrote results")
	}
}

func TestCapacityUnreachable(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"capacity", "--algorithm", "gcra", "--redis", "redis://127.0.0.1:1", "--out", t.TempDir()}, &stdout, &stderr)
	if code != exitEnv || !strings.Contains(stderr.String(), "127.0.0.1:1") {
		t.Errorf("capacity against redis://127.0.0.1:1 = exit %d; want %d naming the address; stderr:\n%s", code, exitEnv, stderr.String())
	}
}

// capacityRun runs `limitbench capacity` in this process and returns its exit code, stdout and
// capacity.json. It checks that the process gets its CPUs back afterwards.
func capacityRun(t *testing.T, args ...string) (int, string, *capacity.Result) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH: %v", err)
	}
	before, _ := redisenv.ProcessCPUs(os.Getpid())
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := run(append([]string{"capacity", "--backend", "process", "--out", out}, args...), &stdout, &stderr)
	t.Logf("limitbench capacity %s: exit %d after %s\n%s%s", strings.Join(args, " "), code,
		time.Since(start).Round(time.Millisecond), stdout.String(), stderr.String())
	if after, _ := redisenv.ProcessCPUs(os.Getpid()); !slices.Equal(before, after) {
		t.Errorf("the process runs on CPUs %v after capacity; want its CPUs back (%v)", after, before)
	}
	c, err := capacity.Read(filepath.Join(out, capacity.File))
	if err != nil {
		t.Fatalf("capacity.json: %v", err)
	}
	for _, f := range []string{capacity.MarkdownFile, "capacity.png", "capacity.svg"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	return code, stdout.String(), c
}

func TestCapacityCommand(t *testing.T) {
	code, stdout, c := capacityRun(t, "--algorithm", "gcra", "--slo", "p99 < 50ms", "--step", "300ms", "--subjects", "1000")
	if code != exitOK {
		t.Fatalf("exit %d; want 0", code)
	}
	for _, w := range []string{"sustainable rate:", "closed-loop saturation:", "Redis CPU per decision:",
		"bytes per subject:", "CPU pinning:", "CPU idle states:", "machine noise:", "PHASE", "probe", "SUBJECTS", "100,000,000", "SHARDS", "30% headroom", "results: "} {
		if !strings.Contains(stdout, w) {
			t.Errorf("stdout lacks %q", w)
		}
	}
	if c.Algorithm != "gcra" || c.SLO != "p99 < 50ms" || c.SustainableRPS <= 0 || c.Memory.Subjects != 1000 {
		t.Errorf("capacity.json: algorithm %s, SLO %q, sustainable %g, memory %+v", c.Algorithm, c.SLO, c.SustainableRPS, c.Memory)
	}
	// --awake is on by default: where this process may write the PM QoS file (root), the sweep
	// must have held the CPUs awake, else say why not.
	if f, err := os.OpenFile("/dev/cpu_dma_latency", os.O_WRONLY, 0); err == nil {
		_ = f.Close()
		if !c.Pinning.CPUsAwake {
			t.Errorf("pinning %+v; want the CPUs held awake (the file is writable)", c.Pinning)
		}
	} else if c.Pinning.CPUsAwake || !strings.Contains(c.Pinning.AwakeNote, "left alone") {
		t.Errorf("pinning %+v; want idle states left alone, and why (%v)", c.Pinning, err)
	}
	if cpus, err := redisenv.ProcessCPUs(os.Getpid()); err == nil && len(cpus) > 1 {
		if !c.Pinning.Pinned || len(c.Pinning.HarnessCPUs) != len(cpus)-1 {
			t.Errorf("pinning %+v on %d CPUs; want Redis on one, the load generator on the others", c.Pinning, len(cpus))
		}
	}
}

// TestCapacityBusyMachine: beside processes that spin on every CPU, the sweep's figure measures
// the machine, and capacity says so in its output and capacity.json: the spinners alone take
// about half the CPU time (they compete with the generator and Redis for it as equals), twice
// capacity.OtherCPULimit. Nothing is timed: the share of CPU time other processes took is what
// it reads.
func TestCapacityBusyMachine(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the machine's CPU time is read from /proc/stat")
	}
	for range runtime.NumCPU() {
		spin := exec.Command("sh", "-c", "while :; do :; done")
		if err := spin.Start(); err != nil {
			t.Fatalf("start a spinning process: %v", err)
		}
		t.Cleanup(func() {
			_ = spin.Process.Kill()
			_ = spin.Wait()
		})
	}
	_, stdout, c := capacityRun(t, "--algorithm", "gcra", "--slo", "p99 < 50ms", "--step", "300ms", "--subjects", "0")
	n := c.Noise
	if !n.CPUMeasured || n.OtherCPUPct <= capacity.OtherCPULimit || !n.Busy {
		t.Errorf("noise %+v; want other processes over %g%% of the CPU time, busy", n, capacity.OtherCPULimit)
	}
	if !strings.HasPrefix(stdout, "warning: this figure measures a busy machine rather than Redis: ") ||
		!strings.Contains(stdout, "BUSY: steal") {
		t.Errorf("stdout does not lead with the busy machine's warning, or lacks the noise row:\n%s", stdout)
	}
}

// TestCapacitySlidingLogVsGCRA: at limit 100 under the saturation scenario's load, sliding-log
// keeps a log per subject and GCRA one timestamp: its bytes per subject are at least five times
// as many (a list of 100 integers, about 1.2 KB, against one key of about 150 bytes), and both
// appear in the command's output.
func TestCapacitySlidingLogVsGCRA(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two capacity sweeps")
	}
	sat, err := os.ReadFile(suite + "saturation.yaml")
	if err != nil {
		t.Fatal(err)
	}
	yaml := strings.Replace(string(sat), "limit: {limit: 1000, window: 1s}", "limit: {limit: 100, window: 1s}", 1)
	if yaml == string(sat) {
		t.Fatal("saturation.yaml no longer has the limit line this test rewrites")
	}
	path := filepath.Join(t.TempDir(), "saturation-100.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	got := map[string]*capacity.Result{}
	for _, alg := range []string{"gcra", "sliding-log"} {
		code, stdout, c := capacityRun(t, "--algorithm", alg, "--slo", "none", "--step", "300ms", "--quiet", path)
		if code != exitOK {
			t.Errorf("%s: exit %d; want 0", alg, code)
		}
		if want := fmt.Sprintf("%s (used_memory delta over %d subjects", sizeText(c.Memory.BytesPerSubject), c.Memory.Subjects); !strings.Contains(stdout, want) {
			t.Errorf("%s: stdout lacks %q", alg, want)
		}
		got[alg] = c
	}
	g, s := got["gcra"].Memory, got["sliding-log"].Memory
	if s.BytesPerSubject < 5*g.BytesPerSubject || s.MemoryUsagePerSubject < 5*g.MemoryUsagePerSubject {
		t.Errorf("bytes per subject at limit 100: sliding-log %.0f (MEMORY USAGE %.0f), gcra %.0f (%.0f); want ≥ 5 times",
			s.BytesPerSubject, s.MemoryUsagePerSubject, g.BytesPerSubject, g.MemoryUsagePerSubject)
	}
	t.Logf("bytes per subject at limit 100: sliding-log %.0f, gcra %.0f, ratio %.1f (MEMORY USAGE %.0f / %.0f = %.1f); under the sweep's load %.0f / %.0f",
		s.BytesPerSubject, g.BytesPerSubject, s.BytesPerSubject/g.BytesPerSubject,
		s.MemoryUsagePerSubject, g.MemoryUsagePerSubject, s.MemoryUsagePerSubject/g.MemoryUsagePerSubject,
		s.LoadBytesPerSubject, g.LoadBytesPerSubject)
}

// sizeText is how the table prints a byte count: "88 B", "3.59 KiB".
func sizeText(v float64) string {
	if v < 1024 {
		return fmt.Sprintf("%.0f B", v)
	}
	return fmt.Sprintf("%.3g KiB", v/1024)
}

// TestCapacityExternalLoopback: a sweep against an external server on a loopback address leaves it
// a CPU, as against a started one, and capacity.json's environment says so.
func TestCapacityExternalLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a capacity sweep")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH: %v", err)
	}
	server, err := redisenv.Start(context.Background(), redisenv.Config{Backend: redisenv.BackendProcess})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Stop(context.Background()) })
	addr := server.Masters()[0]
	code, _, c := capacityRun(t, "--backend", "external", "--redis", "redis://:"+server.Password+"@"+addr,
		"--algorithm", "gcra", "--slo", "p99 < 50ms", "--step", "300ms", "--subjects", "0")
	if code != exitOK {
		t.Fatalf("exit %d; want 0", code)
	}
	env := c.Environment
	if want := max(1, runtime.NumCPU()-1); env.GOMAXPROCS != want || env.LocalServers != 1 ||
		!strings.Contains(env.GOMAXPROCSNote, addr+" (a loopback address)") {
		t.Errorf("environment: GOMAXPROCS %d, local servers %d, note %q; want %d, 1, naming %s as a loopback address",
			env.GOMAXPROCS, env.LocalServers, env.GOMAXPROCSNote, want, addr)
	}
}
