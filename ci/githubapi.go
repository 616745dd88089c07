package ci

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/limitbench/limitbench/result"
)

// Event is what the limitbench action needs of the event that started a workflow: its name
// ($GITHUB_EVENT_NAME) and, from its payload ($GITHUB_EVENT_PATH), the pull request's number,
// base branch and head repository, and the repository's default branch.
type Event struct {
	Name string
	// PullRequest is the pull request's number; 0 when the event is not about one.
	PullRequest int
	// BaseRef is the pull request's base branch; HeadRepo and Repo are the head's and the base's
	// repositories (owner/name): they differ for a pull request from a fork, whose token cannot
	// comment.
	BaseRef, HeadRepo, Repo string
	// DefaultBranch is the repository's default branch.
	DefaultBranch string
}

// FromFork reports whether e is a pull request from another repository.
func (e Event) FromFork() bool { return e.PullRequest > 0 && e.HeadRepo != "" && e.HeadRepo != e.Repo }

// ReadEvent reads the event called name from its payload file at path ("" reads none).
func ReadEvent(name, path string) (Event, error) {
	e := Event{Name: name}
	if path == "" {
		return e, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return e, fmt.Errorf("read the event payload: %w", err)
	}
	var p struct {
		PullRequest *struct {
			Number int `json:"number"`
			Base   struct {
				Ref string `json:"ref"`
			} `json:"base"`
			Head struct {
				Repo *struct {
					FullName string `json:"full_name"`
				} `json:"repo"`
			} `json:"head"`
		} `json:"pull_request"`
		Repository struct {
			FullName      string `json:"full_name"`
			DefaultBranch string `json:"default_branch"`
		} `json:"repository"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return e, fmt.Errorf("%s: the event payload is not JSON: %w", path, err)
	}
	e.Repo, e.DefaultBranch = p.Repository.FullName, p.Repository.DefaultBranch
	if pr := p.PullRequest; pr != nil {
		e.PullRequest, e.BaseRef = pr.Number, pr.Base.Ref
		if pr.Head.Repo != nil {
			e.HeadRepo = pr.Head.Repo.FullName
		}
	}
	return e, nil
}

// WorkflowFile returns the file name of the workflow in $GITHUB_WORKFLOW_REF
// ("owner/repo/.github/workflows/gate.yml@refs/heads/main" gives "gate.yml"); "" when ref names
// none.
func WorkflowFile(ref string) string {
	p, _, _ := strings.Cut(ref, "@")
	if !strings.Contains(p, "/.github/workflows/") {
		return ""
	}
	return path.Base(p)
}

// GitHub is the part of GitHub's REST API the limitbench action uses: the artifact that holds
// the baseline, and the pull-request comment. API is $GITHUB_API_URL, Repo owner/name, Token the
// workflow's token; Client nil uses http.DefaultClient.
type GitHub struct {
	API, Repo, Token string
	Client           *http.Client
}

// APIError is an answer of the API other than success.
type APIError struct {
	Method, Path string
	Status       int
	Message      string
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("GitHub API %s %s: %d", e.Method, e.Path, e.Status)
	if e.Message != "" {
		s += " " + e.Message
	}
	return s
}

// ErrNoBaseline reports that no successful run of the workflow on the branch holds the artifact.
var ErrNoBaseline = errors.New("no baseline")

// do sends a request to the API path (with its query) and decodes a JSON answer into out (nil:
// none expected).
func (g *GitHub) do(ctx context.Context, method, p string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	resp, err := g.send(ctx, method, p, rd)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 32<<20)).Decode(out); err != nil {
		return fmt.Errorf("GitHub API %s %s: the answer is not the JSON expected: %w", method, p, err)
	}
	return nil
}

// send sends a request and returns a successful answer, or an *APIError with GitHub's message.
func (g *GitHub) send(ctx context.Context, method, p string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(g.API, "/")+p, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	req.Header.Set("User-Agent", "limitbench")
	if g.Token != "" {
		req.Header.Set("Authorization", "Bearer "+g.Token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c := g.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GitHub API %s %s: %w", method, p, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	var msg struct {
		Message string `json:"message"`
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&msg)
	return nil, &APIError{Method: method, Path: p, Status: resp.StatusCode, Message: msg.Message}
}

// Artifact is a workflow run's artifact.
type Artifact struct {
	ID      int64  `json:"id"`
	Name    string `json:"name"`
	Expired bool   `json:"expired"`
	// RunID is the workflow run that uploaded it; HeadSHA that run's commit.
	RunID   int64  `json:"-"`
	HeadSHA string `json:"-"`
}

// FindBaseline returns the artifact called name of the newest successful run on branch of the
// workflow file (all workflows when ""), among the 30 newest such runs, skipping run skip (the
// current run). It returns an error wrapping ErrNoBaseline when none of them holds one that has
// not expired.
func (g *GitHub) FindBaseline(ctx context.Context, workflow, branch, name string, skip int64) (*Artifact, error) {
	p := "/repos/" + g.Repo + "/actions/runs"
	if workflow != "" {
		p = "/repos/" + g.Repo + "/actions/workflows/" + url.PathEscape(workflow) + "/runs"
	}
	q := url.Values{"branch": {branch}, "status": {"success"}, "per_page": {"30"}}
	var runs struct {
		Runs []struct {
			ID      int64  `json:"id"`
			HeadSHA string `json:"head_sha"`
		} `json:"workflow_runs"`
	}
	if err := g.do(ctx, http.MethodGet, p+"?"+q.Encode(), nil, &runs); err != nil {
		return nil, err
	}
	for _, r := range runs.Runs {
		if r.ID == skip {
			continue
		}
		var arts struct {
			Artifacts []Artifact `json:"artifacts"`
		}
		ap := fmt.Sprintf("/repos/%s/actions/runs/%d/artifacts?%s", g.Repo, r.ID, url.Values{"name": {name}}.Encode())
		if err := g.do(ctx, http.MethodGet, ap, nil, &arts); err != nil {
			return nil, err
		}
		for _, a := range arts.Artifacts {
			if a.Name == name && !a.Expired {
				a.RunID, a.HeadSHA = r.ID, r.HeadSHA
				return &a, nil
			}
		}
	}
	where := "any workflow"
	if workflow != "" {
		where = "workflow " + workflow
	}
	return nil, fmt.Errorf("%w: none of the %d newest successful runs of %s on %s has an artifact %q that has not expired",
		ErrNoBaseline, len(runs.Runs), where, branch, name)
}

// DownloadResult downloads artifact a (a zip archive) and writes the result.json it holds into
// dir, returning its path. Of several, the one nearest the archive's root is taken; nothing else
// is extracted.
func (g *GitHub) DownloadResult(ctx context.Context, a *Artifact, dir string) (string, error) {
	p := fmt.Sprintf("/repos/%s/actions/artifacts/%d/zip", g.Repo, a.ID)
	resp, err := g.send(ctx, http.MethodGet, p, nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	tmp, err := os.CreateTemp("", "limitbench-artifact-*.zip")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	n, err := io.Copy(tmp, resp.Body)
	if err != nil {
		return "", fmt.Errorf("GitHub API GET %s: %w", p, err)
	}
	zr, err := zip.NewReader(tmp, n)
	if err != nil {
		return "", fmt.Errorf("artifact %q of run %d: not a zip archive: %w", a.Name, a.RunID, err)
	}
	var best *zip.File
	for _, f := range zr.File {
		if path.Base(f.Name) != result.FileName || f.FileInfo().IsDir() {
			continue
		}
		if best == nil || strings.Count(f.Name, "/") < strings.Count(best.Name, "/") {
			best = f
		}
	}
	if best == nil {
		return "", fmt.Errorf("artifact %q of run %d holds no %s", a.Name, a.RunID, result.FileName)
	}
	rc, err := best.Open()
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return "", fmt.Errorf("artifact %q of run %d: %s: %w", a.Name, a.RunID, best.Name, err)
	}
	out := filepath.Join(dir, result.FileName)
	return out, result.WriteFile(out, b)
}

// Comment is a pull request's (an issue's) comment.
type Comment struct {
	ID      int64  `json:"id"`
	Body    string `json:"body"`
	HTMLURL string `json:"html_url"`
}

// CommentLimit is the longest comment GitHub takes, in characters.
const CommentLimit = 65536

// UpsertComment makes body the text of the one comment on pull request (issue) number that
// holds marker: it edits the first such comment, or creates one. body should hold marker. It
// returns the comment and whether it was created.
func (g *GitHub) UpsertComment(ctx context.Context, number int, marker, body string) (*Comment, bool, error) {
	var found *Comment
	for page := 1; found == nil; page++ {
		var cs []Comment
		p := fmt.Sprintf("/repos/%s/issues/%d/comments?per_page=100&page=%d", g.Repo, number, page)
		if err := g.do(ctx, http.MethodGet, p, nil, &cs); err != nil {
			return nil, false, err
		}
		for i := range cs {
			if strings.Contains(cs[i].Body, marker) {
				found = &cs[i]
				break
			}
		}
		if len(cs) < 100 {
			break
		}
	}
	var c Comment
	msg := map[string]string{"body": body}
	if found != nil {
		err := g.do(ctx, http.MethodPatch, fmt.Sprintf("/repos/%s/issues/comments/%d", g.Repo, found.ID), msg, &c)
		return &c, false, err
	}
	err := g.do(ctx, http.MethodPost, fmt.Sprintf("/repos/%s/issues/%d/comments", g.Repo, number), msg, &c)
	return &c, true, err
}
