package algorithms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

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
// "contract" (as ReplyRule.String and Contract.String render them)}. It does not hold the source,
// the time rule or the contract's granularity, so a spec read back from JSON describes the script
// but cannot run it.
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
	// Keys and Args are the templates of KEYS and ARGV; see CustomTemplates. At least one key.
	Keys, Args []string
	// Allowed reads the reply.
	Allowed ReplyRule
	// Time, when set, says where the reply holds the time the script decided at.
	Time *ReplyTime
	// Contract is what the script promises (Kind NoContract: benchmark only).
	Contract Contract
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
	Name     string   `json:"name"`
	Script   string   `json:"script"`
	Keys     []string `json:"keys"`
	Args     []string `json:"args,omitempty"`
	Allowed  string   `json:"allowed"`
	Contract string   `json:"contract"`
}

// MarshalJSON writes s as result.json describes a custom script (see CustomSpec).
func (s CustomSpec) MarshalJSON() ([]byte, error) {
	return json.Marshal(customJSON{Name: s.Name, Script: s.Script, Keys: s.Keys, Args: s.Args,
		Allowed: s.Allowed.String(), Contract: s.Contract.String()})
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
	*s = CustomSpec{Name: w.Name, Script: w.Script, Keys: w.Keys, Args: w.Args, Allowed: rule, Contract: c}
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

// NewCustom checks spec and parses its templates. Problems are reported at once, each wrapping
// ErrBadCustom. The Lua itself is checked by Redis, in Prepare.
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
	for _, t := range append(append([]template(nil), a.keys...), a.args...) {
		if t.uses(tNowMS, tNowS, tNowUS) {
			a.clock = ClockClient
		}
		if t.uses(tCost) {
			a.multi = true
		}
	}
	r := spec.Allowed
	if r.Element < 0 {
		bad("allowed.element must be >= 0, got %d", r.Element)
	}
	switch r.Op {
	case RuleEquals, RuleNotEquals, RuleGreaterThan, RuleIsNil:
	case RulePrefix:
		if r.Value == "" {
			bad("allowed.prefix must not be empty")
		}
	default:
		bad("unknown allowed rule %q", r.Op)
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
	case SlidingWindow, FixedWindow, TokenBucket, NoContract:
	default:
		bad("unknown contract kind %q", spec.Contract.Kind)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return a, nil
}

// Spec returns the spec a was built from.
func (a *Custom) Spec() CustomSpec { return a.spec }

// Describe implements Algorithm. Clock is ClockClient when a key or argument uses {{now_ms}},
// {{now_s}} or {{now_us}}, else ClockServer (the only clock left to the script is Redis's).
func (a *Custom) Describe() Description {
	return Description{
		Name:           a.spec.Name,
		Origin:         "custom script " + a.spec.path(),
		Clock:          a.clock,
		KeysPerSubject: len(a.spec.Keys),
		Memory:         "unknown",
		Cost:           a.multi,
	}
}

// Contract implements Algorithm: the spec's contract, whatever l is.
func (a *Custom) Contract(Limit) (Contract, error) { return a.spec.Contract, nil }

// Model implements Algorithm: a custom script has no reference model.
func (a *Custom) Model(Limit) Model { return nil }

// Prepare implements Algorithm: it validates l, loads the script on every master of c (see Check)
// and binds the templates' constants (limit, window, burst, rate, prefix) once, so that Do only
// fills in the per-request values.
func (a *Custom) Prepare(ctx context.Context, c redis.UniversalClient, l Limit, prefix string) (Limiter, error) {
	if err := l.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", a.spec.Name, err)
	}
	s, err := a.load(ctx, c)
	if err != nil {
		return nil, err
	}
	lim := a.bind(l, prefix, s)
	lim.fresh = isCluster(c)
	return lim, nil
}

// Check loads the script with SCRIPT LOAD on every master of c, as Prepare does, so that a
// caller can find a script Redis rejects before running anything. A script that does not compile
// fails with Redis's own reply (a redis.Error, "ERR Error compiling script ..."), wrapped in a
// message that names the algorithm and the script's file and line.
func (a *Custom) Check(ctx context.Context, c redis.UniversalClient) error {
	_, err := a.load(ctx, c)
	return err
}

