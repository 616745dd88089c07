package load

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"net"
	"strconv"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// This file is the Redis protocol (RESP2 and RESP3) as a wireConn speaks it: commands written
// from go-redis argument lists, replies read into the values go-redis's own reader gives, so that
// the algorithms' decoders and ErrorKindOf see the same replies and errors on either path.

// replyError is an error reply of Redis: its text, as go-redis's own error replies are. It is a
// redis.Error, so ErrorKindOf, Classify and redis.HasErrorPrefix treat it as they treat go-redis's.
type replyError string

func (e replyError) Error() string { return string(e) }

// RedisError marks replyError as a redis.Error.
func (replyError) RedisError() {}

var _ redis.Error = replyError("")

// errProtocol is what a reply that is not RESP wraps: the connection cannot be read further.
var errProtocol = errors.New("load: bad RESP reply")

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
	return b, fmt.Errorf("load: cannot write a command argument of type %T", a)
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

// respReader reads replies from a connection through a buffer of its own. Not safe for
// concurrent use.
//
// On a connection that gives its file descriptor (TCP and Unix sockets; not TLS), send writes a
// request with write(2) itself, from inside Go's network poller's read (syscall.RawConn), and
// then waits for the socket to become readable before it reads: right after a request is
// written its reply is not there yet, and a read would only return EAGAIN before the poller's
// wait. That saves one system call per round trip. The write must happen inside the poller's
// read: the poller forgets a readiness it saw before the read began, so a reply that came before
// would never wake the wait.
type respReader struct {
	r        io.Reader
	rc       syscall.RawConn // nil when r gives no file descriptor
	network  string          // r's network, for errors
	buf      []byte
	pos, end int
	// pending is the request the next read writes first (send); rest is what of it the socket
	// did not take at once, for send to write the usual way.
	pending, rest []byte
	// n and err are the result of the last read through rc; readFn is the function that makes
	// it, built once.
	n      int
	err    error
	readFn func(fd uintptr) bool
	// chunk is where the elements of small aggregates are taken from (elements); boxes holds
	// the integers and slices the replies are made of.
	chunk []any
	boxes boxes
}

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

func newRespReader(r io.Reader) *respReader {
	rd := &respReader{buf: make([]byte, 32<<10)}
	rd.readFn = rd.readFD
	rd.reset(r)
	return rd
}

// reset forgets what is buffered and reads from r from now on.
func (rd *respReader) reset(r io.Reader) {
	rd.r, rd.rc, rd.pos, rd.end, rd.network = r, nil, 0, 0, "tcp"
	if nc, ok := r.(net.Conn); ok {
		rd.network = nc.LocalAddr().Network()
	}
	rd.rc = rawConn(r)
}

// send writes b on w, the connection rd reads (the same net.Conn), and reads the first bytes of
// the reply into the buffer (see respReader). Its error is the write's or the read's.
func (rd *respReader) send(w io.Writer, b []byte) error {
	if rd.rc == nil {
		if _, err := w.Write(b); err != nil {
			return err
		}
		return rd.fill()
	}
	rd.pending, rd.rest = b, nil
	err := rd.fill()
	rd.pending = nil
	if rest := rd.rest; rest != nil && err == nil {
		// The socket's buffer was full: write the rest as Go does, waiting for room.
		rd.rest = nil
		if _, err := w.Write(rest); err != nil {
			return err
		}
		return rd.fill()
	}
	return err
}

// read reads what the connection has into the buffer after end (writing a pending request
// first).
func (rd *respReader) read() (int, error) {
	if rd.rc == nil {
		return rd.r.Read(rd.buf[rd.end:])
	}
	if err := rd.rc.Read(rd.readFn); err != nil {
		// The poller's error: a deadline passed, or the connection was closed.
		return 0, err
	}
	return rd.n, rd.err
}

// fill reads more into the buffer, keeping what is unread; it grows the buffer when it is full.
func (rd *respReader) fill() error {
	if rd.pos > 0 {
		rd.end = copy(rd.buf, rd.buf[rd.pos:rd.end])
		rd.pos = 0
	}
	if rd.end == len(rd.buf) {
		rd.buf = append(rd.buf, make([]byte, len(rd.buf))...)
	}
	n, err := rd.read()
	rd.end += n
	if n > 0 || rd.rest != nil {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// line returns the next line without its CRLF; it is valid until the next read.
func (rd *respReader) line() ([]byte, error) {
	from := rd.pos
	for {
		if i := bytes.IndexByte(rd.buf[from:rd.end], '\n'); i >= 0 {
			i += from
			if i == rd.pos || rd.buf[i-1] != '\r' {
				return nil, fmt.Errorf("%w: a line that does not end in CRLF", errProtocol)
			}
			l := rd.buf[rd.pos : i-1]
			rd.pos = i + 1
			if len(l) == 0 {
				return nil, fmt.Errorf("%w: an empty line", errProtocol)
			}
			return l, nil
		}
		from = rd.end - rd.pos // (fill moves the unread bytes to the start)
		if err := rd.fill(); err != nil {
			if err == io.EOF && rd.end > rd.pos {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		from += rd.pos
	}
}

// bulk returns the next n bytes and the CRLF after them, as a new string.
func (rd *respReader) bulk(n int) (string, error) {
	for rd.end-rd.pos < n+2 {
		if err := rd.fill(); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return "", err
		}
	}
	b := rd.buf[rd.pos : rd.pos+n+2]
	if b[n] != '\r' || b[n+1] != '\n' {
		return "", fmt.Errorf("%w: a bulk string of %d bytes does not end in CRLF", errProtocol, n)
	}
	rd.pos += n + 2
	return string(b[:n]), nil
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
// inside them as nil, error replies inside them as their replyError), a null as redis.Nil and an
// error reply as its replyError (the error). Attributes are skipped. Any other error means the
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
	case '+':
		return string(l[1:]), nil
	case '-':
		return nil, replyError(l[1:])
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
	case '(':
		n, ok := new(big.Int).SetString(string(l[1:]), 10)
		if !ok {
			return nil, fmt.Errorf("%w: big number %q", errProtocol, l)
		}
		return n, nil
	case '$', '=', '!':
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
			return nil, replyError(s)
		case '=':
			if len(s) < 4 || s[3] != ':' {
				return nil, fmt.Errorf("%w: verbatim string %q", errProtocol, s)
			}
			return s[4:], nil
		}
		return s, nil
	case '*', '~', '>':
		n, err := length(l)
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, redis.Nil
		}
		return rd.aggregate(n)
	case '%':
		n, err := length(l)
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, redis.Nil
		}
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
	case '|':
		n, err := length(l)
		if err != nil {
			return nil, err
		}
		for range 2 * max(n, 0) {
			if _, err := rd.element(); err != nil {
				return nil, err
			}
		}
		return rd.reply()
	}
	return nil, fmt.Errorf("%w: %.100q", errProtocol, l)
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

// element reads a reply inside an aggregate: a null is nil and an error reply is its replyError,
// as values.
func (rd *respReader) element() (any, error) {
	v, err := rd.reply()
	if err == redis.Nil {
		return nil, nil
	}
	if re, ok := err.(replyError); ok {
		return re, nil
	}
	return v, err
}
