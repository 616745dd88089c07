package algorithms

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrBadCustom means a CustomSpec cannot be used: no name or script, no key, an unknown template,
// an unknown rule, or a time rule without an element or unit.
var ErrBadCustom = errors.New("invalid custom script")

// The rules of a ReplyRule; exactly one decides.
const (
	// RuleEquals: the element's text (integers in decimal) equals Value. A nil element does not.
	RuleEquals = "equals"
	// RuleNotEquals: the element is not nil and its text differs from Value.
	RuleNotEquals = "not_equals"
	// RuleGreaterThan: the element is an integer, or a string holding a number, greater than
	// Number. A nil element is not.
	RuleGreaterThan = "greater_than"
	// RulePrefix: the element is a string that starts with Value. A nil element does not.
	RulePrefix = "prefix"
	// RuleIsNil: the element is nil (a Lua nil or false).
	RuleIsNil = "is_nil"
)

// ReplyRule decides from a script's reply whether the request was admitted.
//
// The element is read from the reply (Element ≥ 1: that element of an array reply; 0: the whole
// reply, which must then not be an array). A reply the rule cannot read is an error wrapping
// ErrBadReply, never an admission: an array where a scalar is read or a scalar where an array is
// read, a missing element, an error element, a nested array or map, a non-numeric string or other
// non-number under greater_than, and a non-string (other than nil) under prefix. Nil and Lua false
// are read as nil; Lua true (RESP3 true) is read as the integer 1, as RESP2 sends it.
type ReplyRule struct {
	// Element is a 1-based index into an array reply; 0 reads a scalar reply.
	Element int
	// Op is one of RuleEquals, RuleNotEquals, RuleGreaterThan, RulePrefix and RuleIsNil.
	Op string
	// Value is the text compared by equals, not_equals and prefix.
	Value string
	// Number is the bound of greater_than.
	Number float64
}

// String renders r as in a scenario file, for example `{element: 1, equals: "1"}`.
func (r ReplyRule) String() string {
	var op string
	switch r.Op {
	case RuleGreaterThan:
		op = "greater_than: " + strconv.FormatFloat(r.Number, 'g', -1, 64)
	case RuleIsNil:
		op = "is_nil: true"
	default:
		op = r.Op + ": " + strconv.Quote(r.Value)
	}
	if r.Element == 0 {
		return "{" + op + "}"
	}
	return "{element: " + strconv.Itoa(r.Element) + ", " + op + "}"
}

// ReplyTime says which element of an array reply holds the Unix time the script decided at.
type ReplyTime struct {
	// Element is a 1-based index into the array reply (≥ 1).
	Element int
	// Unit is the time's unit: time.Microsecond, time.Millisecond or time.Second.
	Unit time.Duration
}

