package algorithms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ErrBadCustom means a CustomSpec cannot be used: no name or script, no key, an unknown template,
// an unknown rule, or a time rule without an element or unit.
var ErrBadCustom = errors.New("invalid custom script")

// CustomSpec describes a user's own Lua script, run unchanged: a scenario's custom entry, decoded
// straight into it by package scenarios, and an entry of result.json's settings.custom. It is
// plain data; NewCustom checks it.
//
// Its JSON form is a description: {"name", "script" (as written), "keys", "args", "allowed" and
// "contract" (as ReplyRule.String and Contract.String render them, the contract's templated
// numbers as zeros), "contract_templates", "function" (the function FCALL calls, when "script"
// is a function library)}. It does not hold the source or the time rule, so a spec read back
// from JSON describes the script but cannot run it.
type CustomSpec struct {
	// Name identifies the algorithm in reports; it must differ from every built-in algorithm.
	Name string
	// Script is the script's path as the scenario wrote it (relative to the scenario file).
	Script string
	// Path is where the script was read from (Script resolved against the scenario file's
	// directory; Script when empty); shown in Describe and in errors.
	Path string
	// Source is the Lua text.
	Source string
	// Function, when not empty, says that Script is a Redis function library (Redis 7, its
	// first line "#!lua name=..."), loaded with FUNCTION LOAD on every master (see loadLibrary), and that
	// each request calls this function of it with FCALL. Empty: Script is a script, called with
	// EVALSHA.
	Function string
	// Keys and Args are the templates of KEYS and ARGV; see CustomTemplates. At least one key.
	Keys, Args []string
	// Allowed reads the reply.
	Allowed ReplyRule
	// Time, when set, says where the reply holds the time the script decided at.
	Time *ReplyTime
	// Contract is what the script promises (Kind NoContract: benchmark only). Its numbers that
	// ContractTemplates names are filled in per Limit by Custom.Contract.
	Contract Contract
	// ContractTemplates holds the contract's numbers written as templates, by field name
	// ("limit", "window", "capacity", "rate", "per"), such as {"limit": "{{limit}}",
	// "window": "{{window_ms}}ms"}; nil when every number is literal. See FillContract.
	ContractTemplates map[string]string
}

// path returns where the script was read from.
func (s CustomSpec) path() string {
	if s.Path == "" {
		return s.Script
	}
	return s.Path
}

// customJSON is a CustomSpec's form in result.json.
type customJSON struct {
	Name              string            `json:"name"`
	Script            string            `json:"script"`
	Keys              []string          `json:"keys"`
	Args              []string          `json:"args,omitempty"`
	Allowed           string            `json:"allowed"`
	Contract          string            `json:"contract"`
	ContractTemplates map[string]string `json:"contract_templates,omitempty"`
	Function          string            `json:"function,omitempty"`
}

// MarshalJSON writes s as result.json describes a custom script (see CustomSpec).
func (s CustomSpec) MarshalJSON() ([]byte, error) {
	return json.Marshal(customJSON{Name: s.Name, Script: s.Script, Keys: s.Keys, Args: s.Args,
		Allowed: s.Allowed.String(), Contract: s.Contract.String(), ContractTemplates: s.ContractTemplates,
		Function: s.Function})
}

// UnmarshalJSON reads what MarshalJSON writes, parsing the rule and the contract back
// (ParseReplyRule, ParseContract).
func (s *CustomSpec) UnmarshalJSON(b []byte) error {
	var w customJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	rule, err := ParseReplyRule(w.Allowed)
	if err != nil {
		return err
	}
	c, err := ParseContract(w.Contract)
	if err != nil {
		return err
	}
	*s = CustomSpec{Name: w.Name, Script: w.Script, Keys: w.Keys, Args: w.Args, Allowed: rule, Contract: c,
		ContractTemplates: w.ContractTemplates, Function: w.Function}
	return nil
}

// Custom is a user's Lua script, run unchanged, as an Algorithm. NewCustom builds it from a
// CustomSpec; it is stateless and safe for concurrent use.
type Custom struct {
	spec       CustomSpec
	keys, args []template
	clock      Clock // ClockClient when a template reads the client's clock
	multi      bool  // {{cost}} is used, so cost > 1 reaches the script
	loaded     loadedLibrary
}

var _ Algorithm = (*Custom)(nil)

