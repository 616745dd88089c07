package algorithms

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// badReply wraps ErrBadReply with what was expected and the raw reply.
func badReply(what string, raw any) error {
	return fmt.Errorf("%w: %s, got %#v", ErrBadReply, what, raw)
}

// maxFields is the most integers a built-in script's reply holds.
const maxFields = 8

// fields holds the integers of a reply, in order; a reply of n integers uses the first n.
type fields [maxFields]int64

// ints decodes raw as an array of exactly n integers (n <= maxFields). Any other shape or element
// type is an error wrapping ErrBadReply that shows the raw reply.
func ints(raw any, n int) (fields, error) {
	var out fields
	arr, ok := raw.([]any)
	if !ok {
		return out, badReply(fmt.Sprintf("want an array of %d integers", n), raw)
	}
	if len(arr) != n {
		return out, badReply(fmt.Sprintf("want %d elements, got %d", n, len(arr)), raw)
	}
	for i, e := range arr {
		v, ok := e.(int64)
		if !ok {
			return out, badReply(fmt.Sprintf("element %d: want an integer", i+1), raw)
		}
		out[i] = v
	}
	return out, nil
}

// Bool01 decodes v, an element that must be 0 or 1.
func Bool01(v int64, raw any) (bool, error) {
	switch v {
	case 0:
		return false, nil
	case 1:
		return true, nil
	}
	return false, badReply(fmt.Sprintf("allowed flag must be 0 or 1, got %d", v), raw)
}

// replyFields decodes raw as a string of exactly n decimal integers (n <= maxFields), each without
// a sign, separated by single spaces: the compact reply of the gcra, token-bucket and fixed-window
// scripts. Any other type, count or field (empty, signed, not decimal, beyond int64) is an error
// wrapping ErrBadReply that shows the raw reply.
func replyFields(raw any, n int) (fields, error) {
	s, ok := raw.(string)
	if !ok {
		return fields{}, badReply(fmt.Sprintf("want a string of %d integers", n), raw)
	}
	return splitFields(s, n, raw)
}

// splitFields decodes s, a string of raw (the reply its errors show), as replyFields does.
func splitFields(s string, n int, raw any) (fields, error) {
	var out fields
	got := 0
	for start := 0; ; {
		end := strings.IndexByte(s[start:], ' ')
		if end < 0 {
			end = len(s)
		} else {
			end += start
		}
		f := s[start:end]
		if got == n {
			return out, badReply(fmt.Sprintf("want %d fields, got more", n), raw)
		}
		if f == "" || f[0] < '0' || f[0] > '9' {
			return out, badReply(fmt.Sprintf("field %d: want a decimal integer without a sign, got %q", got+1, f), raw)
		}
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return out, badReply(fmt.Sprintf("field %d: %v", got+1, err), raw)
		}
		out[got] = v
		got++
		if end == len(s) {
			break
		}
		start = end + 1
	}
	if got != n {
		return out, badReply(fmt.Sprintf("want %d fields, got %d", n, got), raw)
	}
	return out, nil
}

// stateReply reads the reply of a script that sends its decision, its state and its TIME as one
// string of n integers, "<allowed 0|1> <n − 3 state fields> <s> <µs>" (replyFields): it returns
// the fields, the allowed flag and the decision time in µs from the last two (timeMicros). A
// reply of another shape is an error wrapping ErrBadReply, never an admission.
func stateReply(raw any, n int) (v fields, allowed bool, now int64, err error) {
	if v, err = replyFields(raw, n); err != nil {
		return v, false, 0, err
	}
	if allowed, err = Bool01(v[0], raw); err != nil {
		return v, false, 0, err
	}
	if now, err = timeMicros(v[n-2], v[n-1], raw); err != nil {
		return v, false, 0, err
	}
	return v, allowed, now, nil
}

// timeMicros is the time in µs of a reply's two TIME fields, seconds and microseconds. The
// microseconds must be below 10⁶ and the time positive and within int64; otherwise the error
// wraps ErrBadReply with the raw reply.
func timeMicros(sec, usec int64, raw any) (int64, error) {
	if usec < 0 || usec >= 1_000_000 || sec < 0 || sec > (math.MaxInt64-usec)/1_000_000 || sec == 0 && usec == 0 {
		return 0, badReply(fmt.Sprintf("time %d s %d µs is not a positive time", sec, usec), raw)
	}
	return sec*1_000_000 + usec, nil
}
