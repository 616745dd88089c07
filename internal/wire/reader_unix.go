//go:build unix

package wire

import (
	"io"
	"net"
	"os"
	"syscall"
)

// rawConn returns r's file descriptor access when r gives one (a TCP or Unix socket), else nil.
func rawConn(r io.Reader) syscall.RawConn {
	if sc, ok := r.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			return rc
		}
	}
	return nil
}

// readFD is the function rc.Read calls, first at once and then each time the socket is
// readable, until it returns true. With a request pending it writes it first and waits;
// otherwise it reads into the buffer.
func (rd *respReader) readFD(fd uintptr) bool {
	if rd.pending != nil {
		for len(rd.pending) > 0 {
			n, err := syscall.Write(int(fd), rd.pending)
			switch err {
			case nil:
				rd.pending = rd.pending[n:]
				continue
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				rd.rest, rd.pending = rd.pending, nil
				rd.n, rd.err = 0, nil
				return true
			}
			rd.pending = nil
			rd.n, rd.err = 0, &net.OpError{Op: "write", Net: rd.network, Err: os.NewSyscallError("write", err)}
			return true
		}
		rd.pending = nil // written: wait for the reply
		return false
	}
	for {
		n, err := syscall.Read(int(fd), rd.buf[rd.end:])
		switch err {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		case nil:
			rd.n, rd.err = n, nil
			if n == 0 {
				rd.err = io.EOF
			}
		default:
			rd.n, rd.err = 0, &net.OpError{Op: "read", Net: rd.network, Err: os.NewSyscallError("read", err)}
		}
		return true
	}
}
