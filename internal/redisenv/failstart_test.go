package redisenv_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limitbench/limitbench/internal/redisenv"
)

// TestProcessStartFailure makes redis-server fail to start and checks that the error shows the
// server's own output and that nothing is left behind: no temporary directory, no sweep record,
// no process. A fake redis-server placed first on PATH stands in for the broken server; TMPDIR
// is the test's own, so other tests' servers are not counted.
func TestProcessStartFailure(t *testing.T) {
	needRedisServer(t)
	real, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		topology redisenv.Topology
		script   string // body of the fake redis-server; $REAL is the real one
		want     string // in the error
	}{
		{"exits with a message", redisenv.TopologySingle,
			`echo "fake redis-server: cannot start (limitbench test)" >&2; exit 1`,
			"fake redis-server: cannot start (limitbench test)"},
		{"redis-server refuses its config", redisenv.TopologySingle,
			`exec "$REAL" "$@" --no-such-directive yes`,
			"Bad directive or wrong number of arguments"},
		// Two nodes start for real and must be stopped when the third fails.
		{"one cluster node fails", redisenv.TopologyCluster,
			`if mkdir "$(dirname "$0")/failed" 2>/dev/null; then echo "fake redis-server: node refuses (limitbench test)" >&2; exit 1; fi
exec "$REAL" "$@"`,
			"fake redis-server: node refuses (limitbench test)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bin := t.TempDir()
			tmp := t.TempDir()
			script := "#!/bin/sh\nREAL=" + strconv.Quote(real) + "\n" + tt.script + "\n"
			if err := os.WriteFile(filepath.Join(bin, "redis-server"), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			t.Setenv("TMPDIR", tmp)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			target, err := redisenv.Start(ctx, redisenv.Config{Backend: redisenv.BackendProcess, Topology: tt.topology, Logf: t.Logf})
			if err == nil {
				_ = target.Stop(context.Background())
				t.Fatalf("Start with a broken redis-server succeeded")
			}
			if !errors.Is(err, redisenv.ErrUnavailable) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Start = %v\nwant ErrUnavailable showing the server's output %q", err, tt.want)
			}
			entries, _ := os.ReadDir(tmp)
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), "limitbench-redis-") {
					t.Errorf("temporary directory %s left behind", filepath.Join(tmp, e.Name()))
				}
			}
			records, _ := os.ReadDir(filepath.Join(tmp, "limitbench-procs"))
			for _, e := range records {
				t.Errorf("sweep record %s left behind", e.Name())
			}
			if pids := processesIn(tmp); len(pids) > 0 {
				t.Errorf("processes %v still run in %s", pids, tmp)
			}
		})
	}
}

// processesIn returns the pids of the processes whose working directory is under dir. Each
// server runs in its own temporary directory, and redis-server renames its command line, so the
// working directory is what tells our servers apart.
func processesIn(dir string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err == nil && strings.HasPrefix(cwd, dir+string(os.PathSeparator)) {
			pids = append(pids, pid)
		}
	}
	return pids
}
