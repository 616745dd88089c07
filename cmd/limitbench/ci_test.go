package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/limitbench/limitbench/ci"
	"github.com/limitbench/limitbench/ci/githubtest"
)

// actionScenario is the scenario of TestActionEndToEnd: issue 13's custom fixed-window script
// under a closed loop, short repeats. Its algorithm's entry is on line 11.
const actionScenario = `version: 1
name: gated
description: The scenario of limitbench ci's end-to-end test.
topologies: [single]
duration: 300ms
warmup: 100ms
clients: 8
keys: {count: 100, distribution: uniform}
limit: {limit: 1000, window: 1s}
algorithms:
  - name: my-limiter
    script: limiter.lua
    keys: ["fw:{{tag}}"]
    args: ["{{limit}}", "{{window_ms}}"]
    allowed: {element: 1, equals: 1}
    time: {element: 3, unit: us}
    contract: {kind: fixed-window, limit: 1000, window: 1s}
`

// actionThresholds are thresholds so wide that only a change of the size the test plants is a
// regression, so that noise on a busy machine cannot fail the passing change.
const actionThresholds = "throughput=50%,p99=100%,cpu=50%,memory=50%,efficiency=5pt"

// actionStep is one GitHub Actions step of `limitbench ci` in a faked workflow environment.
type actionStep struct {
	code                    int
	stdout, stderr, summary string
	outputs                 map[string]string
	out                     string // the results directory
}

// runActionStep runs `limitbench ci` in-process as a step of run runID, for a pull request
// (pr > 0) or a push to main, with GITHUB_* pointing at ws, the fake API and fresh event, output
// and summary files.
func runActionStep(t *testing.T, ws string, api *githubtest.Server, runID, pr int, env map[string]string, args ...string) actionStep {
	t.Helper()
	dir := t.TempDir()
	event := `{"repository": {"full_name": "o/lb", "default_branch": "main"}}`
	name, ref := "push", "main"
	if pr > 0 {
		event = fmt.Sprintf(`{"pull_request": {"number": %d, "base": {"ref": "main"}, "head": {"repo": {"full_name": "o/lb"}}},
			"repository": {"full_name": "o/lb", "default_branch": "main"}}`, pr)
		name, ref = "pull_request", fmt.Sprintf("%d/merge", pr)
	}
	eventPath := filepath.Join(dir, "event.json")
	if err := os.WriteFile(eventPath, []byte(event), 0o644); err != nil {
		t.Fatal(err)
	}
	s := actionStep{out: filepath.Join(ws, fmt.Sprintf("results-%d", runID))}
	for k, v := range map[string]string{
		"GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": ws, "GITHUB_API_URL": api.URL, "GITHUB_SERVER_URL": "https://github.example",
		"GITHUB_REPOSITORY": "o/lb", "GITHUB_TOKEN": api.Token, "GITHUB_EVENT_NAME": name, "GITHUB_EVENT_PATH": eventPath,
		"GITHUB_REF_NAME": ref, "GITHUB_WORKFLOW_REF": "o/lb/.github/workflows/limitbench.yml@refs/heads/" + ref,
		"GITHUB_RUN_ID": fmt.Sprint(runID), "GITHUB_OUTPUT": filepath.Join(dir, "output"), "GITHUB_STEP_SUMMARY": filepath.Join(dir, "summary.md"),
	} {
		t.Setenv(k, v)
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	var so, se bytes.Buffer
	s.code = run(append([]string{"ci", "--out", s.out, "--metric-threshold", actionThresholds}, append(args,
		filepath.Join(ws, "scenarios", "gated.yaml"))...), &so, &se)
	s.stdout, s.stderr = so.String(), se.String()
	t.Logf("limitbench ci (run %d, pull request %d): exit %d\nstdout:\n%s\nstderr:\n%s", runID, pr, s.code, inert(s.stdout), inert(s.stderr))
	b, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
	s.summary = string(b)
	s.outputs = map[string]string{}
	b, _ = os.ReadFile(filepath.Join(dir, "output"))
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			s.outputs[k] = v
		}
	}
	return s
}

