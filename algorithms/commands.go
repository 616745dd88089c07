package algorithms

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/limitbench/limitbench/scripts"
)

// Commands returns the Redis commands, in ACL form ("incr", "script|load"), that a run of a needs
// of its user besides the call of its Lua (EVALSHA or FCALL, the harness's): those its script
// calls inside Redis, which Redis checks against the caller's ACL (ScriptCommands of its text:
// the built-in file Description.Script names, or a custom script's or library's source), and
// those it sends itself (Description.Commands); sorted, without repeats. dynamic says the script
// also calls a command whose name is not written out in it, which no reading of the text can name.
func Commands(a Algorithm) (cmds []string, dynamic bool, err error) {
	d := a.Describe()
	src := ""
	switch {
	case d.Script != "":
		b, err := scripts.FS.ReadFile(d.Script)
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", d.Name, err)
		}
		src = string(b)
	default:
		if c, ok := a.(*Custom); ok {
			src = c.spec.Source
		}
	}
	cmds, dynamic = ScriptCommands(src)
	cmds = append(cmds, d.Commands...)
	slices.Sort(cmds)
	return slices.Compact(cmds), dynamic, nil
}

// luaCall matches a call of a Redis command from Lua, redis.call( or redis.pcall( (server.
// for Valkey), with the command and its first argument when they are string literals.
var luaCall = regexp.MustCompile(`\b(?:redis|server)\s*\.\s*p?call\s*\(\s*(?:(['"])([A-Za-z][A-Za-z0-9_.-]*)['"]\s*(?:,\s*(['"])([A-Za-z][A-Za-z0-9_.-]*)['"])?)?`)

// luaComment matches a Lua comment: a --[[ block ]] (or --[==[ ... ]==]) or -- to the end of
// the line.
var luaComment = regexp.MustCompile(`--\[(=*)\[(?s:.*?)\]=*\]|--[^\n]*`)

// containerCommands are the commands whose ACL rules may name a subcommand ("script|load"): a
// call of one of them with a literal subcommand needs only that subcommand.
var containerCommands = []string{"acl", "client", "cluster", "command", "config", "function", "latency", "memory",
	"module", "object", "pubsub", "script", "slowlog", "xgroup", "xinfo"}

// ScriptCommands returns the commands that the Lua text src calls with redis.call or
// redis.pcall (server.call, server.pcall), in ACL form, sorted, without repeats, comments left
// out; dynamic says a call names its command otherwise than as a string literal.
func ScriptCommands(src string) (cmds []string, dynamic bool) {
	src = luaComment.ReplaceAllString(src, "")
	for _, m := range luaCall.FindAllStringSubmatch(src, -1) {
		name := strings.ToLower(m[2])
		if name == "" {
			dynamic = true
			continue
		}
		if sub := strings.ToLower(m[4]); sub != "" && slices.Contains(containerCommands, name) {
			name += "|" + sub
		}
		cmds = append(cmds, name)
	}
	slices.Sort(cmds)
	return slices.Compact(cmds), dynamic
}
