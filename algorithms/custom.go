package algorithms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

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
	// first line "#!lua name=..."), loaded with FUNCTION LOAD REPLACE on every master, and that
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
// message that names the algorithm and the script's file and line.
func (a *Custom) Check(ctx context.Context, c redis.UniversalClient) error {
	_, err := a.load(ctx, c)
	return err
}

// load loads the script (SCRIPT LOAD) or, for a function, the library (FUNCTION LOAD REPLACE) on
// every master of c. For a function it returns a nil script: requests go by FCALL.
func (a *Custom) load(ctx context.Context, c redis.UniversalClient) (*script, error) {
	if a.spec.Function != "" {
		if err := a.loadLibrary(ctx, c); err != nil {
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

// loadLibrary runs FUNCTION LOAD REPLACE of the spec's library on every master of c, and checks
// that the library registers the spec's function (FUNCTION LIST).
func (a *Custom) loadLibrary(ctx context.Context, c redis.UniversalClient) error {
	load := func(ctx context.Context, m redis.Cmdable) error {
		lib, err := m.FunctionLoadReplace(ctx, a.spec.Source).Result()
		if err != nil {
			return err
		}
		libs, err := m.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: lib}).Result()
		if err != nil {
			return err
		}
		var registered []string
		for _, l := range libs {
			for _, f := range l.Functions {
				if l.Name == lib && f.Name == a.spec.Function {
					return nil
				}
				if l.Name == lib {
					registered = append(registered, f.Name)
				}
			}
		}
		return &noFunctionError{library: lib, function: a.spec.Function, registered: registered}
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return load(ctx, m) })
	}
	return load(ctx, c)
}

// Unload removes the function library that Prepare loaded from every master of c (FUNCTION
// DELETE of the name on the library's "#!lua name=" line), so that a run leaves no library
// behind; a master that no longer has it is not an error. It does nothing for a script (the
// script cache is Redis's to manage).
func (a *Custom) Unload(ctx context.Context, c redis.UniversalClient) error {
	if a.spec.Function == "" {
		return nil
	}
	name := libraryName(a.spec.Source)
	if name == "" {
		return nil // FUNCTION LOAD refused it: nothing was loaded
	}
	del := func(ctx context.Context, m redis.Cmdable) error {
		err := m.FunctionDelete(ctx, name).Err()
		if err != nil && strings.Contains(err.Error(), "Library not found") {
			return nil
		}
		return err
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return del(ctx, m) })
	}
	return del(ctx, c)
}

// library is a custom algorithm's function library as one limiter loaded it.
type library struct {
	a  *Custom
	on redis.UniversalClient
	// gen counts the loads since the first; mu serialises them.
	mu  sync.Mutex
	gen atomic.Uint64
}

// after returns what passes a call's decision and error through, having loaded the library again
// on every master when the error says the function is gone (a restart, FUNCTION FLUSH), unless a
// load since gen (the load generation when the call was sent) already did. The call keeps its
// error; a failed load is added to it.
func (b *library) after(gen uint64) func(Decision, error) (Decision, error) {
	return func(d Decision, err error) (Decision, error) {
		if err == nil || !strings.Contains(err.Error(), "Function not found") {
			return d, err
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.gen.Load() != gen {
			return d, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), reloadTimeout)
		defer cancel()
		rerr := b.a.loadLibrary(ctx, b.on)
		b.gen.Add(1)
		if rerr != nil {
			return d, fmt.Errorf("%w (loading the function library again failed: %w)", err, rerr)
		}
		return d, err
	}
}

// libraryName returns the library name that src's first line gives ("#!lua name=mylib"), or ""
// when it gives none.
func libraryName(src string) string {
	line, _, _ := strings.Cut(src, "\n")
	if !strings.HasPrefix(line, "#!") {
		return ""
	}
	for _, f := range strings.Fields(line)[1:] {
		if v, ok := strings.CutPrefix(f, "name="); ok {
			return v
		}
	}
	return ""
}

// ErrNoFunction is matched (errors.Is) by Check's and Prepare's error when a function library
// loads but does not register the function the spec names: the scenario's mistake, not Redis's.
var ErrNoFunction = errors.New("the library does not register the function")

// noFunctionError is a library that does not register function; registered are the functions it
// does register.
type noFunctionError struct {
	library, function string
	registered        []string
}

func (e *noFunctionError) Error() string {
	msg := fmt.Sprintf("library %s registers no function %s", e.library, e.function)
	if len(e.registered) > 0 {
		names := slices.Sorted(slices.Values(e.registered)) // FUNCTION LIST's order varies
		msg += " (it registers " + strings.Join(names, ", ") + ")"
	}
	return msg
}

