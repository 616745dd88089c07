package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestHuntCorpus is issue 29 item 5 through the CLI, as a user would run it from a directory of
// their own: a hunt of a copy of examples/custom's off-by-one window with --corpus saves its
// reproducer there; `limitbench run corpus/*.yaml` (the gate-side replay) fails while the flaw
// is there and passes once the script is fixed; a hunt of the fixed script replays the entry
// first (trial 1 of 1), finds nothing, and saves nothing new.
func TestHuntCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and hunts on a real Redis")
	}
	t.Parallel() // a child process, no state of this one: overlaps the other waits
	bin := buildBinary(t)
	cwd := t.TempDir()
	for _, name := range []string{"off_by_one_window.yaml", "off_by_one_window.lua"} {
		b, err := os.ReadFile(filepath.Join("../../examples/custom", name))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, cwd, name, string(b))
	}
	hunt := func(out string, more ...string) (int, string, string) {
		args := append([]string{"hunt", "--backend", "process", "--topology", "single", "--corpus", "corpus", "--out", out}, more...)
		return runBinIn(t, cwd, bin, append(args, "off_by_one_window.yaml")...)
	}
	replay := func(out string) (int, string, string) {
		entries, err := filepath.Glob(filepath.Join(cwd, "corpus", "*.yaml"))
		if err != nil || len(entries) != 1 {
			t.Fatalf("corpus entries %v (%v); want one", entries, err)
		}
		return runBinIn(t, cwd, bin, "run", "--backend", "process", "--no-reference", "--out", out,
			filepath.Join("corpus", filepath.Base(entries[0])))
	}

	code, stdout, stderr := hunt("h1", "--budget", "20s")
	saved := regexp.MustCompile(`saved to the corpus: (corpus/my-off-by-one-window-single-[0-9a-f]{8}\.yaml)`).FindStringSubmatch(stdout)
	if code != exitOK || saved == nil {
		t.Fatalf("hunt --corpus: exit %d, want 0 and a reproducer saved to the corpus\n%s\n%s", code, stdout, stderr)
	}
	if code, stdout, stderr := replay("r1"); code != exitFailed || !strings.Contains(stdout+stderr, "my-off-by-one-window") {
		t.Errorf("run of the corpus while the flaw is there: exit %d; want 1 naming the algorithm\n%s\n%s", code, stdout, stderr)
	}

	lua := filepath.Join(cwd, "off_by_one_window.lua")
	b, err := os.ReadFile(lua)
	if err != nil {
		t.Fatal(err)
	}
	fixed := strings.Replace(string(b), "if count > limit then", "if count + cost > limit then", 1)
	if fixed == string(b) {
		t.Fatal("off_by_one_window.lua no longer has the line this test fixes")
	}
	writeFile(t, cwd, "off_by_one_window.lua", fixed)
	if code, stdout, stderr := replay("r2"); code != exitOK {
		t.Errorf("run of the corpus once the script is fixed: exit %d; want 0\n%s\n%s", code, stdout, stderr)
	}

	// The scenario expects the violation, so a hunt that finds none exits 1.
	code, stdout, stderr = hunt("h2", "--trials", "1")
	_, by := readHunt(t, filepath.Join(cwd, "h2"))
	e := by["my-off-by-one-window"]
	if code != exitFailed || e.Corpus != 1 || e.Trials != 1 || e.Violation != nil || strings.Contains(stdout, "saved to the corpus") {
		t.Errorf("hunt of the fixed script: exit %d, %d trials (%d of the corpus), violation %v; want 1, the corpus's entry alone, held, nothing saved\n%s\n%s",
			code, e.Trials, e.Corpus, e.Violation, stdout, stderr)
	}
}