// junitCounts reads a JUnit file's tests, failures, errors and skipped.
func junitCounts(t *testing.T, path string) [4]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("JUnit: %v", err)
	}
	var j ci.JUnit
	if err := xml.Unmarshal(b, &j); err != nil {
		t.Fatalf("JUnit %s: %v", path, err)
	}
	return [4]int{j.Tests, j.Failures, j.Errors, j.Skipped}
}

// TestActionEndToEnd runs the GitHub Action's logic (`limitbench ci`) end to end against a
// redis-server it starts, in a faked GitHub environment (event, output and summary files,
// GITHUB_API_URL at a local fake of the artifacts and comments API; nothing leaves the machine):
// a pull request before any baseline exists, the push to main that records one (its results
// directory served as the run's artifact), the pull request with the same code (passes), and with
// the script made about forty times costlier (a regression: exit 1, an annotation at the
// algorithm's line, the same comment updated). Each step is checked by the files and exit code it
// leaves. About half a minute; -short skips it.
func TestActionEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the scenario four times against real Redis")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH: %v", err)
	}
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "scenarios"), 0o755); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(repoRoot, "bench", "testdata", "gate", "issue13", "fixed_window.lua"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ws, "scenarios"), "gated.yaml", actionScenario)
	writeFile(t, filepath.Join(ws, "scenarios"), "limiter.lua", string(script))
	api := githubtest.New(t, "o/lb", "secret-token")

	// A pull request before main has a baseline: the run decides, and the comment says why.
	first := runActionStep(t, ws, api, 1, 7, nil)
	if first.code != exitOK || first.outputs["verdict"] != "no-baseline" || first.outputs["exit-code"] != "0" {
		t.Errorf("no baseline yet: exit %d, outputs %v; want 0, verdict no-baseline", first.code, first.outputs)
	}
	if cs := api.Comments(7); len(cs) != 1 || !strings.Contains(cs[0].Body, "No baseline yet") {
		t.Errorf("no baseline yet: comments %+v; want one saying so", cs)
	}

	// The push to main records the baseline; the fake serves its directory as the artifact.
	base := runActionStep(t, ws, api, 2, 0, nil)
	if base.code != exitOK || base.outputs["verdict"] != "baseline" {
		t.Fatalf("push to main: exit %d, outputs %v; want 0, verdict baseline", base.code, base.outputs)
	}
	api.AddRun(githubtest.Run{ID: 2, Workflow: "limitbench.yml", Branch: "main", Success: true, HeadSHA: "0123456789abcdef",
		Artifacts: map[string][]byte{"limitbench-results": githubtest.Zip(t, base.out)}})

	same := runActionStep(t, ws, api, 3, 7, nil)
	checkPassingChange(t, api, same)

	costly := strings.Replace(string(script), "local t = redis.call('TIME')",
		"local extra = 0\nfor i = 1, 30000 do extra = extra + i end\nlocal t = redis.call('TIME')", 1)
	writeFile(t, filepath.Join(ws, "scenarios"), "limiter.lua", costly)
	slow := runActionStep(t, ws, api, 4, 7, nil)
	checkRegression(t, api, slow)
}

