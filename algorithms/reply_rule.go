package algorithms

import (
	"errors"
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
	// RuleGreaterThan: the element is a number (an integer, or a string holding a number)
	// greater than Value. A nil element is not.
	RuleGreaterThan RuleOp = "greater_than"
	// RuleAtLeast: the element is a number at least Value (>=). A nil element is not.
	RuleAtLeast RuleOp = "at_least"
	// RuleAtMost: the element is a number at most Value (<=): a script that returns its count
	// admitted while the count is at most the limit. A nil element is not.
	RuleAtMost RuleOp = "at_most"
	// RuleLessThan: the element is a number less than Value (<). A nil element is not.
	RuleLessThan RuleOp = "less_than"
	// RulePrefix: the element is a string that starts with Value. A nil element does not.
	RulePrefix RuleOp = "prefix"
	// RuleIsNil: the element is nil (a Lua nil or false).
	RuleIsNil RuleOp = "is_nil"
)

// RuleOps lists the rules in the order a scenario file's documentation gives them.
var RuleOps = []RuleOp{RuleEquals, RuleNotEquals, RuleGreaterThan, RuleAtLeast, RuleAtMost, RuleLessThan, RulePrefix, RuleIsNil}

// Numeric reports whether op compares numbers: greater_than, at_least, at_most, less_than.
func (op RuleOp) Numeric() bool {
	switch op {
	case RuleGreaterThan, RuleAtLeast, RuleAtMost, RuleLessThan:
		return true
	}
	return false
}

// RuleNames lists the rules for messages: "equals, not_equals, greater_than, ... or is_nil".
func RuleNames() string {
	var b strings.Builder
	for i, op := range RuleOps {
		switch {
		case i == len(RuleOps)-1:
			b.WriteString(" or ")
		case i > 0:
			b.WriteString(", ")
		}
		b.WriteString(string(op))
	}
	return b.String()
}

// ReplyRule decides from a script's reply whether the request was admitted.
//
// The element is read from the reply (Element ≥ 1: that element of an array reply; 0: the whole
// reply, which must then not be an array). A reply the rule cannot read is an error wrapping
// ErrBadReply, never an admission: an array where a scalar is read or a scalar where an array is
// read, a missing element, an error element, a nested array or map, a non-numeric string or other
// non-number under a numeric rule, and a non-string (other than nil) under prefix. Nil and Lua
// false are read as nil; Lua true (RESP3 true) is read as the integer 1, as RESP2 sends it.
//
// Value may be a template (see CustomTemplates), expanded for each request: at_most: "{{limit}}",
// equals: "{{cost}}", at_least: "{{limit - cost}}". A numeric rule's Value is a number (such
// as 0, -1 or 2.5) or a single placeholder that gives one ({{limit}}, {{rate}}, an integer
// expression). Two integers are compared exactly; otherwise both sides are float64.
type ReplyRule struct {
	// Element is a 1-based index into an array reply; 0 reads a scalar reply.
	Element int
	// Op is one of RuleOps.
	Op RuleOp
	// Value is the text compared by equals, not_equals and prefix, or the bound of a numeric
	// rule; empty for is_nil.
	Value string
}

// String renders r as in a scenario file, for example `{element: 1, equals: "1"}`,
// `{greater_than: 0}` or `{element: 1, at_most: "{{limit}}"}`.
func (r ReplyRule) String() string {
	var op string
	switch {
	case r.Op == RuleIsNil:
		op = "is_nil: true"
	case r.Op.Numeric() && isPlainNumber(r.Value):
		op = string(r.Op) + ": " + r.Value
	default:
		op = string(r.Op) + ": " + strconv.Quote(r.Value)
	}
	if r.Element == 0 {
		return "{" + op + "}"
	}
	return "{element: " + strconv.Itoa(r.Element) + ", " + op + "}"
}

// isPlainNumber reports whether s is a finite number strconv.ParseFloat reads, with no spaces.
func isPlainNumber(s string) bool {
	f, err := strconv.ParseFloat(s, 64)
	return err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) && strings.TrimSpace(s) == s
}

