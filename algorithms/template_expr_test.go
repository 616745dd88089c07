package algorithms

import (
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// expandOne parses, binds (limit 10 per 1500ms, burst 12) and expands tmpl for req.
func expandOne(t *testing.T, tmpl string, r reqVars) (string, error) {
	t.Helper()
	p, err := parseTemplate(tmpl)
	if err != nil {
		t.Fatalf("parseTemplate(%q): %v", tmpl, err)
	}
	b, err := p.bind(limitBindings(Limit{Limit: 10, Window: 1500 * time.Millisecond, Burst: 12}, "p:"))
	if err != nil {
		t.Fatalf("bind(%q): %v", tmpl, err)
	}
	out, err := b.expand(nil, &r)
	return string(out), err
}

// TestTemplateExpressions: integer arithmetic in placeholders, with floor division, precedence,
// parentheses and unary minus, over per-request and per-limiter values; {{now_s_float}}.
func TestTemplateExpressions(t *testing.T) {
	now := time.UnixMicro(1_700_000_123_456_789)
	r := reqVars{subject: "u", client: "c", cost: 3, now: now}
	for _, tt := range []struct{ tmpl, want string }{
		{"rl:{{tag}}:{{now_ms / window_ms}}", "rl:{u}:1133333415"},
		{"rl:{{tag}}:{{now_ms / window_ms - 1}}", "rl:{u}:1133333414"},
		{"{{ now_ms/window_ms }}", "1133333415"},
		{"{{now_s / 60 * 60}}", "1700000100"},
		{"{{limit - cost}}", "7"},
		{"{{limit * 2 + burst}}", "32"},
		{"{{limit * (2 + burst)}}", "140"},
		{"{{2 + 3 * 4 - 6 / 2}}", "11"},
		{"{{(2 + 3) * 4}}", "20"},
		{"{{10 - 4 - 3}}", "3"}, // left to right
		{"{{64 / 4 / 2}}", "8"},
		{"{{-cost}}", "-3"},
		{"{{--cost}}", "3"},
		{"{{- (cost - 5)}}", "2"},
		{"{{7 / 2}}:{{-7 / 2}}:{{7 / -2}}:{{-7 / -2}}", "3:-4:-4:3"}, // floor division
		{"{{-6 / 2}}:{{(0 - cost) / 3}}:{{(0 - cost) / 2}}", "-3:-1:-2"},
		{"{{now_us - now_ms * 1000}}", "789"},
		{"{{window_s}}", "2"},
		{"{{now_s_float}}", "1700000123.456789"},
		{"{{42}}", "42"},
		{"{{9223372036854775807}}", "9223372036854775807"},
	} {
		got, err := expandOne(t, tt.tmpl, r)
		if err != nil || got != tt.want {
			t.Errorf("expand(%q) = %q, %v; want %q", tt.tmpl, got, err, tt.want)
		}
	}
	for us, want := range map[int64]string{
		0: "0.000000", 1: "0.000001", 1_000_000: "1.000000", -1: "-0.000001", -1_500_000: "-1.500000", 1_700_000_000_000_010: "1700000000.000010",
	} {
		if got := string(appendSecondsFloat(nil, us)); got != want {
			t.Errorf("appendSecondsFloat(%d) = %q; want %q", us, got, want)
		}
	}
}

// TestTemplateExpressionErrors: an expression that does not parse, names something that is not
// an integer, or is constant and divides by zero or overflows, is an error when the template is
// parsed; with the limiter's constants, when it is bound; with a request's values, for that
// request only (ErrTemplate).
func TestTemplateExpressionErrors(t *testing.T) {
	for _, tt := range []struct{ tmpl, want string }{
		{"{{now_ms / windw_ms}}", `expression {{now_ms / windw_ms}} in "{{now_ms / windw_ms}}": unknown name windw_ms (did you mean window_ms?)`},
		{"{{now_ms / nothing_alike}}", `expression {{now_ms / nothing_alike}} in "{{now_ms / nothing_alike}}": unknown name nothing_alike; expressions take cost, limit, window_ms, window_s, burst, now_ms, now_s, now_us and whole numbers`},
		{"{{rate * 2}}", `expression {{rate * 2}} in "{{rate * 2}}": rate is not an integer; expressions take cost, limit, window_ms, window_s, burst, now_ms, now_s, now_us and whole numbers`},
		{"{{subject + 1}}", `expression {{subject + 1}} in "{{subject + 1}}": subject is not an integer; expressions take cost, limit, window_ms, window_s, burst, now_ms, now_s, now_us and whole numbers`},
		{"{{now_ms / }}", `expression {{now_ms /}} in "{{now_ms / }}": expected a number, a name or "(" after "now_ms /"`},
		{"{{(now_ms / 1000}}", `expression {{(now_ms / 1000}} in "{{(now_ms / 1000}}": unbalanced parentheses: a "(" in "(now_ms / 1000" has no ")"`},
		{"{{now_ms / 1000)}}", `expression {{now_ms / 1000)}} in "{{now_ms / 1000)}}": unbalanced parentheses: "now_ms / 1000)" has a ")" without its "("`},
		{"{{now_ms % 1000}}", `expression {{now_ms % 1000}} in "{{now_ms % 1000}}": unexpected "% 1000" after "now_ms"`},
		{"{{now_ms 1000}}", `expression {{now_ms 1000}} in "{{now_ms 1000}}": unexpected "1000" after "now_ms"`},
		{"{{1.5 * limit}}", `expression {{1.5 * limit}} in "{{1.5 * limit}}": "1.5" is not a whole number`},
		{"{{now_ms / 0}}", `expression {{now_ms / 0}} in "{{now_ms / 0}}": division by zero`},
		{"{{now_ms / (3 - 3)}}", `expression {{now_ms / (3 - 3)}} in "{{now_ms / (3 - 3)}}": division by zero`},
		{"{{99999999999999999999}}", `expression {{99999999999999999999}} in "{{99999999999999999999}}": number 99999999999999999999 is out of range (int64)`},
		{"{{4611686018427387904 * 2}}", `expression {{4611686018427387904 * 2}} in "{{4611686018427387904 * 2}}": overflow: the result is outside the int64 range`},
		{"{{" + strings.Repeat("(", 20) + "1" + strings.Repeat(")", 20) + "}}", "nested more than 16 deep"},
	} {
		err := CheckTemplate(tt.tmpl)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CheckTemplate(%q) = %v;\n want %s", tt.tmpl, err, tt.want)
		}
	}

	// Constant for a limiter: found at bind time (CheckTemplateWith, Prepare).
	l := Limit{Limit: 10, Window: time.Second}
	for _, tt := range []struct{ tmpl, want string }{
		{"{{now_ms / (limit - 10)}}", `expression {{now_ms / (limit - 10)}} in "{{now_ms / (limit - 10)}}": division by zero with limit 10 per 1s`},
		{"{{now_ms / (window_ms - 1000)}}", `division by zero`},
		{"{{limit * 1000000000000000000}}", `expression {{limit * 1000000000000000000}} in "{{limit * 1000000000000000000}}": overflow: the result is outside the int64 range with limit 10 per 1s`},
	} {
		if err := CheckTemplate(tt.tmpl); err != nil {
			t.Errorf("CheckTemplate(%q) = %v; want nil (it is constant only for a limiter)", tt.tmpl, err)
		}
		err := CheckTemplateWith(tt.tmpl, l)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CheckTemplateWith(%q, %v) = %v;\n want %s", tt.tmpl, l, err, tt.want)
		}
		if err := CheckTemplateWith(tt.tmpl, Limit{Limit: 11, Window: 2 * time.Second}); err != nil && !strings.Contains(tt.tmpl, "1000000000000000000") {
			t.Errorf("CheckTemplateWith(%q, limit 11 per 2s) = %v; want nil", tt.tmpl, err)
		}
	}

	// Per request: an error wrapping ErrTemplate for that request alone.
	for _, tt := range []struct {
		tmpl string
		r    reqVars
		want string
	}{
		{"k:{{limit / (cost - 1)}}", reqVars{cost: 1}, "{{limit / (cost - 1)}}: division by zero"},
		{"k:{{now_us * 10000}}", reqVars{cost: 1, now: time.UnixMicro(1_700_000_000_000_000)}, "{{now_us * 10000}}: overflow"},
	} {
		_, err := expandOne(t, tt.tmpl, tt.r)
		if !errors.Is(err, ErrTemplate) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("expand(%q) = %v; want ErrTemplate with %q", tt.tmpl, err, tt.want)
		}
		r2 := tt.r
		r2.cost, r2.now = 2, time.UnixMicro(1)
		if _, err := expandOne(t, tt.tmpl, r2); err != nil {
			t.Errorf("expand(%q) for another request = %v; want nil", tt.tmpl, err)
		}
	}
}