// NewCustom checks spec and parses its templates (keys, args, the allowed rule's value, the
// contract's templates). Problems are reported at once, each wrapping ErrBadCustom. The Lua
// itself is checked by Redis, in Prepare.
func NewCustom(spec CustomSpec) (*Custom, error) {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s: %s", ErrBadCustom, spec.Name, fmt.Sprintf(format, args...)))
	}
	if spec.Name == "" {
		bad("no name")
	}
	if strings.TrimSpace(spec.Source) == "" {
		bad("script %s is empty", spec.path())
	}
	if len(spec.Keys) == 0 {
		bad("no key template")
	}
	a := &Custom{spec: spec, clock: ClockServer}
	parse := func(field string, ts []string) []template {
		out := make([]template, len(ts))
		for i, t := range ts {
			p, err := parseTemplate(t)
			if err != nil {
				bad("%s[%d]: %v", field, i, err)
			}
			out[i] = p
		}
		return out
	}
	a.keys, a.args = parse("keys", spec.Keys), parse("args", spec.Args)
	r := spec.Allowed
	rule, _ := parseTemplate(r.Value)
	for _, t := range append(append([]template{rule}, a.keys...), a.args...) {
		if t.usesClock() {
			a.clock = ClockClient
		}
	}
	for _, t := range append(append([]template(nil), a.keys...), a.args...) {
		if t.uses(tCost) {
			a.multi = true
		}
	}
	if r.Element < 0 {
		bad("allowed.element must be >= 0, got %d", r.Element)
	}
	if !slices.Contains(RuleOps, r.Op) {
		bad("unknown allowed rule %q", r.Op)
	} else if err := r.CheckValue(); err != nil {
		bad("allowed.%s: %v", r.Op, err)
	}
	if t := spec.Time; t != nil {
		if t.Element < 1 {
			bad("time.element must be >= 1, got %d", t.Element)
		}
		if r.Element == 0 {
			bad("time needs an array reply, but allowed reads a scalar reply")
		}
		if t.Unit.Duration() == 0 {
			bad("time.unit must be us, ms or s, got %q", t.Unit)
		}
	}
	switch spec.Contract.Kind {
	case SlidingWindow, FixedWindow, FirstHitWindow, TokenBucket, NoContract:
	default:
		bad("unknown contract kind %q", spec.Contract.Kind)
	}
	for _, f := range sortedKeys(spec.ContractTemplates) {
		if _, err := parseTemplate(spec.ContractTemplates[f]); err != nil {
			bad("contract.%s: %v", f, err)
		} else if !slices.Contains(contractNumberFields, f) {
			bad("contract.%s cannot be a template (the templated numbers are %s)", f, strings.Join(contractNumberFields, ", "))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return a, nil
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Spec returns the spec a was built from.
func (a *Custom) Spec() CustomSpec { return a.spec }

// Describe implements Algorithm. Clock is ClockClient when a key, an argument or the allowed
// rule's value uses {{now_ms}}, {{now_s}}, {{now_us}} or {{now_s_float}}, else ClockServer (the
// only clock left to the script is Redis's).
func (a *Custom) Describe() Description {
	return Description{
		Name:           a.spec.Name,
		Origin:         a.origin(),
		Clock:          a.clock,
		KeysPerSubject: len(a.spec.Keys),
		Memory:         "unknown",
		Cost:           a.multi,
	}
}

// origin is Describe's Origin: "custom script my.lua", or "custom function allow of library
// my_lib.lua (FCALL)".
func (a *Custom) origin() string {
	if a.spec.Function != "" {
		return "custom function " + a.spec.Function + " of library " + a.spec.path() + " (FCALL)"
	}
	return "custom script " + a.spec.path()
}

// Contract implements Algorithm: the spec's contract, with the numbers written as templates
// (ContractTemplates) filled in for l (see FillContract).
func (a *Custom) Contract(l Limit) (Contract, error) {
	c := a.spec.Contract
	for _, f := range sortedKeys(a.spec.ContractTemplates) {
		if err := FillContract(&c, f, a.spec.ContractTemplates[f], l); err != nil {
			return Contract{}, fmt.Errorf("%w: %s: contract.%s: %w", ErrBadCustom, a.spec.Name, f, err)
		}
	}
	return c, nil
}

// HasEmptyKey reports whether one of a's key templates is the empty string: a key that stays
// empty (it is never prefixed), so state the script kept there would outlive the run's prefix.
func (a *Custom) HasEmptyKey() bool { return slices.Contains(a.spec.Keys, "") }

// Model implements Algorithm: a custom script has no reference model.
func (a *Custom) Model(Limit) Model { return nil }

// Prepare implements Algorithm: it validates l, loads the script on every master of c (see Check)
// and binds the templates' constants (limit, window, burst, rate, prefix) once, so that a Call
// only fills in the per-request values.
func (a *Custom) Prepare(ctx context.Context, c redis.UniversalClient, l Limit, prefix string) (Limiter, error) {
	if err := l.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", a.spec.Name, err)
	}
	if _, cluster := c.(*redis.ClusterClient); cluster && a.HasEmptyKey() {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadCustom, a.spec.Name, ErrEmptyKeyOnCluster)
	}
	s, err := a.load(ctx, c)
	if err != nil {
		return nil, err
	}
	lim, err := a.bind(l, prefix, s)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadCustom, a.spec.Name, err)
	}
	if a.spec.Function != "" {
		lim.function, lim.lib = a.spec.Function, &library{a: a, on: c}
	}
	lim.fresh = isCluster(c)
	return lim, nil
}

