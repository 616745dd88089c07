package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestEnvBadInput(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	_ = l.Close()
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown backend", []string{"--backend", "vm"}, exitBadInput, `unknown backend "vm"`},
		{"unknown topology", []string{"--topology", "ring"}, exitBadInput, `unknown topology "ring"`},
		{"masters 0", []string{"--topology", "cluster", "--masters", "0"}, exitBadInput, "--masters must be at least 1"},
		{"masters on single", []string{"--masters", "3"}, exitBadInput, "topology single has 1 master"},
		{"malformed URL", []string{"--redis", "redis://u:secret@127.0.0.1:port"}, exitBadInput, "malformed URL"},
		{"unknown flag", []string{"--mastrs", "3"}, exitBadInput, "flag provided but not defined"},
		{"extra argument", []string{"now"}, exitBadInput, "unexpected arguments"},
		{"unreachable", []string{"--redis", "redis://" + closed}, exitEnv, "cannot reach"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"env"}, tt.args...), &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("env %s = exit %d, stderr %q; want exit %d mentioning %q", strings.Join(tt.args, " "), code, stderr.String(), tt.code, tt.want)
			}
			if strings.Contains(stderr.String(), "secret") {
				t.Errorf("stderr shows the password: %s", stderr.String())
			}
		})
	}
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// buildBinary builds limitbench once per test binary into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "limitbench-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "limitbench")
		if out, err := exec.Command("go", "build", "-o", builtBin, ".").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builtBin != "" {
		_ = os.RemoveAll(filepath.Dir(builtBin))
	}
	os.Exit(code)
}

func TestEnvNoEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "env", "--backend", "container", "--image", "host")
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) } // let it clean up
	cmd.Env = append(os.Environ(), "DOCKER_HOST=unix://"+filepath.Join(t.TempDir(), "no-engine.sock"))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitEnv || !strings.Contains(string(out), "no Docker engine answers") {
		t.Errorf("env --backend container without an engine = %v, output %q; want exit %d and \"no Docker engine answers\"", err, out, exitEnv)
	}
}

func TestEnvStopsOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts clusters")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH: %v", err)
	}
	bin := buildBinary(t)
	for _, backend := range []string{"process", "container"} {
		t.Run(backend, func(t *testing.T) {
			if backend == "container" {
				if out, err := exec.Command("docker", "info").CombinedOutput(); err != nil {
					t.Skipf("no Docker engine answers (docker info: %v: %.200s); container check skipped", err, out)
				}
			}
			cmd := exec.Command(bin, "env", "--backend", backend, "--image", "host", "--topology", "cluster")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			lines := make(chan string)
			go func() {
				defer close(lines)
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					lines <- sc.Text()
				}
			}()
			var addrs []string
			timeout := time.After(90 * time.Second)
		read:
			for {
				select {
				case line, ok := <-lines:
					if !ok {
						_ = cmd.Wait()
						t.Fatalf("env exited before it was ready; stderr:\n%s", stderr.String())
					}
					if strings.HasPrefix(line, "127.0.0.1:") {
						addrs = append(addrs, strings.Fields(line)[0])
					}
					if strings.HasPrefix(line, "redis-cli ") {
						if !strings.Contains(line, " -c") || !strings.Contains(line, " -a ") {
							t.Errorf("redis-cli line %q lacks -c or -a", line)
						}
						break read
					}
				case <-timeout:
					t.Fatalf("env not ready after 90 s; stderr:\n%s", stderr.String())
				}
			}
			if len(addrs) != 3 {
				t.Fatalf("env printed %d nodes %v, want 3", len(addrs), addrs)
			}
			go func() {
				for range lines { // drain
				}
			}()
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("env after SIGTERM: %v; stderr:\n%s", err, stderr.String())
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("env did not stop within 60 s of SIGTERM")
			}
			for _, a := range addrs {
				if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
					_ = c.Close()
					t.Errorf("%s still accepts connections after env stopped", a)
				}
				if pids := redisServersOn(a); len(pids) > 0 {
					t.Errorf("redis-server processes %v still serve %s", pids, a)
				}
			}
			if backend == "container" {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				label := "label=limitbench.harness_pid=" + strconv.Itoa(cmd.Process.Pid)
				out, err := exec.CommandContext(ctx, "docker", "ps", "-aq", "--filter", label).CombinedOutput()
				if err != nil || len(bytes.TrimSpace(out)) > 0 {
					t.Errorf("containers of the stopped env: %q, %v; want none", out, err)
				}
			}
		})
	}
}

// redisServersOn returns the pids of redis-server processes whose title names addr.
func redisServersOn(addr string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(data), "redis-server") && strings.Contains(string(data), addr) {
			pids = append(pids, pid)
		}
	}
	return pids
}
