package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/redisenv"
)

// The table test of issue 27, item 2: every driver's measurements go through one lifecycle
// (internal/measure), so they agree. Each row is one driver, run through the CLI against an
// external Redis the test starts (a private redis-server, watched with MONITOR), twice: as the
// default user with a built-in algorithm and `call: fcall` (scenario A), and as a user that may
// not UNLINK with a custom function library (scenario B). Per row it checks:
//
//   - claimed: every key prefix the driver's measurements wrote under was claimed (a SCAN of it)
//     before its first key was written; a segment's prefix is shared by the generators and
//     claimed by none, by design;
//   - emptied: no key under limitbench: is left when the user may remove them;
//   - keys-left warning: when the user may not, the keys left are said (a warning naming one of
//     the driver's prefixes, in its output or its result files);
//   - call mode: with call: fcall, the driver's limiter is called with FCALL, never EVALSHA;
//   - library unloaded: the custom function library is gone from the server afterwards.
//
// The one rule for the clock's drift allowance (measure.Drift) is not visible through the CLI:
// internal/measure's TestDriftRule checks it for every driver's plan.
//
// LIMITBENCH_BIN, when set, names the binary to run instead of this package's, so that the same
// rows can be pointed at another version of limitbench (the rows that fail on the code before
// internal/measure are the disagreements issue 27 lists).
func TestMeasurementTable(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every driver against real Redis")
	}
	t.Parallel() // a child process, no state of this one: overlaps the other waits
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH: %v", err)
	}
	bin := os.Getenv("LIMITBENCH_BIN")
	if bin == "" {
		bin = buildBinary(t)
	}
	dir := t.TempDir()
	lib, err := os.ReadFile(filepath.Join("..", "..", "examples", "custom", "function_lib.lua"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "function_lib.lua", string(lib))
	scenarioA := writeFile(t, dir, "a.yaml", tableScenario("table-a", "call: fcall\nalgorithms: [gcra]\n"))
	scenarioB := writeFile(t, dir, "b.yaml", tableScenario("table-b", `algorithms:
  - name: my-function
    library: function_lib.lua
    function: allow
    keys: ["log:{{tag}}"]
    args: ["{{limit}}", "{{window_ms}}", "{{uuid}}"]
    allowed: {element: 1, equals: 1}
    time: {element: 2, unit: us}
    contract: {kind: sliding-window, limit: 5, window: 10s}
`))
	for _, d := range tableDrivers() {
		t.Run(d.name, func(t *testing.T) {
			server := startTableServer(t)
			a := server.invoke(t, bin, d, scenarioA, "default")
			server.checkA(t, d, a)
			second := scenarioB
			if d.name == "segment" {
				// A segmented run refuses a custom script before it starts (merge verifies
				// built-in algorithms only): its keys-left row runs scenario A's gcra.
				second = scenarioA
			}
			b := server.invoke(t, bin, d, second, "nounlink")
			server.checkB(t, d, b)
		})
	}
}

// tableScenario returns a short scenario named name with the algorithms (and call) of tail: 4
// clients at 400/s over 20 subjects for 300 ms, limit 5 per 10 s, so that every subject's state
// is still there when the measurement ends.
func tableScenario(name, tail string) string {
	return fmt.Sprintf(`version: 1
name: %s
topologies: [single]
duration: 300ms
warmup: 0s
seed: 1
clients: 4
arrival: {rate: 400}
keys: {count: 20, distribution: uniform}
limit: {limit: 5, window: 10s}
%s`, name, tail)
}

// tableDriver is one row of the table: a driver of measurements, as the CLI runs it.
type tableDriver struct {
	name string
	// cmds returns the command lines to run at once for a scenario file on the Redis at url,
	// each writing into its own directory out(i).
	cmds func(scenario, url string, out func(i int) string) [][]string
	// mine reports whether a key prefix is one of the row's measurements'.
	mine func(prefix string) bool
	// shared: the driver's prefixes are shared by several generators and claimed by none.
	shared bool
}

