//go:build !unix

package wire

import (
	"errors"
	"io"
	"syscall"
)

// rawConn returns nil outside Unix: the reader reads and writes through the connection as Go
// does, one system call more per round trip than respReader's write from inside the poller.
func rawConn(io.Reader) syscall.RawConn { return nil }

// readFD is never called outside Unix (rawConn gives no file descriptor); it reports that.
func (rd *respReader) readFD(uintptr) bool {
	rd.n, rd.err = 0, errors.ErrUnsupported
	return true
}
