package wire

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// This file reads replies in the Redis protocol (RESP2 and RESP3) into the values go-redis's own
// reader gives, so that the algorithms' decoders and the load's error classes see the same
// replies and errors on either path.

// ReplyError is an error reply of Redis: its text, as go-redis's own error replies are. It is a
// redis.Error, so load.ErrorKindOf, load.Classify and redis.HasErrorPrefix treat it as they
// treat go-redis's.
type ReplyError string

// Error returns Redis's words.
func (e ReplyError) Error() string { return string(e) }

// RedisError marks ReplyError as a redis.Error.
func (ReplyError) RedisError() {}

var _ redis.Error = ReplyError("")

// errProtocol is what a reply that is not RESP wraps: the connection cannot be read further.
var errProtocol = errors.New("wire: bad RESP reply")

// chunkLen is the number of elements of a chunk, and the most an aggregate takes from one.
const chunkLen = 256

// elements returns a slice of n elements for an aggregate reply: one of its own for a large one,
// else the next n of the reader's chunk (a new chunk when it has fewer), capped at n so that
// appending to it never writes into another reply's elements. Replies share a chunk's memory,
// which lives as long as any of them does; it saves an allocation per reply.
func (rd *respReader) elements(n int) []any {
	if n > chunkLen/4 {
		return make([]any, n)
	}
	if n > len(rd.chunk) {
		rd.chunk = make([]any, chunkLen)
	}
	v := rd.chunk[:n:n]
	rd.chunk = rd.chunk[n:]
	return v
}

// parseInt parses a RESP integer (an optional minus sign and decimal digits).
func parseInt(b []byte) (int64, error) {
	if len(b) == 0 {
		return 0, fmt.Errorf("%w: an empty number", errProtocol)
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, fmt.Errorf("%w: a lone minus sign", errProtocol)
		}
	}
	if len(b) > 19 {
		return 0, fmt.Errorf("%w: a number of %d digits", errProtocol, len(b))
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: %q is not a number", errProtocol, b)
		}
		n = n*10 + uint64(c-'0')
	}
	if neg {
		if n > 1<<63 {
			return 0, fmt.Errorf("%w: -%s overflows", errProtocol, b)
		}
		return -int64(n), nil
	}
	if n > math.MaxInt64 {
		return 0, fmt.Errorf("%w: %s overflows", errProtocol, b)
	}
	return int64(n), nil
}

// length parses the length of an aggregate or bulk reply; -1 is a null.
func length(l []byte) (int, error) {
	n, err := parseInt(l[1:])
	if err != nil {
		return 0, err
	}
	if n < -1 || n > math.MaxInt32 {
		return 0, fmt.Errorf("%w: length %d", errProtocol, n)
	}
	return int(n), nil
}

// reply reads one reply and returns what go-redis's reader returns for it: a status or a bulk or
// verbatim string as a string, an integer as an int64, a double as a float64, a boolean as a bool,
// a big number as a *big.Int, an array, set or push as a []any, a map as a map[any]any (nulls
// inside them as nil, error replies inside them as their ReplyError), a null as redis.Nil and an
// error reply as its ReplyError (the error). Attributes are skipped. Any other error means the
// connection cannot be read further.
func (rd *respReader) reply() (any, error) {
	if rd.end-rd.pos > 3 {
		switch rd.buf[rd.pos] {
		case ':':
			if n, ok := rd.number(); ok {
				return rd.boxes.int64(n), nil
			}
		case '*':
			at := rd.pos
			if n, ok := rd.number(); ok {
				if n >= 0 && n <= chunkLen/4 {
					return rd.aggregate(int(n))
				}
				rd.pos = at // (a large or null array: the general way)
			}
		}
	}
	l, err := rd.line()
	if err != nil {
		return nil, err
	}
	switch l[0] {
	case '$', '=', '!':
		return rd.blob(l)
	case '*', '~', '>', '%', '|':
		return rd.nested(l)
	}
	return rd.simple(l)
}