func tableDrivers() []tableDriver {
	memory := func(p string) bool { return strings.HasSuffix(p, ":memory:") }
	capacity := func(subjects string) func(string, string, func(int) string) [][]string {
		return func(scenario, url string, out func(int) string) [][]string {
			name := "gcra"
			if strings.HasSuffix(scenario, "b.yaml") {
				name = "my-function"
			}
			return [][]string{{"capacity", "--backend", "external", "--redis", url, "--algorithm", name, "--step", "200ms",
				"--warmup", "50ms", "--slo", "none", "--subjects", subjects, "--out", out(0), scenario}}
		}
	}
	return []tableDriver{
		{name: "run", mine: func(string) bool { return true },
			cmds: func(scenario, url string, out func(int) string) [][]string {
				return [][]string{{"run", "--backend", "external", "--redis", url, "--no-reference", "--out", out(0), scenario}}
			}},
		{name: "capacity sweep step", mine: func(p string) bool { return !memory(p) }, cmds: capacity("0")},
		{name: "capacity memory step", mine: memory, cmds: capacity("200")},
		{name: "hunt trial", mine: func(string) bool { return true },
			cmds: func(scenario, url string, out func(int) string) [][]string {
				return [][]string{{"hunt", "--backend", "external", "--redis", url, "--budget", "1s", "--trials", "4", "--batch", "2",
					"--span", "300ms", "--seed", "1", "--out", out(0), scenario}}
			}},
		{name: "segment", mine: func(string) bool { return true }, shared: true,
			cmds: func(scenario, url string, out func(int) string) [][]string {
				id := fmt.Sprintf("table-%d", time.Now().UnixNano())
				var cmds [][]string
				for i := range 2 {
					cmds = append(cmds, []string{"run", "--backend", "external", "--redis", url, "--no-reference", "--segment",
						fmt.Sprintf("%d/2", i), "--run-id", id, "--lead", "2s", "--out", out(i), scenario})
				}
				return cmds
			}},
	}
}

// tableServer is a private redis-server with an admin client and a user nounlink that may do
// anything but UNLINK once its measurement has begun (revokeUnlink).
type tableServer struct {
	tgt   *redisenv.Target
	admin *redis.Client
}

func startTableServer(t *testing.T) *tableServer {
	t.Helper()
	ctx := context.Background()
	tgt, err := redisenv.Start(ctx, redisenv.Config{Backend: redisenv.BackendProcess})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tgt.Stop(context.Background()) })
	s := &tableServer{tgt: tgt, admin: redis.NewClient(tgt.NodeOptions(tgt.Masters()[0]))}
	t.Cleanup(func() { _ = s.admin.Close() })
	if err := s.admin.Do(ctx, "ACL", "SETUSER", "nounlink", "reset", "on", ">pw-nounlink", "~*", "&*", "+@all", "-unlink").Err(); err != nil {
		t.Fatal(err)
	}
	return s
}