// ParseReplyRule parses what ReplyRule.String renders, such as `{element: 1, equals: "1"}`,
// `{greater_than: 0}`, `{at_most: "{{limit}}"}` or `{is_nil: true}`.
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
	switch {
	case r.Op == RuleIsNil:
		if value != "true" {
			return bad()
		}
	case r.Op.Numeric() && isPlainNumber(value):
		r.Value = value
	case r.Op.Numeric() || r.Op == RuleEquals || r.Op == RuleNotEquals || r.Op == RulePrefix:
		r.Value, err = strconv.Unquote(value)
	default:
		return bad()
	}
	if err != nil {
		return bad()
	}
	return r, nil
}

// CheckValue returns why r's Value cannot be used by its rule, or nil: a template that does not
// parse (CheckTemplate), an empty prefix, or a numeric rule whose Value is neither a number nor
// one placeholder that gives a number (text names such as {{subject}} do not).
func (r ReplyRule) CheckValue() error {
	switch {
	case r.Op == RuleIsNil:
		return nil
	case r.Op == RulePrefix && r.Value == "":
		return errors.New("must not be empty")
	}
	t, err := parseTemplate(r.Value)
	if err != nil {
		return err
	}
	if !r.Op.Numeric() {
		return nil
	}
	if lit, ok := t.literal(); ok {
		if !isPlainNumber(lit) {
			return fmt.Errorf("must be a number or a template that gives one, such as \"{{limit}}\"; got %q", r.Value)
		}
		return nil
	}
	if len(t) != 1 || !(t[0].v == tExpr || isInt(t[0].v) || t[0].v == tRate || t[0].v == tNowSFloat) {
		return fmt.Errorf("must be a number or one {{ }} placeholder that gives one (%s, rate, now_s_float or an integer expression such as {{limit - cost}}); got %q",
			intNames, r.Value)
	}
	return nil
}

// Decide reads raw (a go-redis reply: int64, string, float64, bool, nil, []any, ...) with r and
// reports whether it is an admission. A reply r cannot read is an error wrapping ErrBadReply
// that shows the raw reply; see ReplyRule. Decide is for rules whose Value is plain text or a
// number: a template in Value is an error wrapping ErrBadCustom (a Custom expands them per
// request).
func (r ReplyRule) Decide(raw any) (bool, error) {
	b, err := bindRule(r, &bindings{})
	if err == nil && !b.isLt {
		err = errors.New("the value is a template")
	}
	if err != nil {
		return false, fmt.Errorf("%w: allowed rule %s: %w", ErrBadCustom, r, err)
	}
	return b.decide(raw, ruleValue{})
}

// boundRule is a ReplyRule bound to one limiter: its Value parsed and its constants filled in
// once, so that only what changes per request is expanded (value), before the request is sent.
type boundRule struct {
	el   int
	op   RuleOp
	val  template // the value with the limiter's constants bound
	lit  string   // the value when it is constant (isLt)
	isLt bool
	num  number64 // a numeric rule's constant bound (when isLt)
	name string   // the rule as ReplyRule.String renders it, for messages
}

// ruleValue is a rule's value for one request, when it changes per request: the bound of a
// numeric rule, or the text of the others.
type ruleValue struct {
	num  number64
	text string
}

// bindRule binds r's Value with b.
func bindRule(r ReplyRule, b *bindings) (*boundRule, error) {
	if err := r.CheckValue(); err != nil {
		return nil, err
	}
	t, _ := parseTemplate(r.Value)
	bt, err := t.bind(b)
	if err != nil {
		return nil, err
	}
	br := &boundRule{el: r.Element, op: r.Op, val: bt, name: r.String()}
	br.lit, br.isLt = bt.literal()
	if r.Op.Numeric() && br.isLt {
		n, ok := parseNumber(br.lit)
		if !ok {
			return nil, fmt.Errorf("%s: %q is not a number", r.Op, br.lit)
		}
		br.num = n
	}
	return br, nil
}

// value returns the rule's value for the request r (when it is not constant: !isLt). An
// expression that fails for r is an error wrapping ErrTemplate.
func (b *boundRule) value(r *reqVars) (ruleValue, error) {
	if !b.op.Numeric() {
		var arr [128]byte
		w, err := b.val.expand(arr[:0], r)
		if err != nil {
			return ruleValue{}, fmt.Errorf("allowed.%s: %w", b.op, err)
		}
		return ruleValue{text: string(w)}, nil
	}
	s := &b.val[0]
	switch {
	case s.v == tExpr:
		n, err := s.prog.eval(r)
		if err != nil {
			return ruleValue{}, fmt.Errorf("allowed.%s: %w: {{%s}}: %w", b.op, ErrTemplate, s.src, err)
		}
		return ruleValue{num: number64{i: n, isInt: true}}, nil
	case s.v == tNowSFloat:
		return ruleValue{num: number64{f: float64(r.now.UnixMicro()) / 1e6}}, nil
	}
	return ruleValue{num: number64{i: r.int(s.v), isInt: true}}, nil
}

