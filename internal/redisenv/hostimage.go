package redisenv

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// hostImageRepo is the repository of images built from the local redis-server.
const hostImageRepo = "limitbench/redis-host"

// BuildHostImage returns the tag of the image that Config.Image "host" names, building it when
// the Docker engine does not have it yet: FROM scratch, holding the local redis-server and the
// libraries it links, tagged limitbench/redis-host:<first 12 hex digits of the binary's sha256>.
// It starts no container and pulls nothing. It needs redis-server on PATH and an engine that
// answers; errors wrap ErrUnavailable. logf, when not nil, is told when a build starts.
func BuildHostImage(ctx context.Context, logf func(format string, args ...any)) (string, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	cli, err := dockerClient(ctx)
	if err != nil {
		return "", err
	}
	defer cli.Close()
	return ensureHostImage(ctx, cli, logf)
}

// ensureHostImage returns the tag of an image FROM scratch holding the local redis-server and
// the shared libraries it links, building it when the engine does not have it yet. The tag
// carries the first 12 hex digits of the binary's sha256, so a new redis-server gets a new
// image and an unchanged one is never rebuilt. Nothing is pulled.
func ensureHostImage(ctx context.Context, cli *testcontainers.DockerClient, logf func(string, ...any)) (string, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", fmt.Errorf("%w: --image host needs redis-server on PATH: %w", ErrUnavailable, err)
	}
	return ensureImageFrom(ctx, cli, bin, logf)
}

// ensureImageFrom is ensureHostImage for the redis-server binary at bin.
func ensureImageFrom(ctx context.Context, cli *testcontainers.DockerClient, bin string, logf func(string, ...any)) (string, error) {
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	sum, err := fileSHA256(real)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	tag := hostImageRepo + ":" + sum[:12]
	if imagePresent(ctx, cli, tag) {
		return tag, nil
	}
	logf("redisenv: building %s from %s", tag, real)
	dir, err := os.MkdirTemp("", "limitbench-image-")
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer os.RemoveAll(dir)
	if err := hostImageContext(dir, real, sum); err != nil {
		return "", fmt.Errorf("%w: build context for %s: %w", ErrUnavailable, tag, err)
	}
	var buf bytes.Buffer
	if err := tarDir(&buf, dir); err != nil {
		return "", fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	res, err := cli.ImageBuild(ctx, &buf, client.ImageBuildOptions{
		Tags:        []string{tag},
		Dockerfile:  "Dockerfile",
		Remove:      true,
		ForceRemove: true,
		PullParent:  false,
		Version:     build.BuilderV1, // FROM scratch needs no BuildKit session
		Labels:      map[string]string{"limitbench.redis-sha256": sum},
	})
	if err != nil {
		return "", fmt.Errorf("%w: build %s: %w", ErrUnavailable, tag, err)
	}
	defer res.Body.Close()
	if err := readBuildStream(res.Body); err != nil {
		return "", fmt.Errorf("%w: build %s: %w", ErrUnavailable, tag, err)
	}
	return tag, nil
}

// readBuildStream drains the engine's JSON build output and returns its error, if any.
func readBuildStream(r io.Reader) error {
	dec := json.NewDecoder(r)
	var tail []string
	for {
		var msg struct {
			Stream string `json:"stream"`
			Error  string `json:"error"`
		}
		if err := dec.Decode(&msg); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if msg.Stream != "" {
			tail = append(tail, strings.TrimRight(msg.Stream, "\n"))
			if len(tail) > 10 {
				tail = tail[1:]
			}
		}
		if msg.Error != "" {
			return fmt.Errorf("%s\n%s", msg.Error, strings.Join(tail, "\n"))
		}
	}
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// lddLine matches "libx.so.1 => /lib/x/libx.so.1 (0x...)" and "/lib64/ld-linux.so.2 (0x...)".
var lddLine = regexp.MustCompile(`(?:=>\s*)?(/[^\s]+)\s+\(0x[0-9a-f]+\)`)

// sharedLibs returns the absolute paths ldd lists for bin, the dynamic loader included.
func sharedLibs(bin string) ([]string, error) {
	out, err := exec.Command("ldd", bin).Output()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w", bin, err)
	}
	var libs []string
	for line := range strings.SplitSeq(string(out), "\n") {
		if m := lddLine.FindStringSubmatch(line); m != nil {
			libs = append(libs, m[1])
		}
	}
	if len(libs) == 0 {
		return nil, fmt.Errorf("ldd %s listed no libraries (static binary?): %s", bin, out)
	}
	return libs, nil
}

// hostImageContext writes a build context into dir: rootfs/ with redis-server at
// /usr/local/bin/redis-server and each library at the path ldd names (real file contents, never
// symlinks), an empty data/ for the working directory, and the Dockerfile.
func hostImageContext(dir, bin, sum string) error {
	libs, err := sharedLibs(bin)
	if err != nil {
		return err
	}
	root := filepath.Join(dir, "rootfs")
	if err := copyReal(bin, filepath.Join(root, "usr/local/bin/redis-server"), 0o755); err != nil {
		return err
	}
	var libDirs []string
	for _, l := range libs {
		if err := copyReal(l, filepath.Join(root, l), 0o755); err != nil {
			return err
		}
		if d := filepath.Dir(l); !slices.Contains(libDirs, d) {
			libDirs = append(libDirs, d)
		}
	}
	for _, d := range []string{"rootfs/tmp", "data"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	dockerfile := fmt.Sprintf(`FROM scratch
COPY rootfs/ /
COPY --chown=65534:65534 data /data
ENV LD_LIBRARY_PATH=%s
USER 65534:65534
WORKDIR /data
LABEL org.opencontainers.image.description="redis-server from the host (sha256 %s) and the libraries it links, built by limitbench"
ENTRYPOINT ["/usr/local/bin/redis-server"]
`, strings.Join(libDirs, ":"), sum)
	return os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644)
}

// copyReal copies the contents of src (following symlinks) into a regular file dst.
func copyReal(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// tarDir writes the regular files and directories under dir to w as a tar stream.
func tarDir(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() && !fi.IsDir() {
			return fmt.Errorf("%s: not a regular file", path)
		}
		hdr, err := tar.FileInfoHeader(fi, "")
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if fi.IsDir() {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
