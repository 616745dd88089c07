package scenarios

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/limitbench/limitbench/algorithms"
)

// Custom is a user's own Lua script, run unchanged, described by templates for its KEYS and ARGV, a
// rule that reads its reply and the contract it promises.
type Custom struct {
	// Name identifies it in reports; it must differ from every built-in algorithm and from "all".
	Name string
	// Script is the path as written in the scenario, relative to the scenario file's directory.
	Script string
	// ScriptPath is Script resolved against the scenario file's directory.
	ScriptPath string
	// Source is the script's text, read by Load (the Lua syntax check against Redis comes later, in
	// the runner).
	Source string
	// Keys and Args are templates for KEYS and ARGV; see Templates. At least one key is needed.
	Keys []string
	Args []string
	// Allowed reads the reply.
	Allowed AllowedRule
	// Time, when set, says where the reply holds the time the script used.
	Time *TimeRule
	// Contract is what the script promises.
	Contract CustomContract
}

// RuleOp is how an AllowedRule compares a reply element.
type RuleOp string

// The rules. Exactly one decides an AllowedRule.
const (
	// Equals: the element's text (integers in decimal) equals Value.
	Equals RuleOp = "equals"
	// NotEquals: the element is not nil and its text differs from Value.
	NotEquals RuleOp = "not_equals"
	// GreaterThan: the element is an integer (or a string holding a number) greater than Number.
	GreaterThan RuleOp = "greater_than"
	// Prefix: the element is a string that starts with Value.
	Prefix RuleOp = "prefix"
	// IsNil: the element is nil (a Lua false or nil).
	IsNil RuleOp = "is_nil"
)

var ruleOps = []RuleOp{Equals, NotEquals, GreaterThan, Prefix, IsNil}

// AllowedRule decides from a reply whether the request was admitted. A reply the rule cannot read
// (wrong type, missing element) is an error outcome, never an admission.
type AllowedRule struct {
	// Element is a 1-based index into an array reply; 0 reads a scalar reply.
	Element int
	Op      RuleOp
	// Value is the text compared by equals, not_equals and prefix.
	Value string
	// Number is the bound of greater_than.
	Number float64
}

// TimeUnit is the unit of a time a script returns.
type TimeUnit string

// The time units.
const (
	Micros  TimeUnit = "us"
	Millis  TimeUnit = "ms"
	Seconds TimeUnit = "s"
)

// Duration returns one unit of u, or 0 for an unknown unit.
func (u TimeUnit) Duration() time.Duration {
	switch u {
	case Micros:
		return time.Microsecond
	case Millis:
		return time.Millisecond
	case Seconds:
		return time.Second
	}
	return 0
}

// TimeRule says which element of an array reply holds the Unix time the script decided at.
type TimeRule struct {
	// Element is a 1-based index into the array reply (≥ 1).
	Element int
	Unit    TimeUnit
}

// CustomContract is the YAML form of the contract a custom script promises. The parameters each
// kind needs: sliding-window and fixed-window take Limit and Window; token-bucket takes Capacity,
// Rate and Per (Rate permits refill every Per); none takes nothing. Granularity, optional, is a
// clock resolution the script is known to have.
type CustomContract struct {
	Kind        algorithms.ContractKind
	Limit       int64
	Window      time.Duration
	Capacity    int64
	Rate        int64
	Per         time.Duration
	Granularity time.Duration
}

// Contract returns c as the verifier's contract, counted per subject.
func (c CustomContract) Contract() algorithms.Contract {
	return algorithms.Contract{
		Kind:          c.Kind,
		Limit:         c.Limit,
		Window:        c.Window,
		Capacity:      c.Capacity,
		RefillPermits: c.Rate,
		RefillPer:     c.Per,
		Granularity:   c.Granularity,
		Scope:         algorithms.PerSubject,
	}
}

// templateNames are the placeholders keys and args may use.
var templateNames = []string{
	"subject", "tag", "client", "cost", "limit", "window_ms", "window_s", "burst", "rate",
	"now_ms", "now_s", "now_us", "uuid", "prefix",
}

// Templates returns the names a custom entry's keys and args may use inside {{ }}:
//
//	subject    the limited subject
//	tag        the subject in braces, a Redis Cluster hash tag: {subject}
//	client     the client id
//	cost       permits asked for (the scenario's cost)
//	limit      the scenario's limit.limit
//	window_ms  limit.window in milliseconds
//	window_s   limit.window in whole seconds (rounded up)
//	burst      limit.burst (limit.limit when unset)
//	rate       limit.limit / limit.window, per second
//	now_ms     the client's clock, skew included, in milliseconds since the Unix epoch
//	now_s      the same in whole seconds
//	now_us     the same in microseconds
//	uuid       a fresh random UUID per request
//	prefix     the run's key prefix (keys that do not start with it get it prepended)
func Templates() []string { return append([]string(nil), templateNames...) }

var templateRE = regexp.MustCompile(`\{\{\s*([^{}]*?)\s*\}\}`)

// checkTemplate returns a problem with t, or "".
func checkTemplate(t string) string {
	for _, m := range templateRE.FindAllStringSubmatch(t, -1) {
		name := m[1]
		ok := false
		for _, k := range templateNames {
			ok = ok || k == name
		}
		if ok {
			continue
		}
		if s := algorithms.Suggest(name, templateNames); s != "" {
			return fmt.Sprintf("unknown template {{%s}} in %q (did you mean {{%s}}?)", name, t, s)
		}
		return fmt.Sprintf("unknown template {{%s}} in %q; known: {{%s}}", name, t, strings.Join(templateNames, "}} {{"))
	}
	rest := templateRE.ReplaceAllString(t, "")
	if strings.Contains(rest, "{{") || strings.Contains(rest, "}}") {
		return fmt.Sprintf("unbalanced {{ }} in %q", t)
	}
	return ""
}

// ExpandTemplate replaces every {{name}} in t with vars[name] (unknown names with "").
func ExpandTemplate(t string, vars map[string]string) string {
	return templateRE.ReplaceAllStringFunc(t, func(m string) string {
		return vars[templateRE.FindStringSubmatch(m)[1]]
	})
}

// HashTag returns the Redis Cluster hash tag of key: the text between the first "{" and the next
// "}" when that is not empty, else the whole key (which then hashes on its own).
func HashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// sameSlotProblem returns why keys would not share a cluster slot, or "".
func sameSlotProblem(keys []string) string {
	if len(keys) < 2 {
		return ""
	}
	// Expand with values that differ per key wherever a template may differ, so that only a shared
	// hash tag makes the tags equal.
	tags := make([]string, len(keys))
	for i, k := range keys {
		vars := map[string]string{
			"subject": "s", "tag": "{s}", "client": "c", "cost": "1", "limit": "1", "window_ms": "1",
			"window_s": "1", "burst": "1", "rate": "1", "now_ms": "1", "now_s": "1", "now_us": "1",
			"uuid": fmt.Sprintf("uuid-%d", i), "prefix": "p:",
		}
		tags[i] = HashTag(ExpandTemplate(k, vars))
	}
	for i := 1; i < len(keys); i++ {
		if tags[i] != tags[0] {
			return fmt.Sprintf("keys %q and %q do not share a hash tag, so on a cluster they fall in different slots (CROSSSLOT); put {{tag}} in every key",
				keys[0], keys[i])
		}
	}
	return ""
}