// checkPassingChange checks the step of a pull request whose code did not change.
func checkPassingChange(t *testing.T, api *githubtest.Server, s actionStep) {
	t.Helper()
	if s.code != exitOK || s.outputs["exit-code"] != "0" || (s.outputs["verdict"] != "pass" && s.outputs["verdict"] != "inconclusive") {
		t.Errorf("same code: exit %d, outputs %v; want 0, verdict pass (or inconclusive)", s.code, s.outputs)
	}
	if got := sortedKeys(s.outputs); !slices.Equal(got, slices.Sorted(slices.Values(ciOutputNames))) {
		t.Errorf("same code: step outputs %v; want %v", got, ciOutputNames)
	}
	for _, f := range []string{"result.json", "junit.xml", "metrics.txt", "gate.md", "gate-junit.xml"} {
		if _, err := os.Stat(filepath.Join(s.out, f)); err != nil {
			t.Errorf("same code: %v", err)
		}
	}
	if got := junitCounts(t, filepath.Join(s.out, "gate-junit.xml")); got[0] == 0 || got[1] != 0 {
		t.Errorf("same code: gate JUnit (tests, failures, errors, skipped) = %v; want rows and no failure", got)
	}
	if got := junitCounts(t, filepath.Join(s.out, "junit.xml")); got != [4]int{1, 0, 0, 0} {
		t.Errorf("same code: run JUnit (tests, failures, errors, skipped) = %v; want my-limiter's pass", got)
	}
	for _, want := range []string{"## limitbench ci: ", "Baseline: artifact limitbench-results of run 2 on main (commit 0123456789ab).",
		"| gated | my-limiter | single | cpu ", "<details><summary>The run: verdicts and findings</summary>"} {
		if !strings.Contains(s.summary, want) {
			t.Errorf("same code: the job summary lacks %q:\n%s", want, s.summary)
		}
	}
	cs := api.Comments(7)
	if len(cs) != 1 || !strings.Contains(cs[0].Body, "<!-- limitbench ci: ") || !strings.Contains(cs[0].Body, "**limitbench gate: ") ||
		!strings.Contains(cs[0].Body, "(https://github.example/o/lb/actions/runs/3)") {
		t.Errorf("same code: comments %+v; want the one comment, updated with the gate's table and a link to run 3", cs)
	}
	want := "GET /repos/o/lb/actions/workflows/limitbench.yml/runs?branch=main&per_page=30&status=success"
	if !slices.Contains(api.Requests(), want) {
		t.Errorf("the baseline was not looked up as %q; requests: %q", want, api.Requests())
	}
}

// checkRegression checks the step of a pull request whose script got much costlier.
func checkRegression(t *testing.T, api *githubtest.Server, s actionStep) {
	t.Helper()
	if s.code != exitFailed || s.outputs["verdict"] != "regression" || s.outputs["exit-code"] != "1" {
		t.Errorf("costlier script: exit %d, outputs %v; want 1, verdict regression", s.code, s.outputs)
	}
	ann := regexp.MustCompile(`(?m)^::error file=scenarios/gated\.yaml,line=11,title=limitbench gate%3A my-limiter on single::cpu \((raw|relative) figures\): median .*, change \+.*: regression$`)
	if !ann.MatchString(s.stdout) {
		t.Errorf("costlier script: no ::error annotation of the CPU regression at scenarios/gated.yaml line 11 in stdout:\n%s", s.stdout)
	}
	if got := junitCounts(t, filepath.Join(s.out, "gate-junit.xml")); got[1] == 0 {
		t.Errorf("costlier script: gate JUnit (tests, failures, errors, skipped) = %v; want failures", got)
	}
	if !strings.Contains(s.summary, "**limitbench gate: REGRESSION in scenario gated:") {
		t.Errorf("costlier script: the job summary does not say REGRESSION:\n%s", s.summary)
	}
	cs := api.Comments(7)
	if len(cs) != 1 || !strings.Contains(cs[0].Body, "REGRESSION") || !strings.Contains(cs[0].Body, "actions/runs/4") {
		t.Errorf("costlier script: comments %+v; want the same one comment, now saying REGRESSION, linking run 4", cs)
	}
	if !strings.Contains(s.stderr, "regression") {
		t.Errorf("costlier script: stderr does not say why it failed:\n%s", s.stderr)
	}
}

