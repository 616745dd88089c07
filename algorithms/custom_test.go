package algorithms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/golden"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

// customSpec is a valid spec around src with the given rule; tests change what they need.
func customSpec(src string, rule ReplyRule) CustomSpec {
	return CustomSpec{
		Name:     "my-limiter",
		Path:     "my_limiter.lua",
		Source:   src,
		Keys:     []string{"rl:{{tag}}"},
		Allowed:  rule,
		Contract: Contract{Kind: SlidingWindow, Limit: 5, Window: time.Second},
	}
}

func newCustom(t testing.TB, spec CustomSpec) *Custom {
	t.Helper()
	a, err := NewCustom(spec)
	if err != nil {
		t.Fatalf("NewCustom: %v", err)
	}
	return a
}

// bindCustom binds a for l and prefix, without Redis.
func bindCustom(t testing.TB, a *Custom, l Limit, prefix string) *customLimiter {
	t.Helper()
	lim, err := a.bind(l, prefix, nil)
	if err != nil {
		t.Fatalf("bind: %v", err)
	}
	return lim
}

// expandArgs returns the script arguments a Call of lim sends for req with cost, as go-redis writes
// them: the constant ones as they are, the others expanded into the Call's buffers.
func expandArgs(t testing.TB, lim *customLimiter, req Request, cost int64) []string {
	t.Helper()
	c := lim.NewCall().(*customCall)
	r := lim.vars(req, cost)
	if err := c.fill(&r); err != nil {
		t.Fatalf("fill: %v", err)
	}
	var out []string
	for _, a := range c.cmd.args[3+len(lim.keys):] {
		switch a := a.(type) {
		case string:
			out = append(out, a)
		case *argBuf:
			out = append(out, a.String())
		default:
			t.Fatalf("argument of type %T", a)
		}
	}
	return out
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestCustomTemplates: every template expands to its documented value; keys get the prefix
// exactly once.
func TestCustomTemplates(t *testing.T) {
	const prefix = "lb:run:"
	now := time.UnixMicro(1_700_000_123_456_789)
	req := Request{Subject: "user7", Client: "c3", Cost: 3, ClientTime: now}
	l := Limit{Limit: 5, Window: 1500 * time.Millisecond, Burst: 8}
	tests := []struct {
		tmpl string
		want string
	}{
		{"{{subject}}", "user7"},
		{"{{tag}}", "{user7}"},
		{"{{client}}", "c3"},
		{"{{cost}}", "3"},
		{"{{limit}}", "5"},
		{"{{window_ms}}", "1500"},
		{"{{window_s}}", "2"}, // rounded up
		{"{{burst}}", "8"},
		{"{{rate}}", "3.3333333333333335"},
		{"{{now_ms}}", "1700000123456"},
		{"{{now_s}}", "1700000123"},
		{"{{now_us}}", "1700000123456789"},
		{"{{prefix}}", prefix},
		{"{{ subject }}", "user7"},
		{"a{b}c", "a{b}c"},
		{"", ""},
		{"x:{{subject}}:{{client}}:{{cost}}:y", "x:user7:c3:3:y"},
	}
	for _, tt := range tests {
		t.Run(tt.tmpl, func(t *testing.T) {
			spec := customSpec("return 1", ReplyRule{Op: RuleEquals, Value: "1"})
			spec.Args = []string{tt.tmpl}
			lim := bindCustom(t, newCustom(t, spec), l, prefix)
			if got := expandArgs(t, lim, req, 3)[0]; got != tt.want {
				t.Errorf("expand(%q) = %q; want %q", tt.tmpl, got, tt.want)
			}
		})
	}

	keys := []struct {
		subject string
		tmpl    string
		want    string
	}{
		{"user7", "rl:{{tag}}:tokens", prefix + "rl:{user7}:tokens"},
		{"user7", "{{prefix}}rl:{{tag}}", prefix + "rl:{user7}"},
		{"user7", prefix + "{{tag}}", prefix + "{user7}"},
		{"user7", "{{tag}}", prefix + "{user7}"},
		{"user7", "lb:{{tag}}", prefix + "lb:{user7}"}, // "lb:" is a prefix of the prefix
		{prefix + "x", "{{subject}}", prefix + "x"},    // the expansion already starts with it
		{"user7", "lb:run:{{tag}}", prefix + "{user7}"},
	}
	for _, tt := range keys {
		t.Run("key "+tt.tmpl, func(t *testing.T) {
			spec := customSpec("return 1", ReplyRule{Op: RuleEquals, Value: "1"})
			spec.Keys = []string{tt.tmpl}
			lim := bindCustom(t, newCustom(t, spec), l, prefix)
			got := lim.Keys(Request{Subject: tt.subject, Cost: 1})
			if diff := cmp.Diff([]string{tt.want}, got); diff != "" {
				t.Errorf("Keys(%q) mismatch (-want +got):\n%s", tt.tmpl, diff)
			}
		})
	}

	t.Run("uuid", func(t *testing.T) {
		spec := customSpec("return 1", ReplyRule{Op: RuleEquals, Value: "1"})
		spec.Args = []string{"{{uuid}}", "{{uuid}}"}
		lim := bindCustom(t, newCustom(t, spec), l, prefix)
		a1, a2 := expandArgs(t, lim, req, 1), expandArgs(t, lim, req, 1)
		if !uuidRE.MatchString(a1[0]) {
			t.Errorf("{{uuid}} = %q; want a version-4 UUID", a1[0])
		}
		if a1[0] != a1[1] {
			t.Errorf("{{uuid}} twice in one request = %q, %q; want the same", a1[0], a1[1])
		}
		if a1[0] == a2[0] {
			t.Errorf("{{uuid}} in two requests = %q both times; want fresh ones", a1[0])
		}
	})
}

// TestCustomTemplateErrors: unknown names and unbalanced braces are rejected by NewCustom.
func TestCustomTemplateErrors(t *testing.T) {
	for _, tmpl := range []string{"{{nope}}", "rl:{{subject", "rl:x}}", "{{sub{ject}}", "{{}}"} {
		t.Run(tmpl, func(t *testing.T) {
			spec := customSpec("return 1", ReplyRule{Op: RuleEquals, Value: "1"})
			spec.Args = []string{tmpl}
			_, err := NewCustom(spec)
			if !errors.Is(err, ErrBadCustom) {
				t.Fatalf("NewCustom(args %q) = %v; want ErrBadCustom", tmpl, err)
			}
			if !strings.Contains(err.Error(), "args[0]") {
				t.Errorf("error %q does not name args[0]", err)
			}
		})
	}
}

// TestCustomDescribe: the clock is the client's exactly when a {{now_*}} template is used, and
// cost > 1 is supported exactly when {{cost}} is.
func TestCustomDescribe(t *testing.T) {
	spec := customSpec("return 1", ReplyRule{Op: RuleEquals, Value: "1"})
	d := newCustom(t, spec).Describe()
	if d.Clock != ClockServer || d.Cost || d.Origin != "custom script my_limiter.lua" || d.Name != "my-limiter" {
		t.Errorf("Describe() = %+v; want server clock, no cost, origin \"custom script my_limiter.lua\"", d)
	}
	spec.Args = []string{"{{now_s}}", "{{cost}}"}
	d = newCustom(t, spec).Describe()
	if d.Clock != ClockClient || !d.Cost {
		t.Errorf("Describe() with {{now_s}} {{cost}} = %+v; want client clock and cost", d)
	}
	if m := newCustom(t, spec).Model(Limit{}); m != nil {
		t.Errorf("Model() = %v; want nil", m)
	}
}

// TestReplyRuleDecide: each rule on each kind of reply element; a reply the rule cannot read is
// ErrBadReply, never an admission.
func TestReplyRuleDecide(t *testing.T) {
	const bad = "bad"
	eq1 := ReplyRule{Op: RuleEquals, Value: "1"}
	el := func(r ReplyRule, n int) ReplyRule { r.Element = n; return r }
	tests := []struct {
		name string
		rule ReplyRule
		raw  any
		want any // true, false or bad
	}{
		{"equals int", eq1, int64(1), true},
		{"equals other int", eq1, int64(0), false},
		{"equals string", eq1, "1", true},
		{"equals nil", eq1, nil, false},
		{"equals Lua true", eq1, true, true},
		{"equals Lua false", eq1, false, false},
		{"equals negative", ReplyRule{Op: RuleEquals, Value: "-1"}, int64(-1), true},
		{"equals array for a scalar rule", eq1, []any{int64(1)}, bad},
		{"equals error", eq1, redis.Nil, bad},
		{"element 1", el(eq1, 1), []any{int64(1), int64(9)}, true},
		{"element 2 string", el(ReplyRule{Op: RuleEquals, Value: "OK"}, 2), []any{int64(0), "OK"}, true},
		{"element missing", el(eq1, 3), []any{int64(1), int64(1)}, bad},
		{"element of a scalar", el(eq1, 1), int64(1), bad},
		{"element of nil", el(eq1, 1), nil, bad},
		{"element nested array", el(eq1, 1), []any{[]any{int64(1)}}, bad},
		{"element nil", el(eq1, 2), []any{int64(1), nil}, false},
		{"element error", el(eq1, 1), []any{redis.Nil}, bad},
		{"not_equals differs", ReplyRule{Op: RuleNotEquals, Value: "0"}, int64(1), true},
		{"not_equals same", ReplyRule{Op: RuleNotEquals, Value: "0"}, int64(0), false},
		{"not_equals nil", ReplyRule{Op: RuleNotEquals, Value: "0"}, nil, false},
		{"greater_than int", ReplyRule{Op: RuleGreaterThan, Value: "0"}, int64(5), true},
		{"greater_than equal", ReplyRule{Op: RuleGreaterThan, Value: "5"}, int64(5), false},
		{"greater_than numeric string", ReplyRule{Op: RuleGreaterThan, Value: "2"}, "2.5", true},
		{"greater_than float", ReplyRule{Op: RuleGreaterThan, Value: "0"}, 0.5, true},
		{"greater_than text", ReplyRule{Op: RuleGreaterThan, Value: "0"}, "abc", bad},
		{"greater_than NaN", ReplyRule{Op: RuleGreaterThan, Value: "0"}, "NaN", bad},
		{"greater_than nil", ReplyRule{Op: RuleGreaterThan, Value: "0"}, nil, false},
		{"prefix match", ReplyRule{Op: RulePrefix, Value: "OK"}, "OK:3", true},
		{"prefix no match", ReplyRule{Op: RulePrefix, Value: "OK"}, "DENIED", false},
		{"prefix integer", ReplyRule{Op: RulePrefix, Value: "1"}, int64(1), bad},
		{"prefix nil", ReplyRule{Op: RulePrefix, Value: "OK"}, nil, false},
		{"is_nil nil", ReplyRule{Op: RuleIsNil}, nil, true},
		{"is_nil Lua false", ReplyRule{Op: RuleIsNil}, false, true},
		{"is_nil zero", ReplyRule{Op: RuleIsNil}, int64(0), false},
		{"is_nil string", ReplyRule{Op: RuleIsNil}, "", false},
		{"is_nil array for a scalar rule", ReplyRule{Op: RuleIsNil}, []any{}, bad},
		{"is_nil element", el(ReplyRule{Op: RuleIsNil}, 2), []any{int64(7), nil}, true},
		{"map", eq1, map[any]any{"a": int64(1)}, bad},
		{"unknown op", ReplyRule{Op: "like"}, int64(1), bad},
		{"at_most below", ReplyRule{Op: RuleAtMost, Value: "5"}, int64(4), true},
		{"at_most equal", ReplyRule{Op: RuleAtMost, Value: "5"}, int64(5), true},
		{"at_most above", ReplyRule{Op: RuleAtMost, Value: "5"}, int64(6), false},
		{"at_most numeric string", el(ReplyRule{Op: RuleAtMost, Value: "5"}, 1), []any{"5", int64(60)}, true},
		{"at_most nil", ReplyRule{Op: RuleAtMost, Value: "5"}, nil, false},
		{"at_most text", ReplyRule{Op: RuleAtMost, Value: "5"}, "five", bad},
		{"less_than equal", ReplyRule{Op: RuleLessThan, Value: "5"}, int64(5), false},
		{"less_than below", ReplyRule{Op: RuleLessThan, Value: "5"}, int64(4), true},
		{"less_than float bound", ReplyRule{Op: RuleLessThan, Value: "4.5"}, int64(4), true},
		{"at_least equal", ReplyRule{Op: RuleAtLeast, Value: "0"}, int64(0), true},
		{"at_least below", ReplyRule{Op: RuleAtLeast, Value: "0"}, int64(-1), false},
		{"at_least float element", ReplyRule{Op: RuleAtLeast, Value: "0"}, -0.5, false},
		{"at_most exact beyond 2^53", ReplyRule{Op: RuleAtMost, Value: "9007199254740993"}, int64(9007199254740993), true},
		{"less_than exact beyond 2^53", ReplyRule{Op: RuleLessThan, Value: "9007199254740993"}, int64(9007199254740993), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.rule.Decide(tt.raw)
			if tt.want == bad {
				if !errors.Is(err, ErrBadReply) || got {
					t.Fatalf("%s.Decide(%#v) = %v, %v; want false, ErrBadReply", tt.rule, tt.raw, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("%s.Decide(%#v) = %v, %v; want %v, nil", tt.rule, tt.raw, got, err, tt.want)
			}
		})
	}
}

// TestDecideTemplate: Decide, which has no request, refuses a rule whose value is a template.
func TestDecideTemplate(t *testing.T) {
	if ok, err := (ReplyRule{Op: RuleAtMost, Value: "{{limit}}"}).Decide(int64(1)); ok || !errors.Is(err, ErrBadCustom) {
		t.Errorf("Decide with a template = %v, %v; want false, ErrBadCustom", ok, err)
	}
}

// TestRuleTemplates: a rule's value is a template expanded per request: at_most "{{limit}}" is
// bound once per limiter, at_least "{{limit - cost}}" and equals "{{cost}}" per request; an
// expression that fails for a request fails the request before it is sent.
func TestRuleTemplates(t *testing.T) {
	l := Limit{Limit: 5, Window: time.Second}
	decide := func(rule ReplyRule, cost int64, raw any) (bool, error) {
		t.Helper()
		spec := customSpec("return 1", rule)
		spec.Args = []string{"{{cost}}"}
		lim := bindCustom(t, newCustom(t, spec), l, "p:")
		r := lim.vars(Request{Subject: "s", Cost: cost}, cost)
		var v ruleValue
		if lim.ruleVars {
			var err error
			if v, err = lim.rule.value(&r); err != nil {
				return false, err
			}
		}
		d, err := lim.decode(raw, v)
		return d.Allowed, err
	}
	for _, tt := range []struct {
		rule ReplyRule
		cost int64
		raw  any
		want bool
	}{
		{ReplyRule{Element: 1, Op: RuleAtMost, Value: "{{limit}}"}, 1, []any{int64(5), int64(900)}, true},
		{ReplyRule{Element: 1, Op: RuleAtMost, Value: "{{limit}}"}, 1, []any{int64(6), int64(900)}, false},
		{ReplyRule{Op: RuleAtMost, Value: "{{ limit }}"}, 1, "5", true},
		{ReplyRule{Op: RuleAtLeast, Value: "{{limit - cost}}"}, 2, int64(3), true},
		{ReplyRule{Op: RuleAtLeast, Value: "{{limit - cost}}"}, 3, int64(1), false},
		{ReplyRule{Op: RuleEquals, Value: "{{cost}}"}, 3, int64(3), true},
		{ReplyRule{Op: RuleEquals, Value: "{{cost}}"}, 2, int64(3), false},
		{ReplyRule{Op: RuleEquals, Value: "ok:{{limit}}"}, 2, "ok:5", true},
		{ReplyRule{Op: RulePrefix, Value: "OK:{{cost}}:"}, 2, "OK:2:rest", true},
		{ReplyRule{Op: RuleGreaterThan, Value: "{{rate}}"}, 1, "5.5", true},
		{ReplyRule{Op: RuleGreaterThan, Value: "{{rate}}"}, 1, int64(5), false},
	} {
		got, err := decide(tt.rule, tt.cost, tt.raw)
		if err != nil || got != tt.want {
			t.Errorf("%s with cost %d on %v = %v, %v; want %v", tt.rule, tt.cost, tt.raw, got, err, tt.want)
		}
	}
	// A value that fails for a request: the request is not sent (ErrTemplate, a failed request).
	spec := customSpec("return 1", ReplyRule{Op: RuleAtMost, Value: "{{limit / (cost - 1)}}"})
	spec.Args = []string{"{{cost}}"}
	lim := bindCustom(t, newCustom(t, spec), l, "p:")
	_, err := Do(context.Background(), lim, nil, Request{Subject: "s", Cost: 1})()
	if !errors.Is(err, ErrTemplate) || !strings.Contains(err.Error(), "allowed.at_most: template cannot be expanded: {{limit / (cost - 1)}}: division by zero") {
		t.Errorf("Do with a rule dividing by zero = %v; want ErrTemplate naming allowed.at_most", err)
	}
	// Values a numeric rule cannot take, refused by NewCustom.
	for _, v := range []string{"{{subject}}", "five", "{{limit}}{{cost}}", "x{{limit}}", ""} {
		_, err := NewCustom(customSpec("return 1", ReplyRule{Op: RuleAtMost, Value: v}))
		if !errors.Is(err, ErrBadCustom) || !strings.Contains(err.Error(), "allowed.at_most: must be a number") {
			t.Errorf("NewCustom(at_most %q) = %v; want ErrBadCustom naming allowed.at_most", v, err)
		}
	}
}

// TestCustomCallRuleValue: a rule value that changes per request is the one its Call's Send took,
// request after request through one Call, and in a pipeline of Calls read after Exec.
func TestCustomCallRuleValue(t *testing.T) {
	env := redistest.Single(t)
	ctx := context.Background()
	spec := customSpec("return 2", ReplyRule{Op: RuleEquals, Value: "{{cost}}"})
	spec.Args = []string{"{{cost}}"}
	lim, err := newCustom(t, spec).Prepare(ctx, env.Target.Client, Limit{Limit: 5, Window: time.Second}, env.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	costs := []int64{2, 1, 2, 3, 2}
	call := lim.NewCall()
	for _, cost := range costs {
		call.Send(ctx, env.Target.Client, Request{Subject: "s", Cost: cost})
		if d, err := call.Result(); err != nil || d.Allowed != (cost == 2) {
			t.Errorf("client, cost %d: %+v, %v; want allowed %v", cost, d, err, cost == 2)
		}
	}
	pipe := env.Target.Client.Pipeline()
	calls := make([]Call, len(costs))
	for i, cost := range costs {
		calls[i] = lim.NewCall()
		calls[i].Send(ctx, pipe, Request{Subject: "s", Cost: cost})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i, cost := range costs {
		if d, err := calls[i].Result(); err != nil || d.Allowed != (cost == 2) {
			t.Errorf("pipeline, cost %d: %+v, %v; want allowed %v", cost, d, err, cost == 2)
		}
	}
}

// TestUnreadableGolden: the message of a reply the rules cannot read names the rule (allowed or
// time), the element and what was wrong, and shows the raw reply; scripts run on a real Redis,
// the messages are compared with testdata/unreadable.golden.
func TestUnreadableGolden(t *testing.T) {
	env := redistest.Single(t)
	ctx := context.Background()
	l := Limit{Limit: 5, Window: time.Second}
	tests := []struct {
		src  string
		rule ReplyRule
		time *ReplyTime
	}{
		{"return {'many', 1700000000}", ReplyRule{Element: 1, Op: RuleAtMost, Value: "{{limit}}"}, &ReplyTime{Element: 2, Unit: Seconds}},
		{"return 1", ReplyRule{Element: 1, Op: RuleAtMost, Value: "{{limit}}"}, nil},
		{"return {1}", ReplyRule{Element: 2, Op: RuleEquals, Value: "1"}, nil},
		{"return {1, 2}", ReplyRule{Op: RuleEquals, Value: "1"}, nil},
		{"return {7, 'OK'}", ReplyRule{Element: 1, Op: RulePrefix, Value: "OK"}, nil},
		// A time written by tostring with a stray suffix: the time rule is to blame, not allowed.
		{"return {1, tostring(1795534497288300) .. 'us'}", ReplyRule{Element: 1, Op: RuleEquals, Value: "1"}, &ReplyTime{Element: 2, Unit: Micros}},
		{"return {1, 'soon'}", ReplyRule{Element: 1, Op: RuleEquals, Value: "1"}, &ReplyTime{Element: 2, Unit: Seconds}},
		{"return {1, '-1795534497.2883'}", ReplyRule{Element: 1, Op: RuleEquals, Value: "1"}, &ReplyTime{Element: 2, Unit: Seconds}},
		{"return {1, false}", ReplyRule{Element: 1, Op: RuleEquals, Value: "1"}, &ReplyTime{Element: 2, Unit: Millis}},
		{"return {1, {2}}", ReplyRule{Element: 1, Op: RuleEquals, Value: "1"}, &ReplyTime{Element: 2, Unit: Millis}},
		{"return {1}", ReplyRule{Element: 1, Op: RuleEquals, Value: "1"}, &ReplyTime{Element: 3, Unit: Micros}},
		{"return {1, 0}", ReplyRule{Element: 1, Op: RuleEquals, Value: "1"}, &ReplyTime{Element: 2, Unit: Micros}},
	}
	var out strings.Builder
	for _, tt := range tests {
		spec := customSpec(tt.src, tt.rule)
		spec.Time = tt.time
		lim, err := newCustom(t, spec).Prepare(ctx, env.Target.Client, l, env.Prefix)
		if err != nil {
			t.Fatal(err)
		}
		d, err := Do(ctx, lim, env.Target.Client, Request{Subject: "s"})()
		if !errors.Is(err, ErrBadReply) || d.Allowed {
			t.Errorf("%s with allowed %s, time %v = %+v, %v; want ErrBadReply", tt.src, tt.rule, tt.time, d, err)
			continue
		}
		st := lim.(ReplyReporter).ReplyStats()
		if st.Unreadable != 1 || !strings.HasPrefix(err.Error(), "my-limiter: unexpected reply: "+st.FirstReason) {
			t.Errorf("%s: stats %+v; want 1 unreadable whose reason starts the error %v", tt.src, st, err)
		}
		fmt.Fprintf(&out, "%s\n\t%s\n", tt.src, err)
	}
	golden.Check(t, "testdata/unreadable.golden", []byte(out.String()))
}

// TestCustomTime: a time is reported as the interval its digits allow: an integer in µs exactly,
// an integer in ms or s within one unit, a float or exponent within its last digit (ParseTime);
// an unreadable time is ErrBadReply naming the time rule, the element and the raw reply.
func TestCustomTime(t *testing.T) {
	const now = int64(1_700_000_000_123_456)
	tests := []struct {
		name   string
		unit   TimeUnit
		raw    any
		lo, hi int64
		bad    string // the message's text after "unexpected reply: "
	}{
		{name: "us", unit: Micros, raw: []any{int64(1), now}, lo: now, hi: now},
		{name: "us string", unit: Micros, raw: []any{int64(1), "1700000000123456"}, lo: now, hi: now},
		{name: "ms", unit: Millis, raw: []any{int64(1), now / 1000}, lo: now/1000*1000 - 1000, hi: now/1000*1000 + 1000},
		{name: "s", unit: Seconds, raw: []any{int64(1), now / 1e6}, lo: now/1e6*1e6 - 1e6, hi: now/1e6*1e6 + 1e6},
		{name: "float seconds", unit: Seconds, raw: []any{int64(1), "1700000000.1235"}, lo: 1_700_000_000_123_400, hi: 1_700_000_000_123_600},
		{name: "tostring exponent", unit: Micros, raw: []any{int64(1), "1.7000000001235e+15"}, lo: 1_700_000_000_123_400, hi: 1_700_000_000_123_600},
		{name: "RESP3 double", unit: Seconds, raw: []any{int64(1), 1700000000.5}, lo: 1_700_000_000_400_000, hi: 1_700_000_000_600_000},
		{name: "missing", unit: Micros, raw: []any{int64(1)},
			bad: "time rule {element: 2, unit: us}: want element 2, the reply has 1; raw reply: [1]"},
		{name: "zero", unit: Micros, raw: []any{int64(1), int64(0)},
			bad: "time rule {element: 2, unit: us}: element 2 must be a time > 0, got 0; raw reply: [1, 0]"},
		{name: "text", unit: Micros, raw: []any{int64(1), "soon"},
			bad: `time rule {element: 2, unit: us}: element 2 "soon" is not a number (want digits, an optional decimal point and exponent); raw reply: [1, "soon"]`},
		{name: "nil", unit: Micros, raw: []any{int64(1), nil},
			bad: "time rule {element: 2, unit: us}: element 2 is nil, not a time; raw reply: [1, nil]"},
		{name: "negative float", unit: Seconds, raw: []any{int64(1), "-1.5"},
			bad: `time rule {element: 2, unit: s}: element 2 "-1.5" must be a time > 0; raw reply: [1, "-1.5"]`},
		{name: "overflow", unit: Seconds, raw: []any{int64(1), int64(1) << 62},
			bad: "time rule {element: 2, unit: s}: element 2 is out of range in 1s; raw reply: [1, 4611686018427387904]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := customSpec("return 1", ReplyRule{Element: 1, Op: RuleEquals, Value: "1"})
			spec.Time = &ReplyTime{Element: 2, Unit: tt.unit}
			lim := bindCustom(t, newCustom(t, spec), Limit{Limit: 5, Window: time.Second}, "p:")
			d, err := lim.decode(tt.raw, ruleValue{})
			if tt.bad != "" {
				if !errors.Is(err, ErrBadReply) || d.Allowed {
					t.Fatalf("decode(%v) = %+v, %v; want ErrBadReply", tt.raw, d, err)
				}
				if got := strings.TrimPrefix(err.Error(), "unexpected reply: "); got != tt.bad {
					t.Errorf("decode(%v) error:\n got %s\nwant %s", tt.raw, got, tt.bad)
				}
				return
			}
			if err != nil || !d.Allowed || d.TimeMicros != tt.lo || d.TimeMicros+d.TimeSpanMicros != tt.hi || d.Clock != ClockServer {
				t.Errorf("decode(%v) = %+v, %v; want allowed, [%d, %d], server clock", tt.raw, d, err, tt.lo, tt.hi)
			}
		})
	}
}

// TestCustomRedisReplies runs small scripts on real Redis: each Lua reply type reaches the rule
// as documented (RESP3 booleans included), unreadable replies are errors counted with the first
// raw reply, and a nil reply is not an error.
func TestCustomRedisReplies(t *testing.T) {
	env := redistest.Single(t)
	ctx := context.Background()
	l := Limit{Limit: 5, Window: time.Second}
	tests := []struct {
		src     string
		rule    ReplyRule
		allowed bool
		bad     bool
	}{
		{"return 1", ReplyRule{Op: RuleEquals, Value: "1"}, true, false},
		{"return 0", ReplyRule{Op: RuleEquals, Value: "1"}, false, false},
		{"return true", ReplyRule{Op: RuleEquals, Value: "1"}, true, false},
		{"return false", ReplyRule{Op: RuleIsNil}, true, false},
		{"return nil", ReplyRule{Op: RuleIsNil}, true, false},
		{"return 'OK:7'", ReplyRule{Op: RulePrefix, Value: "OK"}, true, false},
		{"return redis.status_reply('OK')", ReplyRule{Op: RuleEquals, Value: "OK"}, true, false},
		{"return 2.9", ReplyRule{Op: RuleEquals, Value: "2"}, true, false}, // Lua numbers are truncated
		{"return {0, 'yes'}", ReplyRule{Element: 2, Op: RuleEquals, Value: "yes"}, true, false},
		{"return {1, false, 3}", ReplyRule{Element: 2, Op: RuleIsNil}, true, false},
		{"return {1}", ReplyRule{Element: 2, Op: RuleEquals, Value: "1"}, false, true},
		{"return {1}", ReplyRule{Op: RuleEquals, Value: "1"}, false, true},
		{"return 'many'", ReplyRule{Op: RuleGreaterThan, Value: "0"}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.src+" "+tt.rule.String(), func(t *testing.T) {
			a := newCustom(t, customSpec(tt.src, tt.rule))
			lim, err := a.Prepare(ctx, env.Target.Client, l, env.Prefix)
			if err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			for range 2 {
				d, err := Do(ctx, lim, env.Target.Client, Request{Subject: "s", Cost: 1})()
				if tt.bad {
					if !errors.Is(err, ErrBadReply) || d.Allowed {
						t.Fatalf("Do = %+v, %v; want ErrBadReply", d, err)
					}
					continue
				}
				if err != nil || d.Allowed != tt.allowed {
					t.Fatalf("Do = %+v, %v; want allowed %v", d, err, tt.allowed)
				}
			}
			n, first := lim.(UnreadableReporter).Unreadable()
			st := lim.(ReplyReporter).ReplyStats()
			if tt.bad {
				if n != 2 || first == "" || st.Read != 0 {
					t.Errorf("Unreadable() = %d, %q, stats %+v; want 2 and the raw reply", n, first, st)
				}
				return
			}
			if n != 0 || st.Read != 2 || st.FirstRead == "" {
				t.Errorf("Unreadable() = %d, %q, stats %+v; want 0 unreadable, 2 read", n, first, st)
			}
		})
	}
	t.Run("first unreadable reply", func(t *testing.T) {
		a := newCustom(t, customSpec("return {'x', 2}", ReplyRule{Element: 3, Op: RuleEquals, Value: "1"}))
		lim, err := a.Prepare(ctx, env.Target.Client, l, env.Prefix)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = Do(ctx, lim, env.Target.Client, Request{Subject: "s"})()
		if _, first := lim.(UnreadableReporter).Unreadable(); first != `["x", 2]` {
			t.Errorf("first unreadable reply = %q; want %q", first, `["x", 2]`)
		}
	})
}

// TestCustomSyntaxError: a script that does not compile fails Prepare with Redis's own message,
// on a single node and on every master of a cluster.
func TestCustomSyntaxError(t *testing.T) {
	topologies(t, func(t *testing.T, env *redistest.Env) {
		a := newCustom(t, customSpec("local x = = 1\nreturn x", ReplyRule{Op: RuleEquals, Value: "1"}))
		_, err := a.Prepare(context.Background(), env.Target.Client, Limit{Limit: 5, Window: time.Second}, env.Prefix)
		if err == nil {
			t.Fatal("Prepare of a script with a syntax error succeeded")
		}
		var rerr redis.Error
		if !errors.As(err, &rerr) || !strings.Contains(err.Error(), "Error compiling script") ||
			!strings.Contains(err.Error(), "my_limiter.lua:1: ") {
			t.Errorf("Prepare error = %v; want Redis's \"Error compiling script\" naming my_limiter.lua:1", err)
		}
		if err2 := a.Check(context.Background(), env.Target.Client); err2 == nil || err2.Error() != err.Error() {
			t.Errorf("Check = %v; want the Prepare error %v", err2, err)
		}
		var serr *ScriptError
		if !errors.As(err, &serr) || serr.Line != 1 || !strings.HasSuffix(serr.Location(), "my_limiter.lua:1") ||
			!strings.Contains(serr.Err.Error(), "Error compiling script") {
			t.Errorf("Prepare error %v: want a *ScriptError at my_limiter.lua line 1 holding Redis's message", err)
		}
	})
}

func TestScriptLine(t *testing.T) {
	for _, tt := range []struct {
		msg  string
		want int
	}{
		{"ERR Error compiling script (new function): user_script:3: '=' expected near 'x'", 3},
		{"ERR Error compiling script (new function): user_script:12: unexpected symbol", 12},
		{"ERR something else", 0},
		{"user_script:: nothing", 0},
	} {
		if got := scriptLine(errors.New(tt.msg)); got != tt.want {
			t.Errorf("scriptLine(%q) = %d; want %d", tt.msg, got, tt.want)
		}
	}
	e := &ScriptError{Name: "mine", Path: "dir/my.lua", Err: errors.New("dial tcp: refused")}
	if got, want := e.Error(), "mine: dir/my.lua: dial tcp: refused"; got != want {
		t.Errorf("ScriptError without a line = %q; want %q", got, want)
	}
}

// exampleTokenBucket is the correct script of examples/custom.
func exampleTokenBucket(t *testing.T) CustomSpec {
	t.Helper()
	src, err := os.ReadFile("../examples/custom/token_bucket.lua")
	if err != nil {
		t.Fatal(err)
	}
	return CustomSpec{
		Name:     "my-token-bucket",
		Path:     "token_bucket.lua",
		Source:   string(src),
		Keys:     []string{"rl:{{tag}}:tokens", "rl:{{tag}}:ts"},
		Args:     []string{"{{burst}}", "{{limit}}", "{{window_ms}}", "{{cost}}"},
		Allowed:  ReplyRule{Element: 1, Op: RuleEquals, Value: "1"},
		Time:     &ReplyTime{Element: 3, Unit: Micros},
		Contract: Contract{Kind: TokenBucket, Capacity: 5, RefillPermits: 5, RefillPer: time.Hour},
	}
}

// TestCustomPipeline: requests queued on a pipeline (bare EVALSHA after Prepare's SCRIPT LOAD)
// decide like plain ones: a bucket of 5 that refills in an hour admits exactly 5 of 12, each with
// a server time; and cost 2 reaches the script through {{cost}}.
func TestCustomPipeline(t *testing.T) {
	topologies(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		l := Limit{Limit: 5, Window: time.Hour}
		lim, err := newCustom(t, exampleTokenBucket(t)).Prepare(ctx, env.Target.Client, l, env.Prefix)
		if err != nil {
			t.Fatal(err)
		}
		for _, subject := range []string{"a", "b"} {
			pipe := env.Target.Client.Pipeline()
			var pends []Pending
			for range 12 {
				pends = append(pends, Do(ctx, lim, pipe, Request{Subject: subject, Cost: 1}))
			}
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatalf("Exec: %v", err)
			}
			admitted := 0
			for i, p := range pends {
				d, err := p()
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				if d.Allowed {
					admitted++
				}
				if d.Clock != ClockServer || d.TimeMicros <= 0 {
					t.Errorf("request %d: decision %+v; want a server time", i, d)
				}
			}
			if admitted != 5 {
				t.Errorf("subject %s: %d of 12 admitted on a pipeline; want 5", subject, admitted)
			}
		}
		// Cost 2 on a fresh subject: 2 admissions use 4 of 5 permits, the third is denied.
		var got []bool
		for range 3 {
			d, err := Do(ctx, lim, env.Target.Client, Request{Subject: "c", Cost: 2})()
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, d.Allowed)
		}
		if diff := cmp.Diff([]bool{true, true, false}, got); diff != "" {
			t.Errorf("cost 2 decisions (-want +got):\n%s", diff)
		}
	})
}

