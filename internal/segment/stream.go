package segment

import (
	"bytes"
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// logSource is one admission log of one segment being read as a stream in time order: the
// measured part's or the warmup's.
type logSource struct {
	r      *verify.LogReader
	c      io.Closer // the file, or nil for bytes already in memory
	name   string    // the directory and file, for errors
	shift  int64     // µs that move its events onto the merged history's Base
	warmup bool
	next   verify.Event
}

// openLog opens the admission log of entry e of the segment in dir (warmup: its warmup's): the
// bytes its Partial holds, else the file it names.
func openLog(dir string, e *result.Entry, warmup bool) (*logSource, error) {
	pt := e.Partial
	file, data := pt.Log, pt.LogData
	if warmup {
		file, data = pt.WarmupLog, pt.WarmupLogData
	}
	s := &logSource{name: filepath.Join(dir, filepath.Base(file)), warmup: warmup}
	var in io.Reader
	if data != nil {
		in = bytes.NewReader(data)
	} else {
		f, err := os.Open(s.name)
		if err != nil {
			return nil, fmt.Errorf("%s: admission log: %w", e.Name(), err)
		}
		s.c, in = f, f
	}
	r, err := verify.NewLogReader(in)
	if err != nil {
		_ = s.close()
		return nil, fmt.Errorf("%s: %w", s.name, err)
	}
	s.r = r
	return s, nil
}

func (s *logSource) close() error {
	if s.c == nil {
		return nil
	}
	return s.c.Close()
}

// advance reads s's next event, moved onto the merged Base; false at its end. An event that no
// longer fits an Event once moved is counted in dropped.
func (s *logSource) advance(dropped *uint64) (bool, error) {
	for {
		e, ok := s.r.Next()
		if !ok {
			if err := s.r.Err(); err != nil {
				return false, fmt.Errorf("%s: %w", s.name, err)
			}
			return false, nil
		}
		if s.shift != 0 {
			var err error
			if e, err = e.Shift(s.shift); err != nil {
				*dropped++
				continue
			}
		}
		s.next = e
		return true, nil
	}
}

// logMerge is the k-way merge of the segments' logs by time: a heap of the sources by their
// next event's Lo (then Hi, then kind, then warmup first), so that the events come out in the
// order a verify.MeasurementStream can be advanced behind.
type logMerge struct {
	srcs    []*logSource
	Dropped uint64 // events that did not fit the merged Base
}

func (m *logMerge) Len() int { return len(m.srcs) }
func (m *logMerge) Less(i, j int) bool {
	a, b := m.srcs[i], m.srcs[j]
	if c := cmp.Or(cmp.Compare(a.next.Lo(), b.next.Lo()), cmp.Compare(a.next.Hi(), b.next.Hi()),
		cmp.Compare(a.next.Kind(), b.next.Kind())); c != 0 {
		return c < 0
	}
	return a.warmup && !b.warmup
}
func (m *logMerge) Swap(i, j int) { m.srcs[i], m.srcs[j] = m.srcs[j], m.srcs[i] }
func (m *logMerge) Push(x any)    { m.srcs = append(m.srcs, x.(*logSource)) }
func (m *logMerge) Pop() any {
	s := m.srcs[len(m.srcs)-1]
	m.srcs = m.srcs[:len(m.srcs)-1]
	return s
}

// run reads every source to its end and calls fn with each event in time order, and whether it
// is the warmup's; it closes the sources. It returns the first read error.
func (m *logMerge) run(srcs []*logSource, fn func(e verify.Event, warmup bool)) error {
	var errs []error
	for _, s := range srcs {
		ok, err := s.advance(&m.Dropped)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			m.srcs = append(m.srcs, s)
		}
	}
	defer func() {
		for _, s := range srcs {
			_ = s.close() // read only
		}
	}()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	heap.Init(m)
	for len(m.srcs) > 0 {
		s := m.srcs[0]
		fn(s.next, s.warmup)
		ok, err := s.advance(&m.Dropped)
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(m, 0)
		} else {
			heap.Pop(m)
		}
	}
	return nil
}
