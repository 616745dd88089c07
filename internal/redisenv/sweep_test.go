package redisenv

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/redis/go-redis/v9"
)

// harnessEnv makes the test binary act as a harness that starts an environment, prints it and
// waits to be killed; see TestMain. harnessDeathSigEnv=1 keeps Pdeathsig on.
const (
	harnessEnv         = "LIMITBENCH_TEST_HARNESS"
	harnessDeathSigEnv = "LIMITBENCH_TEST_HARNESS_PDEATHSIG"
)

// harnessLine is what a harness child prints once its server is up. PID, PIDStart and Dir are
// set for the process backend.
type harnessLine struct {
	Addr, Password, Error string
	PID                   int
	PIDStart              uint64
	Dir                   string
}

func TestMain(m *testing.M) {
	if backend := os.Getenv(harnessEnv); backend != "" {
		runHarness(Backend(backend), os.Getenv(harnessDeathSigEnv) == "1")
		return
	}
	os.Exit(m.Run())
}

// runHarness starts a single server, prints its address and blocks until killed. Without
// deathSig the server does not die with its harness (as on systems without Pdeathsig). With
// deathSig the harness also deletes the server's sweep record, so that only Pdeathsig can end
// the server once the harness is killed.
func runHarness(b Backend, deathSig bool) {
	processNoPdeathsig = !deathSig
	t, err := Start(context.Background(), Config{Backend: b, Image: HostImage})
	line := harnessLine{}
	if err != nil {
		line.Error = err.Error()
	} else {
		line.Addr, line.Password = t.Masters()[0], t.Password
		if b == BackendProcess {
			if rec, ok := findRecord(line.Addr); ok {
				line.PID, line.PIDStart, line.Dir = rec.PID, rec.PIDStart, rec.Dir
				if deathSig {
					removeRecord(rec.PID)
				}
			} else {
				line.Error = "no sweep record for " + line.Addr
			}
		}
	}
	_ = json.NewEncoder(os.Stdout).Encode(line)
	if line.Error != "" {
		os.Exit(1)
	}
	select {}
}

// findRecord returns the sweep record of the server at addr.
func findRecord(addr string) (record, bool) {
	entries, _ := os.ReadDir(recordDir())
	for _, e := range entries {
		var rec record
		data, err := os.ReadFile(filepath.Join(recordDir(), e.Name()))
		if err == nil && json.Unmarshal(data, &rec) == nil && rec.Addr == addr {
			return rec, true
		}
	}
	return record{}, false
}

// killedHarness runs a harness child for backend b, kills it with SIGKILL once its server is up,
// and returns what it printed.
func killedHarness(t *testing.T, b Backend, deathSig bool) harnessLine {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), harnessEnv+"="+string(b))
	if deathSig {
		cmd.Env = append(cmd.Env, harnessDeathSigEnv+"=1")
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var line harnessLine
	err = json.NewDecoder(bufio.NewReader(out)).Decode(&line)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if err != nil || line.Error != "" {
		t.Fatalf("harness child: %v %s", err, line.Error)
	}
	return line
}

func ping(addr, password string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, Password: password, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	return c.Ping(context.Background()).Err()
}