// ErrEmptyKeyOnCluster is why a custom script with an empty key template cannot run on a
// cluster.
var ErrEmptyKeyOnCluster = errors.New(`an empty key "" stays empty (limitbench never prefixes it), and on a cluster it hashes to slot 0 rather than to the subject's {hash tag}: ` +
	`with other keys the script fails with CROSSSLOT, alone it runs every subject on one node; give the key a template such as "rl:{{tag}}", or run on a single node`)

// Check loads the script with SCRIPT LOAD on every master of c, as Prepare does, so that a
// caller can find a script Redis rejects before running anything. A script that does not compile
// fails with Redis's own reply (a redis.Error, "ERR Error compiling script ..."), wrapped in a
// message that names the algorithm and the script's file and line. A function library is loaded
// as Prepare loads it (see loadLibrary: a library of that name with other code is an error
// wrapping ErrLibraryInUse), then unloaded where Check loaded it.
func (a *Custom) Check(ctx context.Context, c redis.UniversalClient) error {
	_, err := a.load(ctx, c)
	if uerr := a.Unload(ctx, c); err == nil && uerr != nil {
		return fmt.Errorf("%s: unload function library after checking it: %w", a.spec.Name, uerr)
	}
	return err
}

// load loads the script (SCRIPT LOAD) or, for a function, the library (loadLibrary) on every
// master of c. For a function it returns a nil script: requests go by FCALL.
func (a *Custom) load(ctx context.Context, c redis.UniversalClient) (*script, error) {
	if a.spec.Function != "" {
		if err := a.loadLibrary(ctx, c, true); err != nil {
			return nil, &ScriptError{Name: a.spec.Name, Path: a.spec.path(), Line: scriptLine(err), Err: err}
		}
		return nil, nil
	}
	s, err := newScript(ctx, c, a.spec.Source)
	if err != nil {
		return nil, &ScriptError{Name: a.spec.Name, Path: a.spec.path(), Line: scriptLine(err), Err: err}
	}
	return s, nil
}

// ScriptError is a custom script that could not be loaded into Redis. Err is what Redis (or the
// connection) answered; for a script that does not compile it is a redis.Error, such as
// "ERR Error compiling script (new function): user_script:3: ...", and errors.As finds it.
type ScriptError struct {
	// Name is the custom algorithm's name; Path is its script file as the spec gives it.
	Name, Path string
	// Line is the script line Redis's compile error names; 0 when it names none.
	Line int
	Err  error
}

// Error renders e as "name: path:line: Redis's message" (":line" only when known).
func (e *ScriptError) Error() string {
	return e.Name + ": " + e.Location() + ": " + e.Err.Error()
}

// Location is the script's file and, when Redis named one, line: "my.lua:3".
func (e *ScriptError) Location() string {
	if e.Line > 0 {
		return e.Path + ":" + strconv.Itoa(e.Line)
	}
	return e.Path
}

func (e *ScriptError) Unwrap() error { return e.Err }

// scriptLine returns N when err is Redis's compile error for line N ("... user_script:N: ..."),
// else 0.
func scriptLine(err error) int {
	msg := err.Error()
	mark := "user_script:"
	i := strings.Index(msg, mark)
	if i < 0 {
		mark = "user_function:" // FUNCTION LOAD's compile errors
		if i = strings.Index(msg, mark); i < 0 {
			return 0
		}
	}
	rest := msg[i+len(mark):]
	j := 0
	for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	n, err := strconv.Atoi(rest[:j])
	if err != nil {
		return 0
	}
	return n
}
