// Package redistest gives tests a real Redis: a single server or a 3-master cluster of
// redis-server processes, started lazily once per test package and shared, with a fresh key
// prefix per test so tests never see each other's keys.
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
	"os"
	"os/exec"
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
	single  = &shared{cfg: redisenv.Config{Backend: redisenv.BackendProcess, Topology: redisenv.TopologySingle}}
	cluster = &shared{cfg: redisenv.Config{Backend: redisenv.BackendProcess, Topology: redisenv.TopologyCluster, Masters: 3}}
	nextID  atomic.Int64
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

// Main is a TestMain helper: it runs the tests, stops the shared servers, and exits with the
// tests' code.
func Main(m *testing.M) {
	code := m.Run()
	single.stop()
	cluster.stop()
	os.Exit(code)
}