func (e *noFunctionError) Is(target error) bool { return target == ErrNoFunction }

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

// bind returns the limiter of a for l and prefix, running script s: the templates' constants
// (limit, window, burst, rate, prefix) become literals and their expressions are compiled. An
// expression that divides by zero or overflows with these constants is an error.
func (a *Custom) bind(l Limit, prefix string, s *script) (*customLimiter, error) {
	b := limitBindings(l, prefix)
	lim := &customLimiter{a: a, script: s, prefix: prefix, clock: a.clock}
	var errs []error
	lim.keys = make([]boundKey, len(a.keys))
	for i, t := range a.keys {
		bt, err := t.bind(b)
		if err != nil {
			errs = append(errs, fmt.Errorf("keys[%d]: %w", i, err))
			continue
		}
		k := boundKey{t: bt, prepend: true}
		switch {
		case a.spec.Keys[i] == "":
			// An empty key means "no key" to some libraries: it stays empty.
			k.prepend = false
		case len(bt) > 0 && bt[0].v == tLit:
			// A key whose literal start decides the question needs no check per request.
			switch {
			case strings.HasPrefix(bt[0].lit, prefix):
				k.prepend = false
			case !strings.HasPrefix(prefix, bt[0].lit):
				k.t = append(template{{lit: prefix + bt[0].lit}}, bt[1:]...)
				k.prepend = false
			}
		}
		lim.keys[i] = k
	}
	lim.args = make([]template, len(a.args))
	for i, t := range a.args {
		bt, err := t.bind(b)
		if err != nil {
			errs = append(errs, fmt.Errorf("args[%d]: %w", i, err))
		}
		lim.args[i] = bt
	}
	rule, err := bindRule(a.spec.Allowed, b)
	if err != nil {
		errs = append(errs, fmt.Errorf("allowed.%s: %w", a.spec.Allowed.Op, err))
	} else {
		lim.rule = rule
		lim.ruleVars = !rule.isLt
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	ruleT, _ := parseTemplate(a.spec.Allowed.Value)
	for _, t := range append(append([]template{ruleT}, a.keys...), a.args...) {
		lim.uuid = lim.uuid || t.uses(tUUID)
		lim.now = lim.now || t.usesClock()
	}
	if tr := a.spec.Time; tr != nil {
		lim.time = &boundTime{el: tr.Element, unit: tr.Unit.Duration(), name: tr.String()}
	}
	return lim, nil
}

// boundKey is a key template with the limiter's constants bound; prepend says the prefix may be
// missing from an expansion and must be checked per request.
type boundKey struct {
	t       template
	prepend bool
}

// UnreadableReporter is implemented by limiters that read replies with a user's rule (custom
// scripts): Unreadable returns how many replies the rule could not read (each was returned as
// an error wrapping ErrBadReply) and the first such raw reply, rendered as text.
type UnreadableReporter interface {
	Unreadable() (count int64, first string)
}

// ReplyStats is what a custom limiter saw of its replies since Prepare, warmup included.
type ReplyStats struct {
	// Rule is the allowed rule, as in a scenario file.
	Rule string
	// Read counts replies the rule could read; Admitted those it read as admissions.
	Read, Admitted int64
	// FirstRead is the first readable raw reply, rendered as text ("" when none).
	FirstRead string
	// Unreadable counts replies the rules could not read; FirstUnreadable is the first of them
	// and FirstReason why: which rule (allowed or time), which element, what was wrong.
	Unreadable      int64
	FirstUnreadable string
	FirstReason     string
}

// ReplyReporter is implemented by limiters that read replies with a user's rule (custom scripts).
type ReplyReporter interface {
	ReplyStats() ReplyStats
}

// customLimiter is a Custom prepared for one Limit and prefix.
type customLimiter struct {
	a      *Custom
	script *script // nil when function is set
	// function is the library function each request calls with FCALL; empty: script, by EVALSHA.
	function string
	// lib loads the library again when a call finds the function gone; nil for a script.
	lib    *library
	fresh  bool // prepared on a cluster client: see evalCmd
	prefix string
	clock  Clock
	keys   []boundKey
	args   []template
	uuid   bool // a template uses {{uuid}}
	now    bool // a template uses {{now_*}}
	// rule reads the reply; ruleVars says its value changes per request.
	rule     *boundRule
	ruleVars bool
	// time reads the decision time from the reply; nil without a time rule.
	time *boundTime

	read, admitted, unreadable                 atomic.Int64
	firstRead, firstUnreadable, firstBadReason atomic.Pointer[string]
}

var (
	_ UnreadableReporter = (*customLimiter)(nil)
	_ ReplyReporter      = (*customLimiter)(nil)
)

// vars returns the template values of req with the given cost.
func (l *customLimiter) vars(req Request, cost int64) reqVars {
	r := reqVars{subject: req.Subject, client: req.Client, cost: cost}
	if l.now {
		r.now = clientTime(req)
	}
	if l.uuid {
		newUUID(&r.uuid)
	}
	return r
}

// expandKey returns key template k expanded for r in buf (reused), with the prefix prepended
// when k may lack it and does. An expression that fails for r is an error wrapping ErrTemplate.
func (l *customLimiter) expandKey(buf []byte, k boundKey, r *reqVars) ([]byte, error) {
	buf, err := k.t.expand(buf[:0], r)
	if err != nil {
		return buf, err
	}
	if k.prepend && (len(buf) < len(l.prefix) || string(buf[:len(l.prefix)]) != l.prefix) {
		n := len(l.prefix)
		buf = append(buf, l.prefix...) // room for the prefix
		copy(buf[n:], buf[:len(buf)-n])
		copy(buf, l.prefix)
	}
	return buf, nil
}

// expandKeys returns the keys for r; an expression that fails for r is an error wrapping
// ErrTemplate.
func (l *customLimiter) expandKeys(r *reqVars) ([]string, error) {
	keys := make([]string, len(l.keys))
	var arr [128]byte
	for i, k := range l.keys {
		b, err := l.expandKey(arr[:0], k, r)
		if err != nil {
			return nil, fmt.Errorf("keys[%d]: %w", i, err)
		}
		keys[i] = string(b)
	}
	return keys, nil
}

// Keys implements Limiter: the key templates expanded for req (with a fresh {{uuid}} and the
// current time when req has no ClientTime); nil when an expression fails for req (a Call then
// sends nothing).
func (l *customLimiter) Keys(req Request) []string {
	cost := req.Cost
	if cost <= 0 {
		cost = 1
	}
	r := l.vars(req, cost)
	keys, err := l.expandKeys(&r)
	if err != nil {
		return nil
	}
	return keys
}

// customCall is the Call of a customLimiter: the keys and the arguments are the templates
// expanded for each request in buffers of the Call's own; an argument whose template is a
// constant for the limiter is sent as it is. Its command, built once, is the script's EVALSHA or,
// for a function, its FCALL (see newFCallCmd), reused as evalCmd says.
type customCall struct {
	scriptCall
	l    *customLimiter
	keys []argBuf
	args []argBuf // one per argument template, unused for a constant one
	cmd  *evalCmd
	// v is the allowed rule's value for the request sent last, when it changes per request
	// (ruleVars); gen is the function library's load generation when it was sent.
	v   ruleValue
	gen uint64
}

// NewCall implements Limiter.
func (l *customLimiter) NewCall() Call {
	c := &customCall{scriptCall: scriptCall{name: l.a.spec.Name}, l: l, keys: make([]argBuf, len(l.keys)), args: make([]argBuf, len(l.args))}
	keys := make([]*argBuf, len(l.keys))
	for i := range keys {
		keys[i] = &c.keys[i]
	}
	args := make([]any, len(l.args))
	for i, t := range l.args {
		if lit, ok := t.literal(); ok {
			args[i] = lit
		} else {
			args[i] = &c.args[i]
		}
	}
	if l.function != "" {
		c.cmd = newFCallCmd(l.function, l.fresh, keys, args...)
	} else {
		c.cmd = newEvalCmd(l.script, l.fresh, keys, args...)
	}
	return c
}

// newFCallCmd returns the FCALL of function with keys and args (as newEvalCmd takes them): an
// evalCmd without a script, so a reply NOSCRIPT is not followed by EVAL nor a reload (a function
// that is gone answers "Function not found", which customCall.Result handles).
func newFCallCmd(function string, fresh bool, keys []*argBuf, args ...any) *evalCmd {
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, "fcall", function, len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	return &evalCmd{keys: len(keys), fresh: fresh, args: append(a, args...)}
}

// Send implements Call. Cost > 1 is supported only when a template uses {{cost}}; otherwise the
// script would charge one permit while the verifier counts several, so the request is not sent
// and its error wraps ErrCostUnsupported. A template expression that fails for req (division by
// zero, overflow), in a key, an argument or the allowed rule's value, is an error wrapping
// ErrTemplate, and nothing is sent. The rule's value is taken before sending and kept for Result.
func (c *customCall) Send(ctx context.Context, rc redis.Cmdable, req Request) {
	l := c.l
	cost, err := requestCost(l.a.spec.Name, req, l.a.multi)
	if err != nil {
		c.fail(err)
		return
	}
	r := l.vars(req, cost)
	if err := c.fill(&r); err != nil {
		c.fail(fmt.Errorf("%s: %w", l.a.spec.Name, err))
		return
	}
	c.v = ruleValue{}
	if l.ruleVars {
		if c.v, err = l.rule.value(&r); err != nil {
			c.fail(fmt.Errorf("%s: %w", l.a.spec.Name, err))
			return
		}
	}
	if l.lib != nil {
		// The generation before sending: a load after it is one this call may have missed.
		c.gen = l.lib.gen.Load()
	}
	c.send(ctx, rc, c.cmd)
}

// fill expands the key and argument templates for r into the Call's buffers; an expression that
// fails for r is an error wrapping ErrTemplate.
func (c *customCall) fill(r *reqVars) error {
	var err error
	for i, k := range c.l.keys {
		if c.keys[i].b, err = c.l.expandKey(c.keys[i].b, k, r); err != nil {
			return fmt.Errorf("keys[%d]: %w", i, err)
		}
	}
	for i, t := range c.l.args {
		if c.args[i].b, err = t.expand(c.args[i].b[:0], r); err != nil {
			return fmt.Errorf("args[%d]: %w", i, err)
		}
	}
	return nil
}

// Result implements Call: the reply read with the rules (the allowed rule with the value Send
// took) and counted (see ReplyStats). For a function, an error saying the function is gone (a
// restart, FUNCTION FLUSH) loads the library again on every master before Result returns it (see
// library.after).
func (c *customCall) Result() (Decision, error) {
	l := c.l
	if c.err != nil {
		return Decision{}, c.err
	}
	d, err := l.result(c.sent, c.v)
	if l.lib != nil {
		return l.lib.after(c.gen)(d, err)
	}
	return d, err
}

// result reads the reply of cmd with the rules (v is the allowed rule's value for the request,
// when it changes per request) and counts it.
func (l *customLimiter) result(cmd *evalCmd, v ruleValue) (Decision, error) {
	raw, err := cmd.result()
	if err == redis.Nil {
		raw, err = nil, nil
	}
	if err != nil {
		return Decision{}, fmt.Errorf("%s: %w", l.a.spec.Name, err)
	}
	d, err := l.decode(raw, v)
	if err != nil {
		if l.unreadable.Add(1) == 1 || l.firstUnreadable.Load() == nil {
			s, why := FormatReply(raw), strings.TrimPrefix(err.Error(), ErrBadReply.Error()+": ")
			l.firstUnreadable.CompareAndSwap(nil, &s)
			l.firstBadReason.CompareAndSwap(nil, &why)
		}
		return Decision{}, fmt.Errorf("%s: %w", l.a.spec.Name, err)
	}
	if l.read.Add(1) == 1 || l.firstRead.Load() == nil {
		s := FormatReply(raw)
		l.firstRead.CompareAndSwap(nil, &s)
	}
	if d.Allowed {
		l.admitted.Add(1)
	}
	return d, nil
}

// decode reads raw with the allowed rule (v its value for the request, when it changes per
// request) and the time rule. The
// decision time is the interval the time element allows (see ReplyTime): TimeMicros is its
// start and TimeSpanMicros its length.
func (l *customLimiter) decode(raw any, v ruleValue) (Decision, error) {
	allowed, err := l.rule.decide(raw, v)
	if err != nil {
		return Decision{}, err
	}
	d := Decision{Allowed: allowed, Clock: l.clock}
	if l.time == nil {
		return d, nil
	}
	lo, hi, err := l.time.read(raw)
	if err != nil {
		return Decision{}, err
	}
	d.TimeMicros, d.TimeSpanMicros = lo, hi-lo
	return d, nil
}

// Unreadable implements UnreadableReporter.
func (l *customLimiter) Unreadable() (int64, string) {
	n := l.unreadable.Load()
	if p := l.firstUnreadable.Load(); p != nil {
		return n, *p
	}
	return n, ""
}

// ReplyStats implements ReplyReporter.
func (l *customLimiter) ReplyStats() ReplyStats {
	st := ReplyStats{Rule: l.a.spec.Allowed.String(), Read: l.read.Load(), Admitted: l.admitted.Load()}
	if p := l.firstRead.Load(); p != nil {
		st.FirstRead = *p
	}
	st.Unreadable, st.FirstUnreadable = l.Unreadable()
	if p := l.firstBadReason.Load(); p != nil {
		st.FirstReason = *p
	}
	return st
}
