package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/internal/version"
)

// TestVersion: `limitbench version` and `limitbench --version` print version.Get(); --json prints
// it as an object; an argument is bad input.
func TestVersion(t *testing.T) {
	want := version.Get().String()
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != exitOK || stdout.String() != want || stderr.Len() != 0 {
			t.Errorf("limitbench %s: exit %d, stdout %q, stderr %q; want exit 0 and %q", strings.Join(args, " "), code, stdout.String(), stderr.String(), want)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"version", "--json"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("limitbench version --json: exit %d, stderr %q", code, stderr.String())
	}
	var got version.Info
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("limitbench version --json: %v\n%s", err, stdout.String())
	}
	if d := cmp.Diff(version.Get(), got); d != "" {
		t.Errorf("limitbench version --json: (-want +got)\n%s", d)
	}
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"version", "extra"}, &stdout, &stderr); code != exitBadInput || !strings.Contains(stderr.String(), "unexpected arguments") {
		t.Errorf("limitbench version extra: exit %d, stderr %q; want exit %d and unexpected arguments", code, stderr.String(), exitBadInput)
	}
}