// TestTemplateExpandAllocs: expanding keys with expressions into a buffer allocates nothing.
func TestTemplateExpandAllocs(t *testing.T) {
	p, err := parseTemplate("rl:{{tag}}:{{now_ms / window_ms - 1}}:{{(limit - cost) * 2}}:{{now_s_float}}:{{cost}}")
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.bind(limitBindings(Limit{Limit: 10, Window: time.Second}, "p:"))
	if err != nil {
		t.Fatal(err)
	}
	r := reqVars{subject: "user-1", cost: 2, now: time.Now()}
	buf := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(1000, func() {
		var err error
		if buf, err = b.expand(buf[:0], &r); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("expand allocates %v times per call; want 0", n)
	}
}

// TestExpressionProperty: any expression over small and huge numbers and the integer names
// evaluates as exact integer arithmetic with floor division does, and is an error exactly when
// some step divides by zero or leaves the int64 range.
func TestExpressionProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := reqVars{
			cost: rapid.Int64Range(-5, 1000).Draw(t, "cost"),
			now:  time.UnixMicro(rapid.Int64Range(-1e15, 4e15).Draw(t, "now")),
		}
		vars := []tvar{tCost, tNowMS, tNowS, tNowUS}
		var gen func(depth int) *expr
		gen = func(depth int) *expr {
			switch k := rapid.IntRange(0, 6).Draw(t, "kind"); {
			case depth > 4 || k == 0:
				n := rapid.OneOf(rapid.Int64Range(-20, 20), rapid.Int64(), rapid.SampledFrom([]int64{math.MaxInt64, math.MinInt64 + 1, 1 << 32, 1e6})).Draw(t, "n")
				if n == math.MinInt64 {
					n = math.MaxInt64
				}
				if n < 0 {
					return &expr{op: opNeg, l: &expr{op: opNum, n: -n}}
				}
				return &expr{op: opNum, n: n}
			case k == 1:
				return &expr{op: opVar, v: rapid.SampledFrom(vars).Draw(t, "v")}
			case k == 2:
				return &expr{op: opNeg, l: gen(depth + 1)}
			default:
				return &expr{op: rapid.SampledFrom([]byte{opAdd, opSub, opMul, opDiv}).Draw(t, "op"), l: gen(depth + 1), r: gen(depth + 1)}
			}
		}
		e := gen(0)
		text := e.String() // fully parenthesised: parses back to e
		pe, err := parseExpr(text)
		if err != nil {
			t.Fatalf("parseExpr(%s): %v", text, err)
		}
		want, wantErr := bigEval(e, &r)
		var got int64
		folded, err := pe.fold(nil)
		if err == nil {
			var prog program
			if prog, err = folded.compile(); err == nil {
				got, err = prog.eval(&r)
			}
		}
		switch {
		case wantErr != "" && err == nil:
			t.Fatalf("%s = %d; want an error (%s)", text, got, wantErr)
		case wantErr == "" && err != nil:
			t.Fatalf("%s: %v; want %s", text, err, want)
		case wantErr == "" && strconv.FormatInt(got, 10) != want.String():
			t.Fatalf("%s = %d; want %s", text, got, want)
		}
	})
}

