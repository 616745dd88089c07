//go:build unix

// What make release-snapshot wrote in dist/ (.goreleaser.yaml): an archive for each of Linux,
// macOS and Windows on amd64 and arm64 holding a static, -trimpath binary that knows its version
// and commit, checksums that match, deb and rpm packages that recommend redis-server; then the
// .deb installed on this machine (dpkg -i as root; unpacked with dpkg-deb -x otherwise) runs
// `limitbench version` and the smoke scenario it ships.
//
// These tests need dist/ from the commit under test (CI runs make release-snapshot before make
// test). Without it they skip, saying so, except under CI (CI set), where they fail.

package release_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// artifact is one entry of dist/artifacts.json.
type artifact struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	Goos   string `json:"goos"`
	Goarch string `json:"goarch"`
	Type   string `json:"type"`
	Extra  struct {
		Format string `json:"Format"`
	} `json:"extra"`
}

// snapshot is dist/ as goreleaser left it.
type snapshot struct {
	dir       string
	version   string // metadata.json's, without the v the binaries carry
	commit    string
	artifacts []artifact
}

// loadDist reads dist/ and checks that it was built from the checkout's commit; it skips the
// test (fails it under CI) when there is none or it is stale.
func loadDist(t *testing.T) snapshot {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...) + ": run make release-snapshot first"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip("skipped: " + msg)
	}
	s := snapshot{dir: filepath.Join(root, "dist")}
	if d := os.Getenv("LIMITBENCH_DIST"); d != "" {
		s.dir = d
	}
	var meta struct {
		Version string `json:"version"`
		Commit  string `json:"commit"`
	}
	b, err := os.ReadFile(filepath.Join(s.dir, "metadata.json"))
	if err != nil {
		missing("no release snapshot in %s (%v)", s.dir, err)
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatalf("%s/metadata.json: %v", s.dir, err)
	}
	s.version, s.commit = meta.Version, meta.Commit
	if head := gitHead(); head != "" && head != s.commit {
		missing("%s was built from commit %s, the checkout is at %s", s.dir, s.commit, head)
	}
	b, err = os.ReadFile(filepath.Join(s.dir, "artifacts.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &s.artifacts); err != nil {
		t.Fatalf("%s/artifacts.json: %v", s.dir, err)
	}
	return s
}

// of returns the artifacts of type typ.
func (s snapshot) of(typ string) []artifact {
	var out []artifact
	for _, a := range s.artifacts {
		if a.Type == typ {
			out = append(out, a)
		}
	}
	return out
}

// path returns a's file, relative to the test's directory (artifacts.json's paths are relative
// to the repository's root).
func (s snapshot) path(a artifact) string {
	if filepath.IsAbs(a.Path) {
		return a.Path
	}
	return filepath.Join(s.dir, "..", a.Path)
}

var platforms = []string{"darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64", "windows/amd64", "windows/arm64"}

func TestArchives(t *testing.T) {
	s := loadDist(t)
	var got []string
	for _, a := range s.of("Archive") {
		p := a.Goos + "/" + a.Goarch
		got = append(got, p)
		t.Run(p, func(t *testing.T) {
			want := "tar.gz"
			if a.Goos == "windows" {
				want = "zip"
			}
			if !strings.HasSuffix(a.Name, "."+want) {
				t.Errorf("%s: want a .%s", a.Name, want)
			}
			bin := "limitbench"
			if a.Goos == "windows" {
				bin += ".exe"
			}
			data := member(t, s.path(a), bin)
			checkBinary(t, a.Name+": "+bin, data, a.Goos, a.Goarch, s)
		})
	}
	slices.Sort(got)
	if !slices.Equal(got, platforms) {
		t.Errorf("archives for %v; want %v", got, platforms)
	}
}

// member returns the contents of the file named name (at any depth) in the archive at path.
func member(t *testing.T, path, name string) []byte {
	t.Helper()
	if strings.HasSuffix(path, ".zip") {
		zr, err := zip.OpenReader(path)
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		for _, f := range zr.File {
			if filepath.Base(f.Name) == name {
				rc, err := f.Open()
				if err != nil {
					t.Fatal(err)
				}
				defer rc.Close()
				b, err := io.ReadAll(rc)
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
		}
		t.Fatalf("%s holds no %s", path, name)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if filepath.Base(h.Name) == name && h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
	t.Fatalf("%s holds no %s", path, name)
	return nil
}

// checkBinary checks the build settings recorded in a binary (its platform, CGO_ENABLED=0,
// -trimpath) and that it holds the version and commit set at link time.
func checkBinary(t *testing.T, name string, data []byte, goos, goarch string, s snapshot) {
	t.Helper()
	tmp := filepath.Join(t.TempDir(), "bin")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	bi, err := buildinfo.ReadFile(tmp)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	settings := map[string]string{}
	for _, st := range bi.Settings {
		settings[st.Key] = st.Value
	}
	for k, want := range map[string]string{"GOOS": goos, "GOARCH": goarch, "CGO_ENABLED": "0", "-trimpath": "true"} {
		if settings[k] != want {
			t.Errorf("%s: %s=%q; want %q", name, k, settings[k], want)
		}
	}
	// -trimpath leaves -ldflags out of the build settings: look for the -X values themselves.
	for _, want := range []string{"v" + s.version, s.commit} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("%s: the binary does not hold %q (set with -X at link time)", name, want)
		}
	}
}

