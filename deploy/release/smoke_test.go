//go:build unix

// Package release_test checks what users install: what `make release-snapshot` wrote in dist/
// (dist_test.go) and the image `make image` builds (image_test.go). Each runs `limitbench
// version` and the smoke scenario from what it checks.
package release_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// root is the repository's root, relative to this package.
const root = "../.."

// gitHead returns the commit of the checkout, or "" outside one.
func gitHead() string {
	out, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// smokeArgs are the arguments of the smoke run: scenario (smoke.yaml) with gcra and sliding-log,
// 2 s each, on the default backend, which must choose the process backend, results in out.
func smokeArgs(scenario, out string) []string {
	return []string{"run", "--algorithms", "gcra,sliding-log", "--duration", "2s", "--no-reference", "--out", out, scenario}
}

// checkSmoke checks the result.json a smoke run wrote in dir: the process backend and a Redis
// version, the commit the binary was built from (when commit is not empty), and both
// algorithms with requests and a pass. output is the run's, for the failure message.
func checkSmoke(t *testing.T, dir, commit, output string) {
	t.Helper()
	var res struct {
		Environment struct {
			Backend       string `json:"backend"`
			RedisVersion  string `json:"redis_version"`
			HarnessCommit string `json:"harness_commit"`
		} `json:"environment"`
		Entries []struct {
			Algorithm    string `json:"algorithm"`
			Requests     int64  `json:"requests"`
			Verification struct {
				Verdict string `json:"verdict"`
			} `json:"verification"`
		} `json:"entries"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatalf("the smoke run's result: %v\n%s", err, output)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("result.json: %v", err)
	}
	env := res.Environment
	if env.Backend != "process" || env.RedisVersion == "" {
		t.Errorf("result.json environment: backend %q, Redis %q; want the process backend with a Redis version", env.Backend, env.RedisVersion)
	}
	if commit != "" && env.HarnessCommit != commit {
		t.Errorf("result.json harness_commit %q; want %s", env.HarnessCommit, commit)
	}
	if len(res.Entries) != 2 {
		t.Fatalf("result.json has %d entries; want gcra and sliding-log\n%s", len(res.Entries), output)
	}
	for _, e := range res.Entries {
		if e.Requests == 0 || e.Verification.Verdict != "pass" {
			t.Errorf("%s: %d requests, verdict %q; want requests and a pass", e.Algorithm, e.Requests, e.Verification.Verdict)
		}
	}
}