// TestCustomCostWithoutTemplate: cost > 1 with no {{cost}} template is refused, since the script
// would charge one permit while the verifier counts several.
func TestCustomCostWithoutTemplate(t *testing.T) {
	spec := customSpec("return 1", ReplyRule{Op: RuleEquals, Value: "1"})
	lim := bindCustom(t, newCustom(t, spec), Limit{Limit: 5, Window: time.Second}, "p:")
	_, err := Do(context.Background(), lim, nil, Request{Subject: "s", Cost: 2})()
	if !errors.Is(err, ErrCostUnsupported) {
		t.Errorf("Do(cost 2) = %v; want ErrCostUnsupported", err)
	}
}

// BenchmarkCustomExpand measures the per-request template work of a Call's Send (no Redis): it
// allocates nothing.
func BenchmarkCustomExpand(b *testing.B) {
	spec := customSpec("return 1", ReplyRule{Op: RuleEquals, Value: "1"})
	spec.Keys = []string{"rl:{{tag}}:tokens", "rl:{{tag}}:ts"}
	spec.Args = []string{"{{rate}}", "{{burst}}", "{{now_ms}}", "{{cost}}", "{{uuid}}"}
	a, err := NewCustom(spec)
	if err != nil {
		b.Fatal(err)
	}
	lim := bindCustom(b, a, Limit{Limit: 100, Window: time.Second}, "limitbench:run:my-limiter:1:")
	req := Request{Subject: "user-1234", Client: "c7", Cost: 1, ClientTime: time.Now()}
	c := lim.NewCall().(*customCall)
	b.ReportAllocs()
	for b.Loop() {
		r := lim.vars(req, 1)
		if err := c.fill(&r); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCustomEmptyKey: an empty key template stays an empty string (never prefixed); on a cluster
// Prepare refuses it and says why.
func TestCustomEmptyKey(t *testing.T) {
	spec := customSpec("return 1", ReplyRule{Op: RuleEquals, Value: "1"})
	spec.Keys = []string{"rl:{{tag}}", ""}
	a := newCustom(t, spec)
	if !a.HasEmptyKey() {
		t.Error("HasEmptyKey() = false for keys [rl:{{tag}}, \"\"]")
	}
	got := bindCustom(t, a, Limit{Limit: 5, Window: time.Second}, "lb:run:").Keys(Request{Subject: "u"})
	if diff := cmp.Diff([]string{"lb:run:rl:{u}", ""}, got); diff != "" {
		t.Errorf("Keys (-want +got):\n%s", diff)
	}
	topologies(t, func(t *testing.T, env *redistest.Env) {
		lim, err := a.Prepare(context.Background(), env.Target.Client, Limit{Limit: 5, Window: time.Second}, env.Prefix)
		if env.Target.Info.Topology == "cluster" {
			if !errors.Is(err, ErrEmptyKeyOnCluster) || !errors.Is(err, ErrBadCustom) {
				t.Errorf("Prepare on a cluster = %v; want ErrEmptyKeyOnCluster", err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if d, err := Do(context.Background(), lim, env.Target.Client, Request{Subject: "u"})(); err != nil || !d.Allowed {
			t.Errorf("Do = %+v, %v; want allowed", d, err)
		}
	})
}

// TestCustomContractTemplates: contract numbers written as templates are filled in for the
// limit the algorithm is given; LimitNote says where a contract differs from that limit.
func TestCustomContractTemplates(t *testing.T) {
	spec := customSpec("return 1", ReplyRule{Op: RuleEquals, Value: "1"})
	spec.Contract = Contract{Kind: FirstHitWindow, Granularity: time.Millisecond}
	spec.ContractTemplates = map[string]string{"limit": "{{limit}}", "window": "{{window_ms}}ms"}
	a := newCustom(t, spec)
	l := Limit{Limit: 7, Window: 1500 * time.Millisecond}
	c, err := a.Contract(l)
	want := Contract{Kind: FirstHitWindow, Limit: 7, Window: 1500 * time.Millisecond, Granularity: time.Millisecond}
	if err != nil || !cmp.Equal(c, want) {
		t.Errorf("Contract(%v) = %v, %v; want %v", l, c, err, want)
	}
	if n := c.LimitNote(l); n != "" {
		t.Errorf("LimitNote of a contract from {{limit}} = %q; want none", n)
	}

	for _, tt := range []struct{ field, tmpl, want string }{
		{"limit", "{{limit * 2}}", ""},
		{"capacity", "{{burst}}", ""},
		{"rate", "{{limit}}", ""},
		{"per", "{{window_s}}s", ""},
		{"window", "{{window_ms}}", `"{{window_ms}}" gives "1500", not a duration > 0 (a duration needs its unit, as in "{{window_ms}}ms")`},
		{"limit", "{{cost}}", `"{{cost}}" changes per request; a contract number may use limit, window_ms, window_s, burst, rate and whole numbers`},
		{"limit", "{{limit - 7}}", `"{{limit - 7}}" gives "0", not a whole number > 0`},
		{"limit", "{{limit / (limit - 7)}}", "division by zero with limit 7 per 1.5s"},
		{"limit", "{{rate}}", `"{{rate}}" gives "4.666666666666667", not a whole number > 0`},
		{"granularity", "{{window_ms}}ms", "granularity cannot be a template"},
	} {
		var c Contract
		err := FillContract(&c, tt.field, tt.tmpl, l)
		if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("FillContract(%s, %q) = %v; want %q", tt.field, tt.tmpl, err, tt.want)
		}
	}

	for _, tt := range []struct {
		c    Contract
		want string
	}{
		{Contract{Kind: SlidingWindow, Limit: 7, Window: 1500 * time.Millisecond}, ""},
		{Contract{Kind: SlidingWindow, Limit: 70, Window: 1500 * time.Millisecond},
			"note: the contract sliding-window(70, 1.5s) differs from the scenario's limit: limit 70 where the scenario's limit is 7; the script is verified against its contract"},
		{Contract{Kind: FixedWindow, Limit: 7, Window: time.Second, Granularity: time.Second},
			"note: the contract fixed-window(7, 1s, granularity 1s) differs from the scenario's limit: window 1s where the scenario's window is 1.5s; the script is verified against its contract"},
		{Contract{Kind: TokenBucket, Capacity: 7, RefillPermits: 14, RefillPer: 3 * time.Second}, ""},
		{Contract{Kind: TokenBucket, Capacity: 8, RefillPermits: 7, RefillPer: time.Second},
			"note: the contract token-bucket(8, 7/1s) differs from the scenario's limit: capacity 8 where the scenario's burst is 7, rate 7/1s where the scenario's is 7/1.5s; the script is verified against its contract"},
		{Contract{Kind: NoContract}, ""},
	} {
		if got := tt.c.LimitNote(l); got != tt.want {
			t.Errorf("%v.LimitNote(%v) =\n %q; want\n %q", tt.c, l, got, tt.want)
		}
	}
}

// TestCustomFunction: a custom algorithm that names a function library and a function is loaded
// with FUNCTION LOAD REPLACE on every master (twice in a row, as a second run does) and called
// with FCALL, on a pipeline and on the client, on a single node and a cluster; a library that
// does not register the function, or does not compile, fails Prepare naming the file and, for a
// compile error, its line.
func TestCustomFunction(t *testing.T) {
	const lib = "#!lua name=lbtest\n" +
		"redis.register_function('take', function(keys, args)\n" +
		"  local n = redis.call('INCR', keys[1])\n" +
		"  redis.call('PEXPIRE', keys[1], 60000)\n" +
		"  return n\n" +
		"end)\n"
	topologies(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		l := Limit{Limit: 3, Window: time.Minute}
		spec := customSpec(lib, ReplyRule{Op: RuleAtMost, Value: "{{limit}}"})
		spec.Path, spec.Function = "lib.lua", "take"
		spec.Contract = Contract{Kind: FirstHitWindow, Limit: 3, Window: time.Minute}
		a := newCustom(t, spec)
		if got := a.Describe().Origin; got != "custom function take of library lib.lua (FCALL)" {
			t.Errorf("Origin = %q", got)
		}
		if _, err := a.Prepare(ctx, env.Target.Client, l, env.Prefix); err != nil {
			t.Fatalf("Prepare: %v", err)
		}
		lim, err := a.Prepare(ctx, env.Target.Client, l, env.Prefix)
		if err != nil {
			t.Fatalf("Prepare again (FUNCTION LOAD REPLACE): %v", err)
		}
		err = env.Target.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			libs, err := c.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: "lbtest"}).Result()
			if err != nil || len(libs) != 1 {
				return fmt.Errorf("%s: FUNCTION LIST lbtest = %v, %v; want the library", c.Options().Addr, libs, err)
			}
			return nil
		})
		if err != nil {
			t.Error(err)
		}
		for _, subject := range []string{"a", "b", "c"} {
			pipe := env.Target.Client.Pipeline()
			var pends []Pending
			for range 5 {
				pends = append(pends, Do(ctx, lim, pipe, Request{Subject: subject, Cost: 1}))
			}
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatalf("Exec: %v", err)
			}
			var got []bool
			for _, p := range pends {
				d, err := p()
				if err != nil {
					t.Fatalf("FCALL on a pipeline: %v", err)
				}
				got = append(got, d.Allowed)
			}
			d, err := Do(ctx, lim, env.Target.Client, Request{Subject: subject, Cost: 1})()
			if err != nil {
				t.Fatalf("FCALL: %v", err)
			}
			got = append(got, d.Allowed)
			if diff := cmp.Diff([]bool{true, true, true, false, false, false}, got); diff != "" {
				t.Errorf("subject %s: decisions (-want +got):\n%s", subject, diff)
			}
		}

		// One Call sent again and again (as the load engine sends), the subject changing: each
		// request goes to its own subject's key (on a cluster, to its slot).
		call := lim.NewCall()
		for i, subject := range []string{"r1", "r2", "r1", "r2", "r1", "r2", "r1", "r2"} {
			call.Send(ctx, env.Target.Client, Request{Subject: subject, Cost: 1})
			d, err := call.Result()
			if err != nil {
				t.Fatalf("FCALL through a reused Call: %v", err)
			}
			if want := i < 6; d.Allowed != want {
				t.Errorf("reused Call, request %d (subject %s): allowed %v; want %v", i, subject, d.Allowed, want)
			}
		}

		// FUNCTION FLUSH (as a restart without persistence does): the first call fails with Redis's
		// error and loads the library again on every master; the next calls find it.
		if err := env.Target.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			return c.FunctionFlush(ctx).Err()
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := Do(ctx, lim, env.Target.Client, Request{Subject: "d", Cost: 1})(); err == nil ||
			!strings.Contains(err.Error(), "Function not found") {
			t.Errorf("FCALL after FUNCTION FLUSH: %v; want Redis's Function not found", err)
		}
		for i := range 2 {
			if _, err := Do(ctx, lim, env.Target.Client, Request{Subject: fmt.Sprint("e", i), Cost: 1})(); err != nil {
				t.Errorf("FCALL after the library was loaded again: %v", err)
			}
		}
		for range 2 { // the second finds nothing to remove, which is not an error
			if err := a.Unload(ctx, env.Target.Client); err != nil {
				t.Fatalf("Unload: %v", err)
			}
		}
		err = env.Target.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			libs, err := c.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: "lbtest"}).Result()
			if err != nil || len(libs) != 0 {
				return fmt.Errorf("%s: after Unload, FUNCTION LIST lbtest = %v, %v; want none", c.Options().Addr, libs, err)
			}
			return nil
		})
		if err != nil {
			t.Error(err)
		}

		spec.Function = "give"
		_, err = newCustom(t, spec).Prepare(ctx, env.Target.Client, l, env.Prefix)
		if err == nil || !strings.Contains(err.Error(), "lib.lua: library lbtest registers no function give") {
			t.Errorf("Prepare with a function the library lacks: %v; want it named", err)
		}
		bad := customSpec("#!lua name=lbbad\nlocal x = = 1\n", ReplyRule{Op: RuleEquals, Value: "1"})
		bad.Path, bad.Function = "bad.lua", "f"
		_, err = newCustom(t, bad).Prepare(ctx, env.Target.Client, l, env.Prefix)
		var serr *ScriptError
		if !errors.As(err, &serr) || serr.Line != 2 || serr.Location() != "bad.lua:2" {
			t.Errorf("Prepare of a library that does not compile: %v; want a *ScriptError at bad.lua:2", err)
		}
		if err := newCustom(t, spec).Unload(ctx, env.Target.Client); err != nil {
			t.Errorf("Unload after a refused load: %v", err)
		}
	})
}

