package algorithms

import (
	"context"
	"strings"
)

// StrictKeysCode is the error code of a request the strict-keys guard refused (WithStrictKeys):
// its reply is "STRICTKEYS <COMMAND> touched key <key>, which is not in KEYS", or
// "STRICTKEYS the check of <COMMAND> failed: <Redis's error>" when the user may not run COMMAND
// GETKEYS (an ACL without +command|getkeys). A command GETKEYS finds no keys in (TIME), or cannot
// parse (wrong arguments, which the command itself then refuses), is not checked.
const StrictKeysCode = "STRICTKEYS"

type strictKeysKey struct{}

// WithStrictKeys returns ctx made to prepare every script called with EVALSHA (built-in,
// reference and custom) behind a guard: before each redis.call and redis.pcall the script makes,
// the guard asks Redis which of the command's arguments are keys (COMMAND GETKEYS) and refuses the
// command when one of them is not among the script's KEYS, with a StrictKeysCode error (raised
// by redis.call, returned by redis.pcall). Dragonfly, Kvrocks and Upstash refuse such scripts, and
// a Redis Cluster may keep such a key on another node; on Redis itself the guard finds them. It
// costs a command per command, so figures measured behind it are not comparable with others.
// Function libraries (FCALL) are not guarded.
func WithStrictKeys(ctx context.Context) context.Context {
	return context.WithValue(ctx, strictKeysKey{}, true)
}

func strictKeysOf(ctx context.Context) bool {
	on, _ := ctx.Value(strictKeysKey{}).(bool)
	return on
}

// strictKeysGuard is the guard's Lua, on one line so that the script's own lines keep their
// numbers (Redis's compile and runtime errors name them). It shadows the global redis with a table
// that inherits every field but call and pcall.
const strictKeysGuard = `local __lb_redis = redis; local redis = setmetatable({}, {__index = __lb_redis}); ` +
	`do local declared = {}; for _, k in ipairs(KEYS) do declared[k] = true end; ` +
	`local function refusal(cmd, ...) ` +
	`local ok, keys = pcall(__lb_redis.call, 'COMMAND', 'GETKEYS', cmd, ...); local name = string.upper(tostring(cmd)); ` +
	`if not ok then local msg = type(keys) == 'table' and tostring(keys.err) or tostring(keys); ` +
	`if not string.find(msg, 'NOPERM', 1, true) then return nil end; ` +
	`return {err = '` + StrictKeysCode + ` the check of ' .. name .. ' failed: ' .. msg} end; ` +
	`for _, k in ipairs(keys) do if not declared[k] then ` +
	`return {err = '` + StrictKeysCode + ` ' .. name .. ' touched key ' .. tostring(k) .. ', which is not in KEYS'} end end; return nil end; ` +
	`redis.call = function(cmd, ...) local e = refusal(cmd, ...); if e then error(e) end; return __lb_redis.call(cmd, ...) end; ` +
	`redis.pcall = function(cmd, ...) local e = refusal(cmd, ...); if e then return e end; return __lb_redis.pcall(cmd, ...) end end; `

// guardKeys returns src with the strict-keys guard in front of its first line, or of its second
// when the first is a shebang ("#!lua flags=..."), so that every line keeps its number.
func guardKeys(src string) string {
	if strings.HasPrefix(src, "#!") {
		first, rest, _ := strings.Cut(src, "\n")
		return first + "\n" + strictKeysGuard + rest
	}
	return strictKeysGuard + src
}
