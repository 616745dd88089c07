package ci

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limitbench/limitbench/ci/githubtest"
	"github.com/limitbench/limitbench/result"
)

func TestReadEvent(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pr := write("pr.json", `{"pull_request": {"number": 7, "base": {"ref": "main"}, "head": {"repo": {"full_name": "fork/lb"}}},
		"repository": {"full_name": "o/lb", "default_branch": "trunk"}}`)
	e, err := ReadEvent("pull_request", pr)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Event{Name: "pull_request", PullRequest: 7, BaseRef: "main", HeadRepo: "fork/lb", Repo: "o/lb", DefaultBranch: "trunk"}); e != want {
		t.Errorf("ReadEvent = %+v; want %+v", e, want)
	}
	if !e.FromFork() {
		t.Error("a pull request from fork/lb into o/lb is not from a fork")
	}
	push, err := ReadEvent("push", write("push.json", `{"repository": {"full_name": "o/lb", "default_branch": "main"}}`))
	if err != nil || push.PullRequest != 0 || push.FromFork() || push.DefaultBranch != "main" {
		t.Errorf("push event = %+v, %v", push, err)
	}
	if _, err := ReadEvent("push", write("bad.json", `{`)); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Errorf("a payload that is not JSON: %v; want an error naming the file", err)
	}
}

func TestWorkflowFile(t *testing.T) {
	for ref, want := range map[string]string{
		"o/lb/.github/workflows/gate.yml@refs/heads/main":  "gate.yml",
		"o/lb/.github/workflows/ci.yaml@refs/pull/7/merge": "ci.yaml",
		"": "",
	} {
		if got := WorkflowFile(ref); got != want {
			t.Errorf("WorkflowFile(%q) = %q; want %q", ref, got, want)
		}
	}
}

// baselineZip returns an artifact holding a result.json of scenario name at dir/result.json
// (and a decoy deeper down).
func baselineZip(t *testing.T, name string) []byte {
	t.Helper()
	dir := t.TempDir()
	r := &result.Result{Schema: result.SchemaVersion, Scenario: result.Scenario{Name: name}}
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	decoy := &result.Result{Schema: result.SchemaVersion, Scenario: result.Scenario{Name: "decoy"}}
	if err := decoy.Write(filepath.Join(dir, "older", "run")); err != nil {
		t.Fatal(err)
	}
	return githubtest.Zip(t, dir)
}

// TestFindAndDownloadBaseline: the newest successful run on the branch of the workflow that has
// the artifact, not expired, not the current run; its result.json nearest the archive's root,
// downloaded through the API's redirect.
func TestFindAndDownloadBaseline(t *testing.T) {
	api := githubtest.New(t, "o/lb", "tok")
	art := map[string][]byte{"limitbench-results": baselineZip(t, "good")}
	api.AddRun(githubtest.Run{ID: 1, Workflow: "gate.yml", Branch: "main", Success: true, HeadSHA: "aaa", Artifacts: art})
	api.AddRun(githubtest.Run{ID: 2, Workflow: "gate.yml", Branch: "main", Success: true, HeadSHA: "bbb",
		Artifacts: map[string][]byte{"limitbench-results": baselineZip(t, "expired")}, Expired: map[string]bool{"limitbench-results": true}})
	api.AddRun(githubtest.Run{ID: 3, Workflow: "gate.yml", Branch: "main", Success: false, Artifacts: map[string][]byte{"limitbench-results": baselineZip(t, "failed")}})
	api.AddRun(githubtest.Run{ID: 4, Workflow: "other.yml", Branch: "main", Success: true, Artifacts: map[string][]byte{"limitbench-results": baselineZip(t, "other")}})
	api.AddRun(githubtest.Run{ID: 5, Workflow: "gate.yml", Branch: "feature", Success: true, Artifacts: map[string][]byte{"limitbench-results": baselineZip(t, "feature")}})
	api.AddRun(githubtest.Run{ID: 6, Workflow: "gate.yml", Branch: "main", Success: true, Artifacts: map[string][]byte{"other-name": baselineZip(t, "name")}})
	api.AddRun(githubtest.Run{ID: 7, Workflow: "gate.yml", Branch: "main", Success: true, Artifacts: map[string][]byte{"limitbench-results": baselineZip(t, "current")}})
	g := &GitHub{API: api.URL, Repo: "o/lb", Token: "tok"}
	ctx := context.Background()
	a, err := g.FindBaseline(ctx, "gate.yml", "main", "limitbench-results", 7)
	if err != nil {
		t.Fatal(err)
	}
	if a.RunID != 1 || a.HeadSHA != "aaa" {
		t.Errorf("FindBaseline = run %d (%s); want run 1 (aaa)", a.RunID, a.HeadSHA)
	}
	path, err := g.DownloadResult(ctx, a, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r, err := result.Read(path)
	if err != nil || r.Scenario.Name != "good" {
		t.Errorf("downloaded result: %v, scenario %q; want scenario good (the archive's top result.json)", err, r.Scenario.Name)
	}

	if _, err := g.FindBaseline(ctx, "gate.yml", "release", "limitbench-results", 0); !errors.Is(err, ErrNoBaseline) ||
		!strings.Contains(err.Error(), `workflow gate.yml on release has an artifact "limitbench-results"`) {
		t.Errorf("no run on the branch: %v; want ErrNoBaseline naming workflow, branch and artifact", err)
	}
	bad := &GitHub{API: api.URL, Repo: "o/lb", Token: "wrong"}
	var apiErr *APIError
	if _, err := bad.FindBaseline(ctx, "gate.yml", "main", "limitbench-results", 0); !errors.As(err, &apiErr) || apiErr.Status != 401 ||
		!strings.Contains(err.Error(), "401 Bad credentials") {
		t.Errorf("a wrong token: %v; want the API's 401 with its message", err)
	}
}

// TestUpsertComment: the first call creates the comment, later ones edit it, also past the
// first page of comments; other comments are left alone.
func TestUpsertComment(t *testing.T) {
	api := githubtest.New(t, "o/lb", "tok")
	for range 120 {
		api.AddComment(7, "someone else")
	}
	g := &GitHub{API: api.URL, Repo: "o/lb", Token: "tok"}
	ctx := context.Background()
	c, created, err := g.UpsertComment(ctx, 7, "<!-- m -->", "<!-- m -->\nfirst")
	if err != nil || !created {
		t.Fatalf("first UpsertComment: created %v, %v; want created", created, err)
	}
	c2, created, err := g.UpsertComment(ctx, 7, "<!-- m -->", "<!-- m -->\nsecond")
	if err != nil || created || c2.ID != c.ID {
		t.Fatalf("second UpsertComment: created %v, id %d (first %d), %v; want the same comment edited", created, c2.ID, c.ID, err)
	}
	cs := api.Comments(7)
	if len(cs) != 121 || cs[120].Body != "<!-- m -->\nsecond" || cs[0].Body != "someone else" {
		t.Errorf("%d comments, last %q; want 121, the last ours edited", len(cs), cs[len(cs)-1].Body)
	}
}
