package limitbenchtest_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// externalTest is a test of a module of its own that uses verify and limitbenchtest as a team's
// test would: nothing but their exported API.
const externalTest = `package limitcheck

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/limitbench/limitbench/limitbenchtest"
	"github.com/limitbench/limitbench/verify"
)

// capped admits 3 permits in all: it keeps any contract that allows 3.
func capped() limitbenchtest.Limiter {
	var mu sync.Mutex
	left := int64(3)
	return func(_ context.Context, _ string, n int64) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		if left < n {
			return false, nil
		}
		left -= n
		return true, nil
	}
}

func TestCapped(t *testing.T) {
	contract := verify.TokenBucket(3, 10, time.Second)
	limitbenchtest.Check(t, contract, capped(), limitbenchtest.Constant(50, 200*time.Millisecond))

	var rec verify.Recorder
	t0 := time.Now()
	for i := range 4 {
		at := t0.Add(time.Duration(i) * time.Millisecond)
		if err := rec.Record("s", "c", 1, at, at, verify.Admitted); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := verify.Check(contract, rec.Log())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Definite() != 1 || rep.Limits[0].Worst.Excess != 1 {
		t.Errorf("4 admissions within 3 ms of token-bucket(3, 10/1s): %d definite, worst %+v", rep.Definite(), rep.Limits[0].Worst)
	}
}
`

// The public packages work from another module: a throwaway go.mod that replaces the module
// path with this checkout builds and passes a test that imports them, offline (the module
// cache and the checkout's go.sum hold everything it needs); and the flawed limiter and its
// test in docs/library.md, built there as they stand, fail with a reproducer.
func TestSeparateModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module of its own")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(root, "docs", "library.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlocks(string(page))
	if len(blocks) != 2 {
		t.Fatalf("docs/library.md has %d go blocks; want 2 (the limiter, its test)", len(blocks))
	}
	gomod := "module example.com/limitcheck\n\ngo 1.26.0\n\nrequire github.com/limitbench/limitbench v0.0.0\n\nreplace github.com/limitbench/limitbench => " + root + "\n"
	if err := os.Mkdir(filepath.Join(dir, "mylimiter"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"go.mod": gomod, "go.sum": string(sum), "limit_test.go": externalTest,
		"mylimiter/bucket.go": blocks[0], "mylimiter/bucket_test.go": blocks[1],
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// go test puts its own GOROOT/bin first on PATH: this "go" is the one running this test.
	cmd := exec.Command("go", "test", "-count=1", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("go test in a module of its own: %v\n%s", err, out)
	}
	for _, want := range []string{
		"ok  \texample.com/limitcheck\t",                                                                      // the test of the packages passes
		"FAIL\texample.com/limitcheck/mylimiter\t", "token-bucket(5, 5/1s): fail", "limitbenchtest.Schedule{", // the flawed bucket fails
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("go test in a module of its own: output lacks %q:\n%s", want, out)
		}
	}
}

// goBlocks returns the bodies of the ```go blocks of a Markdown page, in order.
func goBlocks(page string) []string {
	var blocks []string
	for _, part := range strings.Split(page, "```go\n")[1:] {
		body, _, _ := strings.Cut(part, "```")
		blocks = append(blocks, body)
	}
	return blocks
}
