// Package redistest gives tests a real Redis: a single server, a 3-master cluster or a sentinel
// topology of redis-server processes, started lazily once per test package and shared, with a
// fresh key prefix per test so tests never see each other's keys; and, for tests that kill,
// pause or fail over servers, Start, a private environment of any Config that is stopped when
// the test ends and checked to leave nothing behind.
//
//	func TestMain(m *testing.M) { redistest.Main(m) }
//
//	func TestX(t *testing.T) {
//		env := redistest.Single(t)
//		env.Target.Client.Set(ctx, env.Prefix+"k", 1, 0)
//	}
//
// Tests skip (with the reason) when redis-server is not on PATH.
package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/limitbench/limitbench/internal/redisenv"
)

// Env is a running Redis for one test with a key prefix of its own.
type Env struct {
	// Target is the shared environment. Tests must not Stop it.
	Target *redisenv.Target
	// Prefix is "t<N>:", unique within the test binary; keys under it are removed when the test
	// ends.
	Prefix string
}

// shared is one lazily started environment.
type shared struct {
	cfg    redisenv.Config
	mu     sync.Mutex
	target *redisenv.Target
	err    error
}

var (
	single   = &shared{cfg: redisenv.Config{Backend: redisenv.BackendProcess, Topology: redisenv.TopologySingle}}
	cluster  = &shared{cfg: redisenv.Config{Backend: redisenv.BackendProcess, Topology: redisenv.TopologyCluster, Masters: 3}}
	sentinel = &shared{cfg: redisenv.Config{Backend: redisenv.BackendProcess, Topology: redisenv.TopologySentinel}}
	nextID   atomic.Int64
)

// get starts the environment once; a failed start is remembered and reported to every test.
func (s *shared) get() (*redisenv.Target, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.target == nil && s.err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		s.target, s.err = redisenv.Start(ctx, s.cfg)
	}
	return s.target, s.err
}

func (s *shared) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.target != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.target.Stop(ctx)
		s.target = nil
	}
}

func env(t testing.TB, s *shared) *Env {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH (install redis-server; CI does): %v", err)
	}
	target, err := s.get()
	if err != nil {
		t.Fatalf("redistest: start %s Redis: %v", s.cfg.Topology, err)
	}
	e := &Env{Target: target, Prefix: fmt.Sprintf("t%d:", nextID.Add(1))}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := target.CleanupPrefix(ctx, e.Prefix); err != nil {
			t.Logf("redistest: cleanup of prefix %s: %v", e.Prefix, err)
		}
	})
	return e
}

// Single returns the package's shared single-node Redis (started on first use) with a fresh
// Prefix for this test. It skips the test when redis-server is not on PATH and fails it, with
// the server log, when the server cannot start.
func Single(t testing.TB) *Env {
	t.Helper()
	return env(t, single)
}

// Cluster returns the package's shared 3-master cluster of redis-server processes (started on
// first use, about 2 s) with a fresh Prefix for this test. Keys of one test that must meet in a
// script need a hash tag, e.g. "{" + Prefix + "x}:a".
func Cluster(t testing.TB) *Env {
	t.Helper()
	return env(t, cluster)
}

// Sentinel returns the package's shared sentinel topology of redis-server processes (one
// master, one replica, three Sentinels; started on first use, about 2.5 s) with a fresh Prefix
// for this test. Its Client is a failover client. Tests must not fail it over: Start gives a
// private one.
func Sentinel(t testing.TB) *Env {
	t.Helper()
	return env(t, sentinel)
}

// Main is a TestMain helper: it runs the tests, stops the shared servers, and exits with the
// tests' code.
func Main(m *testing.M) {
	code := m.Run()
	single.stop()
	cluster.stop()
	sentinel.stop()
	os.Exit(code)
}

// Start starts a private environment for cfg (progress lines to t.Logf) within 2 minutes and
// registers a cleanup that stops it and then checks, with CheckGone, that nothing it started is
// left. It skips the test when the backend cannot run here: redis-server not on PATH (process,
// and container with the "host" image), or no Docker engine answering (container).
func Start(t testing.TB, cfg redisenv.Config) *redisenv.Target {
	t.Helper()
	if cfg.Backend == redisenv.BackendProcess || cfg.Backend == "" || cfg.Backend == redisenv.BackendAuto ||
		cfg.Image == redisenv.HostImage {
		if _, err := exec.LookPath("redis-server"); err != nil {
			t.Skipf("redis-server is not on PATH (install redis-server; CI does): %v", err)
		}
	}
	if cfg.Backend == redisenv.BackendContainer {
		NeedEngine(t)
	}
	if cfg.Logf == nil {
		cfg.Logf = t.Logf
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	target, err := redisenv.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("redistest: start %+v: %v", cfg, err)
	}
	addrs := append(target.Servers(), target.Masters()...)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := target.Stop(ctx); err != nil {
			t.Errorf("redistest: Stop: %v", err)
		}
		CheckGone(t, addrs)
	})
	return target
}

// NeedEngine skips the test, with the reason, when no Docker engine answers `docker info`
// within 10 s.
func NeedEngine(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		t.Skipf("no Docker engine answers (docker info: %v: %s); container tests skipped", err, out)
	}
}

// CheckGone fails t when anything at the loopback addresses addrs is left: a port that still
// accepts connections, a process whose title names the address (redis-server and Sentinels
// show "redis-server 127.0.0.1:PORT"; container processes are visible from the host too), or a
// container labelled with it (the label limitbench.addr that redisenv sets), when a docker CLI
// is on PATH.
func CheckGone(t testing.TB, addrs []string) {
	t.Helper()
	for _, a := range addrs {
		if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			_ = c.Close()
			t.Errorf("redistest: %s still accepts connections after Stop", a)
		}
		if pids := processesNaming(a); len(pids) > 0 {
			t.Errorf("redistest: processes %v still name %s after Stop", pids, a)
		}
	}
	if _, err := exec.LookPath("docker"); err != nil {
		return
	}
	for _, a := range addrs {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		out, err := exec.CommandContext(ctx, "docker", "ps", "-aq", "--filter", "label=limitbench.addr="+a).Output()
		cancel()
		if err == nil && len(strings.TrimSpace(string(out))) > 0 {
			t.Errorf("redistest: containers %s labelled %s are left after Stop", strings.Fields(string(out)), a)
		}
	}
}

// processesNaming returns the pids whose command line (a redis-server's title) holds addr
// followed by a space or its end.
func processesNaming(addr string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		line := strings.ReplaceAll(string(data), "\x00", " ") + " "
		if strings.Contains(line, addr+" ") {
			pids = append(pids, pid)
		}
	}
	return pids
}
