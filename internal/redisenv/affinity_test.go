package redisenv_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/limitbench/limitbench/internal/redisenv"
)

// startPinnable starts a process-backend target of topo and stops it at the end of the test.
func startPinnable(t *testing.T, topo redisenv.Topology) *redisenv.Target {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("CPU affinity is only supported on Linux")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tgt, err := redisenv.Start(ctx, redisenv.Config{Backend: redisenv.BackendProcess, Topology: topo, Logf: t.Logf})
	if err != nil {
		t.Fatalf("Start(process %s): %v", topo, err)
	}
	t.Cleanup(func() {
		if err := tgt.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return tgt
}

// threadCPUs returns the affinity of every thread of pid, keyed by thread id.
func threadCPUs(t *testing.T, pid int) map[int][]int {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int][]int{}
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			continue
		}
		cpus, err := redisenv.ProcessCPUs(tid)
		if err != nil {
			t.Fatalf("ProcessCPUs(thread %d): %v", tid, err)
		}
		out[tid] = cpus
	}
	return out
}

func TestPinServers(t *testing.T) {
	for _, topo := range []redisenv.Topology{redisenv.TopologySingle, redisenv.TopologyCluster} {
		t.Run(string(topo), func(t *testing.T) {
			tgt := startPinnable(t, topo)
			ctx := context.Background()
			pids, err := tgt.ServerPIDs(ctx)
			if err != nil {
				t.Fatalf("ServerPIDs: %v", err)
			}
			if len(pids) != len(tgt.Info.Nodes) {
				t.Fatalf("ServerPIDs = %v; want one per node (%d)", pids, len(tgt.Info.Nodes))
			}
			mine, err := redisenv.ProcessCPUs(os.Getpid())
			if err != nil {
				t.Fatal(err)
			}
			last := mine[len(mine)-1]
			if err := tgt.PinServers(ctx, []int{last}); err != nil {
				t.Fatalf("PinServers([%d]): %v", last, err)
			}
			for _, pid := range pids {
				threads := threadCPUs(t, pid)
				if len(threads) < 2 {
					t.Errorf("redis-server %d has %d thread(s); want its background threads too", pid, len(threads))
				}
				for tid, cpus := range threads {
					if !slices.Equal(cpus, []int{last}) {
						t.Errorf("thread %d of redis-server %d runs on CPUs %v; want [%d]", tid, pid, cpus, last)
					}
				}
			}
			// Pinned servers still answer.
			if err := tgt.Client.Ping(ctx).Err(); err != nil {
				t.Errorf("PING after pinning: %v", err)
			}
		})
	}
}

func TestPinServersNotOurs(t *testing.T) {
	tgt := startPinnable(t, redisenv.TopologySingle)
	ctx := context.Background()
	// The same server reached as an external one: its process is not the target's to move.
	ext, err := redisenv.Start(ctx, redisenv.Config{Backend: redisenv.BackendExternal,
		URL: fmt.Sprintf("redis://:%s@%s", tgt.Password, tgt.Masters()[0])})
	if err != nil {
		t.Fatalf("Start(external): %v", err)
	}
	defer ext.Stop(ctx)
	if _, err := ext.ServerPIDs(ctx); !errors.Is(err, redisenv.ErrCannotPin) {
		t.Errorf("external ServerPIDs error = %v; want ErrCannotPin", err)
	}
	if err := ext.PinServers(ctx, []int{0}); !errors.Is(err, redisenv.ErrCannotPin) {
		t.Errorf("external PinServers error = %v; want ErrCannotPin", err)
	}
}

func TestPinProcessBadCPUs(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("CPU affinity is only supported on Linux")
	}
	for _, cpus := range [][]int{nil, {-1}, {1 << 20}} {
		if err := redisenv.PinProcess(os.Getpid(), cpus); !errors.Is(err, redisenv.ErrBadConfig) {
			t.Errorf("PinProcess(self, %v) = %v; want ErrBadConfig", cpus, err)
		}
	}
	if err := redisenv.PinProcess(-5, []int{0}); !errors.Is(err, redisenv.ErrCannotPin) {
		t.Errorf("PinProcess(-5) = %v; want ErrCannotPin", err)
	}
}