// number64 is a number read from a reply or a rule: an exact integer, or a float64.
type number64 struct {
	i     int64
	f     float64
	isInt bool
}

// parseNumber reads s (spaces around it allowed) as an integer when it is one, else as a float;
// NaN and text are not numbers.
func parseNumber(s string) (number64, bool) {
	s = strings.TrimSpace(s)
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return number64{i: i, isInt: true}, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsNaN(f) {
		return number64{}, false
	}
	return number64{f: f}, true
}

// cmp returns -1, 0 or +1 as a is less than, equal to or greater than b: exactly when both are
// integers, and as float64 otherwise (exactly too while the integer side is below 2^53).
func (a number64) cmp(b number64) int {
	if a.isInt && b.isInt {
		switch {
		case a.i < b.i:
			return -1
		case a.i > b.i:
			return 1
		}
		return 0
	}
	x, y := a.float(), b.float()
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

func (a number64) float() float64 {
	if a.isInt {
		return float64(a.i)
	}
	return a.f
}

// badRule is an unreadable reply: an error wrapping ErrBadReply that names the rule (kind is
// "allowed" or "time", name the rule as written), what was wrong and the raw reply.
func badRule(kind, name, why string, raw any) error {
	return fmt.Errorf("%w: %s rule %s: %s; raw reply: %s", ErrBadReply, kind, name, why, FormatReply(raw))
}

// element returns the element of raw that a rule with element el (0: the whole reply) reads.
func element(kind, name string, el int, raw any) (any, error) {
	if el == 0 {
		if _, ok := raw.([]any); ok {
			return nil, badRule(kind, name, "want a scalar reply (the rule has no element), got an array", raw)
		}
		return raw, nil
	}
	arr, ok := raw.([]any)
	if !ok {
		return nil, badRule(kind, name, "want an array reply with element "+strconv.Itoa(el), raw)
	}
	if el > len(arr) {
		return nil, badRule(kind, name, "want element "+strconv.Itoa(el)+", the reply has "+strconv.Itoa(len(arr)), raw)
	}
	return arr[el-1], nil
}

// decide reads raw with the rule; v is the rule's value for the request when it is not
// constant (see value).
func (b *boundRule) decide(raw any, v ruleValue) (bool, error) {
	e, err := element("allowed", b.name, b.el, raw)
	if err != nil {
		return false, err
	}
	// Normalise: Lua false (RESP3 false) is nil, true is 1.
	if x, ok := e.(bool); ok {
		if x {
			e = int64(1)
		} else {
			e = nil
		}
	}
	switch e.(type) {
	case nil, int64, string, float64:
	default:
		return false, badRule("allowed", b.name, b.elName()+" is not a nil, integer or string", raw)
	}
	if b.op == RuleIsNil {
		return e == nil, nil
	}
	if e == nil {
		return false, nil
	}
	want := b.lit
	if !b.isLt {
		want = v.text
	}
	switch {
	case b.op.Numeric():
		var x number64
		switch n := e.(type) {
		case int64:
			x = number64{i: n, isInt: true}
		case float64:
			x = number64{f: n}
		case string:
			p, ok := parseNumber(n)
			if !ok {
				return false, badRule("allowed", b.name, b.elName()+" "+strconv.Quote(n)+" is not a number", raw)
			}
			x = p
		}
		bound := b.num
		if !b.isLt {
			bound = v.num
		}
		c := x.cmp(bound)
		switch b.op {
		case RuleGreaterThan:
			return c > 0, nil
		case RuleAtLeast:
			return c >= 0, nil
		case RuleAtMost:
			return c <= 0, nil
		}
		return c < 0, nil // RuleLessThan
	case b.op == RulePrefix:
		s, ok := e.(string)
		if !ok {
			return false, badRule("allowed", b.name, "prefix needs a string, but "+b.elName()+" is an integer", raw)
		}
		return strings.HasPrefix(s, want), nil
	case b.op == RuleEquals || b.op == RuleNotEquals:
		var arr [64]byte
		eq := string(appendText(arr[:0], e)) == want
		return eq == (b.op == RuleEquals), nil
	}
	return false, badRule("allowed", b.name, "unknown rule "+strconv.Quote(string(b.op)), raw)
}

// elName names the element the rule reads: "element 2", or "the reply".
func (b *boundRule) elName() string {
	if b.el == 0 {
		return "the reply"
	}
	return "element " + strconv.Itoa(b.el)
}

// appendText appends the text of a scalar reply element: integers in decimal.
func appendText(b []byte, v any) []byte {
	switch e := v.(type) {
	case int64:
		return strconv.AppendInt(b, e, 10)
	case float64:
		return strconv.AppendFloat(b, e, 'f', -1, 64)
	case string:
		return append(b, e...)
	}
	return b
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
//
// The element is an integer, or a string holding a number in any notation Lua's tostring or
// string.format writes ("1700000000123456", "1700000000.1235", "1.7000000001235e+15"); see
// ParseTime. The decision is placed in the interval the written digits allow: an integer in µs
// exactly at that microsecond, anything else within one unit of its last written digit (or two
// float64 units in the last place, when larger), so a time written with fewer digits than it
// had widens the decision's interval and never moves it.
type ReplyTime struct {
	// Element is a 1-based index into the array reply (≥ 1).
	Element int
	// Unit is the time's unit.
	Unit TimeUnit
}

// String renders t as in a scenario file: `{element: 3, unit: us}`.
func (t ReplyTime) String() string {
	return "{element: " + strconv.Itoa(t.Element) + ", unit: " + string(t.Unit) + "}"
}

// boundTime is a ReplyTime ready to read replies.
type boundTime struct {
	el   int
	unit time.Duration
	name string // ReplyTime.String, for messages
}

// read returns the interval [lo, hi] of decision times, in µs since the Unix epoch, that the
// time element of raw allows. An element that is missing, not a positive number, or out of
// range is an error wrapping ErrBadReply that names the time rule, the element and the raw
// reply.
func (b *boundTime) read(raw any) (lo, hi int64, err error) {
	v, err := element("time", b.name, b.el, raw)
	if err != nil {
		return 0, 0, err
	}
	el := "element " + strconv.Itoa(b.el)
	k := int64(b.unit / time.Microsecond)
	switch e := v.(type) {
	case int64:
		switch {
		case e <= 0:
			return 0, 0, badRule("time", b.name, el+" must be a time > 0, got "+strconv.FormatInt(e, 10), raw)
		case k == 1:
			return e, e, nil
		case e+1 > math.MaxInt64/k:
			return 0, 0, badRule("time", b.name, el+" is out of range in "+b.unit.String(), raw)
		}
		// An integer in ms or s was truncated or rounded: within one unit of it.
		return (e - 1) * k, (e + 1) * k, nil
	case string:
		if k == 1 && isDigits(e) {
			t, perr := strconv.ParseInt(e, 10, 64)
			if perr != nil || t <= 0 {
				return 0, 0, badRule("time", b.name, el+" "+strconv.Quote(e)+" is not a time > 0 in µs", raw)
			}
			return t, t, nil
		}
		lo, hi, perr := ParseTime(e, b.unit)
		if perr != nil {
			why := strings.TrimPrefix(strings.TrimPrefix(perr.Error(), ErrBadTime.Error()+": "), strconv.Quote(e)+" ")
			return 0, 0, badRule("time", b.name, el+" "+strconv.Quote(e)+" "+why, raw)
		}
		if f, _ := strconv.ParseFloat(e, 64); !(f > 0) {
			return 0, 0, badRule("time", b.name, el+" "+strconv.Quote(e)+" must be a time > 0", raw)
		}
		return lo, hi, nil
	case float64:
		s := strconv.FormatFloat(e, 'g', -1, 64)
		lo, hi, perr := ParseTime(s, b.unit)
		if perr != nil || !(e > 0) {
			return 0, 0, badRule("time", b.name, el+" "+s+" is not a time > 0", raw)
		}
		return lo, hi, nil
	case nil:
		return 0, 0, badRule("time", b.name, el+" is nil, not a time", raw)
	}
	return 0, 0, badRule("time", b.name, el+" is not an integer or a string holding a time", raw)
}

// isDigits reports whether s is one or more decimal digits.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
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
