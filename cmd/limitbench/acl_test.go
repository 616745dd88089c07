package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/golden"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
	"github.com/limitbench/limitbench/result"
)

// aclServer is a redis-server the test started, with its admin (the default user) and users made
// from ACL SETUSER lines.
type aclServer struct {
	t     *testing.T
	bin   string
	admin *redis.Client
	addr  string
}

func newACLServer(t *testing.T) *aclServer {
	t.Helper()
	target := redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess})
	admin := redis.NewClient(&redis.Options{Addr: target.Masters()[0], Password: target.Password, DisableIdentity: true})
	t.Cleanup(func() { _ = admin.Close() })
	return &aclServer{t: t, bin: buildBinary(t), admin: admin, addr: target.Masters()[0]}
}

// limitbench runs the binary with args and returns its exit code, stdout and stderr.
func (s *aclServer) limitbench(args ...string) (code int, stdout, stderr string) {
	s.t.Helper()
	cmd := exec.Command(s.bin, args...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		s.t.Fatal(err)
	}
	return code, so.String(), se.String()
}

// line returns the ACL SETUSER line `limitbench acl args...` prints.
func (s *aclServer) line(args ...string) string {
	s.t.Helper()
	code, stdout, stderr := s.limitbench(append([]string{"acl"}, args...)...)
	if code != 0 {
		s.t.Fatalf("limitbench acl %v: exit %d\n%s", args, code, stderr)
	}
	return strings.TrimSpace(stdout)
}

// user creates the user of an ACL SETUSER line (resetting it first) with password "pw", and
// returns the URL of the server as that user.
func (s *aclServer) user(line string) string {
	s.t.Helper()
	words := strings.Fields(strings.Replace(line, ">PASSWORD", ">pw", 1))
	ctx := context.Background()
	if err := s.admin.Do(ctx, "ACL", "SETUSER", words[2], "reset").Err(); err != nil {
		s.t.Fatal(err)
	}
	args := make([]any, len(words))
	for i, w := range words {
		args[i] = w
	}
	if err := s.admin.Do(ctx, args...).Err(); err != nil {
		s.t.Fatalf("%s: %v", line, err)
	}
	return (&url.URL{Scheme: "redis", User: url.UserPassword(words[2], "pw"), Host: s.addr}).String()
}

