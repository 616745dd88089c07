package algorithms

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// A custom script's keys, arguments, reply-rule values and contract numbers are templates: text
// with placeholders "{{...}}" (spaces allowed inside the braces) that each request fills in. A
// placeholder holds a name ({{tag}}) or an integer expression over the integer names
// ({{now_ms / window_ms - 1}}). This file is the one template engine: scenarios checks a
// scenario's templates with CheckTemplate, CheckTemplateWith and KeysShareSlot, and a Custom
// parses them once (NewCustom), binds the values that are constant for one limiter once
// (Prepare) and expands them per request without allocating beyond the output.
//
// # Expressions
//
// An expression is made of whole numbers (decimal digits), the integer names (cost, limit,
// window_ms, window_s, burst, now_ms, now_s, now_us), the operators + - * / with the usual
// precedence (* and / before + and -, left to right), unary minus, and parentheses. Arithmetic is
// on int64:
//
//   - a / b is floor division, the largest integer q with q·b <= a (rounded toward negative
//     infinity, not toward zero): 7 / 2 = 3, -7 / 2 = -4, 7 / -2 = -4, -7 / -2 = 3. It is what
//     Lua's math.floor(a / b) gives for the window number of a time, and what a key
//     "id:floor(now / W)" needs for times before the epoch too.
//   - a result outside the int64 range is an error (overflow), never a wrapped value.
//   - division by zero is an error.
//
// Errors where the operands are constant (numbers, and the names bound per limiter: limit,
// window_ms, window_s, burst) are found when the template is parsed (numbers alone) or bound
// (CheckTemplateWith, Prepare): before anything is sent. Where an operand changes per request
// (cost, now_*), the error is the request's: it wraps ErrTemplate, nothing is sent, and the
// request counts as failed, never as an admission.

// ErrTemplate means a template could not be expanded for one request: an expression over that
// request's values divided by zero or overflowed. The request was not sent; the load generator
// counts it as failed.
var ErrTemplate = errors.New("template cannot be expanded")

// tvar is a template variable; tLit marks a literal part and tExpr an expression.
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
	tNowSFloat
	tUUID
	tPrefix
	tExpr
	tCount
)

// templateVars maps the names usable inside {{ }} to their variables, in documentation order.
var templateVars = []struct {
	name string
	v    tvar
}{
	{"subject", tSubject}, {"tag", tTag}, {"client", tClient}, {"cost", tCost}, {"limit", tLimit},
	{"window_ms", tWindowMS}, {"window_s", tWindowS}, {"burst", tBurst}, {"rate", tRate},
	{"now_ms", tNowMS}, {"now_s", tNowS}, {"now_us", tNowUS}, {"now_s_float", tNowSFloat},
	{"uuid", tUUID}, {"prefix", tPrefix},
}

// isInt reports whether v has an integer value, usable in expressions.
func isInt(v tvar) bool {
	switch v {
	case tCost, tLimit, tWindowMS, tWindowS, tBurst, tNowMS, tNowS, tNowUS:
		return true
	}
	return false
}

// intNames is the list of integer names, for messages.
const intNames = "cost, limit, window_ms, window_s, burst, now_ms, now_s, now_us"

// CustomTemplates returns the names a custom script's templates may use inside {{ }}:
//
//	subject      the limited subject (Request.Subject)
//	tag          the subject inside braces, a Redis Cluster hash tag: {subject}
//	client       the client id (Request.Client)
//	cost         the permits asked for (Request.Cost, 0 meaning 1)
//	limit        Limit.Limit
//	window_ms    Limit.Window in milliseconds
//	window_s     Limit.Window in whole seconds, rounded up
//	burst        Limit.Capacity()
//	rate         Limit.Limit / Limit.Window per second, in decimal (2.5, 100)
//	now_ms       Request.ClientTime (the client's clock, skew included) in ms since the Unix epoch
//	now_s        the same in whole seconds (rounded down)
//	now_us       the same in µs
//	now_s_float  the same in seconds with six decimals, the microseconds: 1700000000.123456
//	uuid         a random version-4 UUID, fresh per request (the same within one request)
//	prefix       the limiter's key prefix (keys that do not start with it get it prepended)
//
// cost, limit, window_ms, window_s, burst, now_ms, now_s and now_us are integers and may be used
// in expressions (see the package's template engine).
func CustomTemplates() []string {
	out := make([]string, len(templateVars))
	for i, t := range templateVars {
		out[i] = t.name
	}
	return out
}

// part is one piece of a template: a literal (v == tLit), a variable, or an expression
// (v == tExpr: e as parsed, prog once bound).
type part struct {
	lit  string
	v    tvar
	e    *expr
	prog program
	src  string // v == tExpr: the placeholder's text, for messages
	uses uint32 // the variables the part reads, one bit each
}

// template is a parsed template.
type template []part

