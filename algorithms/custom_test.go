package algorithms

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

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

func newCustom(t *testing.T, spec CustomSpec) *Custom {
	t.Helper()
	a, err := NewCustom(spec)
	if err != nil {
		t.Fatalf("NewCustom: %v", err)
	}
	return a
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
			lim := newCustom(t, spec).bind(l, prefix, nil)
			if got := expandArgs(lim, req, 3)[0]; got != tt.want {
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
			lim := newCustom(t, spec).bind(l, prefix, nil)
			got := lim.Keys(Request{Subject: tt.subject, Cost: 1})
			if diff := cmp.Diff([]string{tt.want}, got); diff != "" {
				t.Errorf("Keys(%q) mismatch (-want +got):\n%s", tt.tmpl, diff)
			}
		})
	}

	t.Run("uuid", func(t *testing.T) {
		spec := customSpec("return 1", ReplyRule{Op: RuleEquals, Value: "1"})
		spec.Args = []string{"{{uuid}}", "{{uuid}}"}
		lim := newCustom(t, spec).bind(l, prefix, nil)
		a1, a2 := expandArgs(lim, req, 1), expandArgs(lim, req, 1)
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

// expandArgs returns the script arguments a Call of lim sends for req with cost, as go-redis writes
// them: the constant ones as they are, the others expanded into the Call's buffers.
func expandArgs(lim *customLimiter, req Request, cost int64) []string {
	c := lim.NewCall().(*customCall)
	r := lim.vars(req, cost)
	c.fill(&r)
	var out []string
	for _, a := range c.cmd.args[3+len(lim.keys):] {
		switch a := a.(type) {
		case string:
			out = append(out, a)
		case *argBuf:
			out = append(out, a.String())
		default:
			panic(fmt.Sprintf("argument of type %T", a))
		}
	}
	return out
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
		{"greater_than int", ReplyRule{Op: RuleGreaterThan, Number: 0}, int64(5), true},
		{"greater_than equal", ReplyRule{Op: RuleGreaterThan, Number: 5}, int64(5), false},
		{"greater_than numeric string", ReplyRule{Op: RuleGreaterThan, Number: 2}, "2.5", true},
		{"greater_than float", ReplyRule{Op: RuleGreaterThan, Number: 0}, 0.5, true},
		{"greater_than text", ReplyRule{Op: RuleGreaterThan, Number: 0}, "abc", bad},
		{"greater_than NaN", ReplyRule{Op: RuleGreaterThan, Number: 0}, "NaN", bad},
		{"greater_than nil", ReplyRule{Op: RuleGreaterThan, Number: 0}, nil, false},
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

// TestCustomTime: a time in µs is reported; one in ms or s only when the contract's granularity
// covers the unit (the load engine narrows to a point, the verifier widens by the granularity);
// an unreadable time is ErrBadReply.
func TestCustomTime(t *testing.T) {
	const now = int64(1_700_000_000_123_456)
	tests := []struct {
		name        string
		unit        TimeUnit
		granularity time.Duration
		raw         any
		want        int64
		bad         bool
	}{
		{"us", Micros, 0, []any{int64(1), now}, now, false},
		{"us string", Micros, 0, []any{int64(1), "1700000000123456"}, now, false},
		{"ms without granularity", Millis, 0, []any{int64(1), now / 1000}, 0, false},
		{"ms with 1ms granularity", Millis, time.Millisecond, []any{int64(1), now / 1000}, now / 1000 * 1000, false},
		{"s with 500ms granularity", Seconds, 500 * time.Millisecond, []any{int64(1), now / 1e6}, 0, false},
		{"s with 1s granularity", Seconds, time.Second, []any{int64(1), now / 1e6}, now / 1e6 * 1e6, false},
		{"missing", Micros, 0, []any{int64(1)}, 0, true},
		{"zero", Micros, 0, []any{int64(1), int64(0)}, 0, true},
		{"text", Micros, 0, []any{int64(1), "soon"}, 0, true},
		{"nil", Micros, 0, []any{int64(1), nil}, 0, true},
		{"overflow", Seconds, time.Second, []any{int64(1), int64(1) << 62}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := customSpec("return 1", ReplyRule{Element: 1, Op: RuleEquals, Value: "1"})
			spec.Time = &ReplyTime{Element: 2, Unit: tt.unit}
			spec.Contract.Granularity = tt.granularity
			lim := newCustom(t, spec).bind(Limit{Limit: 5, Window: time.Second}, "p:", nil)
			d, err := lim.decode(tt.raw)
			if tt.bad {
				if !errors.Is(err, ErrBadReply) || d.Allowed {
					t.Fatalf("decode(%v) = %+v, %v; want ErrBadReply", tt.raw, d, err)
				}
				return
			}
			if err != nil || !d.Allowed || d.TimeMicros != tt.want || d.Clock != ClockServer {
				t.Errorf("decode(%v) = %+v, %v; want allowed, TimeMicros %d, server clock", tt.raw, d, err, tt.want)
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
		{"return 'many'", ReplyRule{Op: RuleGreaterThan, Number: 0}, false, true},
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
	lim := newCustom(t, spec).bind(Limit{Limit: 5, Window: time.Second}, "p:", nil)
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
	lim := a.bind(Limit{Limit: 100, Window: time.Second}, "limitbench:run:my-limiter:1:", nil)
	req := Request{Subject: "user-1234", Client: "c7", Cost: 1, ClientTime: time.Now()}
	c := lim.NewCall().(*customCall)
	b.ReportAllocs()
	for b.Loop() {
		r := lim.vars(req, 1)
		c.fill(&r)
	}
}
