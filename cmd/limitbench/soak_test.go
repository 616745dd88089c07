package main

import (
	"context"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
	"github.com/limitbench/limitbench/internal/runner"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// TestSoakLiveLineMemory: the live line of a measurement shows the memory the process holds
// (issue 30: a soak's user watches it), and that figure follows what the process allocates.
func TestSoakLiveLineMemory(t *testing.T) {
	line := progressLine(runner.Progress{Algorithm: "gcra", Topology: "single", Duration: time.Hour,
		Progress: load.Progress{Elapsed: time.Minute, Requests: 10}})
	if !strings.HasSuffix(line, " MB in use") {
		t.Errorf("live line %q does not end with the memory in use", line)
	}
	runtime.GC() // what other tests left is freed now, not while the 64 MiB are held
	before := memoryInUse()
	hold := make([]byte, 64<<20)
	for i := range hold {
		hold[i] = byte(i)
	}
	after := memoryInUse()
	if after < before+48<<20 {
		t.Errorf("memory in use went from %d to %d bytes with 64 MiB more held", before, after)
	}
	_ = hold[len(hold)-1]
}

// TestSoakKilledLeavesCheckpoint: a long run rewrites result.json while its measurement runs
// (issue 30: a soak killed at hour 20 leaves what it measured), so that one killed outright
// (SIGKILL: nothing of it runs after) leaves a valid result.json, cut short as a checkpoint,
// whose entry in progress has requests and no pass. A run that ends replaces its checkpoints
// with its real result.
func TestSoakKilledLeavesCheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs against real Redis")
	}
	bin := buildBinary(t)
	server := redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess})
	u := url.URL{Scheme: "redis", User: url.UserPassword("default", server.Password), Host: server.Masters()[0]}
	dir := t.TempDir()
	scenario := filepath.Join(dir, "soak.yaml")
	body := "version: 1\nname: soak\nduration: 1s\nwarmup: 0s\nclients: 2\narrival: {rate: 200}\nalgorithms: [gcra]\n"
	if err := os.WriteFile(scenario, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	args := func(out, duration string) []string {
		return []string{"run", "--quiet", "--awake=false", "--no-reference", "--redis", u.String(), "--out", out,
			"--duration", duration, "--checkpoint-every", "1s", scenario}
	}

	out := filepath.Join(dir, "killed")
	cmd := exec.Command(bin, args(out, "1h")...)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }() // whatever happens below, it does not outlive the test
	path := filepath.Join(out, result.FileName)
	inProgress := func(r *result.Result) *result.Entry {
		for i := range r.Entries {
			if r.Entries[i].InProgress {
				return &r.Entries[i]
			}
		}
		return nil
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if r, err := result.Read(path); err == nil {
			if e := inProgress(r); e != nil && e.Requests > 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint with an entry in progress within 60 s; stderr:\n%s", stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("run: %v; want killed by SIGKILL; stderr:\n%s", err, stderr.String())
	}
	r, err := result.Read(path) // validates
	if err != nil {
		t.Fatalf("result.json left by the killed run: %v", err)
	}
	if !r.CutShort || !strings.HasPrefix(r.CutShortNote, "checkpoint: ") || !strings.Contains(r.CutShortNote, "in_progress") {
		t.Errorf("left behind: cut short %v, note %q; want cut short as a checkpoint with a measurement in progress", r.CutShort,
			r.CutShortNote)
	}
	e := inProgress(r)
	switch {
	case len(r.Entries) != 1 || e == nil:
		t.Fatalf("left behind: %d entries, in progress %v; want gcra's, in progress", len(r.Entries), e != nil)
	case e.Algorithm != "gcra" || e.Requests <= 0 || e.Allowed+e.Denied+e.Errors+e.Unknown != e.Requests:
		t.Errorf("in progress: %s, %d requests = %d allowed + %d denied + %d errors + %d unknown; want gcra's, some, adding up",
			e.Algorithm, e.Requests, e.Allowed, e.Denied, e.Errors, e.Unknown)
	case e.Verification.Verdict == verify.Pass || len(e.Verification.Reasons) == 0:
		t.Errorf("in progress: verdict %s (%q); want no pass, and why", e.Verification.Verdict, e.Verification.Reasons)
	case e.LatencyUS.P99 <= 0 || e.ThroughputRPS <= 0 || e.DurationS <= 0:
		t.Errorf("in progress: p99 %v µs, throughput %v/s over %v s; want them measured", e.LatencyUS.P99, e.ThroughputRPS, e.DurationS)
	}

	// A run that ends replaces its checkpoints with its result.
	out = filepath.Join(dir, "ended")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := exec.CommandContext(ctx, bin, args(out, "3s")...)
	b, err := done.CombinedOutput()
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	checkExit(t, code, string(b)) // a loaded machine may fall behind: inconclusive, exit 1
	r, err = result.Read(filepath.Join(out, result.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if r.CutShort || len(r.Entries) != 1 || r.Entries[0].InProgress {
		t.Errorf("after a whole run: cut short %v (%q), %d entries, in progress %v; want the real result", r.CutShort, r.CutShortNote,
			len(r.Entries), len(r.Entries) == 1 && r.Entries[0].InProgress)
	}
}
