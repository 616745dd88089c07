// Package golden compares a test's output with a golden file under testdata and, when go test is
// given -update, rewrites the file from the output instead, so that a change shows in git diff.
// It is the one golden-file check of the tests (STYLE.md: golden files under testdata with an
// -update flag); only tests import it, and it registers the -update flag for them.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata from the current output")

// Updating reports whether the test binary was given -update.
func Updating() bool { return *update }

// Check fails t unless got equals the file at path, naming the first line that differs. With
// -update it first writes got to path, creating its directory.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (go test -update rewrites it; git diff shows the change): %s", path, FirstDiff(want, got))
	}
}

// FirstDiff describes where want and got first differ: the line number and both lines.
func FirstDiff(want, got []byte) string {
	lw, lg := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := range min(len(lw), len(lg)) {
		if lw[i] != lg[i] {
			return "line " + strconv.Itoa(i+1) + ":\n- " + lw[i] + "\n+ " + lg[i]
		}
	}
	return "the same first " + strconv.Itoa(min(len(lw), len(lg))) + " lines, then one is longer"
}