func (a *Custom) load(ctx context.Context, c redis.UniversalClient) (*script, error) {
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
	const mark = "user_script:"
	msg := err.Error()
	i := strings.Index(msg, mark)
	if i < 0 {
		return 0
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
// (limit, window, burst, rate, prefix) become literals.
func (a *Custom) bind(l Limit, prefix string, s *script) *customLimiter {
	var consts [tCount]string
	var bound [tCount]bool
	set := func(v tvar, s string) { consts[v], bound[v] = s, true }
	set(tLimit, strconv.FormatInt(l.Limit, 10))
	set(tWindowMS, strconv.FormatInt(l.Window.Milliseconds(), 10))
	set(tWindowS, strconv.FormatInt(int64(math.Ceil(l.Window.Seconds())), 10))
	set(tBurst, strconv.FormatInt(l.Capacity(), 10))
	set(tRate, strconv.FormatFloat(l.RatePerSecond(), 'f', -1, 64))
	set(tPrefix, prefix)
	lim := &customLimiter{a: a, script: s, prefix: prefix, clock: a.clock}
	lim.keys = make([]boundKey, len(a.keys))
	for i, t := range a.keys {
		b := t.bind(&consts, bound)
		k := boundKey{t: b, prepend: true}
		if len(b) > 0 && b[0].v == tLit {
			// A key whose literal start decides the question needs no check per request.
			switch {
			case strings.HasPrefix(b[0].lit, prefix):
				k.prepend = false
			case !strings.HasPrefix(prefix, b[0].lit):
				k.t = append(template{{lit: prefix + b[0].lit}}, b[1:]...)
				k.prepend = false
			}
		}
		lim.keys[i] = k
	}
	lim.args = make([]template, len(a.args))
	for i, t := range a.args {
		lim.args[i] = t.bind(&consts, bound)
	}
	for _, t := range append(append([]template(nil), a.keys...), a.args...) {
		lim.uuid = lim.uuid || t.uses(tUUID)
		lim.now = lim.now || t.uses(tNowMS, tNowS, tNowUS)
	}
	if tr := a.spec.Time; tr != nil {
		lim.timeEl = tr.Element
		lim.unit = tr.Unit.Duration().Microseconds()
		// A time in ms or s only says the decision lay within one unit of it (truncated or
		// rounded), but the load engine narrows a server time to a single instant. That is sound
		// only when the verifier widens by at least the unit (the contract's granularity);
		// otherwise the time is not reported and the decision keeps its [send, receive] interval.
		lim.useTime = tr.Unit.Duration() <= time.Microsecond || a.spec.Contract.Granularity >= tr.Unit.Duration()
	}
	return lim
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
	// Unreadable counts replies the rule could not read; FirstUnreadable is the first of them.
	Unreadable      int64
	FirstUnreadable string
}

// ReplyReporter is implemented by limiters that read replies with a user's rule (custom scripts).
type ReplyReporter interface {
	ReplyStats() ReplyStats
}

// customLimiter is a Custom prepared for one Limit and prefix.
type customLimiter struct {
	a      *Custom
	script *script
	fresh  bool // prepared on a cluster client: see evalCmd
	prefix string
	clock  Clock
	keys   []boundKey
	args   []template
	uuid   bool // a template uses {{uuid}}
	now    bool // a template uses {{now_*}}
	// The time rule: element (0: none), unit in µs, and whether Decision.TimeMicros is set.
	timeEl  int
	unit    int64
	useTime bool

	read, admitted, unreadable atomic.Int64
	firstRead, firstUnreadable atomic.Pointer[string]
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
// when k may lack it and does.
func (l *customLimiter) expandKey(buf []byte, k boundKey, r *reqVars) []byte {
	buf = k.t.expand(buf[:0], r)
	if k.prepend && (len(buf) < len(l.prefix) || string(buf[:len(l.prefix)]) != l.prefix) {
		n := len(l.prefix)
		buf = append(buf, l.prefix...) // room for the prefix
		copy(buf[n:], buf[:len(buf)-n])
		copy(buf, l.prefix)
	}
	return buf
}

func (l *customLimiter) expandKeys(r *reqVars) []string {
	keys := make([]string, len(l.keys))
	var arr [128]byte
	for i, k := range l.keys {
		keys[i] = string(l.expandKey(arr[:0], k, r))
	}
	return keys
}

// Keys implements Limiter: the key templates expanded for req (with a fresh {{uuid}} and the
// current time when req has no ClientTime).
func (l *customLimiter) Keys(req Request) []string {
	cost := req.Cost
	if cost <= 0 {
		cost = 1
	}
	r := l.vars(req, cost)
	return l.expandKeys(&r)
}

// customCall is the Call of a customLimiter: the keys and the arguments are the templates
// expanded for each request in buffers of the Call's own; an argument whose template is a
// constant for the limiter is sent as it is.
type customCall struct {
	scriptCall
	l    *customLimiter
	keys []argBuf
	args []argBuf // one per argument template, unused for a constant one
	cmd  *evalCmd
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
		switch {
		case len(t) == 0:
			args[i] = ""
		case len(t) == 1 && t[0].v == tLit:
			args[i] = t[0].lit
		default:
			args[i] = &c.args[i]
		}
	}
	c.cmd = newEvalCmd(l.script, l.fresh, keys, args...)
	return c
}

// Send implements Call. Cost > 1 is supported only when a template uses {{cost}}; otherwise the
// script would charge one permit while the verifier counts several, so the request is not sent
// and its error wraps ErrCostUnsupported.
func (c *customCall) Send(ctx context.Context, rc redis.Cmdable, req Request) {
	l := c.l
	cost, err := requestCost(l.a.spec.Name, req, l.a.multi)
	if err != nil {
		c.fail(err)
		return
	}
	r := l.vars(req, cost)
	c.fill(&r)
	c.send(ctx, rc, c.cmd)
}

// fill expands the key and argument templates for r into the Call's buffers.
func (c *customCall) fill(r *reqVars) {
	for i, k := range c.l.keys {
		c.keys[i].b = c.l.expandKey(c.keys[i].b, k, r)
	}
	for i, t := range c.l.args {
		c.args[i].b = t.expand(c.args[i].b[:0], r)
	}
}

func (c *customCall) Result() (Decision, error) {
	l := c.l
	if c.err != nil {
		return Decision{}, c.err
	}
	raw, err := c.sent.result()
	if err == redis.Nil {
		raw, err = nil, nil
	}
	if err != nil {
		return Decision{}, fmt.Errorf("%s: %w", l.a.spec.Name, err)
	}
	d, err := l.decode(raw)
	if err != nil {
		if l.unreadable.Add(1) == 1 || l.firstUnreadable.Load() == nil {
			s := FormatReply(raw)
			l.firstUnreadable.CompareAndSwap(nil, &s)
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

// decode reads raw with the allowed rule and the time rule.
func (l *customLimiter) decode(raw any) (Decision, error) {
	allowed, err := l.a.spec.Allowed.Decide(raw)
	if err != nil {
		return Decision{}, err
	}
	d := Decision{Allowed: allowed, Clock: l.clock}
	if l.timeEl == 0 {
		return d, nil
	}
	t, err := replyTime(raw, l.timeEl)
	if err != nil {
		return Decision{}, err
	}
	if t > math.MaxInt64/l.unit {
		return Decision{}, badReply("time element "+strconv.Itoa(l.timeEl)+" is out of range", raw)
	}
	if l.useTime {
		d.TimeMicros = t * l.unit
	}
	return d, nil
}

// replyTime reads element el (1-based) of an array reply as a positive integer (or a string
// holding one).
func replyTime(raw any, el int) (int64, error) {
	arr, ok := raw.([]any)
	if !ok {
		return 0, badReply("time: want an array reply", raw)
	}
	if el > len(arr) {
		return 0, badReply("time: want element "+strconv.Itoa(el)+", reply has "+strconv.Itoa(len(arr)), raw)
	}
	var t int64
	switch v := arr[el-1].(type) {
	case int64:
		t = v
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, badReply("time: element "+strconv.Itoa(el)+" is not an integer", raw)
		}
		t = n
	default:
		return 0, badReply("time: element "+strconv.Itoa(el)+" is not an integer", raw)
	}
	if t <= 0 {
		return 0, badReply("time: element "+strconv.Itoa(el)+" must be > 0", raw)
	}
	return t, nil
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
	return st
}