// waitGone polls until addr refuses connections.
func waitGone(t *testing.T, addr, password string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for ping(addr, password) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("server %s still answers after the sweep", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSweepLeftoverProcess(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH: %v", err)
	}
	h := killedHarness(t, BackendProcess, false)
	addr, password := h.Addr, h.Password
	if err := ping(addr, password); err != nil {
		t.Fatalf("leftover server %s is not running after its harness was killed: %v", addr, err)
	}
	rec, found := findRecord(addr)
	if !found {
		t.Fatalf("no record for %s in %s", addr, recordDir())
	}
	target, err := Start(context.Background(), Config{Backend: BackendProcess, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer target.Stop(context.Background())
	waitGone(t, addr, password)
	if _, err := os.Stat(recordPath(rec.PID)); !os.IsNotExist(err) {
		t.Errorf("record %s still exists: %v", recordPath(rec.PID), err)
	}
	if _, err := os.Stat(rec.Dir); !os.IsNotExist(err) {
		t.Errorf("temp dir %s still exists: %v", rec.Dir, err)
	}
}

// TestPdeathsig kills a harness whose server runs with Pdeathsig and whose sweep record it
// deleted: the kernel alone must end the server.
func TestPdeathsig(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Pdeathsig is Linux only; elsewhere the sweep removes leftovers")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH: %v", err)
	}
	h := killedHarness(t, BackendProcess, true)
	t.Cleanup(func() {
		if alive(h.PID, h.PIDStart) && isRedisServer(h.PID) {
			_ = syscall.Kill(-h.PID, syscall.SIGKILL)
		}
		_ = os.RemoveAll(h.Dir)
	})
	if h.PID <= 0 || h.PIDStart == 0 {
		t.Fatalf("harness printed pid %d start %d; want both", h.PID, h.PIDStart)
	}
	if _, ok := findRecord(h.Addr); ok {
		t.Fatalf("the harness left a sweep record for %s; the test needs none", h.Addr)
	}
	deadline := time.Now().Add(10 * time.Second)
	for alive(h.PID, h.PIDStart) {
		if time.Now().After(deadline) {
			t.Fatalf("redis-server pid %d (%s) still runs 10 s after its harness was killed: Pdeathsig did not end it", h.PID, h.Addr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := ping(h.Addr, h.Password); err == nil {
		t.Errorf("%s still answers after its harness was killed", h.Addr)
	}
}

// TestContainerEnv checks that the testcontainers settings are set when the user has not set
// them (unset or empty) and kept when the user has.
func TestContainerEnv(t *testing.T) {
	const host, ryuk = "TESTCONTAINERS_HOST_OVERRIDE", "TESTCONTAINERS_RYUK_DISABLED"
	tests := []struct {
		name               string
		host, ryuk         *string // nil: unset
		wantHost, wantRyuk string
	}{
		{"unset", nil, nil, "127.0.0.1", "true"},
		{"empty", ptr(""), ptr(""), "127.0.0.1", "true"},
		{"user values kept", ptr("127.0.0.2"), ptr("false"), "127.0.0.2", "false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range map[string]*string{host: tt.host, ryuk: tt.ryuk} {
				t.Setenv(k, "") // restores the caller's value when the test ends
				if v == nil {
					_ = os.Unsetenv(k)
				} else {
					_ = os.Setenv(k, *v)
				}
			}
			containerEnv()
			if got := os.Getenv(host); got != tt.wantHost {
				t.Errorf("after containerEnv %s = %q, want %q", host, got, tt.wantHost)
			}
			if got := os.Getenv(ryuk); got != tt.wantRyuk {
				t.Errorf("after containerEnv %s = %q, want %q", ryuk, got, tt.wantRyuk)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestSweepLeftoverContainer(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH (needed for the host image): %v", err)
	}
	ctx := context.Background()
	cli, err := dockerClient(ctx)
	if err != nil {
		t.Skipf("no Docker engine answers; container test skipped: %v", err)
	}
	defer cli.Close()
	h := killedHarness(t, BackendContainer, false)
	addr, password := h.Addr, h.Password
	list := func() int {
		res, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true,
			Filters: make(client.Filters).Add("label", labelAddr+"="+addr)})
		if err != nil {
			t.Fatal(err)
		}
		return len(res.Items)
	}
	if n := list(); n != 1 {
		t.Fatalf("%d containers labelled %s after the harness was killed, want 1 leftover", n, addr)
	}
	target, err := Start(ctx, Config{Backend: BackendContainer, Image: HostImage, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer target.Stop(ctx)
	if n := list(); n != 0 {
		t.Errorf("%d leftover containers labelled %s after the next start, want 0", n, addr)
	}
	waitGone(t, addr, password)
}

// TestSweepLeftoverContainerFromProcessStart is the regression test of issue 14 item 11: after
// kill -9 of a container run, its container survived every later run that was not itself a
// container run. A process start now sweeps labelled leftovers whenever an engine answers.
func TestSweepLeftoverContainerFromProcessStart(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH (needed for the host image): %v", err)
	}
	ctx := context.Background()
	cli, err := dockerClient(ctx)
	if err != nil {
		t.Skipf("no Docker engine answers; container test skipped: %v", err)
	}
	defer cli.Close()
	h := killedHarness(t, BackendContainer, false)
	list := func() int {
		res, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true,
			Filters: make(client.Filters).Add("label", labelAddr+"="+h.Addr)})
		if err != nil {
			t.Fatal(err)
		}
		return len(res.Items)
	}
	if n := list(); n != 1 {
		t.Fatalf("%d containers labelled %s after the harness was killed, want 1 leftover", n, h.Addr)
	}
	t.Cleanup(func() { // should the sweep fail, do not leave the container to the next test
		res, _ := cli.ContainerList(ctx, client.ContainerListOptions{All: true,
			Filters: make(client.Filters).Add("label", labelAddr+"="+h.Addr)})
		for _, c := range res.Items {
			_, _ = cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		}
	})
	target, err := Start(ctx, Config{Backend: BackendProcess, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer target.Stop(ctx)
	if n := list(); n != 0 {
		t.Errorf("%d leftover containers labelled %s after a process start, want 0", n, h.Addr)
	}
	waitGone(t, h.Addr, h.Password)
}

// TestSweepWithoutEngine checks that the sweep of leftover containers gives up when no engine
// answers (DOCKER_HOST names a socket that does not exist), and says how long that took.
func TestSweepWithoutEngine(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-engine.sock"))
	var logged []string
	begin := time.Now()
	sweepLeftoverContainers(context.Background(), func(format string, args ...any) {
		logged = append(logged, format)
	})
	t.Logf("sweep without an engine returned in %s", time.Since(begin))
	if len(logged) != 0 {
		t.Errorf("sweep without an engine logged %q, want nothing", logged)
	}
}

func TestParseClusterNodes(t *testing.T) {
	raw := strings.Join([]string{
		"b 127.0.0.1:7001@17001 master - 0 1 2 connected 5461-10922",
		"a 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460",
		"d 127.0.0.1:7003@17003 slave a 0 1 1 connected",
		"c 127.0.0.1:7002@17002,host.example master - 0 1 3 connected 10923-16383 [42->-b]",
	}, "\n")
	got, err := parseClusterNodes(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := "a 127.0.0.1:7000 master  [[0 5460]]\nb 127.0.0.1:7001 master  [[5461 10922]]\n" +
		"c 127.0.0.1:7002 master  [[10923 16383]]\nd 127.0.0.1:7003 replica a []\n"
	if k := nodesKey(got); k != want {
		t.Errorf("parseClusterNodes:\n%s\nwant\n%s", k, want)
	}
	for _, bad := range []string{
		"a 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-x",
		"a 127.0.0.1:7000@17000 handshake - 0 0 1 connected",
		"a 127.0.0.1:7000@17000 master,fail? - 0 0 1 connected",
		"a 127.0.0.1:7000@17000 master - 0 0 1 disconnected",
		"short line",
	} {
		if _, err := parseClusterNodes(bad); err == nil {
			t.Errorf("parseClusterNodes(%q) succeeded, want an error", bad)
		}
	}
}

func TestSlotRanges(t *testing.T) {
	for _, n := range []int{1, 3, 5, 7} {
		r := slotRanges(n)
		next := 0
		for _, x := range r {
			if x[0] != next || x[1] < x[0] {
				t.Fatalf("slotRanges(%d) = %v: gap or overlap at %d", n, r, next)
			}
			next = x[1] + 1
		}
		if next != numSlots {
			t.Errorf("slotRanges(%d) covers %d slots, want %d", n, next, numSlots)
		}
	}
}