// TestActionBadInput: limitbench ci refuses bad flags, a missing baseline file and a baseline
// the API will not give, with exit 2 before anything runs.
func TestActionBadInput(t *testing.T) {
	dir := t.TempDir()
	scenario := writeFile(t, dir, "s.yaml", "version: 1\nalgorithms: [gcra]\n")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"ci"}, "give exactly one scenario file"},
		{[]string{"ci", "--repeat", "5", scenario}, "--repeat 5: the gate needs at least 6 repeats a side"},
		{[]string{"ci", "--metric-threshold", "latency=5%", scenario}, `--metric-threshold: bad metric threshold: "latency=5%": unknown metric "latency"`},
		{[]string{"ci", "--baseline", filepath.Join(dir, "missing.json"), scenario}, "--baseline: stat " + filepath.Join(dir, "missing.json")},
	} {
		code, _, stderr := runIn(t, tt.args...)
		if code != exitBadInput || !strings.Contains(stderr, tt.want) {
			t.Errorf("limitbench %v: exit %d; want 2 and %q\n%s", tt.args, code, tt.want, stderr)
		}
	}
	api := githubtest.New(t, "o/lb", "right")
	s := runActionStep(t, dir, api, 9, 7, map[string]string{"GITHUB_TOKEN": "wrong"})
	if s.code != exitBadInput || !strings.Contains(s.stderr, "find the baseline (the workflow needs permissions: actions: read): GitHub API GET ") ||
		!strings.Contains(s.stderr, "401 Bad credentials") || s.outputs["verdict"] != "error" || s.outputs["exit-code"] != "2" {
		t.Errorf("a token the API refuses: exit %d, outputs %v; want 2, verdict error, and the API's answer\n%s", s.code, s.outputs, s.stderr)
	}
	if _, err := os.Stat(s.out); err == nil {
		t.Errorf("a token the API refuses: the run ran (%s exists); want it refused first", s.out)
	}
}

// ciOutputNames are the step outputs limitbench ci writes (TestActionEndToEnd checks them).
var ciOutputNames = []string{"verdict", "exit-code", "results", "junit", "gate-junit", "comment-url"}

// limitbenchCommands returns the limitbench command lines of a shell script, as words.
func limitbenchCommands(script string) [][]string {
	var out [][]string
	for _, line := range logicalLines(script) {
		for _, words := range shellCommands(line) {
			if len(words) > 0 && filepath.Base(words[0]) == "limitbench" {
				out = append(out, words)
			}
		}
	}
	return out
}

