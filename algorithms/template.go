package algorithms

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// A custom script's keys and arguments are templates: text with placeholders "{{name}}" (spaces
// allowed inside the braces) that each request fills in. This file is the one template engine:
// scenarios checks a scenario's templates with CheckTemplate and KeysShareSlot, and a Custom
// parses, binds and expands them.

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
			if s := Suggest(name, CustomTemplates()); s != "" {
				return nil, fmt.Errorf("unknown template {{%s}} in %q (did you mean {{%s}}?)", name, t, s)
			}
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

// CheckTemplate returns why t is not a valid template (an unknown name, with the closest known
// one when there is one, or unbalanced braces), or nil.
func CheckTemplate(t string) error {
	_, err := parseTemplate(t)
	return err
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
// key to key, their hash tags differ. Templates that do not parse are left to CheckTemplate.
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
		consts := [tCount]string{tLimit: "1", tWindowMS: "1", tWindowS: "1", tBurst: "1", tRate: "1", tPrefix: "p:"}
		var bound [tCount]bool
		for _, v := range []tvar{tLimit, tWindowMS, tWindowS, tBurst, tRate, tPrefix} {
			bound[v] = true
		}
		tags[i] = HashTag(string(t.bind(&consts, bound).expand(nil, &r)))
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