// simple returns the reply whose whole is its line l: a status, an error, an integer, a null, a
// boolean, a double or a big number (see reply).
func (rd *respReader) simple(l []byte) (any, error) {
	switch l[0] {
	case '+':
		return string(l[1:]), nil
	case '-':
		return nil, ReplyError(l[1:])
	case ':':
		n, err := parseInt(l[1:])
		if err != nil {
			return nil, err
		}
		return rd.boxes.int64(n), nil
	case '_':
		return nil, redis.Nil
	case '#':
		switch string(l[1:]) {
		case "t":
			return true, nil
		case "f":
			return false, nil
		}
		return nil, fmt.Errorf("%w: boolean %q", errProtocol, l)
	case ',':
		return double(l)
	case '(':
		n, ok := new(big.Int).SetString(string(l[1:]), 10)
		if !ok {
			return nil, fmt.Errorf("%w: big number %q", errProtocol, l)
		}
		return n, nil
	}
	return nil, fmt.Errorf("%w: %.100q", errProtocol, l)
}

// double parses the line l of a double reply as a float64, "inf", "-inf" and "nan" included.
func double(l []byte) (any, error) {
	switch s := string(l[1:]); s {
	case "inf":
		return math.Inf(1), nil
	case "-inf":
		return math.Inf(-1), nil
	case "nan", "-nan":
		return math.NaN(), nil
	default:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: double %q", errProtocol, l)
		}
		return f, nil
	}
}

// blob reads the string that the header line l of a bulk string, a verbatim string or a blob
// error announces (see reply).
func (rd *respReader) blob(l []byte) (any, error) {
	n, err := length(l)
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, redis.Nil
	}
	kind := l[0] // (reading the string may move the buffer under l)
	s, err := rd.bulk(n)
	if err != nil {
		return nil, err
	}
	switch kind {
	case '!':
		return nil, ReplyError(s)
	case '=':
		if len(s) < 4 || s[3] != ':' {
			return nil, fmt.Errorf("%w: verbatim string %q", errProtocol, s)
		}
		return s[4:], nil
	}
	return s, nil
}

// nested reads the elements that the header line l of an array, a set, a push, a map or an
// attribute announces; an attribute is skipped, and the reply after it is read (see reply).
func (rd *respReader) nested(l []byte) (any, error) {
	n, err := length(l)
	if err != nil {
		return nil, err
	}
	switch kind := l[0]; {
	case kind == '|':
		for range 2 * max(n, 0) {
			if _, err := rd.element(); err != nil {
				return nil, err
			}
		}
		return rd.reply()
	case n < 0:
		return nil, redis.Nil
	case kind == '%':
		return rd.mapOf(n)
	}
	return rd.aggregate(n)
}

// mapOf reads the n key-value pairs of a map reply.
func (rd *respReader) mapOf(n int) (any, error) {
	m := make(map[any]any, n)
	for range n {
		k, err := rd.reply()
		if err != nil {
			return nil, err
		}
		switch k.(type) {
		case []any, map[any]any:
			return nil, fmt.Errorf("%w: a map key of type %T", errProtocol, k)
		}
		if m[k], err = rd.element(); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// number reads, from the buffer alone, the line at pos as a type byte and a decimal integer of
// at most 18 digits: the common integer reply and array header. false, with nothing read, when
// the buffer does not hold the whole line or it is anything else: reply then reads it the
// general way.
func (rd *respReader) number() (int64, bool) {
	i := rd.pos + 1
	neg := rd.buf[i] == '-'
	if neg {
		i++
	}
	start := i
	var n int64
	for i < rd.end && i-start <= 18 {
		c := rd.buf[i]
		if c == '\r' {
			if i == start || i+1 >= rd.end || rd.buf[i+1] != '\n' {
				return 0, false
			}
			rd.pos = i + 2
			if neg {
				return -n, true
			}
			return n, true
		}
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
		i++
	}
	return 0, false
}

// aggregate reads the n elements of an array (or set or push) reply.
func (rd *respReader) aggregate(n int) (any, error) {
	v := rd.elements(n)
	for i := range v {
		var err error
		if v[i], err = rd.element(); err != nil {
			return nil, err
		}
	}
	return rd.boxes.slice(v), nil
}

// element reads a reply inside an aggregate: a null is nil and an error reply is its ReplyError,
// as values.
func (rd *respReader) element() (any, error) {
	v, err := rd.reply()
	if err == redis.Nil {
		return nil, nil
	}
	if re, ok := err.(ReplyError); ok {
		return re, nil
	}
	return v, err
}
