package verify

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"os"
)

// spill keeps events for the end of a measurement: the first spillMem in memory, the others in
// a temporary file, so that what cannot be bounded (the unknown and failed outcomes of a long
// run full of errors) grows the disk rather than the heap. When the file cannot be written, the
// events stay in memory: none is lost.
type spill struct {
	dir  string
	mem  []Event
	f    *os.File
	w    *bufio.Writer
	n    int64 // events in the file
	err  error // the file's first error
	done bool  // closed: the file is gone
}

// spillMem is how many events a spill keeps in memory before it writes to its file.
const spillMem = 1 << 16

func (s *spill) add(e Event) {
	if len(s.mem) < spillMem || s.err != nil || s.done {
		s.mem = append(s.mem, e)
		return
	}
	if s.f == nil {
		f, err := os.CreateTemp(s.dir, "limitbench-spill-*")
		if err != nil {
			s.err = err
			s.mem = append(s.mem, e)
			return
		}
		s.f, s.w = f, bufio.NewWriterSize(f, 1<<16)
	}
	var b [eventSize]byte
	putEvent(b[:], e)
	if _, err := s.w.Write(b[:]); err != nil {
		s.err = err
		s.mem = append(s.mem, e)
		return
	}
	s.n++
}

// spilled returns the number of events in the file.
func (s *spill) spilled() int64 { return s.n }

// each calls fn with every event kept: those in the file, then those in memory.
func (s *spill) each(fn func(e Event)) error {
	if s.f != nil && !s.done {
		if err := s.w.Flush(); err != nil {
			return err
		}
		r := bufio.NewReaderSize(io.NewSectionReader(s.f, 0, s.n*eventSize), 1<<16)
		var b [eventSize]byte
		for range s.n {
			if _, err := io.ReadFull(r, b[:]); err != nil {
				return err
			}
			fn(getEvent(b[:]))
		}
	}
	for _, e := range s.mem {
		fn(e)
	}
	return nil
}

// close removes the file; the events in it are gone.
func (s *spill) close() error {
	if s.f == nil || s.done {
		return nil
	}
	s.done = true
	return errors.Join(s.f.Close(), os.Remove(s.f.Name()))
}

// putEvent writes e's 16 bytes as AdmissionLog's encoding does.
func putEvent(b []byte, e Event) {
	binary.LittleEndian.PutUint64(b[0:], e.t)
	binary.LittleEndian.PutUint32(b[8:], e.Subject)
	binary.LittleEndian.PutUint16(b[12:], e.Client)
	binary.LittleEndian.PutUint16(b[14:], e.Permits)
}

// getEvent reads what putEvent wrote.
func getEvent(b []byte) Event {
	return Event{t: binary.LittleEndian.Uint64(b), Subject: binary.LittleEndian.Uint32(b[8:]),
		Client: binary.LittleEndian.Uint16(b[12:]), Permits: binary.LittleEndian.Uint16(b[14:])}
}
