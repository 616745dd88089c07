package verify

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/limitbench/limitbench/internal/clock"
	"github.com/limitbench/limitbench/internal/load"
)

// The sorted log file: the encoding a segment writes its admission logs in for `limitbench
// merge` (WriteSorted), read back as a stream of events in time order (LogReader).
//
// It is a gzip stream (RFC 1952, compress/gzip) of:
//
//	"lbas" 1                        kind and version
//	varint Origin                   µs since the Unix epoch
//	uvarint flags                   1 SharedClock, 2 ClientClock, 4 Server, 8 OneClock
//	varint Offset, varint Err       the server's offset and its error in ns, with flag 4
//	uvarint Narrowed, Mismatched, Dropped
//	uvarint n                       the number of events
//	n events, in the order of their packed times (Lo, then Hi, then Kind), each as
//	  uvarint Lo − the previous event's Lo (the first: Lo − MinLo)
//	  uvarint the width code and kind (the low 24 bits of the packed times)
//	  uvarint Subject, uvarint Client, uvarint Permits
//
// Sorted, the gaps between events are small and most widths are 0 (a server-clock decision
// narrowed to its µs), so an event takes a few bytes before compression; see docs/segments.md
// for what a real run's events take on disk.
const sortedLogKind, sortedLogVersion = "lbas", 1

// WriteSorted writes l's events, sorted by their times, in the sorted log file encoding (see
// LogReader), to w. It sorts a copy of the events: while it runs, l takes twice its size.
func (l *AdmissionLog) WriteSorted(w io.Writer) error {
	ev := l.Events()
	slices.SortFunc(ev, func(a, b Event) int { return cmpTime(&a, &b) })
	zw, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(zw, 1<<16)
	b := make([]byte, 0, 64)
	b = append(b, sortedLogKind...)
	b = append(b, sortedLogVersion)
	b = binary.AppendVarint(b, l.Origin)
	b = binary.AppendUvarint(b, l.flags())
	if l.Server != nil {
		b = binary.AppendVarint(b, int64(l.Server.Offset))
		b = binary.AppendVarint(b, int64(l.Server.Err))
	}
	for _, v := range []uint64{l.Narrowed, l.Mismatched, l.Dropped, uint64(len(ev))} {
		b = binary.AppendUvarint(b, v)
	}
	_, _ = bw.Write(b) // a bufio.Writer keeps its first error for Flush
	prev := uint64(0)
	for i := range ev {
		e := &ev[i]
		lo := e.t >> loShift
		b = binary.AppendUvarint(b[:0], lo-prev)
		prev = lo
		b = binary.AppendUvarint(b, e.t&(1<<loShift-1))
		b = binary.AppendUvarint(b, uint64(e.Subject))
		b = binary.AppendUvarint(b, uint64(e.Client))
		b = binary.AppendUvarint(b, uint64(e.Permits))
		_, _ = bw.Write(b)
	}
	return errors.Join(bw.Flush(), zw.Close())
}

// flags returns the clock flags of the encodings' heads.
func (l *AdmissionLog) flags() uint64 {
	var flags uint64
	if l.SharedClock {
		flags |= 1
	}
	if l.ClientClock {
		flags |= 2
	}
	if l.Server != nil {
		flags |= 4
	}
	if l.OneClock {
		flags |= 8
	}
	return flags
}

// LogReader reads an admission log file as a stream of events in time order: the order of
// their packed times (Lo, then Hi, then Kind), relative to Head.Origin. It reads the sorted log
// file (WriteSorted) as it goes, holding a buffer and the decompressor's window, whatever the
// log's length. It also reads the older encoding, MarshalBinary's (an uncompressed log, in the
// order the events were recorded): that one it reads whole and sorts, so it holds every event
// (16 bytes each) until it is let go.
//
// Next returns false at the end of the events or at the first error, which Err returns (wrapping
// load.ErrEncoding for bytes that are not a log or end early, the gzip checksum included).
type LogReader struct {
	// Head is the log's origin, clock and counts, without events.
	Head AdmissionLog
	// N is the number of events the log holds.
	N int64

	zr   *gzip.Reader
	br   *bufio.Reader
	read int64
	prev uint64
	mem  []Event // the older encoding's events, sorted
	err  error
}

// logReadBuffer is the size of a LogReader's two buffers, of the file and of its decompressed
// bytes: small, since a merge of many segments reads two logs of each at once.
const logReadBuffer = 8 << 10