// parseTemplate splits t into literals, variables and expressions. A placeholder is "{{",
// optional spaces, a name or an expression without braces, optional spaces, "}}"; an unknown
// name, an expression that does not parse or is constant and divides by zero or overflows, or
// an unbalanced "{{" or "}}" is an error.
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
				out = append(out, part{lit: rest})
			}
			return out, nil
		}
		j := strings.Index(rest[i+2:], "}}")
		if j < 0 {
			return nil, fmt.Errorf("unbalanced {{ }} in %q", t)
		}
		lit, body := rest[:i], rest[i+2:i+2+j]
		if strings.Contains(lit, "}}") || strings.ContainsAny(body, "{}") {
			return nil, fmt.Errorf("unbalanced {{ }} in %q", t)
		}
		name := strings.TrimSpace(body)
		var seg part
		if isName(name) {
			v := lookupVar(name)
			if v == tLit {
				if s := Suggest(name, CustomTemplates()); s != "" {
					return nil, fmt.Errorf("unknown template {{%s}} in %q (did you mean {{%s}}?)", name, t, s)
				}
				return nil, fmt.Errorf("unknown template {{%s}} in %q; known: {{%s}}", name, t,
					strings.Join(CustomTemplates(), "}} {{"))
			}
			seg = part{v: v, uses: 1 << v}
		} else {
			e, err := parseExpr(name)
			if err == nil {
				e, err = e.fold(nil)
			}
			if err != nil {
				return nil, fmt.Errorf("expression {{%s}} in %q: %w", name, t, err)
			}
			seg = part{v: tExpr, e: e, src: name, uses: e.vars()}
		}
		if lit != "" {
			out = append(out, part{lit: lit})
		}
		out = append(out, seg)
		rest = rest[i+2+j+2:]
	}
}

