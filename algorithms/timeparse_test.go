package algorithms

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

func TestParseTime(t *testing.T) {
	const us, ms, s = time.Microsecond, time.Millisecond, time.Second
	tests := []struct {
		text   string
		unit   time.Duration
		lo, hi int64
	}{
		// Integers are known to ±1 in their unit (Redis truncates, %.14g rounds).
		{"1700000000123456", us, 1700000000123455, 1700000000123457},
		{"1700000000123", ms, 1700000000122000, 1700000000124000},
		{"1700000000", s, 1699999999000000, 1700000001000000},
		{"-0", us, -1, 1},
		{"0", s, -1000000, 1000000},
		{"7", 1500 * time.Nanosecond, 9, 12},
		// %.14g of 1795550230168.954 ms drops the point: still ±1 ms.
		{"1795550230169", ms, 1795550230168000, 1795550230170000},
		// Beyond 2^53 a float64 holds steps of 2 or more: 2^60 + 1 µs is within 512 µs.
		{"1152921504606846977", us, 1152921504606846465, 1152921504606847489},
		// Lua's tostring (%.14g) of a time in µs, ms and s: 14 significant digits, ±1 in the 14th.
		{"1.7955344972883e+15", us, 1795534497288200, 1795534497288400},
		{"1795534497288.3", ms, 1795534497288200, 1795534497288400},
		{"1795534497.2883", s, 1795534497288200, 1795534497288400},
		// %.6f of seconds: ±1 µs.
		{"1795534497.288312", s, 1795534497288311, 1795534497288313},
		// %.9f of seconds prints digits a float64 does not hold: two units in its last place
		// (2·2^-22 s, about 0.48 µs) are wider than 1 ns.
		{"1795534497.288311958", s, 1795534497288311, 1795534497288313},
		// %g drops trailing zeros: 1000000000000000 µs prints as 1e+15, known to ±1e15.
		{"1e+15", us, 0, 2000000000000000},
		{"1E+15", us, 0, 2000000000000000},
		{"1e-05", s, 0, 20},
		{"0.5", ms, 400, 600},
		{"1.5e3", ms, 1400000, 1600000},
		{"12.", s, 11000000, 13000000},
		{"-1.5", s, -1600000, -1400000},
		{".5", s, 400000, 600000},
	}
	for _, tt := range tests {
		t.Run(tt.text+" "+tt.unit.String(), func(t *testing.T) {
			lo, hi, err := ParseTime(tt.text, tt.unit)
			if err != nil || lo != tt.lo || hi != tt.hi {
				t.Errorf("ParseTime(%q, %s) = [%d, %d], %v; want [%d, %d]", tt.text, tt.unit, lo, hi, err, tt.lo, tt.hi)
			}
		})
	}
}

func TestParseTimeErrors(t *testing.T) {
	tests := []struct {
		text string
		unit time.Duration
	}{
		{"", time.Microsecond},
		{" 1", time.Microsecond},
		{"1 ", time.Microsecond},
		{"+1", time.Microsecond},
		{"--1", time.Microsecond},
		{"inf", time.Microsecond},
		{"-inf", time.Microsecond},
		{"nan", time.Microsecond},
		{"-nan", time.Microsecond},
		{"0x10", time.Microsecond},
		{"1_000", time.Microsecond},
		{"1.2.3", time.Microsecond},
		{"1e", time.Microsecond},
		{"1e+", time.Microsecond},
		{".", time.Microsecond},
		{"-", time.Microsecond},
		{"e5", time.Microsecond},
		{"1e401", time.Microsecond},
		{"1e400", time.Microsecond},                   // finite in decimal, infinite as a float64
		{"9223372036854775808", time.Microsecond},     // 2^63 µs
		{"9223372036854775807", time.Millisecond},     // fits as a number, not in µs
		{"99999999999999999999999", time.Microsecond}, // longer than an int64
		{"1" + string(make([]byte, 70)), time.Microsecond},
		{"1", 0},
		{"1", -time.Second},
	}
	for _, tt := range tests {
		lo, hi, err := ParseTime(tt.text, tt.unit)
		if !errors.Is(err, ErrBadTime) {
			t.Errorf("ParseTime(%q, %s) = [%d, %d], %v; want ErrBadTime", tt.text, tt.unit, lo, hi, err)
		}
	}
	if _, _, err := ParseTime("soon", time.Second); err == nil || err.Error() != `unreadable time: "soon" is not a number (want digits, an optional decimal point and exponent)` {
		t.Errorf("ParseTime(soon) error = %v", err)
	}
}