// CustomSpec describes a user's own Lua script, run unchanged. It is plain data (package
// scenarios fills it from a scenario's custom entry); NewCustom checks it.
type CustomSpec struct {
	// Name identifies the algorithm in reports.
	Name string
	// Path is where the script was read from; shown in Describe and in errors.
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

// tvar is a template variable; tLit marks a literal segment.
type tvar uint8

const (
	tLit tvar = iota
	tSubject
	tTag
	tClient
	tCost
	tLimit
	tWindowMS
	tWindowS
	tBurst
	tRate
	tNowMS
	tNowS
	tNowUS
	tUUID
	tPrefix
	tCount
)

// templateVars maps the names usable inside {{ }} to their variables, in documentation order.
var templateVars = []struct {
	name string
	v    tvar
}{
	{"subject", tSubject}, {"tag", tTag}, {"client", tClient}, {"cost", tCost}, {"limit", tLimit},
	{"window_ms", tWindowMS}, {"window_s", tWindowS}, {"burst", tBurst}, {"rate", tRate},
	{"now_ms", tNowMS}, {"now_s", tNowS}, {"now_us", tNowUS}, {"uuid", tUUID}, {"prefix", tPrefix},
}

// CustomTemplates returns the names a custom script's keys and args may use inside {{ }}:
//
//	subject    the limited subject (Request.Subject)
//	tag        the subject inside braces, a Redis Cluster hash tag: {subject}
//	client     the client id (Request.Client)
//	cost       the permits asked for (Request.Cost, 0 meaning 1)
//	limit      Limit.Limit
//	window_ms  Limit.Window in milliseconds
//	window_s   Limit.Window in whole seconds, rounded up
//	burst      Limit.Capacity()
//	rate       Limit.Limit / Limit.Window per second, in decimal (2.5, 100)
//	now_ms     Request.ClientTime (the client's clock, skew included) in ms since the Unix epoch
//	now_s      the same in whole seconds (rounded down)
//	now_us     the same in µs
//	uuid       a random version-4 UUID, fresh per request (the same within one request)
//	prefix     the limiter's key prefix (keys that do not start with it get it prepended)
func CustomTemplates() []string {
	out := make([]string, len(templateVars))
	for i, t := range templateVars {
		out[i] = t.name
	}
	return out
}

// segment is one piece of a template: a literal (v == tLit) or a variable.
type segment struct {
	lit string
	v   tvar
}

// template is a parsed key or argument template.
type template []segment

// parseTemplate splits t into literals and variables. A placeholder is "{{", optional spaces, a
// name without braces, optional spaces, "}}"; an unknown name or an unbalanced "{{" or "}}" is an
// error.
func parseTemplate(t string) (template, error) {
	var out template
	rest := t
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			if strings.Contains(rest, "}}") {
				return nil, fmt.Errorf("unbalanced {{ }} in %q", t)
			}
			if rest != "" {
				out = append(out, segment{lit: rest})
			}
			return out, nil
		}
		j := strings.Index(rest[i+2:], "}}")
		if j < 0 {
			return nil, fmt.Errorf("unbalanced {{ }} in %q", t)
		}
		lit, name := rest[:i], rest[i+2:i+2+j]
		if strings.Contains(lit, "}}") || strings.ContainsAny(name, "{}") {
			return nil, fmt.Errorf("unbalanced {{ }} in %q", t)
		}
		name = strings.TrimSpace(name)
		v := tLit
		for _, tv := range templateVars {
			if tv.name == name {
				v = tv.v
			}
		}
		if v == tLit {
			return nil, fmt.Errorf("unknown template {{%s}} in %q; known: {{%s}}", name, t,
				strings.Join(CustomTemplates(), "}} {{"))
		}
		if lit != "" {
			out = append(out, segment{lit: lit})
		}
		out = append(out, segment{v: v})
		rest = rest[i+2+j+2:]
	}
}

// uses reports whether t uses any of vs.
func (t template) uses(vs ...tvar) bool {
	for _, s := range t {
		for _, v := range vs {
			if s.v == v {
				return true
			}
		}
	}
	return false
}

