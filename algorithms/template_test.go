package algorithms

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestCheckTemplate: the one template engine names an unknown placeholder with the closest known
// one, or lists them all, and finds unbalanced braces.
func TestCheckTemplate(t *testing.T) {
	for _, tt := range []struct{ t, want string }{
		{"rl:{{ tag }}:{{now_ms}}", ""},
		{"rl:{{tagg}}", `unknown template {{tagg}} in "rl:{{tagg}}" (did you mean {{tag}}?)`},
		{"{{nonsense_here}}", `unknown template {{nonsense_here}} in "{{nonsense_here}}"; known: {{subject}} {{tag}}`},
		{"{{now_ms}", `unbalanced {{ }} in "{{now_ms}"`},
		{"x}}", `unbalanced {{ }} in "x}}"`},
	} {
		err := CheckTemplate(tt.t)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckTemplate(%q) = %v; want nil", tt.t, err)
		case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
			t.Errorf("CheckTemplate(%q) = %v; want %q...", tt.t, err, tt.want)
		}
	}
	if len(CustomTemplates()) != 15 {
		t.Errorf("CustomTemplates() = %v; want the 14 of issue 8 and now_s_float", CustomTemplates())
	}
}

func TestHashTag(t *testing.T) {
	for key, want := range map[string]string{"rl:{u1}:a": "u1", "rl:{}:a": "rl:{}:a", "rl:a": "rl:a", "{a}{b}": "a", "x{y": "x{y"} {
		if got := HashTag(key); got != want {
			t.Errorf("HashTag(%q) = %q; want %q", key, got, want)
		}
	}
}

// TestKeysShareSlot: keys share a slot only when a hash tag that cannot differ between them is in
// each.
func TestKeysShareSlot(t *testing.T) {
	for _, tt := range []struct {
		keys []string
		ok   bool
	}{
		{[]string{"rl:{{tag}}:tokens", "rl:{{tag}}:ts"}, true},
		{[]string{"{{prefix}}rl:{{tag}}", "x:{{ tag }}:{{uuid}}"}, true},
		{[]string{"only:{{subject}}"}, true},
		{[]string{"rl:{{subject}}:tokens", "rl:{{subject}}:ts"}, false},
		{[]string{"a:{{tag}}", "b:{{uuid}}"}, false},
		{[]string{"{{client}}:{{tag}}", "{{tag}}:{{client}}"}, true},
		{[]string{"{{uuid}}:a", "{{uuid}}:b"}, false},
	} {
		if err := KeysShareSlot(tt.keys); (err == nil) != tt.ok {
			t.Errorf("KeysShareSlot(%q) = %v; want ok = %v", tt.keys, err, tt.ok)
		}
	}
}

// TestParseReplyRule: what String renders parses back to the rule.
func TestParseReplyRule(t *testing.T) {
	for _, r := range []ReplyRule{
		{Element: 1, Op: RuleEquals, Value: "1"}, {Op: RuleNotEquals, Value: `a "quoted", text`},
		{Element: 3, Op: RuleGreaterThan, Value: "-0.5"}, {Op: RulePrefix, Value: "OK"}, {Element: 2, Op: RuleIsNil},
		{Element: 1, Op: RuleAtMost, Value: "{{limit}}"}, {Op: RuleAtLeast, Value: "0"}, {Op: RuleLessThan, Value: "{{limit - cost}}"},
		{Op: RuleEquals, Value: "{{cost}}"},
	} {
		got, err := ParseReplyRule(r.String())
		if err != nil || got != r {
			t.Errorf("ParseReplyRule(%s) = %+v, %v; want %+v", r, got, err, r)
		}
	}
	for _, bad := range []string{"", "{}", "{equals: 1}", "{element: x, equals: \"1\"}", "{is_nil: false}", "{matches: \"a\"}"} {
		if _, err := ParseReplyRule(bad); err == nil {
			t.Errorf("ParseReplyRule(%q) = nil error", bad)
		}
	}
}

// TestParseContract: what String renders, granularity included, parses back to the contract.
func TestParseContract(t *testing.T) {
	for _, c := range []Contract{
		{Kind: SlidingWindow, Limit: 100, Window: time.Second},
		{Kind: FixedWindow, Limit: 100, Window: time.Minute},
		{Kind: TokenBucket, Capacity: 5, RefillPermits: 1, RefillPer: 1500 * time.Millisecond},
		{Kind: NoContract},
		{Kind: SlidingWindow, Limit: 10, Window: time.Second, Scope: PerClient},
		{Kind: SlidingWindow, Limit: 20, Window: time.Second, Also: []Contract{{Kind: SlidingWindow, Limit: 5, Window: time.Second, Scope: PerConsumer}}},
		{Kind: FirstHitWindow, Limit: 10, Window: time.Second, Granularity: time.Millisecond},
		{Kind: TokenBucket, Capacity: 5, RefillPermits: 1, RefillPer: time.Second, Granularity: time.Second},
		{Kind: SlidingWindow, Limit: 20, Window: time.Second, Granularity: time.Millisecond, Scope: PerClient,
			Also: []Contract{{Kind: SlidingWindow, Limit: 5, Window: time.Second, Scope: PerConsumer, Granularity: 250 * time.Microsecond}}},
	} {
		got, err := ParseContract(c.String())
		if err != nil {
			t.Errorf("ParseContract(%s): %v", c, err)
			continue
		}
		if d := cmp.Diff(c, got); d != "" {
			t.Errorf("ParseContract(%s) (-want +got):\n%s", c, d)
		}
	}
	for _, tt := range []struct {
		c    Contract
		want string
	}{
		{Contract{Kind: FixedWindow, Limit: 10, Window: time.Second, Granularity: time.Millisecond}, "fixed-window(10, 1s, granularity 1ms)"},
		{Contract{Kind: FixedWindow, Limit: 10, Window: time.Second}, "fixed-window(10, 1s)"},
		{Contract{Kind: TokenBucket, Capacity: 5, RefillPermits: 1, RefillPer: time.Second, Granularity: time.Second}, "token-bucket(5, 1/1s, granularity 1s)"},
	} {
		if got := tt.c.String(); got != tt.want {
			t.Errorf("%+v.String() = %q; want %q", tt.c, got, tt.want)
		}
	}
	for _, bad := range []string{"sliding-window", "token-bucket(5, 1)", "fixed-window(x, 1s)", "none per nobody", "gcra(1, 2)",
		"fixed-window(10, 1s, granularity x)", "fixed-window(granularity 1s)"} {
		if _, err := ParseContract(bad); err == nil {
			t.Errorf("ParseContract(%q) = nil error", bad)
		}
	}
}