func TestLibraryName(t *testing.T) {
	for src, want := range map[string]string{
		"#!lua name=mylib\nredis.register_function('f', f)": "mylib",
		"#!lua engine=x name=b2\n":                          "b2",
		"#!lua\n":                                           "",
		"redis.register_function('f', f)":                   "",
		"":                                                  "",
	} {
		if got := libraryName(src); got != want {
			t.Errorf("libraryName(%q) = %q; want %q", src, got, want)
		}
	}
}

// BenchmarkCustomFCallVsEvalSha calls the same sliding log (examples/custom/function_lib.lua's
// allow) as a function with FCALL and as a script with EVALSHA, in alternating rounds on one
// redis-server, and reports Redis's own microseconds per call of each (INFO commandstats) and
// their ratio. Every call admits (a fresh subject each), so both run the same commands.
func BenchmarkCustomFCallVsEvalSha(b *testing.B) {
	env := redistest.Single(b)
	ctx := context.Background()
	lib, err := os.ReadFile("../examples/custom/function_lib.lua")
	if err != nil {
		b.Fatal(err)
	}
	body := string(lib)[strings.Index(string(lib), "local function log"):strings.Index(string(lib), "redis.register_function")]
	src := body + "return log(KEYS, ARGV, false)\n"
	l := Limit{Limit: 1 << 30, Window: time.Hour}
	prep := func(spec CustomSpec) Limiter {
		spec.Keys, spec.Args = []string{"log:{{tag}}"}, []string{"{{limit}}", "{{window_ms}}", "{{uuid}}"}
		spec.Allowed = ReplyRule{Element: 1, Op: RuleEquals, Value: "1"}
		lim, err := newCustom(b, spec).Prepare(ctx, env.Target.Client, l, env.Prefix)
		if err != nil {
			b.Fatal(err)
		}
		return lim
	}
	fn := customSpec(string(lib), ReplyRule{})
	fn.Function = "allow"
	paths := []struct {
		cmd string
		lim Limiter
	}{{"fcall", prep(fn)}, {"evalsha", prep(customSpec(src, ReplyRule{}))}}
	usec := func(cmd string) (calls, us float64) {
		info, err := env.Target.Client.Info(ctx, "commandstats").Result()
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":"); ok {
				for _, kv := range strings.Split(rest, ",") {
					k, v, _ := strings.Cut(kv, "=")
					f, _ := strconv.ParseFloat(v, 64)
					switch k {
					case "calls":
						calls = f
					case "usec":
						us = f
					}
				}
			}
		}
		return calls, us
	}
	const perRound = 2000
	var total [2]struct{ calls, us float64 }
	b.ResetTimer()
	for i := range b.N {
		for j, p := range paths {
			c0, u0 := usec(p.cmd)
			for k := range perRound {
				d, err := Do(ctx, p.lim, env.Target.Client, Request{Subject: fmt.Sprint(i, "-", k, "-", j), Cost: 1})()
				if err != nil || !d.Allowed {
					b.Fatalf("%s: %+v, %v; want an admission", p.cmd, d, err)
				}
			}
			c1, u1 := usec(p.cmd)
			total[j].calls += c1 - c0
			total[j].us += u1 - u0
		}
	}
	f, e := total[0].us/total[0].calls, total[1].us/total[1].calls
	b.ReportMetric(f, "fcall-server-µs/call")
	b.ReportMetric(e, "evalsha-server-µs/call")
	b.ReportMetric(f/e, "fcall/evalsha")
}

// TestCustomSpecJSONFunction: result.json records a function's call path ("function") beside its
// library ("script"), and reads it back; a script's spec has no "function".
func TestCustomSpecJSONFunction(t *testing.T) {
	spec := customSpec("#!lua name=l\n", ReplyRule{Element: 1, Op: RuleAtMost, Value: "{{limit}}"})
	spec.Script, spec.Function = "lib.lua", "allow"
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"script":"lib.lua"`) || !strings.Contains(string(b), `"function":"allow"`) {
		t.Errorf("JSON %s lacks the library or the function", b)
	}
	var back CustomSpec
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Function != "allow" || back.Script != "lib.lua" {
		t.Errorf("read back: function %q, script %q; want allow, lib.lua", back.Function, back.Script)
	}
	spec.Function = ""
	if b, _ := json.Marshal(spec); strings.Contains(string(b), `"function"`) {
		t.Errorf("a script's JSON %s has a function", b)
	}
}