func TestChecksums(t *testing.T) {
	s := loadDist(t)
	sums := s.of("Checksum")
	if len(sums) != 1 {
		t.Fatalf("%d checksum files; want 1", len(sums))
	}
	b, err := os.ReadFile(s.path(sums[0]))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) != 2 {
			t.Fatalf("checksums.txt: line %q", line)
		}
		listed[f[1]] = f[0]
	}
	files := append(s.of("Archive"), s.of("Linux Package")...)
	for _, a := range files {
		data, err := os.ReadFile(s.path(a))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); listed[a.Name] != got {
			t.Errorf("checksums.txt: %s %q; want %s", a.Name, listed[a.Name], got)
		}
	}
	if len(listed) != len(files) {
		t.Errorf("checksums.txt lists %d files; want the %d archives and packages", len(listed), len(files))
	}
}

// deb returns the .deb for this machine's architecture.
func (s snapshot) deb(t *testing.T) string {
	t.Helper()
	var formats []string
	for _, a := range s.of("Linux Package") {
		formats = append(formats, a.Extra.Format+"/"+a.Goarch)
	}
	slices.Sort(formats)
	if want := []string{"deb/amd64", "deb/arm64", "rpm/amd64", "rpm/arm64"}; !slices.Equal(formats, want) {
		t.Errorf("packages %v; want %v", formats, want)
	}
	for _, a := range s.of("Linux Package") {
		if a.Extra.Format == "deb" && a.Goarch == runtime.GOARCH {
			return s.path(a)
		}
	}
	t.Fatalf("no .deb for %s", runtime.GOARCH)
	return ""
}

func TestDeb(t *testing.T) {
	s := loadDist(t)
	deb := s.deb(t)
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skip("skipped: no dpkg-deb on PATH (not a Debian-like machine): the .deb is not installed")
	}
	out, err := exec.Command("dpkg-deb", "--field", deb, "Package", "Recommends", "Architecture").CombinedOutput()
	if err != nil {
		t.Fatalf("dpkg-deb --field %s: %v\n%s", deb, err, out)
	}
	if f := string(out); !strings.Contains(f, "Package: limitbench") || !strings.Contains(f, "Recommends: redis-server") {
		t.Errorf("%s: control fields\n%s\nwant Package limitbench and Recommends redis-server", deb, f)
	}
	bin := install(t, deb)

	out, err = exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "limitbench v"+s.version+"\n") || !strings.Contains(string(out), "commit   "+s.commit+"\n") {
		t.Errorf("%s version: %v\n%s\nwant version v%s and commit %s", bin, err, out, s.version, s.commit)
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("skipped the smoke run: no redis-server on PATH (the package only recommends it)")
	}
	smoke(t, bin, filepath.Join(filepath.Dir(bin), "..", "share", "limitbench", "scenarios", "smoke.yaml"), s.commit)
}

// install installs deb and returns the path of the installed binary: with dpkg -i as root (the
// package is removed when the test ends), else unpacked with dpkg-deb -x into a temporary
// directory.
func install(t *testing.T, deb string) string {
	t.Helper()
	_, err := exec.LookPath("dpkg")
	if os.Getuid() != 0 || err != nil {
		t.Logf("not root with dpkg: %s is unpacked with dpkg-deb -x, not installed", deb)
		dir := t.TempDir()
		if out, err := exec.Command("dpkg-deb", "-x", deb, dir).CombinedOutput(); err != nil {
			t.Fatalf("dpkg-deb -x: %v\n%s", err, out)
		}
		return filepath.Join(dir, "usr", "bin", "limitbench")
	}
	if out, err := exec.Command("dpkg-query", "-W", "-f", "${Status}", "limitbench").Output(); err == nil && strings.Contains(string(out), "installed") {
		t.Skip("skipped: a limitbench package is installed on this machine already; not replacing it")
	}
	t.Cleanup(func() {
		if out, err := exec.Command("dpkg", "--purge", "limitbench").CombinedOutput(); err != nil {
			t.Errorf("dpkg --purge limitbench: %v\n%s", err, out)
		}
	})
	if out, err := exec.Command("dpkg", "-i", deb).CombinedOutput(); err != nil {
		t.Fatalf("dpkg -i %s: %v\n%s", deb, err, out)
	}
	t.Logf("installed %s with dpkg -i", deb)
	return "/usr/bin/limitbench"
}

// smoke runs the smoke scenario the package installed with bin, and checks its result.
func smoke(t *testing.T, bin, scenario, commit string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "results")
	cmd := exec.Command(bin, smokeArgs(scenario, out)...)
	output, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, output)
	}
	checkSmoke(t, out, commit, string(output), code)
}
