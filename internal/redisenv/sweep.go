package redisenv

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// record is what the process backend writes for every server it starts, so that a later harness
// can remove the servers of one that was killed before it could stop them.
type record struct {
	Kind string `json:"kind"` // "process"
	PID  int    `json:"pid"`
	// PIDStart is the server's start time (clock ticks since boot, /proc/<pid>/stat field 22),
	// which tells the server apart from an unrelated process that reused its pid.
	PIDStart     uint64 `json:"pid_start"`
	HarnessPID   int    `json:"harness_pid"`
	HarnessStart uint64 `json:"harness_start"`
	Dir          string `json:"dir"`
	Addr         string `json:"addr"`
}

// recordDir is the well-known directory of records: one <pid>.json per running server.
func recordDir() string { return filepath.Join(os.TempDir(), "limitbench-procs") }

func recordPath(pid int) string { return filepath.Join(recordDir(), strconv.Itoa(pid)+".json") }

// writeRecord records a started server. Failing to record only weakens the sweep, so errors are
// ignored.
func writeRecord(r record) {
	r.HarnessPID = os.Getpid()
	r.HarnessStart = procStart(r.HarnessPID)
	r.PIDStart = procStart(r.PID)
	if err := os.MkdirAll(recordDir(), 0o700); err != nil {
		return
	}
	data, err := json.Marshal(r)
	if err != nil {
		return
	}
	tmp := recordPath(r.PID) + ".tmp"
	if os.WriteFile(tmp, data, 0o600) == nil {
		_ = os.Rename(tmp, recordPath(r.PID))
	}
}

func removeRecord(pid int) { _ = os.Remove(recordPath(pid)) }

// alive reports whether pid is a running process started at start (0: start unknown, not
// compared). A zombie counts as dead.
func alive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	if !pidExists(pid) {
		return false
	}
	st, state := procStat(pid)
	if state == "Z" || state == "X" {
		return false
	}
	return start == 0 || st == 0 || st == start
}

// procStat returns the start time and state of pid from /proc (0, "" when unavailable).
func procStat(pid int) (uint64, string) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, ""
	}
	s := string(data)
	// The command name is in parentheses and may contain spaces: fields start after the last ')'.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, ""
	}
	start, _ := strconv.ParseUint(f[19], 10, 64) // field 22 overall
	return start, f[0]
}

func procStart(pid int) uint64 { st, _ := procStat(pid); return st }

// sweep kills the servers recorded by harnesses that are no longer running, removes their
// temporary directories and their records. It is best effort and logs what it removed.
func sweep(ctx context.Context, logf func(string, ...any)) {
	entries, err := os.ReadDir(recordDir())
	if err != nil {
		return
	}
	for _, e := range entries {
		if ctx.Err() != nil {
			return
		}
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(recordDir(), e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var r record
		if json.Unmarshal(data, &r) != nil || r.PID <= 0 {
			_ = os.Remove(path)
			continue
		}
		if alive(r.HarnessPID, r.HarnessStart) {
			continue
		}
		if alive(r.PID, r.PIDStart) && isRedisServer(r.PID) {
			// The server leads its own process group (Setpgid): kill the whole group.
			_ = signalGroup(r.PID, sigKill)
			_ = signalPID(r.PID, sigKill)
			logf("redisenv: swept redis-server pid %d (%s) left by dead harness pid %d", r.PID, r.Addr, r.HarnessPID)
		}
		if r.Dir != "" && strings.HasPrefix(filepath.Base(r.Dir), "limitbench-redis-") && filepath.Dir(r.Dir) == filepath.Clean(os.TempDir()) {
			_ = os.RemoveAll(r.Dir)
		}
		_ = os.Remove(path)
	}
}

// isRedisServer reports whether pid runs redis-server (true when /proc is unavailable).
func isRedisServer(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	return strings.Contains(string(data), "redis-server") || strings.Contains(string(data), "redis.conf")
}