// commandsSeen returns the commands Redis counted since the last CONFIG RESETSTAT, in ACL form,
// without those every client may send (HELLO) and the test's own.
func (s *aclServer) commandsSeen() []string {
	s.t.Helper()
	info, err := s.admin.Info(context.Background(), "commandstats").Result()
	if err != nil {
		s.t.Fatal(err)
	}
	var out []string
	for l := range strings.SplitSeq(info, "\n") {
		name, ok := strings.CutPrefix(strings.TrimSpace(l), "cmdstat_")
		name, _, _ = strings.Cut(name, ":")
		if ok && !slices.Contains([]string{"hello", "config|resetstat", "acl|setuser", "info"}, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// TestACLExactLine is the regression test of issue 28 item 4: a Redis user given exactly the line
// `limitbench acl` prints runs every algorithm, through EVALSHA and through FCALL, and Redis counts
// no command outside the line nor one of the line it did not need (INFO is the test's too); a
// user missing any one command of it is refused before the run (exit 3) with the command named,
// except MEMORY USAGE, whose absence is a warning.
func TestACLExactLine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs every algorithm against real Redis")
	}
	t.Parallel() // child processes on a server of its own: overlaps the other waits
	s := newACLServer(t)
	smoke := suite + "smoke.yaml"
	lines := map[string]string{}
	for _, call := range []string{"evalsha", "fcall"} {
		t.Run(call, func(t *testing.T) {
			line := s.line("--call", call, smoke)
			lines[call] = line
			u := s.user(line)
			if err := s.admin.ConfigResetStat(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := s.limitbench("run", "--quiet", "--call", call, "--duration", "300ms", "--speed-only", "--redis", u, "--out", filepath.Join(t.TempDir(), "out"), smoke)
			if code != exitOK && !(code == exitFailed && onlyFellBehind(stderr)) {
				t.Fatalf("run as a user with exactly %q: exit %d\n%s", line, code, stderr)
			}
			granted := strings.Fields(line)[6:]
			for i := range granted {
				granted[i] = strings.TrimPrefix(granted[i], "+")
			}
			// Every command sent was granted; every command granted was sent, but for those a
			// script calls only on some paths (LTRIM once a log is full).
			seen, inScripts := s.commandsSeen(), scriptCommands(t)
			notGranted := slices.DeleteFunc(slices.Clone(seen), func(c string) bool { return slices.Contains(granted, c) })
			unsent := slices.DeleteFunc(slices.Clone(granted), func(c string) bool {
				return c == "info" || slices.Contains(seen, c) || slices.Contains(inScripts, c)
			})
			if len(notGranted)+len(unsent) > 0 {
				t.Errorf("Redis counted %v, which the line does not grant; the line grants %v, which no script calls and the run did not send", notGranted, unsent)
			}
		})
	}

	// One user per command the evalsha line has, each missing that one command.
	line := lines["evalsha"]
	var report strings.Builder
	for _, grant := range strings.Fields(line)[4:] {
		if grant == ">PASSWORD" {
			continue
		}
		u := s.user(strings.Replace(line, " "+grant, "", 1))
		args := []string{"run", "--quiet", "--duration", "300ms", "--redis", u, "--out", filepath.Join(t.TempDir(), "out"), smoke}
		if grant == "+memory|usage" {
			args = []string{"run", "--quiet", "--no-reference", "--algorithms", "gcra", "--duration", "300ms", "--speed-only", "--redis", u, "--out", filepath.Join(t.TempDir(), "out"), smoke}
		}
		begin := time.Now()
		code, _, stderr := s.limitbench(args...)
		first, _, _ := strings.Cut(stderr, "\n")
		fmt.Fprintf(&report, "without %s: exit %d\n%s\n", grant, code, strings.ReplaceAll(first, s.addr, "$REDIS"))
		want := exitEnv
		if grant == "+memory|usage" {
			want = exitOK
		}
		if code != want && !(want == exitOK && code == exitFailed && onlyFellBehind(stderr)) {
			t.Errorf("without %s: exit %d; want %d\n%s", grant, code, want, stderr)
		}
		if want == exitEnv && time.Since(begin) > 5*time.Second {
			t.Errorf("without %s: refused after %s; want before the run starts", grant, time.Since(begin).Round(time.Millisecond))
		}
	}
	golden.Check(t, filepath.Join("testdata", "acl", "missing-one.golden"), []byte(report.String()))
}

// scriptCommands returns the commands the built-in algorithms' scripts call.
func scriptCommands(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, a := range append(algorithms.All(), algorithms.Reference()) {
		cmds, _, err := algorithms.Commands(a)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, cmds...)
	}
	return out
}

// TestACLRefusedInScript is the regression test of issue 28 item 4's in-script refusal: a custom
// script that names its command in a variable (which no check can read) run by a user without
// that command stops at the first refusal, exit 3, naming the script (Redis 7.0 words it "ERR The
// user executing the script can't run this command", without NOPERM), instead of running to the
// end with 100% errors and exit 1.
func TestACLRefusedInScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs against real Redis")
	}
	s := newACLServer(t)
	dir := t.TempDir()
	writeFile(t, dir, "dynamic.lua", "local cmd = 'IN' .. 'CR'\nlocal n = redis.call(cmd, KEYS[1])\nredis.call('PEXPIRE', KEYS[1], 1000)\nreturn n\n")
	scenario := writeFile(t, dir, "dynamic.yaml", `version: 1
name: dynamic
topologies: [single]
duration: 5s
warmup: 0s
clients: 2
arrival: {rate: 100}
limit: {limit: 10, window: 1s}
algorithms:
  - name: dynamic
    script: dynamic.lua
    keys: ["n:{{tag}}"]
    allowed: {element: 0, at_most: "{{limit}}"}
    contract: {kind: fixed-window, limit: "{{limit}}", window: "{{window_ms}}ms"}
`)
	code, _, stderr := s.limitbench("acl", "--no-reference", scenario)
	if code != exitOK || !strings.Contains(stderr, "dynamic call a command that is not written out in the script") {
		t.Errorf("acl of a script with a command in a variable: exit %d, stderr %q; want a note that it cannot be read", code, stderr)
	}
	u := s.user(s.line("--no-reference", scenario))
	out := filepath.Join(dir, "out")
	begin := time.Now()
	code, _, stderr = s.limitbench("run", "--quiet", "--no-reference", "--redis", u, "--out", out, scenario)
	first, _, _ := strings.Cut(stderr, "\n")
	golden.Check(t, filepath.Join("testdata", "acl", "refused-in-script.golden"),
		fmt.Appendf(nil, "exit %d\n%s\n", code, strings.NewReplacer(s.addr, "$REDIS", out, "$OUT").Replace(first)))
	if code != exitEnv {
		t.Errorf("exit %d; want 3\n%s", code, stderr)
	}
	if took := time.Since(begin); took > 4*time.Second {
		t.Errorf("the run took %s; want it stopped at the first refusal, not at the end of its 5 s", took.Round(time.Millisecond))
	}
	res, err := result.Read(filepath.Join(out, result.FileName))
	if err != nil {
		t.Fatalf("no result.json of the stopped run: %v", err)
	}
	t.Logf("result: %d entries, cut short %v: %s", len(res.Entries), res.CutShort, res.CutShortNote)
}

