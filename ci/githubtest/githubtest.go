// Package githubtest is a fake of the part of GitHub's REST API that limitbench's action uses
// (package ci's GitHub): workflow runs, their artifacts as zip archives behind a redirect, and
// pull-request comments. It is an httptest server on a free loopback port that the test's
// cleanup closes, so the action's logic runs end to end with GITHUB_API_URL pointing at it and
// nothing leaves the machine.
package githubtest

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// Run is a workflow run the fake knows: its workflow file, branch, whether it succeeded, and
// its artifacts by name, each a zip archive.
type Run struct {
	ID        int64
	Workflow  string
	Branch    string
	Success   bool
	HeadSHA   string
	Artifacts map[string][]byte
	// Expired names artifacts listed as expired.
	Expired map[string]bool
}

// Comment is a pull request's comment.
type Comment struct {
	ID   int64  `json:"id"`
	Body string `json:"body"`
	URL  string `json:"html_url"`
}

// Server is the fake API. Requests need "Authorization: Bearer Token" except the artifact
// downloads the API redirects to. Safe for concurrent use.
type Server struct {
	*httptest.Server
	Repo, Token string

	mu       sync.Mutex
	runs     []Run // newest first
	ids      map[int64]artifact
	comments map[int][]Comment
	nextID   int64
	requests []string
}

type artifact struct {
	run  int64
	name string
}

// New starts a fake for repository repo (owner/name) that accepts token, closed when t ends.
func New(t testing.TB, repo, token string) *Server {
	t.Helper()
	s := &Server{Repo: repo, Token: token, ids: map[int64]artifact{}, comments: map[int][]Comment{}, nextID: 1000}
	mux := http.NewServeMux()
	base := "/repos/" + repo
	mux.HandleFunc("GET "+base+"/actions/workflows/{file}/runs", s.authed(s.listRuns))
	mux.HandleFunc("GET "+base+"/actions/runs", s.authed(s.listRuns))
	mux.HandleFunc("GET "+base+"/actions/runs/{id}/artifacts", s.authed(s.listArtifacts))
	mux.HandleFunc("GET "+base+"/actions/artifacts/{id}/zip", s.authed(s.redirectArtifact))
	mux.HandleFunc("GET /blob/{id}", s.blob)
	mux.HandleFunc("GET "+base+"/issues/{n}/comments", s.authed(s.listComments))
	mux.HandleFunc("POST "+base+"/issues/{n}/comments", s.authed(s.createComment))
	mux.HandleFunc("PATCH "+base+"/issues/comments/{id}", s.authed(s.editComment))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { s.fail(w, http.StatusNotFound, "Not Found") })
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.Method+" "+r.URL.RequestURI())
		s.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// AddRun adds a run, newest first.
func (s *Server) AddRun(r Run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name := range r.Artifacts {
		s.nextID++
		s.ids[s.nextID] = artifact{r.ID, name}
	}
	s.runs = append([]Run{r}, s.runs...)
}

// AddComment adds a comment to pull request n, as another user would.
func (s *Server) AddComment(n int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	s.comments[n] = append(s.comments[n], Comment{ID: s.nextID, Body: body, URL: fmt.Sprintf("%s/pull/%d#c%d", s.URL, n, s.nextID)})
}

// Comments returns pull request n's comments.
func (s *Server) Comments(n int) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Comment(nil), s.comments[n]...)
}

// Requests returns "METHOD path?query" of every request so far.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

func (s *Server) authed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+s.Token {
			s.fail(w, http.StatusUnauthorized, "Bad credentials")
			return
		}
		h(w, r)
	}
}

func (s *Server) fail(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	file := r.PathValue("file")
	per, _ := strconv.Atoi(q.Get("per_page"))
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, run := range s.runs {
		switch {
		case file != "" && run.Workflow != file, q.Get("branch") != "" && run.Branch != q.Get("branch"),
			q.Get("status") == "success" && !run.Success:
			continue
		}
		if per > 0 && len(out) == per {
			break
		}
		out = append(out, map[string]any{"id": run.ID, "head_branch": run.Branch, "head_sha": run.HeadSHA})
	}
	reply(w, http.StatusOK, map[string]any{"total_count": len(out), "workflow_runs": out})
}

func (s *Server) listArtifacts(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	name := r.URL.Query().Get("name")
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for aid, a := range s.ids {
		if a.run != id || (name != "" && a.name != name) {
			continue
		}
		expired := false
		for _, run := range s.runs {
			if run.ID == id {
				expired = run.Expired[a.name]
			}
		}
		out = append(out, map[string]any{"id": aid, "name": a.name, "expired": expired,
			"archive_download_url": fmt.Sprintf("%s/repos/%s/actions/artifacts/%d/zip", s.URL, s.Repo, aid)})
	}
	reply(w, http.StatusOK, map[string]any{"total_count": len(out), "artifacts": out})
}

func (s *Server) redirectArtifact(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	s.mu.Lock()
	_, ok := s.ids[id]
	s.mu.Unlock()
	if !ok {
		s.fail(w, http.StatusNotFound, "Not Found")
		return
	}
	http.Redirect(w, r, "/blob/"+r.PathValue("id"), http.StatusFound)
}

func (s *Server) blob(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	s.mu.Lock()
	a, ok := s.ids[id]
	var b []byte
	for _, run := range s.runs {
		if run.ID == a.run {
			b = run.Artifacts[a.name]
		}
	}
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/zip")
	_, _ = w.Write(b)
}

func (s *Server) listComments(w http.ResponseWriter, r *http.Request) {
	n, _ := strconv.Atoi(r.PathValue("n"))
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
	page, per = max(page, 1), max(per, 30)
	cs := s.Comments(n)
	lo, hi := min((page-1)*per, len(cs)), min(page*per, len(cs))
	reply(w, http.StatusOK, append([]Comment{}, cs[lo:hi]...))
}

func (s *Server) createComment(w http.ResponseWriter, r *http.Request) {
	n, _ := strconv.Atoi(r.PathValue("n"))
	var in struct {
		Body string `json:"body"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Body == "" {
		s.fail(w, http.StatusUnprocessableEntity, "Validation Failed")
		return
	}
	s.AddComment(n, in.Body)
	cs := s.Comments(n)
	reply(w, http.StatusCreated, cs[len(cs)-1])
}

func (s *Server) editComment(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	var in struct {
		Body string `json:"body"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Body == "" {
		s.fail(w, http.StatusUnprocessableEntity, "Validation Failed")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, cs := range s.comments {
		for i := range cs {
			if cs[i].ID == id {
				cs[i].Body = in.Body
				reply(w, http.StatusOK, cs[i])
				return
			}
		}
	}
	s.fail(w, http.StatusNotFound, "Not Found")
}

// Zip returns a zip archive of the files under dir, named relative to it, as
// actions/upload-artifact archives a directory.
func Zip(t testing.TB, dir string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		w, err := zw.Create(filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(w, f)
		return err
	})
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		t.Fatalf("zip %s: %v", dir, err)
	}
	return b.Bytes()
}
