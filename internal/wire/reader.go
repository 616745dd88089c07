package wire

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"syscall"
)

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
