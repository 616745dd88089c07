package result

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, path string
		schema     bool // want ErrSchema
	}{
		{"missing", filepath.Join(dir, "nope.json"), false},
		{"not json", write("bad.json", "{"), true},
		{"wrong schema", write("v0.json", `{"schema":"limitbench/result/v0","entries":[]}`), true},
		{"ragged timeline", write("ragged.json", `{"schema":"limitbench/result/v1","entries":[{"algorithm":"a","topology":"single","timeline":{"bin_s":1,"offered":[1,2],"admitted":[1],"denied":[0,0],"errors":[0,0]}}]}`), true},
		{"bad histogram", write("hist.json", `{"schema":"limitbench/result/v1","entries":[{"algorithm":"a","topology":"single","histograms":{"latency":"!!"}}]}`), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(tc.path)
			if err == nil {
				t.Fatalf("Read(%s) = nil error; want one", tc.path)
			}
			if !strings.Contains(err.Error(), filepath.Base(tc.path)) {
				t.Errorf("Read error %q does not name the file", err)
			}
			if got := errors.Is(err, ErrSchema); got != tc.schema {
				t.Errorf("errors.Is(%v, ErrSchema) = %v; want %v", err, got, tc.schema)
			}
		})
	}
}

// TestWriteFileAtomic: WriteFile replaces a file whole (a checkpoint rewritten while a killed run
// may leave it behind) and leaves no temporary file beside it, also when it cannot rename.
func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", FileName)
	for _, text := range []string{"first, longer text\n", "second\n"} {
		if err := WriteFile(path, []byte(text)); err != nil {
			t.Fatalf("WriteFile(%s): %v", path, err)
		}
		b, err := os.ReadFile(path)
		if err != nil || string(b) != text {
			t.Fatalf("after WriteFile(%q): read %q, %v", text, b, err)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode of %s: %v, %v; want 0644", path, fi.Mode(), err)
	}
	// A directory in the way: the rename fails, and the temporary file goes.
	blocked := filepath.Join(dir, "sub", "blocked")
	if err := os.MkdirAll(filepath.Join(blocked, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(blocked, []byte("x")); err == nil {
		t.Errorf("WriteFile over a non-empty directory = nil; want an error")
	}
	names, err := os.ReadDir(filepath.Join(dir, "sub"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range names {
		got = append(got, n.Name())
	}
	if want := []string{"blocked", FileName}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("files in %s: %v; want %v (no temporary file left)", filepath.Join(dir, "sub"), got, want)
	}
}
