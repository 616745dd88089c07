package acl

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

func lookup(t *testing.T, names ...string) []algorithms.Algorithm {
	t.Helper()
	var out []algorithms.Algorithm
	for _, n := range names {
		a, err := algorithms.Lookup(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}

// TestFor: a run's needs are the harness's commands, how each algorithm's Lua is loaded and
// called, and what its script calls; WAIT and the segments' barrier only when the run sends them.
func TestFor(t *testing.T) {
	custom, err := algorithms.NewCustom(algorithms.CustomSpec{Name: "mine", Script: "mine.lua", Source: "return redis.call('HINCRBY', KEYS[1], 'n', 1)",
		Keys: []string{"m:{{tag}}"}, Allowed: algorithms.ReplyRule{Op: algorithms.RuleAtMost, Value: "{{limit}}"},
		Contract: algorithms.Contract{Kind: algorithms.NoContract}})
	if err != nil {
		t.Fatal(err)
	}
	harness := []string{"eval", "info", "memory|usage", "ping", "scan", "time", "unlink"}
	for _, tt := range []struct {
		name string
		run  Run
		want []string
	}{
		{"gcra through EVALSHA", Run{Algorithms: lookup(t, "gcra")}, []string{"evalsha", "get", "script|load", "set"}},
		{"gcra through FCALL, the reference too", Run{Algorithms: lookup(t, "gcra"), Reference: true, Call: algorithms.CallFCall},
			[]string{"fcall", "function|delete", "function|load", "get", "incr", "pexpire", "set"}},
		{"plain commands only", Run{Algorithms: lookup(t, "sliding-log-published"), Call: algorithms.CallFCall}, []string{"expire", "zadd", "zcard", "zremrangebyscore"}},
		{"a custom script through EVALSHA whatever the call", Run{Algorithms: []algorithms.Algorithm{custom}, Call: algorithms.CallFCall},
			[]string{"evalsha", "hincrby", "script|load"}},
		{"WAIT and segments", Run{Algorithms: lookup(t, "gcra"), Wait: true, Segments: true},
			[]string{"evalsha", "expire", "get", "incr", "script|load", "set", "wait"}},
	} {
		needs, err := For(tt.run)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		want := append(slices.Clone(harness), tt.want...)
		slices.Sort(want)
		if diff := cmp.Diff(slices.Compact(want), needs.Names()); diff != "" {
			t.Errorf("%s: For (-want +got):\n%s", tt.name, diff)
		}
	}
	needs, _ := For(Run{Algorithms: lookup(t, "gcra")})
	if got, want := needs.SetUser("bench"), "ACL SETUSER bench on >PASSWORD ~limitbench:* +eval +evalsha +get +info +memory|usage +ping +scan +script|load +set +time +unlink"; got != want {
		t.Errorf("SetUser = %q; want %q", got, want)
	}
	if c, ok := needs.Lookup("MEMORY|USAGE"); !ok || !c.Optional {
		t.Errorf("Lookup(MEMORY|USAGE) = %+v, %v; want it, optional", c, ok)
	}
	if c, _ := needs.Lookup("get"); !slices.Equal(c.By, []string{"gcra"}) || c.Optional {
		t.Errorf("get is needed by %v (optional %v); want gcra, required", c.By, c.Optional)
	}
}

// TestCheck: Check finds exactly the commands a user lacks, on keys under limitbench:, and asks
// nothing a server can crash on: Redis 7.0.15 crashes when redis.acl_check_cmd is asked about
// EVALSHA, SET, SORT and twenty others without their arguments, for a user allowed to run them.
// Every command the server knows is asked about, for a user allowed everything on limitbench:
// keys, and the server is still there.
func TestCheck(t *testing.T) {
	admin := redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess})
	ctx := context.Background()
	as := func(rules ...any) *redisenv.Target {
		t.Helper()
		if err := admin.Client.Do(ctx, append([]any{"ACL", "SETUSER", "u", "reset", "on", ">pw"}, rules...)...).Err(); err != nil {
			t.Fatal(err)
		}
		tgt, err := redisenv.Start(ctx, redisenv.Config{Backend: redisenv.BackendExternal, URL: "redis://u:pw@" + admin.Masters()[0]})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tgt.Stop(ctx) })
		return tgt
	}
	names, err := admin.Client.Do(ctx, "COMMAND", "LIST").StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	var every Needs
	for _, n := range names {
		switch n {
		case "acl", "client", "cluster", "command", "config", "function", "latency", "memory", "module", "object", "pubsub", "script", "slowlog", "xgroup", "xinfo":
			continue // containers: asked about by subcommand
		}
		every.Commands = append(every.Commands, Command{Name: n})
	}
	refusals, err := Check(ctx, as("~limitbench:*", "+@all"), every)
	if err != nil {
		t.Fatalf("Check of every command: %v", err)
	}
	if err := admin.Client.Ping(ctx).Err(); err != nil {
		t.Fatalf("the server is gone after Check: %v", err)
	}
	for _, r := range refusals {
		for _, c := range r.Missing {
			if !strings.Contains(c.Name, "subscribe") && !strings.Contains(c.Name, "publish") { // channels, not keys
				t.Errorf("a user allowed everything on limitbench: keys is refused %s", c.Name)
			}
		}
	}

	needs, err := For(Run{Algorithms: lookup(t, "gcra"), Reference: true})
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Fields(needs.SetUser("u"))[5:]
	rules := func(drop ...string) []any {
		var out []any
		for _, r := range line {
			if !slices.Contains(drop, r) {
				out = append(out, r)
			}
		}
		return out
	}
	missing := func(refusals []Refusal) []string {
		var out []string
		for _, r := range refusals {
			for _, c := range r.Missing {
				out = append(out, c.Name)
			}
		}
		return out
	}
	for _, tt := range []struct {
		name  string
		rules []any
		want  []string
	}{
		{"exactly the line", rules(), nil},
		{"without INCR and SCRIPT LOAD", rules("+incr", "+script|load"), []string{"incr", "script|load"}},
		{"without MEMORY USAGE", rules("+memory|usage"), []string{"memory|usage"}},
		{"other keys", append(rules("~limitbench:*"), "~other:*"), []string{"get", "incr", "memory|usage", "pexpire", "set", "unlink"}},
		{"without EVAL: nothing else can be asked", rules("+eval"), []string{"eval"}},
	} {
		refusals, err := Check(ctx, as(tt.rules...), needs)
		if err != nil {
			t.Errorf("%s: Check: %v", tt.name, err)
			continue
		}
		if diff := cmp.Diff(tt.want, missing(refusals)); diff != "" {
			t.Errorf("%s: missing (-want +got):\n%s", tt.name, diff)
		}
	}
	_, err = Check(ctx, as(rules()...), Needs{Commands: []Command{{Name: "no-such-command"}}})
	if !errors.Is(err, ErrCannotCheck) {
		t.Errorf("Check of an unknown command = %v; want ErrCannotCheck", err)
	}

}