// TestACLCommand: `limitbench acl` prints the line for a scenario, a list of algorithms or every
// built-in one, says who needs each command with --why, and refuses bad input; the line
// docs/environments.md shows is the one it prints for scenarios/smoke.yaml.
func TestACLCommand(t *testing.T) {
	aclOut := func(args ...string) (int, string, string) {
		var so, se bytes.Buffer
		code := run(append([]string{"acl"}, args...), &so, &se)
		return code, so.String(), se.String()
	}
	code, smokeLine, stderr := aclOut(suite + "smoke.yaml")
	if code != exitOK {
		t.Fatalf("acl smoke.yaml: exit %d\n%s", code, stderr)
	}
	if _, all, _ := aclOut(); all != smokeLine {
		t.Errorf("acl without a scenario = %q; want every built-in algorithm's, as smoke's (all): %q", all, smokeLine)
	}
	doc := readRepoFile(t, "docs/environments.md")
	if !strings.Contains(doc, "\n"+smokeLine) {
		t.Errorf("docs/environments.md does not show the line `limitbench acl scenarios/smoke.yaml` prints:\n%s", smokeLine)
	}
	for _, tt := range []struct {
		args []string
		code int
		want string // in stdout, or in stderr for a refusal
	}{
		{[]string{"--algorithms", "gcra", "--no-reference", "--user", "bench"}, exitOK,
			"ACL SETUSER bench on >PASSWORD ~limitbench:* +eval +evalsha +get +info +memory|usage +ping +scan +script|load +set +time +unlink"},
		{[]string{"--algorithms", "gcra", "--call", "fcall", "--why"}, exitOK, "+function|load gcra; reference +get gcra"},
		{[]string{"--algorithms", "gcra", "--wait", "--segments", "--why"}, exitOK, "+wait the harness: WAIT after every request"},
		{[]string{"--algorithms", "gcar"}, exitBadInput, `unknown algorithm "gcar" (did you mean "gcra"?)`},
		{[]string{"--call", "eval"}, exitBadInput, "--call"},
		{[]string{"a.yaml", "b.yaml"}, exitBadInput, "want at most one SCENARIO.yaml"},
	} {
		code, stdout, stderr := aclOut(tt.args...)
		out := strings.Join(strings.Fields(stdout), " ") // the --why table's columns aside
		if code != exitOK {
			out = stderr
		}
		if code != tt.code || !strings.Contains(out, tt.want) {
			t.Errorf("acl %v: exit %d, stdout %q, stderr %q; want exit %d with %q", tt.args, code, stdout, stderr, tt.code, tt.want)
		}
	}
}