// revokeUnlink lets nounlink UNLINK until a limiter of the invocation has been called (EVALSHA or
// FCALL), then takes UNLINK away: the run's check of its user before it starts passes, and its
// cleanup afterwards is refused. The returned function stops the watch.
func (s *tableServer) revokeUnlink(t *testing.T, ctx context.Context) (stop func()) {
	t.Helper()
	if err := s.admin.Do(ctx, "ACL", "SETUSER", "nounlink", "+unlink").Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.admin.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for wctx.Err() == nil {
			if calls(wctx, s.admin, "evalsha")+calls(wctx, s.admin, "fcall") > 0 {
				if err := s.admin.Do(wctx, "ACL", "SETUSER", "nounlink", "-unlink").Err(); err != nil && wctx.Err() == nil {
					t.Errorf("take UNLINK away: %v", err)
				}
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return func() { cancel(); <-done }
}

// url returns the server's URL for user.
func (s *tableServer) url(user string) string {
	pw := s.tgt.Password
	if user != "default" {
		pw = "pw-" + user
	}
	return (&url.URL{Scheme: "redis", User: url.UserPassword(user, pw), Host: s.tgt.Masters()[0]}).String()
}

// invocation is what one run of a driver did.
type invocation struct {
	output   string     // stdout, stderr and every file the commands wrote
	commands [][]string // MONITOR's top-level commands, as their arguments
	mine     []string   // the driver's key prefixes, in the order first written
	keysLeft []string   // keys under limitbench: afterwards
	libs     []string   // function libraries afterwards
	warned   []string   // the prefixes the output says keys were left under
	codes    []int      // exit codes
	firstUse map[string]int
	claimAt  map[string]int
}

// invoke runs driver d's commands for scenario as user with MONITOR on, and returns what they
// did. It then removes every limitbench key and library itself, for the next invocation.
func (s *tableServer) invoke(t *testing.T, bin string, d tableDriver, scenario, user string) *invocation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	mon := startMonitor(t, s.tgt)
	dir := t.TempDir()
	out := func(i int) string { return filepath.Join(dir, fmt.Sprintf("out%d", i)) }
	cmds := d.cmds(scenario, s.url(user), out)
	inv := &invocation{codes: make([]int, len(cmds))}
	if user == "nounlink" {
		defer s.revokeUnlink(t, ctx)()
	}
	outputs := make([]string, len(cmds))
	var wg sync.WaitGroup
	for i, args := range cmds {
		wg.Go(func() {
			var so, se bytes.Buffer
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Stdout, cmd.Stderr = &so, &se
			_ = cmd.Run()
			inv.codes[i] = cmd.ProcessState.ExitCode()
			outputs[i] = so.String() + se.String()
		})
	}
	wg.Wait()
	inv.commands = mon.stop()
	inv.output = strings.Join(outputs, "\n") + readTree(t, dir)
	for i, args := range cmds {
		if c := inv.codes[i]; c != 0 && c != 1 {
			t.Errorf("limitbench %s: exit %d; want 0 or 1\n%s", strings.Join(args, " "), c, outputs[i])
		}
	}
	inv.prefixes(d)
	for _, m := range warnedRE.FindAllStringSubmatch(inv.output, -1) {
		inv.warned = append(inv.warned, m[1])
	}
	slices.Sort(inv.warned)
	inv.warned = slices.Compact(inv.warned)
	var err error
	if inv.keysLeft, err = s.admin.Keys(context.Background(), "limitbench:*").Result(); err != nil {
		t.Fatal(err)
	}
	libs, err := s.admin.FunctionList(context.Background(), redis.FunctionListQuery{}).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range libs {
		inv.libs = append(inv.libs, l.Name)
		_ = s.admin.FunctionDelete(context.Background(), l.Name).Err()
	}
	for _, k := range inv.keysLeft {
		_ = s.admin.Unlink(context.Background(), k).Err()
	}
	t.Logf("%s as %s: exit %v, %d commands, prefixes %v, warned %v, %d keys left, libraries %v", d.name, user, inv.codes,
		len(inv.commands), inv.mine, inv.warned, len(inv.keysLeft), inv.libs)
	return inv
}

// warnedRE finds the prefix of a keys-left warning, in text or in JSON: measure's ("7 keys under
// P were left behind", "the keys under P could not be removed") or a summary of several ("... 7
// under P, 3 under Q").
var warnedRE = regexp.MustCompile(`under (limitbench:[^\s,;"]+:)`)

// prefixRE finds the key prefix of a measurement in a key: limitbench:<run>:<algorithm>:<what>:.
var prefixRE = regexp.MustCompile(`^limitbench:[^:]+:[^:]+:[^:]+:`)

// prefixes finds in the commands the prefixes of the driver's measurements: where each was
// first written (any command but SCAN naming a key under it) and claimed (a SCAN of it).
func (inv *invocation) prefixes(d tableDriver) {
	inv.firstUse, inv.claimAt = map[string]int{}, map[string]int{}
	for i, args := range inv.commands {
		if strings.EqualFold(args[0], "scan") {
			for j := 1; j+1 < len(args); j++ {
				if strings.EqualFold(args[j], "match") {
					p := strings.TrimSuffix(args[j+1], "*")
					if _, ok := inv.claimAt[p]; !ok {
						inv.claimAt[p] = i
					}
				}
			}
			continue
		}
		for _, a := range args[1:] {
			p := prefixRE.FindString(a)
			if p == "" || !d.mine(p) {
				continue
			}
			if _, ok := inv.firstUse[p]; !ok {
				inv.firstUse[p] = i
				inv.mine = append(inv.mine, p)
			}
		}
	}
}

// calls counts the commands of name among those that name a key of the driver's.
func (inv *invocation) calls(d tableDriver, names ...string) int {
	n := 0
	for _, args := range inv.commands {
		if !slices.ContainsFunc(names, func(s string) bool { return strings.EqualFold(s, args[0]) }) {
			continue
		}
		if slices.ContainsFunc(args[1:], func(a string) bool { p := prefixRE.FindString(a); return p != "" && d.mine(p) }) {
			n++
		}
	}
	return n
}

// checkA checks the invocation of scenario A (gcra, call: fcall, the default user).
func (s *tableServer) checkA(t *testing.T, d tableDriver, inv *invocation) {
	if len(inv.mine) == 0 {
		t.Fatalf("%s wrote no key under a prefix of its own", d.name)
	}
	t.Run("claimed", func(t *testing.T) {
		for _, p := range inv.mine {
			at, ok := inv.claimAt[p]
			switch {
			case d.shared && ok && at < inv.firstUse[p]:
				t.Errorf("%s: claimed; a segment's prefix is shared and claimed by none", p)
			case !d.shared && (!ok || at > inv.firstUse[p]):
				t.Errorf("%s: first written (command %d) before it was claimed (SCAN at %d, found %v)", p, inv.firstUse[p], at, ok)
			}
		}
	})
	t.Run("emptied", func(t *testing.T) {
		if len(inv.keysLeft) > 0 {
			t.Errorf("%d keys left, first %s; want none", len(inv.keysLeft), inv.keysLeft[0])
		}
	})
	t.Run("call mode", func(t *testing.T) {
		fcall, evalsha := inv.calls(d, "fcall", "fcall_ro"), inv.calls(d, "evalsha", "eval", "evalsha_ro", "eval_ro")
		if fcall == 0 || evalsha > 0 {
			t.Errorf("call: fcall: %d FCALL, %d EVALSHA or EVAL on the driver's keys; want FCALL only", fcall, evalsha)
		}
	})
	t.Run("library unloaded", func(t *testing.T) {
		if len(inv.libs) > 0 {
			t.Errorf("function libraries left: %v", inv.libs)
		}
	})
}

// checkB checks the invocation of scenario B (a custom function library, a user that may not
// UNLINK).
func (s *tableServer) checkB(t *testing.T, d tableDriver, inv *invocation) {
	t.Run("keys-left warning", func(t *testing.T) {
		var left []string
		for _, k := range inv.keysLeft {
			if p := prefixRE.FindString(k); p != "" && d.mine(p) {
				left = append(left, k)
			}
		}
		if len(left) == 0 {
			t.Fatalf("no key of the driver's left: the cleanup was not refused, the row checks nothing (keys left %v)", inv.keysLeft)
		}
		if !slices.ContainsFunc(inv.warned, d.mine) {
			t.Errorf("%d keys of the driver's left (first %s) and no warning names one of its prefixes (warned %v)", len(left), left[0], inv.warned)
		}
	})
	t.Run("library unloaded", func(t *testing.T) {
		if slices.Contains(inv.libs, "limitbench_example") {
			t.Errorf("the custom library limitbench_example is still loaded (libraries %v)", inv.libs)
		}
	})
}

// readTree returns the contents of every regular file under dir.
func readTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		b.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// monitor records the top-level commands a server receives (redis-cli monitor), not those
// scripts run.
type monitor struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	cancel context.CancelFunc
}

