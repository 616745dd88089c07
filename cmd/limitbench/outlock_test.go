package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limitbench/limitbench/result"
)

// TestLockDir: a results directory is locked while a command writes it; a second lock of it is
// refused as bad input naming the holder, also from this process; release lets it go and removes
// the lock file; a lock file left by a process that no longer runs is taken over, and said so.
func TestLockDir(t *testing.T) {
	dir := t.TempDir()
	first, err := lockDir("--out", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = lockDir("--out", dir, nil)
	if exitCode(err) != exitBadInput || !strings.Contains(err.Error(), "is in use by another command (limitbench ") ||
		!strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("second lockDir = %v; want bad input naming this process", err)
	}
	first.release()
	if _, err := os.Stat(filepath.Join(dir, lockName)); !os.IsNotExist(err) {
		t.Errorf("after release: %v; want the lock file gone", err)
	}

	// A command killed while it held the lock leaves the file, not the lock.
	writeFile(t, dir, lockName, "limitbench run, pid 999999999, since 2026-01-01T00:00:00Z\n")
	var notes bytes.Buffer
	l, err := lockDir("--out", dir, &notes)
	if err != nil {
		t.Fatalf("lockDir over a dead command's lock file: %v", err)
	}
	defer l.release()
	want := "--out " + dir + ": taking over the lock left by limitbench run, pid 999999999, since 2026-01-01T00:00:00Z, which no longer runs\n"
	if notes.String() != want {
		t.Errorf("notes = %q; want %q", notes.String(), want)
	}
	b, err := os.ReadFile(filepath.Join(dir, lockName))
	if err != nil || !strings.Contains(string(b), "pid "+strconv.Itoa(os.Getpid())+",") {
		t.Errorf("lock file after take-over = %q, %v; want this process", b, err)
	}
}

// TestOutLockedGoldens is the regression test of issue 28 item 13 (two runs started at once with
// one --out both exited 0, one result silently overwritten): every command that writes into an
// --out refuses one that another command holds, before it starts (exit 2); a lock left by a
// command that no longer runs is taken over, and said so.
func TestOutLockedGoldens(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	tmp := t.TempDir()
	out := mkdir(t, filepath.Join(tmp, "out"))
	l, err := explicitOutDir("--out", out, "", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	holder := readHolder(l.lock.f)
	smoke := suite + "smoke.yaml"
	cases := []cliCase{
		{"out-in-use-run", []string{"run", "--backend", "process", "--out", out, smoke}, exitBadInput},
		{"out-in-use-capacity", []string{"capacity", "--algorithm", "gcra", "--out", out}, exitBadInput},
		{"out-in-use-hunt", []string{"hunt", "--out", out, smoke}, exitBadInput},
		{"out-in-use-report", []string{"report", "--out", out, "../../report/testdata/result.json"}, exitBadInput},
	}
	runGoldens(t, bin, cases, 5*time.Second, map[string]string{"$TMP": tmp, "$HOLDER": holder})
	l.release()

	// A report killed while it wrote: its lock file stays, its lock does not.
	writeFile(t, out, lockName, "limitbench report, pid 999999999, since 2026-01-01T00:00:00Z\n")
	cmd := exec.Command(bin, "report", "--out", out, "../../report/testdata/result.json")
	stderr, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("report over a dead command's lock: %v\n%s", err, stderr)
	}
	want := "--out " + out + ": taking over the lock left by limitbench report, pid 999999999, since 2026-01-01T00:00:00Z, which no longer runs"
	if first, _, _ := strings.Cut(string(stderr), "\n"); first != want {
		t.Errorf("first line = %q; want %q", first, want)
	}
	if _, err := os.Stat(filepath.Join(out, lockName)); !os.IsNotExist(err) {
		t.Errorf("after the report: %v; want its lock file gone", err)
	}
}

// TestRunSameOutAtOnce is issue 28 item 13 as reported: two runs started at once with one --out.
// One runs; the other is refused before it starts (exit 2), and the result is the first's.
func TestRunSameOutAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs against real Redis")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH: %v", err)
	}
	bin := buildBinary(t)
	out := filepath.Join(t.TempDir(), "out")
	codes, outputs := atOnce(t, 2, bin, "", "run", "--backend", "process", "--quiet", "--no-reference", "--algorithms", "gcra",
		"--duration", "300ms", "--out", out, suite+"smoke.yaml")
	slices.Sort(codes)
	if codes[0] != exitOK || codes[1] != exitBadInput {
		t.Fatalf("exit codes %v; want one 0 and one 2; outputs:\n%s", codes, strings.Join(outputs, "\n---\n"))
	}
	refused := outputs[0]
	if !strings.Contains(refused, "is in use by another command (limitbench run, pid ") {
		refused = outputs[1]
	}
	if !strings.Contains(refused, "limitbench run: --out "+out+" is in use by another command (limitbench run, pid ") {
		t.Errorf("no refusal naming the other run in:\n%s", strings.Join(outputs, "\n---\n"))
	}
	if _, err := os.Stat(filepath.Join(out, result.FileName)); err != nil {
		t.Errorf("the run that ran left no result: %v", err)
	}
}