// isName reports whether s is a name: a letter or _, then letters, digits or _.
func isName(s string) bool {
	if s == "" || !(s[0] == '_' || isLetter(s[0])) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !(c == '_' || isLetter(c) || isDigit(c)) {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// lookupVar returns the variable named name, or tLit when there is none.
func lookupVar(name string) tvar {
	for _, tv := range templateVars {
		if tv.name == name {
			return tv.v
		}
	}
	return tLit
}

// uses reports whether t reads any of vs (inside expressions too).
func (t template) uses(vs ...tvar) bool {
	for _, s := range t {
		for _, v := range vs {
			if s.uses&(1<<v) != 0 {
				return true
			}
		}
	}
	return false
}

// usesClock reports whether t reads the client's clock.
func (t template) usesClock() bool { return t.uses(tNowMS, tNowS, tNowUS, tNowSFloat) }

// bindings are the values of the variables that are constant for one limiter.
type bindings struct {
	text  [tCount]string
	ints  [tCount]int64
	bound [tCount]bool
}

// limitBindings returns the constants of a limiter for l with key prefix prefix: limit,
// window_ms, window_s, burst, rate and prefix.
func limitBindings(l Limit, prefix string) *bindings {
	b := &bindings{}
	setInt := func(v tvar, n int64) { b.text[v], b.ints[v], b.bound[v] = strconv.FormatInt(n, 10), n, true }
	setInt(tLimit, l.Limit)
	setInt(tWindowMS, l.Window.Milliseconds())
	setInt(tWindowS, int64(math.Ceil(l.Window.Seconds())))
	setInt(tBurst, l.Capacity())
	b.text[tRate], b.bound[tRate] = strconv.FormatFloat(l.RatePerSecond(), 'f', -1, 64), true
	b.text[tPrefix], b.bound[tPrefix] = prefix, true
	return b
}

// bind replaces the variables that are constant for one limiter by their values, folds the
// expressions (an expression left constant becomes a literal), compiles what is left, and
// merges adjacent literals. An expression that divides by zero or overflows with these
// constants is an error.
func (t template) bind(b *bindings) (template, error) {
	var out template
	for _, s := range t {
		switch {
		case s.v == tExpr:
			e, err := s.e.fold(b)
			if err != nil {
				return nil, fmt.Errorf("expression {{%s}}: %w", s.src, err)
			}
			if e.op == opNum {
				s = part{lit: strconv.FormatInt(e.n, 10)}
				break
			}
			p, err := e.compile()
			if err != nil {
				return nil, fmt.Errorf("expression {{%s}}: %w", s.src, err)
			}
			s.e, s.prog = e, p
		case s.v != tLit && b.bound[s.v]:
			s = part{lit: b.text[s.v]}
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
	return out, nil
}

// literal returns t's text when t is a constant (no variable left), and whether it is.
func (t template) literal() (string, bool) {
	switch {
	case len(t) == 0:
		return "", true
	case len(t) == 1 && t[0].v == tLit:
		return t[0].lit, true
	}
	return "", false
}

// CheckTemplate returns why t is not a valid template (an unknown name, with the closest known
// one when there is one; an expression that does not parse, uses a name that is not an integer,
// or divides by zero or overflows on its numbers alone; unbalanced braces), or nil.
func CheckTemplate(t string) error {
	_, err := parseTemplate(t)
	return err
}

// CheckTemplateWith is CheckTemplate, and also binds t's constants for l (limit, window_ms,
// window_s, burst, rate): an expression that divides by zero or overflows with them is an error,
// found before anything is sent.
func CheckTemplateWith(t string, l Limit) error {
	p, err := parseTemplate(t)
	if err != nil {
		return err
	}
	b := limitBindings(l, "p:")
	for _, s := range p {
		if s.v != tExpr {
			continue
		}
		if _, err := s.e.fold(b); err != nil {
			return fmt.Errorf("expression {{%s}} in %q: %w with limit %d per %s", s.src, t, err, l.Limit, l.Window)
		}
	}
	return nil
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

// KeysShareSlot returns an error when the key templates keys can fall in different slots of a
// cluster (CROSSSLOT): when, expanded with values that differ wherever a template may differ from
// key to key, their hash tags differ. An expression counts as its own text: two keys share a
// slot through an expression only when both write the same one. Templates that do not parse are
// left to CheckTemplate.
func KeysShareSlot(keys []string) error {
	if len(keys) < 2 {
		return nil
	}
	tags := make([]string, len(keys))
	for i, k := range keys {
		t, err := parseTemplate(k)
		if err != nil {
			return nil
		}
		r := reqVars{subject: "s", client: "c", cost: 1, now: time.UnixMilli(1)}
		copy(r.uuid[:], fmt.Sprintf("uuid-%d", i))
		b := &bindings{}
		for _, v := range []tvar{tLimit, tWindowMS, tWindowS, tBurst, tRate, tPrefix} {
			b.text[v], b.ints[v], b.bound[v] = "1", 1, true
		}
		b.text[tPrefix] = "p:"
		var out []byte
		for _, s := range t {
			if s.v == tExpr {
				out = append(out, "("+strings.Join(strings.Fields(s.src), "")+")"...)
				continue
			}
			bs, _ := template{s}.bind(b)
			out, _ = bs.expand(out, &r)
		}
		tags[i] = HashTag(string(out))
	}
	for i := 1; i < len(keys); i++ {
		if tags[i] != tags[0] {
			return fmt.Errorf("keys %q and %q do not share a hash tag, so on a cluster they fall in different slots (CROSSSLOT); put {{tag}} in every key",
				keys[0], keys[i])
		}
	}
	return nil
}

// reqVars are the per-request values of the templates.
type reqVars struct {
	subject, client string
	cost            int64
	now             time.Time
	uuid            [36]byte
}

// int returns the value of the integer variable v for r (the per-request ones: cost, now_*).
func (r *reqVars) int(v tvar) int64 {
	switch v {
	case tCost:
		return r.cost
	case tNowMS:
		return r.now.UnixMilli()
	case tNowS:
		return r.now.Unix()
	case tNowUS:
		return r.now.UnixMicro()
	}
	return 0
}

// expand appends the expansion of t to b. An expression that divides by zero or overflows for
// r is an error wrapping ErrTemplate; b is then returned as far as it was written.
func (t template) expand(b []byte, r *reqVars) ([]byte, error) {
	for i := range t {
		s := &t[i]
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
		case tCost, tNowMS, tNowS, tNowUS:
			b = strconv.AppendInt(b, r.int(s.v), 10)
		case tNowSFloat:
			b = appendSecondsFloat(b, r.now.UnixMicro())
		case tUUID:
			b = append(b, r.uuid[:]...)
		case tExpr:
			n, err := s.prog.eval(r)
			if err != nil {
				return b, fmt.Errorf("%w: {{%s}}: %w", ErrTemplate, s.src, err)
			}
			b = strconv.AppendInt(b, n, 10)
		}
	}
	return b, nil
}

// appendSecondsFloat appends us, µs since the Unix epoch, as seconds with six decimals:
// 1700000000.123456, -0.000001.
func appendSecondsFloat(b []byte, us int64) []byte {
	u := uint64(us)
	if us < 0 {
		b = append(b, '-')
		u = -u
	}
	b = strconv.AppendUint(b, u/1_000_000, 10)
	b = append(b, '.')
	frac := u % 1_000_000
	var d [6]byte
	for i := 5; i >= 0; i-- {
		d[i] = byte('0' + frac%10)
		frac /= 10
	}
	return append(b, d[:]...)
}

// floorDivMod returns q = ⌊a / b⌋ and m = a − q·b (0 <= m < |b| for b > 0); b must not be 0.
func floorDivMod(a, b int64) (q, m int64) {
	q, m = a/b, a%b
	if m != 0 && (m < 0) != (b < 0) {
		q--
		m += b
	}
	return q, m
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
