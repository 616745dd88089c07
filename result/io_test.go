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
