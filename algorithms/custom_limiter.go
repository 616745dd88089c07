package algorithms

// The limiter a custom algorithm's Prepare returns: its templates bound to a limit and a key
// prefix, the keys and arguments of each request expanded, the call (EVALSHA or FCALL) sent on the
// load's connections, and its reply decoded by the spec's rules.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

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