// luaFormat is a time t (µs since the epoch) as a script computes and prints it: in unit, as a
// float64 the way scripts compute it from TIME's seconds and microseconds, printed with format
// ("%.14g" is Lua's tostring).
func luaFormat(t int64, unit time.Duration, format string) string {
	sec, usec := float64(t/1_000_000), float64(t%1_000_000)
	var v float64
	switch unit {
	case time.Second:
		v = sec + usec/1e6
	case time.Millisecond:
		v = sec*1e3 + usec/1e3
	default:
		v = sec*1e6 + usec
	}
	return fmt.Sprintf(format, v)
}

// TestParseTimeHoldsTheTime: a time computed in floating point and printed in any of the usual
// notations parses to an interval that holds the exact time.
func TestParseTimeHoldsTheTime(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ts := rapid.Int64Range(0, 4_000_000_000_000_000).Draw(t, "t")
		unit := rapid.SampledFrom([]time.Duration{time.Microsecond, time.Millisecond, time.Second}).Draw(t, "unit")
		format := rapid.SampledFrom([]string{"%.14g", "%.17g", "%.15g", "%.6f", "%.3f", "%.9f", "%.1f", "%e", "%.3e", "%g"}).Draw(t, "format")
		text := luaFormat(ts, unit, format)
		lo, hi, err := ParseTime(text, unit)
		if err != nil {
			t.Fatalf("ParseTime(%q, %s): %v", text, unit, err)
		}
		if lo > ts || ts > hi {
			t.Fatalf("ParseTime(%q, %s) = [%d, %d]; does not hold %d", text, unit, lo, hi, ts)
		}
	})
}

// TestParseTimeLuaTostring runs Lua's own tostring in Redis on times computed from TIME, as
// libraries write them (µs, ms and float seconds), and on numbers of every magnitude: each
// parses to an interval that holds the exact time, and Go's %.14g (which the verifier's
// property tests use in its place) writes the same text.
func TestParseTimeLuaTostring(t *testing.T) {
	env := redistest.Single(t)
	ctx := context.Background()
	const src = `local t = redis.call('TIME')
local s, us = tonumber(t[1]), tonumber(t[2])
return {t[1], t[2], tostring(s * 1000000 + us), tostring(s * 1000 + us / 1000), tostring(s + us / 1000000)}`
	for i := range 50 {
		raw, err := env.Target.Client.Eval(ctx, src, nil).Result()
		if err != nil {
			t.Fatalf("EVAL: %v", err)
		}
		r, ok := raw.([]any)
		if !ok || len(r) != 5 {
			t.Fatalf("reply %v", raw)
		}
		sec, err1 := strconv.ParseInt(r[0].(string), 10, 64)
		usec, err2 := strconv.ParseInt(r[1].(string), 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("TIME = %v", r[:2])
		}
		exact := sec*1_000_000 + usec
		for j, unit := range []time.Duration{time.Microsecond, time.Millisecond, time.Second} {
			text := r[2+j].(string)
			lo, hi, err := ParseTime(text, unit)
			if err != nil || lo > exact || exact > hi {
				t.Fatalf("call %d: ParseTime(%q, %s) = [%d, %d], %v; want an interval holding %d", i, text, unit, lo, hi, err, exact)
			}
			if want := luaFormat(exact, unit, "%.14g"); text != want {
				t.Errorf("Lua tostring = %q; Go %%.14g = %q", text, want)
			}
		}
	}
	// Numbers of every magnitude an int64 of µs holds, through tonumber and tostring.
	var args []any
	for e := -8; e <= 17; e++ {
		for _, m := range []float64{1, 1.5, 1.7955344972883123, 9.99999999999995} {
			args = append(args, strconv.FormatFloat(m*math.Pow(10, float64(e)), 'g', 17, 64))
		}
	}
	raw, err := env.Target.Client.Eval(ctx, `local out = {}
for i, a in ipairs(ARGV) do out[i] = tostring(tonumber(a)) end
return out`, nil, args...).Result()
	if err != nil {
		t.Fatalf("EVAL: %v", err)
	}
	for i, got := range raw.([]any) {
		f, _ := strconv.ParseFloat(args[i].(string), 64)
		if want := fmt.Sprintf("%.14g", f); got != want {
			t.Errorf("tostring(%s) = %q; Go %%.14g = %q", args[i], got, want)
		}
		lo, hi, err := ParseTime(got.(string), time.Microsecond)
		if err != nil || float64(lo) > f || f > float64(hi) {
			t.Errorf("ParseTime(%q) = [%d, %d], %v; want an interval holding %g", got, lo, hi, err, f)
		}
	}
}
