package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
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
		{"build-only without backend", []string{"--image", "host", "--build-only"}, exitBadInput, "use it with --backend container --image host"},
		{"build-only with process", []string{"--backend", "process", "--image", "host", "--build-only"}, exitBadInput, "use it with --backend container --image host"},
		{"build-only with a registry image", []string{"--backend", "container", "--build-only"}, exitBadInput, "use it with --backend container --image host"},
		{"build-only with external", []string{"--redis", "redis://u:secret@" + closed, "--build-only"}, exitBadInput, "use it with --backend container --image host"},
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

// silentAddr returns the address of a loopback listener that accepts connections and never
// answers; the test's cleanup closes it.
func silentAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String()
}

// TestEnvUnreachableFails checks the contract for an address that never answers: exit 3 within
// 5 s, for a closed port and for a listener that accepts connections and stays silent.
func TestEnvUnreachableFails(t *testing.T) {
	for _, tt := range []struct{ name, addr string }{
		{"silent listener", silentAddr(t)},
		{"silent seed list", silentAddr(t) + "," + silentAddr(t)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			url := "redis://" + tt.addr
			begin := time.Now()
			code := run([]string{"env", "--redis", url}, &stdout, &stderr)
			took := time.Since(begin)
			if code != exitEnv || !strings.Contains(stderr.String(), "cannot reach") {
				t.Errorf("env --redis %s = exit %d, stderr %q; want exit %d, cannot reach", url, code, stderr.String(), exitEnv)
			}
			if took > 5*time.Second {
				t.Errorf("env --redis %s took %s; want at most 5 s", url, took)
			}
		})
	}
}

// TestEnvBuildOnly runs env --build-only through the CLI: it prints the host image's tag, the
// engine has that image, and no container was started.
func TestEnvBuildOnly(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "info").CombinedOutput(); err != nil {
		t.Skipf("no Docker engine answers (docker info: %v: %.200s); --build-only check skipped", err, out)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"env", "--backend", "container", "--image", "host", "--build-only"}, &stdout, &stderr)
	tag := strings.TrimSpace(stdout.String())
	if code != exitOK || !regexp.MustCompile(`^limitbench/redis-host:[0-9a-f]{12}$`).MatchString(tag) {
		t.Fatalf("env --build-only = exit %d, stdout %q, stderr %q; want exit 0 and one line limitbench/redis-host:<12 hex digits>", code, stdout.String(), stderr.String())
	}
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "image", "inspect", "--format", "{{.Id}}", tag).CombinedOutput(); err != nil {
		t.Errorf("docker image inspect %s: %v: %s", tag, err, out)
	}
	label := "label=limitbench.harness_pid=" + strconv.Itoa(os.Getpid())
	if out, err := exec.CommandContext(ctx, "docker", "ps", "-aq", "--filter", label).CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("containers after --build-only: %q, %v; want none", out, err)
	}
}

func TestRedisCLILine(t *testing.T) {
	tests := []struct {
		addr, user, pass string
		cluster          bool
		tls              []string
		db               int
		want             string
	}{
		{"127.0.0.1:7000", "", "", false, nil, 0, "redis-cli -h 127.0.0.1 -p 7000"},
		{"127.0.0.1:7000", "", "pw", true, nil, 0, "redis-cli -h 127.0.0.1 -p 7000 -a pw --no-auth-warning -c"},
		{"cache.example:6380", "bench", "p w'x", false, []string{"--tls"}, 2,
			`redis-cli -h cache.example -p 6380 --tls --user bench -a 'p w'\''x' --no-auth-warning -n 2`},
		{"[::1]:7000", "", "", true, []string{"--tls"}, 0, "redis-cli -h ::1 -p 7000 --tls -c"},
		{"127.0.0.1:7000", "", "", false, []string{"--tls", "--cacert", "/my certs/ca.pem", "--sni", "cache.example"}, 0,
			"redis-cli -h 127.0.0.1 -p 7000 --tls --cacert '/my certs/ca.pem' --sni cache.example"},
	}
	for _, tt := range tests {
		got := redisCLILine(tt.addr, tt.user, tt.pass, tt.cluster, tt.tls, tt.db)
		if got != tt.want {
			t.Errorf("redisCLILine(%q, %q, %q, %v, %q, %d) =\n%s\nwant\n%s", tt.addr, tt.user, tt.pass, tt.cluster, tt.tls, tt.db, got, tt.want)
		}
	}
}

// TestEnvRedisCLIWorks pastes the printed redis-cli line into a shell, as a user would, for an
// external server on database 2 and for a cluster.
func TestEnvRedisCLIWorks(t *testing.T) {
	for _, tool := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not on PATH: %v", tool, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := func(cfg redisenv.Config) *redisenv.Target {
		t.Helper()
		target, err := redisenv.Start(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = target.Stop(context.Background()) })
		return target
	}
	single := start(redisenv.Config{Backend: redisenv.BackendProcess})
	ext := start(redisenv.Config{Backend: redisenv.BackendExternal,
		URL: "redis://:" + single.Password + "@" + single.Masters()[0] + "/2"})
	cluster := start(redisenv.Config{Backend: redisenv.BackendProcess, Topology: redisenv.TopologyCluster})
	tlsServer := redistest.StartTLS(t, true)
	tlsURL := url.URL{Scheme: "rediss", User: url.UserPassword("default", tlsServer.Password), Host: tlsServer.Addr,
		RawQuery: url.Values{"ca_file": {tlsServer.CAFile}, "cert_file": {tlsServer.CertFile}, "key_file": {tlsServer.KeyFile}}.Encode()}
	tlsTarget := start(redisenv.Config{Backend: redisenv.BackendExternal, URL: tlsURL.String()})
	for _, tt := range []struct {
		name    string
		target  *redisenv.Target
		command string
		want    string
	}{
		{"external database 2", ext, "CLIENT INFO", " db=2 "},
		{"TLS with a client certificate", tlsTarget, "PING", "PONG"},
		{"cluster", cluster, "SET {cli}x 1", "OK"}, // -c follows the MOVED reply of a key elsewhere
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			printEnv(&buf, tt.target)
			var line string
			for l := range strings.SplitSeq(buf.String(), "\n") {
				if strings.HasPrefix(l, "redis-cli ") {
					line = l
				}
			}
			if line == "" {
				t.Fatalf("printEnv printed no redis-cli line:\n%s", buf.String())
			}
			for _, tag := range []string{"{cli}", "{a}", "{b}"} { // keys on different masters
				cmd := strings.ReplaceAll(tt.command, "{cli}", tag)
				out, err := exec.CommandContext(ctx, "sh", "-c", line+" "+cmd).CombinedOutput()
				if err != nil || !strings.Contains(string(out), tt.want) {
					t.Errorf("%s %s = %q, %v; want it to show %q", line, cmd, out, err, tt.want)
				}
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
	// Tests that want GitHub Actions' outputs set GITHUB_* themselves; none writes into the step
	// of a CI that runs the tests on GitHub.
	for _, k := range []string{"GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT"} {
		_ = os.Unsetenv(k)
	}
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
	t.Parallel() // a child process, no state of this one: overlaps the other waits
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
