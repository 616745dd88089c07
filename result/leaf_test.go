package result

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is this module's path.
const module = "github.com/limitbench/limitbench"

// leafImports are the project packages the schema may link: the owners of the value types it
// embeds, and what they link.
var leafImports = []string{
	module + "/algorithms",
	module + "/internal/arrival",
	module + "/internal/clock",
	module + "/internal/faults/watch",
	module + "/internal/load",
	module + "/internal/problem",
	module + "/internal/trace",
	module + "/verify",
	module + "/internal/wire",
	module + "/result",
	module + "/scripts",
}

// goListDeps returns `go list -deps` of pkgs, skipping t when the go command is not available.
func goListDeps(t *testing.T, pkgs ...string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go command is not on PATH (%v), so the dependencies cannot be listed", err)
	}
	out, err := exec.Command(gobin, append([]string{"list", "-deps"}, pkgs...)...).Output()
	if err != nil {
		msg := err.Error()
		if ee, ok := err.(*exec.ExitError); ok {
			msg += ": " + string(ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %s", strings.Join(pkgs, " "), msg)
	}
	return strings.Fields(string(out))
}

// TestLeaf: the schema, and the gate that reads it, link no container, Docker or proxy library
// (issue 27), and the schema links no project package but the owners of the value types it
// embeds: nothing that renders, starts an environment or loads scenarios.
func TestLeaf(t *testing.T) {
	for _, dep := range goListDeps(t, module+"/result", module+"/gate") {
		for _, banned := range []string{"testcontainers", "moby", "toxiproxy"} {
			if strings.Contains(dep, banned) {
				t.Errorf("result or gate links %s", dep)
			}
		}
	}
	for _, dep := range goListDeps(t, module+"/result") {
		if strings.HasPrefix(dep, module+"/") && !slices.Contains(leafImports, dep) {
			t.Errorf("result links %s; it may link only %s", dep, strings.Join(leafImports, ", "))
		}
	}
}
