package algorithms

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"time"
)

// ErrBadTime means a time written as text cannot be read (see ParseTime).
var ErrBadTime = errors.New("unreadable time")

// maxTimeText bounds the length of a time ParseTime reads; Lua's tostring writes at most 24
// characters.
const maxTimeText = 64

// ParseTime reads a decision time that a script wrote as text, in unit (time.Microsecond,
// time.Millisecond, time.Second or any positive duration) since the Unix epoch, and returns the
// interval [lo, hi] in µs since the Unix epoch that the text allows. It reads every notation Lua's
// tostring writes ("%.14g": "1795534497288", "1795534497.2883", "1.7955344972883e+15", "1e-05",
// "-0") and the decimal text of string.format: an optional minus sign, digits with an optional
// decimal point, and an optional exponent (e or E, an optional sign, digits).
//
// A time written as text is known only to its last written digit: with the digits read as an
// integer M and E the power of ten of the last one, the value v = M·10^E lies within d = 10^E of
// the time, or within two float64 units in the last place of v when they are larger (the error
// of a time computed in floating point, seconds plus microseconds over a million say, and
// printed with more digits than a float64 holds). So [lo, hi] = [v − d, v + d] in µs, lo rounded
// down and hi up. That covers every way the text may have lost digits: %.14g rounds to 14
// significant digits and then drops trailing zeros, even the decimal point ("1795550230169" for
// 1795550230168.954, "1e+15" for 1000000000000000, known to ±10^15), string.format rounds, and
// %d or Redis's integer reply truncate. An integer too is known to ±1 in its unit.
//
// Widening this way never puts the decision outside its interval, so a lossy time can turn a
// definite violation into a possible one, never create one. ParseTime returns an error wrapping
// ErrBadTime for anything else (empty text, spaces, "inf", "nan", hexadecimal, a non-positive
// unit) and for a time outside the int64 range of µs.
func ParseTime(s string, unit time.Duration) (lo, hi int64, err error) {
	bad := func(why string) (int64, int64, error) {
		return 0, 0, fmt.Errorf("%w: %q %s", ErrBadTime, s, why)
	}
	if unit <= 0 {
		return bad(fmt.Sprintf("in unit %s: the unit must be positive", unit))
	}
	n, ok := scanNumber(s)
	if !ok {
		return bad("is not a number (want digits, an optional decimal point and exponent)")
	}
	if n.exact && len(n.digits) <= 15 && unit%time.Microsecond == 0 {
		// An integer below 10^15 < 2^52, where two float64 units in the last place are at most
		// 1: [v − 1, v + 1] units, in whole µs.
		v, _ := strconv.ParseInt(s, 10, 64)
		k := int64(unit / time.Microsecond)
		if v+1 > math.MaxInt64/k || v-1 < math.MinInt64/k {
			return bad(fmt.Sprintf("in unit %s is out of range", unit))
		}
		return (v - 1) * k, (v + 1) * k, nil
	}
	// v = ±M·10^E in units; d, the widening, in units.
	m, _ := new(big.Int).SetString(n.digits, 10)
	v := new(big.Rat).SetInt(m)
	v.Mul(v, pow10(n.exp))
	if n.neg {
		v.Neg(v)
	}
	d := pow10(n.exp)
	f, _ := strconv.ParseFloat(s, 64)
	if math.IsInf(f, 0) {
		return bad("is out of range")
	}
	a := math.Abs(f)
	if ulp := new(big.Rat).SetFloat64(2 * (math.Nextafter(a, math.Inf(1)) - a)); ulp.Cmp(d) > 0 {
		d = ulp
	}
	// In µs: units times unit/1µs = unit (ns) / 1000.
	perUnit := big.NewRat(int64(unit), int64(time.Microsecond))
	loR := new(big.Rat).Mul(new(big.Rat).Sub(v, d), perUnit)
	hiR := new(big.Rat).Mul(new(big.Rat).Add(v, d), perUnit)
	lo, okLo := floorRat(loR)
	hi, okHi := ceilRat(hiR)
	if !okLo || !okHi {
		return bad(fmt.Sprintf("in unit %s is out of range", unit))
	}
	return lo, hi, nil
}

// number is the text of a number as scanNumber reads it: ±digits·10^exp.
type number struct {
	neg    bool
	digits string // all the digits, without the decimal point
	exp    int    // the power of ten of the last digit
	exact  bool   // integer notation: no decimal point, no exponent
}

// scanNumber reads -?D*(.D*)?([eE][+-]?D+)? with at least one digit before the exponent, at
// most maxTimeText characters and an exponent within ±400.
func scanNumber(s string) (number, bool) {
	var n number
	if len(s) == 0 || len(s) > maxTimeText {
		return n, false
	}
	i := 0
	if s[0] == '-' {
		n.neg = true
		i++
	}
	digits := make([]byte, 0, len(s))
	for ; i < len(s) && isDigit(s[i]); i++ {
		digits = append(digits, s[i])
	}
	n.exact = true
	frac := 0
	if i < len(s) && s[i] == '.' {
		n.exact = false
		for i++; i < len(s) && isDigit(s[i]); i++ {
			digits = append(digits, s[i])
			frac++
		}
	}
	if len(digits) == 0 {
		return n, false
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		n.exact = false
		i++
		expNeg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			expNeg = s[i] == '-'
			i++
		}
		start := i
		for ; i < len(s) && isDigit(s[i]); i++ {
			if exp = exp*10 + int(s[i]-'0'); exp > 400 {
				return n, false
			}
		}
		if i == start {
			return n, false
		}
		if expNeg {
			exp = -exp
		}
	}
	if i != len(s) {
		return n, false
	}
	n.digits, n.exp = string(digits), exp-frac
	return n, true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// pow10 returns 10^e as a rational.
func pow10(e int) *big.Rat {
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(e, -e))), nil)
	if e < 0 {
		return new(big.Rat).SetFrac(big.NewInt(1), p)
	}
	return new(big.Rat).SetInt(p)
}

// floorRat returns ⌊r⌋ and whether it fits an int64.
func floorRat(r *big.Rat) (int64, bool) {
	// Euclidean division by the positive denominator: the remainder is >= 0, so q is the floor.
	q, _ := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int))
	return q.Int64(), q.IsInt64()
}

// ceilRat returns ⌈r⌉ and whether it fits an int64.
func ceilRat(r *big.Rat) (int64, bool) {
	q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64(), q.IsInt64()
}