// flagValue returns the value of --name in a command's words ("" when absent).
func flagValue(words []string, name string) string {
	for i, w := range words {
		if w == "--"+name && i+1 < len(words) {
			return words[i+1]
		}
		if v, ok := strings.CutPrefix(w, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// TestActionFiles checks action.yml and the GitLab template against limitbench ci: every
// limitbench command uses flags it has; the action's inputs are exactly the documented ones and
// each reaches the command; its outputs are outputs ci writes; what is uploaded (GitHub) or
// reported (GitLab) is the results directory and the files ci writes into it, under the
// artifact name ci looks the baseline up by.
func TestActionFiles(t *testing.T) {
	c := newDocChecker(t)
	var action struct {
		Inputs  map[string]struct{ Default string }
		Outputs map[string]struct{ Value string }
		Runs    struct {
			Using string
			Steps []struct {
				ID, Uses, Run, If string
				Env               map[string]string
				With              map[string]string
			}
		}
	}
	if err := yaml.Unmarshal([]byte(readRepoFile(t, "action.yml")), &action); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	if action.Runs.Using != "composite" {
		t.Errorf("action.yml runs.using = %q; want composite", action.Runs.Using)
	}
	inputs := sortedKeys(action.Inputs)
	if want := []string{"baseline-branch", "fail-on-inconclusive", "repeats", "scenario", "thresholds"}; !slices.Equal(inputs, want) {
		t.Errorf("action.yml inputs %v; want %v", inputs, want)
	}
	var cmd []string
	var out, artifact string
	for _, s := range action.Runs.Steps {
		for _, words := range limitbenchCommands(s.Run) {
			c.checkLimitbench("action.yml step "+s.ID, words[1:])
			if words[1] == "ci" {
				cmd = words
				out, artifact = flagValue(words, "out"), flagValue(words, "artifact")
				for _, in := range inputs {
					env := "INPUT_" + strings.ToUpper(strings.ReplaceAll(in, "-", "_"))
					if s.Env[env] != "${{ inputs."+in+" }}" || !strings.Contains(s.Run, `"$`+env+`"`) {
						t.Errorf("action.yml: input %s does not reach limitbench ci through $%s", in, env)
					}
				}
			}
		}
		if strings.HasPrefix(s.Uses, "actions/upload-artifact@") {
			if s.If != "always()" || s.With["name"] != artifact || strings.TrimSuffix(s.With["path"], "/") != out || artifact != "limitbench-results" {
				t.Errorf("action.yml uploads %q as %q (if %q); want always the results directory %q as %q, ci's default artifact",
					s.With["path"], s.With["name"], s.If, out, artifact)
			}
		}
	}
	if cmd == nil {
		t.Fatal("action.yml runs no limitbench ci")
	}
	for name, o := range action.Outputs {
		v, ok := strings.CutPrefix(o.Value, "${{ steps.ci.outputs.")
		if !ok || !slices.Contains(ciOutputNames, strings.TrimSuffix(v, " }}")) || !slices.Contains(ciOutputNames, name) {
			t.Errorf("action.yml output %s = %q; want one of limitbench ci's step outputs %v", name, o.Value, ciOutputNames)
		}
	}
	checkGitLabTemplate(t, c)
	for _, p := range c.probs {
		t.Error(p)
	}
}

// checkGitLabTemplate checks ci/gitlab/limitbench.gitlab-ci.yml as TestActionFiles says.
func checkGitLabTemplate(t *testing.T, c *docChecker) {
	t.Helper()
	var tmpl map[string]struct {
		Script    []string
		Artifacts struct {
			When    string
			Paths   []string
			Reports struct{ Junit, Metrics string }
		}
	}
	if err := yaml.Unmarshal([]byte(readRepoFile(t, "ci/gitlab/limitbench.gitlab-ci.yml")), &tmpl); err != nil {
		t.Fatalf("ci/gitlab/limitbench.gitlab-ci.yml: %v", err)
	}
	job, ok := tmpl["limitbench"]
	if !ok {
		t.Fatal("the GitLab template has no job limitbench")
	}
	out := ""
	for _, line := range job.Script {
		for _, words := range limitbenchCommands(line) {
			c.checkLimitbench("ci/gitlab/limitbench.gitlab-ci.yml", words[1:])
			if words[1] == "ci" {
				out = flagValue(words, "out")
			}
		}
	}
	a := job.Artifacts
	if out == "" || a.When != "always" || !slices.Contains(a.Paths, out+"/") {
		t.Errorf("GitLab template: limitbench ci --out %q, artifacts %+v; want the results directory kept always", out, a)
	}
	for _, f := range []string{"junit.xml", "gate-junit.xml"} {
		if ok, _ := filepath.Match(a.Reports.Junit, out+"/"+f); !ok {
			t.Errorf("GitLab template: artifacts:reports:junit %q does not take %s/%s", a.Reports.Junit, out, f)
		}
	}
	if a.Reports.Metrics != out+"/metrics.txt" {
		t.Errorf("GitLab template: artifacts:reports:metrics %q; want %s/metrics.txt", a.Reports.Metrics, out)
	}
	if !strings.Contains(strings.Join(job.Script, "\n"), "/raw/"+out+"/result.json?job=$CI_JOB_NAME") {
		t.Errorf("GitLab template: the baseline is not fetched from %s/result.json of this job's artifacts", out)
	}
}
