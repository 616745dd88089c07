package algorithms

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// RuleOp is how a ReplyRule reads its element; its value is the rule's name in a scenario file.
type RuleOp string

// The rules of a ReplyRule; exactly one decides.
const (
	// RuleEquals: the element's text (integers in decimal) equals Value. A nil element does not.
	RuleEquals RuleOp = "equals"
	// RuleNotEquals: the element is not nil and its text differs from Value.
	RuleNotEquals RuleOp = "not_equals"
	// RuleGreaterThan: the element is an integer, or a string holding a number, greater than
	// Number. A nil element is not.
	RuleGreaterThan RuleOp = "greater_than"
	// RulePrefix: the element is a string that starts with Value. A nil element does not.
	RulePrefix RuleOp = "prefix"
	// RuleIsNil: the element is nil (a Lua nil or false).
	RuleIsNil RuleOp = "is_nil"
)

// RuleOps lists the rules in the order a scenario file's documentation gives them.
var RuleOps = []RuleOp{RuleEquals, RuleNotEquals, RuleGreaterThan, RulePrefix, RuleIsNil}

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
	// Op is one of RuleOps.
	Op RuleOp
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
		op = string(r.Op) + ": " + strconv.Quote(r.Value)
	}
	if r.Element == 0 {
		return "{" + op + "}"
	}
	return "{element: " + strconv.Itoa(r.Element) + ", " + op + "}"
}

// ParseReplyRule parses what ReplyRule.String renders, such as `{element: 1, equals: "1"}`,
// `{greater_than: 0}` or `{is_nil: true}`.
func ParseReplyRule(s string) (ReplyRule, error) {
	bad := func() (ReplyRule, error) { return ReplyRule{}, fmt.Errorf("%w: allowed rule %q", ErrBadCustom, s) }
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") || len(s) < 2 {
		return bad()
	}
	body := s[1 : len(s)-1]
	var r ReplyRule
	if rest, ok := strings.CutPrefix(body, "element: "); ok {
		n, after, found := strings.Cut(rest, ", ")
		el, err := strconv.Atoi(n)
		if !found || err != nil {
			return bad()
		}
		r.Element, body = el, after
	}
	op, value, found := strings.Cut(body, ": ")
	if !found {
		return bad()
	}
	r.Op = RuleOp(op)
	var err error
	switch r.Op {
	case RuleGreaterThan:
		r.Number, err = strconv.ParseFloat(value, 64)
	case RuleIsNil:
		if value != "true" {
			return bad()
		}
	case RuleEquals, RuleNotEquals, RulePrefix:
		r.Value, err = strconv.Unquote(value)
	default:
		return bad()
	}
	if err != nil {
		return bad()
	}
	return r, nil
}

// TimeUnit is the unit of a time a script returns: "us", "ms" or "s".
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

// ReplyTime says which element of an array reply holds the Unix time the script decided at.
type ReplyTime struct {
	// Element is a 1-based index into the array reply (≥ 1).
	Element int
	// Unit is the time's unit.
	Unit TimeUnit
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
	return false, badReply("allowed: unknown rule "+strconv.Quote(string(r.Op)), raw)
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
