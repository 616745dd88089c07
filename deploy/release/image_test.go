//go:build unix

// The image make image builds, on the offline path CI can take (IMAGE_FROM=host: FROM scratch
// from this machine's files): it runs as a non-root user, says which commit it was built from,
// runs the smoke scenario with the process backend inside and exits 0, writes results the host
// user can read, and leaves no container or process behind.

package release_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// docker runs the docker CLI and returns its combined output.
func docker(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
	return string(out), err
}

// needEngine skips the test, saying why, when no Docker engine answers.
func needEngine(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("skipped: no docker CLI on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if out, err := docker(ctx, "info", "--format", "{{.ServerVersion}}"); err != nil {
		t.Skipf("skipped: no Docker engine answers (docker info: %v: %s)", err, strings.TrimSpace(out))
	}
}

// buildImage runs make image with IMAGE_FROM=host under a repository of its own and returns the
// version tag; the images are removed when the test ends.
func buildImage(t *testing.T, ctx context.Context, repo string) string {
	t.Helper()
	version := "test-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() {
		_, _ = docker(context.Background(), "rmi", "--force", repo+":"+version, repo+":latest")
	})
	cmd := exec.CommandContext(ctx, "make", "-C", root, "image", "IMAGE="+repo, "IMAGE_FROM=host", "VERSION="+version)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	t.Logf("make image:\n%s", lastLines(string(out), 6))
	if !strings.Contains(string(out), "FROM scratch from this machine's files") {
		t.Errorf("make image IMAGE_FROM=host did not say it built from this machine's files:\n%s", out)
	}
	for _, tag := range []string{version, "latest"} {
		if _, err := docker(ctx, "image", "inspect", repo+":"+tag); err != nil {
			t.Fatalf("make image built no %s:%s", repo, tag)
		}
	}
	return version
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// imageUser returns the user the image's configuration runs as.
func imageUser(t *testing.T, ctx context.Context, image string) string {
	t.Helper()
	out, err := docker(ctx, "image", "inspect", "--format", "{{.Config.User}}", image)
	if err != nil {
		t.Fatalf("docker image inspect %s: %v: %s", image, err, out)
	}
	return strings.TrimSpace(out)
}

// run runs the image with args as a container removed on exit, with dir mounted at /work (when
// not empty), and returns its output and exit code. It checks that the container and every
// process of it are gone afterwards.
func run(t *testing.T, ctx context.Context, image, dir string, args ...string) (string, int) {
	t.Helper()
	cidFile := filepath.Join(t.TempDir(), "cid")
	dargs := []string{"run", "--rm", "--cidfile", cidFile, "--network", "none"}
	if dir != "" {
		dargs = append(dargs, "-v", dir+":/work")
	}
	if os.Getuid() != 0 {
		// As docs/install.md says: run as yourself, so that you own what it writes.
		dargs = append(dargs, "--user", fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()))
	}
	dargs = append(dargs, image)
	out, err := exec.CommandContext(ctx, "docker", append(dargs, args...)...).CombinedOutput()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("docker run %v: %v\n%s", args, err, out)
		}
		code = ee.ExitCode()
	}
	cid, rerr := os.ReadFile(cidFile)
	if rerr != nil || len(cid) == 0 {
		t.Fatalf("docker run %v wrote no container id: %v\n%s", args, rerr, out)
	}
	checkGone(t, ctx, strings.TrimSpace(string(cid)))
	return string(out), code
}

// checkGone fails the test if the container cid still exists or any process still runs in it
// (its id appears in a process's cgroup).
func checkGone(t *testing.T, ctx context.Context, cid string) {
	t.Helper()
	if out, err := docker(ctx, "ps", "-aq", "--no-trunc", "--filter", "id="+cid); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("container %.12s is still there after docker run --rm exited (%v: %q)", cid, err, out)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cgroup")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), cid) {
			cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cmdline"))
			t.Errorf("process %s of container %.12s still runs: %q", filepath.Base(filepath.Dir(p)), cid, cmdline)
		}
	}
}

func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: builds limitbench and an image")
	}
	needEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	repo := "limitbench-imagetest"
	version := buildImage(t, ctx, repo)
	image := repo + ":" + version

	// A non-root user, by configuration.
	if u := imageUser(t, ctx, image); u == "" || u == "0" || u == "root" || strings.HasPrefix(u, "0:") || strings.HasPrefix(u, "root:") {
		t.Errorf("the image runs as user %q; want a non-root user", u)
	}

	out, code := run(t, ctx, image, "", "version")
	if code != 0 || !strings.HasPrefix(out, "limitbench "+version+"\n") {
		t.Errorf("limitbench version in the image: exit %d, %q; want exit 0 and version %s", code, out, version)
	}
	if head := gitHead(); head != "" && !strings.Contains(out, "commit   "+head) {
		t.Errorf("limitbench version in the image: %q; want commit %s", out, head)
	} else if head == "" {
		t.Log("not in a git checkout: the commit is not checked")
	}

	imageSmoke(t, ctx, image)
}

// imageSmoke runs scenarios/smoke.yaml in the image (smokeArgs), and checks its exit code, its
// result and who wrote it.
func imageSmoke(t *testing.T, ctx context.Context, image string) {
	t.Helper()
	dir := t.TempDir()
	scenario, err := os.ReadFile(filepath.Join(root, "scenarios", "smoke.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scenario.yaml"), scenario, 0o644); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		// The image's own user writes the results: give it the directory, as a shared volume
		// would. (Not root: run gives the container this user's uid instead.)
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	out, code := run(t, ctx, image, dir, smokeArgs("/work/scenario.yaml", "/work/results")...)
	checkSmoke(t, filepath.Join(dir, "results"), gitHead(), out, code)
	checkOwners(t, filepath.Join(dir, "results"))
}

// checkOwners checks what the container wrote under dir: not by root, and readable by the host
// user (it is the owner, or everyone may read it).
func checkOwners(t *testing.T, dir string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("%s: no owner", path)
		}
		if st.Uid == 0 {
			t.Errorf("%s was written by root in the container", path)
		}
		read := fi.Mode().Perm()&0o004 != 0 || int(st.Uid) == os.Getuid()
		if d.IsDir() {
			read = read && (fi.Mode().Perm()&0o001 != 0 || int(st.Uid) == os.Getuid())
		}
		if !read {
			t.Errorf("%s (owner %d, mode %v) is not readable by the host user %d", path, st.Uid, fi.Mode(), os.Getuid())
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 3 {
		t.Errorf("the container wrote %d files and directories under %s; want the results", n, dir)
	}
}