// bind replaces the variables that are constant for one limiter (bound[v]) by their values
// consts[v] and merges adjacent literals.
func (t template) bind(consts *[tCount]string, bound [tCount]bool) template {
	var out template
	for _, s := range t {
		if s.v != tLit && bound[s.v] {
			s = segment{lit: consts[s.v]}
		}
		if s.v == tLit && s.lit == "" {
			continue
		}
		if n := len(out); n > 0 && s.v == tLit && out[n-1].v == tLit {
			out[n-1].lit += s.lit
			continue
		}
		out = append(out, s)
	}
	return out
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
		bad("script %s is empty", spec.Path)
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
		switch t.Unit {
		case time.Microsecond, time.Millisecond, time.Second:
		default:
			bad("time.unit must be 1µs, 1ms or 1s, got %s", t.Unit)
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
		Origin:         "custom script " + a.spec.Path,
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
	return a.bind(l, prefix, s), nil
}

// Check loads the script with SCRIPT LOAD on every master of c, as Prepare does, so that a
// caller can find a script Redis rejects before running anything. A script that does not compile
// fails with Redis's own reply (a redis.Error, "ERR Error compiling script ..."), wrapped in a
// message that names the algorithm and the script's file and line.
func (a *Custom) Check(ctx context.Context, c redis.UniversalClient) error {
	_, err := a.load(ctx, c)
	return err
}

func (a *Custom) load(ctx context.Context, c redis.UniversalClient) (*redis.Script, error) {
	s := redis.NewScript(a.spec.Source)
	var err error
	if cc, ok := c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			return s.Load(ctx, m).Err()
		})
	} else {
		err = s.Load(ctx, c).Err()
	}
	if err != nil {
		return nil, &ScriptError{Name: a.spec.Name, Path: a.spec.Path, Line: scriptLine(err), Err: err}
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
func (a *Custom) bind(l Limit, prefix string, s *redis.Script) *customLimiter {
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
		lim.unit = tr.Unit.Microseconds()
		// A time in ms or s only says the decision lay within one unit of it (truncated or
		// rounded), but the load engine narrows a server time to a single instant. That is sound
		// only when the verifier widens by at least the unit (the contract's granularity);
		// otherwise the time is not reported and the decision keeps its [send, receive] interval.
		lim.useTime = tr.Unit <= time.Microsecond || a.spec.Contract.Granularity >= tr.Unit
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
	script *redis.Script
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

// reqVars are the per-request values of the templates.
type reqVars struct {
	subject, client string
	cost            int64
	now             time.Time
	uuid            [36]byte
}

// expand appends the expansion of t to b.
func (t template) expand(b []byte, r *reqVars) []byte {
	for _, s := range t {
		switch s.v {
		case tLit:
			b = append(b, s.lit...)
		case tSubject:
			b = append(b, r.subject...)
		case tTag:
			b = append(b, '{')
			b = append(b, r.subject...)
			b = append(b, '}')
		case tClient:
			b = append(b, r.client...)
		case tCost:
			b = strconv.AppendInt(b, r.cost, 10)
		case tNowMS:
			b = strconv.AppendInt(b, r.now.UnixMilli(), 10)
		case tNowS:
			b = strconv.AppendInt(b, r.now.Unix(), 10)
		case tNowUS:
			b = strconv.AppendInt(b, r.now.UnixMicro(), 10)
		case tUUID:
			b = append(b, r.uuid[:]...)
		}
	}
	return b
}

// newUUID fills u with a random version-4 UUID in its 36-character text form.
func newUUID(u *[36]byte) {
	const hex = "0123456789abcdef"
	hi, lo := rand.Uint64(), rand.Uint64()
	hi = hi&^(0xf<<12) | 0x4<<12 // version 4
	lo = lo&^(0x3<<62) | 0x2<<62 // variant 10
	var raw [16]byte
	for i := range 8 {
		raw[i] = byte(hi >> (56 - 8*i))
		raw[8+i] = byte(lo >> (56 - 8*i))
	}
	j := 0
	for i, c := range raw {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			u[j] = '-'
			j++
		}
		u[j], u[j+1] = hex[c>>4], hex[c&0xf]
		j += 2
	}
}

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

func (l *customLimiter) expandKeys(r *reqVars) []string {
	keys := make([]string, len(l.keys))
	var arr [128]byte
	buf := arr[:0]
	for i, k := range l.keys {
		buf = k.t.expand(buf[:0], r)
		s := string(buf)
		if k.prepend && !strings.HasPrefix(s, l.prefix) {
			s = l.prefix + s
		}
		keys[i] = s
	}
	return keys
}

func (l *customLimiter) expandArgs(r *reqVars) []any {
	args := make([]any, len(l.args))
	var arr [128]byte
	buf := arr[:0]
	for i, t := range l.args {
		buf = t.expand(buf[:0], r)
		args[i] = string(buf)
	}
	return args
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

// Do implements Limiter. Cost > 1 is supported only when a template uses {{cost}}; otherwise the
// script would charge one permit while the verifier counts several, so Do returns an error
// wrapping ErrCostUnsupported.
func (l *customLimiter) Do(ctx context.Context, c redis.Cmdable, req Request) Pending {
	cost, err := requestCost(l.a.spec.Name, req, l.a.multi)
	if err != nil {
		return failedPending(err)
	}
	r := l.vars(req, cost)
	keys := l.expandKeys(&r)
	cmd := runScript(ctx, c, l.script, keys, l.expandArgs(&r)...)
	return func() (Decision, error) {
		raw, err := cmd.Result()
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

// Decide reads raw (a go-redis reply: int64, string, float64, bool, nil, []any, ...) with r and
// reports whether it is an admission. A reply r cannot read is an error wrapping ErrBadReply
// that shows the raw reply; see ReplyRule.
func (r ReplyRule) Decide(raw any) (bool, error) {
	v := raw
	if r.Element > 0 {
		arr, ok := raw.([]any)
		if !ok {
			return false, badReply("allowed: want an array reply with element "+strconv.Itoa(r.Element), raw)
		}
		if r.Element > len(arr) {
			return false, badReply("allowed: want element "+strconv.Itoa(r.Element)+", reply has "+strconv.Itoa(len(arr)), raw)
		}
		v = arr[r.Element-1]
	} else if _, ok := raw.([]any); ok {
		return false, badReply("allowed: want a scalar reply (the rule has no element)", raw)
	}
	// Normalise: Lua false (RESP3 false) is nil, true is 1.
	if b, ok := v.(bool); ok {
		if b {
			v = int64(1)
		} else {
			v = nil
		}
	}
	switch v.(type) {
	case nil, int64, string, float64:
	default:
		return false, badReply("allowed: the element is not a nil, integer or string", raw)
	}
	switch r.Op {
	case RuleIsNil:
		return v == nil, nil
	case RuleEquals, RuleNotEquals:
		if v == nil {
			return false, nil
		}
		eq := text(v) == r.Value
		return eq == (r.Op == RuleEquals), nil
	case RuleGreaterThan:
		var x float64
		switch e := v.(type) {
		case nil:
			return false, nil
		case int64:
			x = float64(e)
		case float64:
			x = e
		case string:
			f, err := strconv.ParseFloat(strings.TrimSpace(e), 64)
			if err != nil || math.IsNaN(f) {
				return false, badReply("allowed: greater_than needs a number", raw)
			}
			x = f
		}
		return x > r.Number, nil
	case RulePrefix:
		switch e := v.(type) {
		case nil:
			return false, nil
		case string:
			return strings.HasPrefix(e, r.Value), nil
		}
		return false, badReply("allowed: prefix needs a string", raw)
	}
	return false, badReply("allowed: unknown rule "+strconv.Quote(r.Op), raw)
}

// text is the text of a scalar reply element: integers in decimal.
func text(v any) string {
	switch e := v.(type) {
	case int64:
		return strconv.FormatInt(e, 10)
	case float64:
		return strconv.FormatFloat(e, 'f', -1, 64)
	case string:
		return e
	}
	return ""
}

// maxReplyText is the longest FormatReply output; longer replies are cut with "…".
const maxReplyText = 300

// FormatReply renders a go-redis reply as text for people: integers in decimal, strings quoted,
// nil as nil, arrays as [a, b], errors as (error) message; at most about 300 characters.
func FormatReply(raw any) string {
	var b strings.Builder
	formatReply(&b, raw)
	s := b.String()
	if len(s) > maxReplyText {
		s = s[:maxReplyText] + "…"
	}
	return s
}

func formatReply(b *strings.Builder, raw any) {
	if b.Len() > maxReplyText {
		return
	}
	switch v := raw.(type) {
	case nil:
		b.WriteString("nil")
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case float64:
		b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case string:
		b.WriteString(strconv.Quote(v))
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			formatReply(b, e)
		}
		b.WriteByte(']')
	case error:
		b.WriteString("(error) " + v.Error())
	default:
		fmt.Fprintf(b, "%#v", v)
	}
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
