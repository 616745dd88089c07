package scenarios

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limitbench/limitbench/internal/golden"
)

// designNames are the built-in algorithms DESIGN.md lists. Tests that check messages use this list
// rather than the registry, so that their output does not depend on which algorithms are compiled in.
var designNames = []string{
	"fixed-window", "fixed-window-published", "gcra", "redisson", "redisson-per-client",
	"resource-consumer", "resource-consumer-published", "sliding-counter", "sliding-log",
	"sliding-log-published", "token-bucket", "token-bucket-published",
}

// TestErrorsGolden loads every testdata/errors/*.yaml, each of which is invalid, and compares the
// full error text with the .golden file beside it.
func TestErrorsGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/errors/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			s, err := parse(file, data, designNames)
			if err == nil {
				t.Fatalf("parse(%s) = %+v, nil; want an error", file, s)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("errors.Is(err, ErrInvalid) = false for %v", err)
			}
			var list *Errors
			if !errors.As(err, &list) || len(list.Problems) == 0 {
				t.Fatalf("error %T is not a non-empty *Errors", err)
			}
			for _, p := range list.Problems {
				if p.File != file {
					t.Errorf("problem %q names file %q; want %q", p, p.File, file)
				}
			}
			golden.Check(t, strings.TrimSuffix(file, ".yaml")+".golden", []byte(err.Error()+"\n"))
		})
	}
}