func startMonitor(t *testing.T, tgt *redisenv.Target) *monitor {
	t.Helper()
	host, port, _ := strings.Cut(tgt.Masters()[0], ":")
	ctx, cancel := context.WithCancel(context.Background())
	m := &monitor{out: &syncBuffer{}, cancel: cancel}
	m.cmd = exec.CommandContext(ctx, "redis-cli", "-h", host, "-p", port, "monitor")
	m.cmd.Env = append(os.Environ(), "REDISCLI_AUTH="+tgt.Password)
	m.cmd.Stdout = m.out
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("redis-cli monitor: %v", err)
	}
	// MONITOR is on once it has answered OK.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(m.out.String(), "OK"); {
		if time.Now().After(deadline) {
			t.Fatalf("redis-cli monitor did not start: %q", m.out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return m
}

// stop ends the monitor and returns the commands it saw, in order.
func (m *monitor) stop() [][]string {
	time.Sleep(200 * time.Millisecond) // the last lines are on their way
	m.cancel()
	_ = m.cmd.Wait()
	var out [][]string
	for line := range strings.SplitSeq(m.out.String(), "\n") {
		if args := parseMonitor(line); args != nil {
			out = append(out, args)
		}
	}
	return out
}

// parseMonitor returns the arguments of a MONITOR line such as
// `1700000000.123456 [0 127.0.0.1:5555] "fcall" "allow" "1" "k"`, nil for a command a script
// ran ([0 lua]) or a line that is not a command.
func parseMonitor(line string) []string {
	open, end := strings.IndexByte(line, '['), strings.IndexByte(line, ']')
	if open < 0 || end < open || strings.HasSuffix(line[open:end], " lua") {
		return nil
	}
	var args []string
	var cur strings.Builder
	in, esc := false, false
	for _, r := range line[end+1:] {
		switch {
		case esc:
			cur.WriteRune(r)
			esc = false
		case in && r == '\\':
			esc = true
		case r == '"' && in:
			args = append(args, cur.String())
			cur.Reset()
			in = false
		case r == '"':
			in = true
		case in:
			cur.WriteRune(r)
		}
	}
	if len(args) == 0 {
		return nil
	}
	return args
}
