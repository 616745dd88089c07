// Package acl owns what a run asks of the Redis user it runs as: the commands the harness sends
// itself (Harness), those the chosen algorithms send or their scripts call inside Redis, which
// Redis checks against the caller's ACL (algorithms.Commands), and the keys, all under
// limitbench: (KeyPattern). For a run it gives the exact ACL SETUSER line that grants them (For,
// Needs.SetUser), checks a user against them before anything starts (Check), and tells an ACL
// (load.Refused tells an ACL refusal from other errors, in each of Redis's wordings.)
package acl

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/limitbench/limitbench/algorithms"
)

// KeyPattern is the ACL key pattern of every key a run writes: its per-run prefix is under
// "limitbench:".
const KeyPattern = "~limitbench:*"

// Command is one command a run needs, as ACL rules name it: "incr", or "script|load" for one
// subcommand of a command that has them.
type Command struct {
	Name string
	// By says who sends it, in words: "the harness: ...", or the algorithms whose scripts call it.
	By []string
	// Optional is set for a command the run can do without, measuring less (MEMORY USAGE: the
	// bytes each key costs); the run warns when it is missing.
	Optional bool
}

// Run is what a run does, as far as its user's permissions go.
type Run struct {
	// Algorithms are the algorithms measured (custom ones included, as built for the run), and
	// Reference whether the reference script (algorithms.Reference) is measured too.
	Algorithms []algorithms.Algorithm
	Reference  bool
	// Call is how the built-in algorithms' Lua is called (EVALSHA or FCALL); a custom script is
	// always called with EVALSHA, a custom function with FCALL.
	Call algorithms.CallMode
	// Wait is set when every request is followed by a WAIT; Segments when the run is a segment
	// of a run of several generators (their barrier).
	Wait, Segments bool
}

// Needs is what a run needs of its user: the keys (KeyPattern) and Commands, sorted by name (as
// Lookup needs them).
type Needs struct {
	Commands []Command
	// Unnamed lists the algorithms whose scripts call a command whose name is not written out in
	// the script: their commands must be added by hand.
	Unnamed []string
}

// harnessUse is why the harness sends one of its commands.
type harnessUse struct {
	names    []string
	why      string
	optional bool
}

// Harness lists the commands the harness sends itself, whatever the algorithms: checked by a
// test against what Redis counts (INFO commandstats) during real runs.
var harness = []harnessUse{
	{[]string{"ping"}, "the harness: checks that Redis answers", false},
	{[]string{"info"}, "the harness: reads the server's figures and watches its nodes", false},
	{[]string{"scan", "unlink"}, "the harness: checks that the run's key prefix is free, and removes its keys", false},
	{[]string{"time"}, "the harness: measures the offset of the server's clock", false},
	{[]string{"eval"}, "the harness: checks these permissions before the run (redis.acl_check_cmd), and sends a script again after NOSCRIPT", false},
	{[]string{"memory|usage"}, "the harness: measures the memory each key costs (without it bytes_per_key is not measured)", true},
}

// callCommands are the commands that load and call an algorithm's Lua in each way.
var callCommands = map[string][]string{
	"script":   {"script|load", "evalsha"},
	"function": {"function|load", "function|delete", "fcall"},
	// A custom library is also listed, to check that it registers the named function.
	"custom function": {"function|load", "function|list", "function|delete", "fcall"},
}

// For returns what r needs: the harness's commands, the loading and calling of each algorithm's
// Lua, and the commands each algorithm sends or its script calls (algorithms.Commands).
func For(r Run) (Needs, error) {
	by := map[string]*Command{}
	add := func(name, who string, optional bool) {
		c := by[name]
		if c == nil {
			c = &Command{Name: name, Optional: optional}
			by[name] = c
		}
		c.Optional = c.Optional && optional
		if !slices.Contains(c.By, who) {
			c.By = append(c.By, who)
		}
	}
	for _, h := range harness {
		for _, n := range h.names {
			add(n, h.why, h.optional)
		}
	}
	if r.Wait {
		add("wait", "the harness: WAIT after every request", false)
	}
	if r.Segments {
		for _, n := range []string{"set", "get", "incr", "expire", "time"} {
			add(n, "the harness: the segments' barrier", false)
		}
	}
	var needs Needs
	all := slices.Clone(r.Algorithms)
	if r.Reference {
		all = append(all, algorithms.Reference())
	}
	for _, a := range all {
		name := a.Describe().Name
		cmds, dynamic, err := algorithms.Commands(a)
		if err != nil {
			return Needs{}, err
		}
		if dynamic {
			needs.Unnamed = append(needs.Unnamed, name)
		}
		for _, c := range cmds {
			add(c, name, false)
		}
		for _, c := range callCommands[callOf(a, r.Call)] {
			add(c, name, false)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(by)) {
		needs.Commands = append(needs.Commands, *by[n])
	}
	return needs, nil
}

// callOf says how a's Lua is loaded and called under mode: "script" (SCRIPT LOAD, EVALSHA),
// "function" (FUNCTION LOAD, FCALL, FUNCTION DELETE), "custom function", or "" for an algorithm
// of plain commands.
func callOf(a algorithms.Algorithm, mode algorithms.CallMode) string {
	if c, ok := a.(*algorithms.Custom); ok {
		if c.Spec().Function != "" {
			return "custom function"
		}
		return "script"
	}
	switch {
	case a.Describe().Script == "":
		return ""
	case mode == algorithms.CallFCall:
		return "function"
	}
	return "script"
}

// Names returns the names of the commands, the optional ones too.
func (n Needs) Names() []string {
	out := make([]string, len(n.Commands))
	for i, c := range n.Commands {
		out[i] = c.Name
	}
	return out
}

// SetUser returns the ACL SETUSER command that creates (or completes) user with exactly what
// the run needs, its password left as the placeholder >PASSWORD:
//
//	ACL SETUSER limitbench on >PASSWORD ~limitbench:* +eval +evalsha +get ...
func (n Needs) SetUser(user string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ACL SETUSER %s on >PASSWORD %s", user, KeyPattern)
	for _, c := range n.Commands {
		b.WriteString(" +" + c.Name)
	}
	return b.String()
}

// Lookup returns the command called name ("incr", "script|load"), case aside, and whether the
// run needs it.
func (n Needs) Lookup(name string) (Command, bool) {
	i, found := slices.BinarySearchFunc(n.Commands, strings.ToLower(name), func(c Command, name string) int {
		return cmp.Compare(c.Name, name)
	})
	if !found {
		return Command{}, false
	}
	return n.Commands[i], true
}
