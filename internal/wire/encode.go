package wire

import (
	"encoding"
	"fmt"
	"strconv"
)

// This file writes commands in the Redis protocol (RESP): each a RESP array of bulk strings made
// from a go-redis argument list, as go-redis writes it.

// appendCommand appends the RESP array of args to b, each argument written as go-redis writes it
// (strings and bytes as they are, integers and floats in decimal, bools as 1 or 0, nil as an empty
// string, an encoding.BinaryMarshaler as its bytes; a pointer to an int64 as what it points to).
// Any other type is an error, and b is then returned as it was.
func appendCommand(b []byte, args []any) ([]byte, error) {
	start := len(b)
	b = appendHeader(b, '*', len(args))
	for _, a := range args {
		var err error
		if b, err = appendArg(b, a); err != nil {
			return b[:start], err
		}
	}
	return b, nil
}

// appendArg appends one argument of a command as a bulk string (see appendCommand).
func appendArg(b []byte, a any) ([]byte, error) {
	switch v := a.(type) {
	case nil:
		return appendBulk(b, nil), nil
	case string:
		return appendBulkString(b, v), nil
	case []byte:
		return appendBulk(b, v), nil
	case int:
		return appendBulkInt(b, int64(v)), nil
	case int64:
		return appendBulkInt(b, v), nil
	case *int64:
		n := int64(0)
		if v != nil {
			n = *v
		}
		return appendBulkInt(b, n), nil
	case int32:
		return appendBulkInt(b, int64(v)), nil
	case uint16:
		return appendBulkInt(b, int64(v)), nil
	case uint32:
		return appendBulkInt(b, int64(v)), nil
	case uint64:
		var num [20]byte
		return appendBulk(b, strconv.AppendUint(num[:0], v, 10)), nil
	case float64:
		var num [32]byte
		return appendBulk(b, strconv.AppendFloat(num[:0], v, 'f', -1, 64)), nil
	case bool:
		if v {
			return appendBulkInt(b, 1), nil
		}
		return appendBulkInt(b, 0), nil
	case encoding.BinaryMarshaler:
		bs, err := v.MarshalBinary()
		if err != nil {
			return b, err
		}
		return appendBulk(b, bs), nil
	}
	return b, fmt.Errorf("wire: cannot write a command argument of type %T", a)
}

// cmdEncoder writes commands as appendCommand does, and keeps what does not change from one
// request to the next of a Call: a Call sends the same command again and again with its
// arguments' array unchanged but for what its pointers point to (see algorithms.Call), and a
// worker sends its Calls' commands in the same order, batch after batch. For each place in a
// batch it keeps the last array it wrote there (by the address of its first element) and, once
// it has seen the same array there twice, the encoding of the array's header and of its leading
// arguments that are comparable values (the verb, a script's SHA, the number of keys; not a
// pointer or a marshaler): it then writes those again by copying, once it has checked that they
// are still the same values. A command made for one request only (a WAIT) costs nothing to
// keep. Not safe for concurrent use.
type cmdEncoder struct {
	places []encoded
}

// encoded is what a cmdEncoder keeps of the array last written at one place of a batch: its
// address, and when it was seen twice there, the encoding of its header and of its first
// len(vals) arguments.
type encoded struct {
	key  *any
	n    int
	vals []any
	enc  []byte // nil until the array was seen twice
}

// append appends the RESP array of args, the command at place i of a batch, to b (see
// appendCommand).
func (e *cmdEncoder) append(b []byte, i int, args []any) ([]byte, error) {
	if len(args) == 0 {
		return appendCommand(b, args)
	}
	for len(e.places) <= i {
		e.places = append(e.places, encoded{})
	}
	k := &e.places[i]
	key := &args[0]
	switch {
	case k.key != key || k.n != len(args):
		// A new array here: remember it, and write it in full.
		*k = encoded{key: key, n: len(args)}
		return appendCommand(b, args)
	case k.enc == nil:
		k.learn(args)
	default:
		for j, v := range k.vals {
			if args[j] != v {
				k.learn(args)
				break
			}
		}
	}
	start := len(b)
	b = append(b, k.enc...)
	for _, a := range args[len(k.vals):] {
		var err error
		if b, err = appendArg(b, a); err != nil {
			return b[:start], err
		}
	}
	return b, nil
}

// learn encodes the header and the leading comparable values of args.
func (k *encoded) learn(args []any) {
	k.enc = appendHeader(k.enc[:0], '*', len(args))
	k.vals = k.vals[:0]
	for _, a := range args {
		switch a.(type) {
		case string, int, int64, int32, uint16, uint32, uint64, bool:
		default:
			return
		}
		enc, err := appendArg(k.enc, a)
		if err != nil {
			return
		}
		k.enc = enc
		k.vals = append(k.vals, a)
	}
}

// appendHeader appends a RESP type byte, n in decimal and CRLF.
func appendHeader(b []byte, kind byte, n int) []byte {
	b = append(b, kind)
	if n >= 0 && n < 10 {
		b = append(b, byte('0'+n))
	} else if n >= 10 && n < 100 {
		b = append(b, byte('0'+n/10), byte('0'+n%10))
	} else {
		b = strconv.AppendInt(b, int64(n), 10)
	}
	return append(b, '\r', '\n')
}

func appendBulk(b, v []byte) []byte {
	b = appendHeader(b, '$', len(v))
	b = append(b, v...)
	return append(b, '\r', '\n')
}

func appendBulkString(b []byte, v string) []byte {
	b = appendHeader(b, '$', len(v))
	b = append(b, v...)
	return append(b, '\r', '\n')
}

func appendBulkInt(b []byte, n int64) []byte {
	if n >= 0 && n < 10 {
		return append(b, '$', '1', '\r', '\n', byte('0'+n), '\r', '\n')
	}
	var num [20]byte
	return appendBulk(b, strconv.AppendInt(num[:0], n, 10))
}
