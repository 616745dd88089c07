package redisenv

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// TestHostImage builds the host image from a copy of the local redis-server made unique (a few
// bytes appended, so the test owns its tag and really builds), checks that a second ensure reuses
// the tag without building, and that the image is FROM scratch: its first layer is the COPY of
// our root file system, and its files are exactly redis-server and the libraries ldd lists, all
// regular files (no symlinks or hard links).
func TestHostImage(t *testing.T) {
	real, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skipf("redis-server is not on PATH: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cli, err := dockerClient(ctx)
	if err != nil {
		t.Skipf("no Docker engine answers; host image test skipped: %v", err)
	}
	defer cli.Close()

	bin := filepath.Join(t.TempDir(), "redis-server")
	if err := copyReal(real, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(bin, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fmt.Fprintf(f, "\nlimitbench TestHostImage %d %d\n", os.Getpid(), time.Now().UnixNano())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var logs []string
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		logs = append(logs, fmt.Sprintf(format, args...))
	}
	tag, err := ensureImageFrom(ctx, cli, bin, logf)
	if err != nil {
		t.Fatalf("first ensure: %v", err)
	}
	t.Cleanup(func() {
		_, err := cli.ImageRemove(context.Background(), tag, client.ImageRemoveOptions{Force: true, PruneChildren: true})
		if err != nil {
			t.Errorf("remove %s: %v", tag, err)
		}
	})
	if len(logs) != 1 || !strings.Contains(logs[0], "building "+tag) {
		t.Errorf("first ensure of a new binary logged %q, want one \"building %s\" line", logs, tag)
	}
	first, err := cli.ImageInspect(ctx, tag)
	if err != nil {
		t.Fatal(err)
	}

	logs = nil
	again, err := ensureImageFrom(ctx, cli, bin, logf)
	if err != nil {
		t.Fatalf("second ensure: %v", err)
	}
	second, err := cli.ImageInspect(ctx, again)
	if err != nil {
		t.Fatal(err)
	}
	if again != tag || second.ID != first.ID || len(logs) != 0 {
		t.Errorf("second ensure = %s (image %.19s), logged %q; want the cached %s (image %.19s) and no build",
			again, second.ID, logs, tag, first.ID)
	}

	checkScratchImage(t, ctx, cli, tag, real)
}

// checkScratchImage checks that tag has no base image and holds only regular files: redis-server
// and the libraries ldd lists for bin.
func checkScratchImage(t *testing.T, ctx context.Context, cli *testcontainers.DockerClient, tag, bin string) {
	t.Helper()
	hist, err := cli.ImageHistory(ctx, tag)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(hist.Items); n == 0 || !strings.Contains(hist.Items[n-1].CreatedBy, "COPY") ||
		!strings.HasSuffix(strings.TrimSpace(hist.Items[n-1].CreatedBy), " in /") {
		var steps []string
		for _, h := range hist.Items {
			steps = append(steps, h.CreatedBy)
		}
		t.Errorf("history of %s (newest first):\n%s\nwant the oldest step to be our COPY into / (FROM scratch)", tag, strings.Join(steps, "\n"))
	}

	libs, err := sharedLibs(bin)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"usr/local/bin/redis-server"}
	for _, l := range libs {
		want = append(want, strings.TrimPrefix(path.Clean(l), "/"))
	}
	slices.Sort(want)
	want = slices.Compact(want)

	rc, err := cli.ImageSave(ctx, []string{tag})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string][]byte{} // the saved archive is small: the binary and its libraries
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if files[h.Name], err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
	var manifest []struct{ Layers []string }
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil || len(manifest) != 1 {
		t.Fatalf("docker save %s: manifest.json %q: %v", tag, files["manifest.json"], err)
	}
	insp, err := cli.ImageInspect(ctx, tag)
	if err != nil {
		t.Fatal(err)
	}
	if insp.RootFS.Layers == nil || len(insp.RootFS.Layers) != len(manifest[0].Layers) {
		t.Errorf("image %s: %d layers in RootFS, %d saved", tag, len(insp.RootFS.Layers), len(manifest[0].Layers))
	}
	var got []string
	for i, name := range manifest[0].Layers {
		layer, ok := files[name]
		if !ok {
			t.Fatalf("docker save %s: layer %s missing", tag, name)
		}
		lr := tar.NewReader(strings.NewReader(string(layer)))
		for {
			h, err := lr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("layer %d: %v", i, err)
			}
			name := strings.TrimSuffix(path.Clean(h.Name), "/")
			switch h.Typeflag {
			case tar.TypeDir:
			case tar.TypeReg:
				got = append(got, name)
			default:
				t.Errorf("layer %d: %s is of tar type %q (link target %q), want regular files and directories only", i, name, h.Typeflag, h.Linkname)
			}
		}
		if i == 0 && !slices.Contains(got, "usr/local/bin/redis-server") {
			t.Errorf("first layer of %s lacks usr/local/bin/redis-server: there is a base layer below ours", tag)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("files in %s:\n%s\nwant exactly redis-server and its libraries:\n%s", tag, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestHostImageReal checks that ensuring the real host image twice gives one tag without a build
// the second time, as every container test relies on.
func TestHostImageReal(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := dockerClient(ctx); err != nil {
		t.Skipf("no Docker engine answers; host image test skipped: %v", err)
	}
	tag, err := BuildHostImage(ctx, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	var built []string
	again, err := BuildHostImage(ctx, func(format string, args ...any) { built = append(built, fmt.Sprintf(format, args...)) })
	if err != nil || again != tag || len(built) != 0 {
		t.Errorf("second BuildHostImage = %q, %v, logged %q; want %q and no build", again, err, built, tag)
	}
	if !strings.HasPrefix(tag, hostImageRepo+":") || len(tag) != len(hostImageRepo)+1+12 {
		t.Errorf("tag %q, want %s:<12 hex digits>", tag, hostImageRepo)
	}
}