// NewLogReader returns a reader of the admission log file r holds, having read its head. Errors
// wrap load.ErrEncoding when r does not hold an admission log.
func NewLogReader(r io.Reader) (*LogReader, error) {
	in := bufio.NewReaderSize(r, logReadBuffer)
	magic, err := in.Peek(2)
	if err != nil {
		return nil, fmt.Errorf("%w: admission log: %w", load.ErrEncoding, err)
	}
	if magic[0] != 0x1f || magic[1] != 0x8b { // not gzip: the older, uncompressed encoding
		return readWholeLog(in)
	}
	zr, err := gzip.NewReader(in)
	if err != nil {
		return nil, fmt.Errorf("%w: admission log: %w", load.ErrEncoding, err)
	}
	lr := &LogReader{zr: zr, br: bufio.NewReaderSize(zr, logReadBuffer)}
	if err := lr.head(); err != nil {
		return nil, fmt.Errorf("%w: admission log: %w", load.ErrEncoding, err)
	}
	return lr, nil
}

// readWholeLog reads the older encoding (AdmissionLog.MarshalBinary) whole and sorts it.
func readWholeLog(r io.Reader) (*LogReader, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%w: admission log: %w", load.ErrEncoding, err)
	}
	var l AdmissionLog
	if err := l.UnmarshalBinary(b); err != nil {
		return nil, err
	}
	ev := l.Events()
	slices.SortFunc(ev, func(a, b Event) int { return cmpTime(&a, &b) })
	lr := &LogReader{N: int64(len(ev)), mem: ev}
	l.chunks, l.cur, l.n = nil, nil, 0
	lr.Head = l
	return lr, nil
}

// head reads the sorted file's head.
func (r *LogReader) head() error {
	var kind [5]byte
	if _, err := io.ReadFull(r.br, kind[:]); err != nil {
		return err
	}
	if string(kind[:4]) != sortedLogKind {
		return fmt.Errorf("kind %q, want %q", kind[:4], sortedLogKind)
	}
	if kind[4] != sortedLogVersion {
		return fmt.Errorf("version %d of %q, this limitbench reads version %d", kind[4], sortedLogKind, sortedLogVersion)
	}
	var errs []error
	vi := func() int64 {
		v, err := binary.ReadVarint(r.br)
		errs = append(errs, err)
		return v
	}
	uv := func() uint64 {
		v, err := binary.ReadUvarint(r.br)
		errs = append(errs, err)
		return v
	}
	h := &r.Head
	h.Origin = vi()
	flags := uv()
	if flags&^15 != 0 {
		return fmt.Errorf("unknown clock flags %#x", flags)
	}
	h.SharedClock, h.ClientClock, h.OneClock = flags&1 != 0, flags&2 != 0, flags&8 != 0
	if flags&4 != 0 {
		h.Server = &clock.Offset{Offset: time.Duration(vi()), Err: time.Duration(vi())}
	}
	h.Narrowed, h.Mismatched, h.Dropped = uv(), uv(), uv()
	n := uv()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if n > 1<<62 {
		return fmt.Errorf("%d events", n)
	}
	r.N = int64(n)
	return nil
}

// Next returns the next event, or false at the end of the log or at an error (see Err).
func (r *LogReader) Next() (Event, bool) {
	if r.err != nil || r.read >= r.N {
		if r.err == nil && r.zr != nil && r.read == r.N {
			r.read++ // once: the rest of the stream must be empty, its checksum right
			if n, err := io.Copy(io.Discard, r.br); err != nil || n > 0 {
				r.err = fmt.Errorf("%w: admission log: %d bytes after its %d events (%v)", load.ErrEncoding, n, r.N, err)
			}
		}
		return Event{}, false
	}
	if r.mem != nil {
		e := r.mem[r.read]
		r.read++
		return e, true
	}
	var v [5]uint64
	for i := range v {
		x, err := binary.ReadUvarint(r.br)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			r.err = fmt.Errorf("%w: admission log: event %d of %d: %w", load.ErrEncoding, r.read, r.N, err)
			return Event{}, false
		}
		v[i] = x
	}
	lo := r.prev + v[0]
	if lo >= 1<<loBits || v[1] >= 1<<loShift || v[2] > 1<<32-1 || v[3] > 1<<16-1 || v[4] > 1<<16-1 {
		r.err = fmt.Errorf("%w: admission log: event %d of %d is out of range", load.ErrEncoding, r.read, r.N)
		return Event{}, false
	}
	r.prev = lo
	r.read++
	return Event{t: lo<<loShift | v[1], Subject: uint32(v[2]), Client: uint16(v[3]), Permits: uint16(v[4])}, true
}

// Err returns the error that ended the events early, or nil.
func (r *LogReader) Err() error { return r.err }

// Sorted reports whether the log was read from the sorted file, as it goes, rather than whole
// from the older encoding.
func (r *LogReader) Sorted() bool { return r.mem == nil }

// SortedLog returns l's sorted log file (WriteSorted) as bytes.
func (l *AdmissionLog) SortedLog() ([]byte, error) {
	var b bytes.Buffer
	if err := l.WriteSorted(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
