package algorithms

import "fmt"

// badReply wraps ErrBadReply with what was expected and the raw reply.
func badReply(what string, raw any) error {
	return fmt.Errorf("%w: %s, got %#v", ErrBadReply, what, raw)
}

// Ints decodes raw as an array of exactly n integers. Any other shape or element type is an error
// wrapping ErrBadReply that shows the raw reply.
func Ints(raw any, n int) ([]int64, error) {
	arr, ok := raw.([]any)
	if !ok {
		return nil, badReply(fmt.Sprintf("want an array of %d integers", n), raw)
	}
	if len(arr) != n {
		return nil, badReply(fmt.Sprintf("want %d elements, got %d", n, len(arr)), raw)
	}
	out := make([]int64, n)
	for i, e := range arr {
		v, ok := e.(int64)
		if !ok {
			return nil, badReply(fmt.Sprintf("element %d: want an integer", i+1), raw)
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