// bigEval evaluates e exactly; its error is "overflow" when a step leaves int64 (as evaluated
// in postfix order, every node's value must fit) or "division by zero". Constant folding finds
// a division by a constant zero first, so a constant zero divisor is an error however the
// dividend would fail.
func bigEval(e *expr, r *reqVars) (*big.Int, string) {
	if hasConstZeroDivisor(e) {
		return nil, "division by zero"
	}
	var eval func(e *expr) (*big.Int, string)
	fits := func(x *big.Int) bool { return x.IsInt64() }
	eval = func(e *expr) (*big.Int, string) {
		switch e.op {
		case opNum:
			return big.NewInt(e.n), ""
		case opVar:
			return big.NewInt(r.int(e.v)), ""
		case opNeg:
			x, err := eval(e.l)
			if err != "" {
				return nil, err
			}
			x = new(big.Int).Neg(x)
			if !fits(x) {
				return nil, "overflow"
			}
			return x, ""
		}
		a, err := eval(e.l)
		if err != "" {
			return nil, err
		}
		b, err := eval(e.r)
		if err != "" {
			return nil, err
		}
		var x *big.Int
		switch e.op {
		case opAdd:
			x = new(big.Int).Add(a, b)
		case opSub:
			x = new(big.Int).Sub(a, b)
		case opMul:
			x = new(big.Int).Mul(a, b)
		case opDiv:
			if b.Sign() == 0 {
				return nil, "division by zero"
			}
			q, m := new(big.Int).DivMod(a, b, new(big.Int)) // Euclidean: m >= 0
			if m.Sign() != 0 && b.Sign() < 0 {
				q.Sub(q, big.NewInt(1)) // floor(a/b) = q + floor(m/b), and m/b is in (-1, 0)
			}
			x = q
		}
		if !fits(x) {
			return nil, "overflow"
		}
		return x, ""
	}
	return eval(e)
}

// hasConstZeroDivisor reports whether some division in e has a divisor that is constant (no
// variable) and zero when evaluated exactly, with every step of it in int64.
func hasConstZeroDivisor(e *expr) bool {
	if e == nil || e.op == opNum || e.op == opVar {
		return false
	}
	if hasConstZeroDivisor(e.l) || hasConstZeroDivisor(e.r) {
		return true
	}
	if e.op == opDiv && e.r.vars() == 0 {
		v, err := bigEval(e.r, &reqVars{})
		return err == "" && v.Sign() == 0
	}
	return false
}
