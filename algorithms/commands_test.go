package algorithms

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestScriptCommands: the commands a script calls are read from its text, as ACL rules name them;
// comments are not code; a command that is not written out is reported.
func TestScriptCommands(t *testing.T) {
	for _, tt := range []struct {
		name, src string
		want      []string
		dynamic   bool
	}{
		{"calls and pcalls, any case, any quotes", `local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.pcall("pexpire", KEYS[1], ARGV[1]) end
return server.call( 'Get' , KEYS[2])`, []string{"get", "incr", "pexpire"}, false},
		{"a subcommand of a container command", `redis.call('SCRIPT', 'FLUSH'); redis.call('OBJECT', "encoding", KEYS[1]); redis.call('SET', 'x', 'y')`,
			[]string{"object|encoding", "script|flush", "set"}, false},
		{"comments are not calls", "-- redis.call('FLUSHALL')\n--[[ redis.call('DEL', 'x')\n]] --[==[ redis.call('KEYS', '*') ]==]\nreturn redis.call('TIME')",
			[]string{"time"}, false},
		{"a command in a variable", `local cmd = ARGV[1]; return redis.call(cmd, KEYS[1])`, nil, true},
	} {
		got, dynamic := ScriptCommands(tt.src)
		if diff := cmp.Diff(tt.want, got); diff != "" || dynamic != tt.dynamic {
			t.Errorf("%s: ScriptCommands = %v, dynamic %v; want %v, %v (-want +got):\n%s", tt.name, got, dynamic, tt.want, tt.dynamic, diff)
		}
	}
}

// TestCommandsOfEveryAlgorithm: every built-in algorithm names what it needs: a script whose
// commands are all written out, or the plain commands it sends; every script calls TIME or is
// given the time.
func TestCommandsOfEveryAlgorithm(t *testing.T) {
	for _, a := range append(All(), Reference()) {
		name := a.Describe().Name
		cmds, dynamic, err := Commands(a)
		if err != nil || dynamic || len(cmds) == 0 {
			t.Errorf("Commands(%s) = %v, dynamic %v, %v; want the commands, all written out", name, cmds, dynamic, err)
		}
		if !slices.IsSorted(cmds) {
			t.Errorf("Commands(%s) = %v; want them sorted", name, cmds)
		}
	}
	got, _, _ := Commands(GCRA{})
	if want := []string{"get", "set", "time"}; !slices.Equal(got, want) {
		t.Errorf("Commands(gcra) = %v; want %v", got, want)
	}
	got, _, _ = Commands(SlidingLogPublished{})
	if want := []string{"expire", "zadd", "zcard", "zremrangebyscore"}; !slices.Equal(got, want) {
		t.Errorf("Commands(sliding-log-published) = %v; want %v", got, want)
	}
}
