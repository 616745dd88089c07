package verify

import (
	"container/heap"
	"errors"
	"fmt"
	"math"

	"github.com/limitbench/limitbench/algorithms"
)

// Stream is the streaming checker: it takes a history's events as they arrive, checks each
// scope's admissions as soon as every event that could share a violation with them has
// arrived, and keeps only what a later violation could still include; Finish then reports
// exactly what Check reports on the whole history (the package doc, "Streaming", is its
// specification). Not safe for concurrent use.
//
// Events are added with Add in any order, provided that each arrives before Advance has been
// told that no event of a smaller Lo will come; one that arrives later is Late, left out and
// counted (its admission may be missing, as a dropped outcome's is).
type Stream struct {
	hdr  Log // the names, Base, From and Fresh of the history; no events
	lims []*streamLimit
	rep  Report // its counts, kept as events are added

	pend     reorder
	out      []Event // released since the last step
	released int64   // every event of Lo below it has been released
	stepped  int64   // the frontier of the last step

	// The history's span and permits (admitted and unknown), for limit.overflow.
	lo, hi, permits int64
	added           int64 // events added, Late ones included (their index in errors)
	late            int64
	errs            []error
	more            int
	err             error // a check that cannot go on (overflow)
	finished        bool
}

// Stream errors.
var (
	// ErrFinished is returned by Finish when it was called before.
	ErrFinished = errors.New("stream already finished")
)

// NewStream returns a Stream that checks c over the history whose names, Base, From and Fresh
// are hdr's (hdr.Events must be empty: events come through Add). It returns an error wrapping
// ErrBadContract or ErrBadLog when the contract or the header cannot be checked.
func NewStream(c algorithms.Contract, hdr *Log) (*Stream, error) {
	lims, err := flatten(c)
	if err != nil {
		return nil, fmt.Errorf("stream: %w", err)
	}
	h := *hdr
	if len(h.Events) > 0 {
		return nil, fmt.Errorf("stream: %w: the header holds %d events", ErrBadLog, len(h.Events))
	}
	if err := h.validate(); err != nil {
		return nil, fmt.Errorf("stream: %w", err)
	}
	s := &Stream{hdr: h, lo: math.MaxInt64, hi: math.MinInt64, released: math.MinInt64, stepped: math.MinInt64}
	s.pend.init()
	for _, lim := range lims {
		s.lims = append(s.lims, newStreamLimit(s, lim))
	}
	return s, nil
}

// Add takes one event, its times relative to the header's Base. An event of Lo below what
// Advance released is Late: counted, not checked. An invalid event (a subject or client out of
// range, zero permits on an admission or unknown outcome) makes Finish return the error Check
// would.
func (s *Stream) Add(e Event) {
	i := s.added
	s.added++
	if !s.valid(&e, i) {
		return
	}
	if e.Lo() < s.released {
		s.late++
		return
	}
	s.count(&e)
	s.pend.add(e)
}

// valid reports whether e can be checked, recording why not (as Log.validate words it).
func (s *Stream) valid(e *Event, i int64) bool {
	var msg string
	switch {
	case int(e.Subject) >= len(s.hdr.Subjects):
		msg = fmt.Sprintf("subject %d out of range (%d subjects)", e.Subject, len(s.hdr.Subjects))
	case int(e.Client) >= len(s.hdr.Clients):
		msg = fmt.Sprintf("client %d out of range (%d clients)", e.Client, len(s.hdr.Clients))
	case e.Permits == 0 && (e.Kind() == Admitted || e.Kind() == Unknown):
		msg = "zero permits"
	default:
		return true
	}
	if len(s.errs) == 5 {
		s.more++
	} else {
		s.errs = append(s.errs, fmt.Errorf("%w: event %d: %s", ErrBadLog, i, msg))
	}
	return false
}

// count adds e to the report's counts and the history's span.
func (s *Stream) count(e *Event) {
	r := &s.rep
	r.Events++
	switch e.Kind() {
	case Admitted:
		r.Admitted++
		r.AdmittedPermits += int64(e.Permits)
		r.MaxPermits = max(r.MaxPermits, int64(e.Permits))
		s.permits += int64(e.Permits)
	case Denied:
		r.Denied++
	case Unknown:
		r.Unknown++
		s.permits += int64(e.Permits)
	case Failed:
		r.Failed++
	}
	s.lo, s.hi = min(s.lo, e.Lo()), max(s.hi, e.Hi())
}

// Retained returns the number of events the stream holds: waiting for release, and kept in
// its scopes' queues (admissions, unknown outcomes, first-hit-window's denied and failed
// requests). It follows the contract's windows and the widest interval in flight, not the
// history's length (see the package doc, "Streaming").
func (s *Stream) Retained() int64 {
	n := s.pend.size() + int64(len(s.out))
	for _, sl := range s.lims {
		for _, sc := range sl.active {
			n += int64(sc.adm.size() + sc.unknown.size() + sc.rest.size())
		}
	}
	return n
}

// Late returns the number of events that arrived after Advance had passed their Lo: left out
// of the check, as dropped outcomes are.
func (s *Stream) Late() int64 { return s.late }

// Advance promises that every event added from now on has Lo ≥ t (relative µs). The events of
// smaller Lo are then released to the limits, in Lo order, and checked as far as they can be.
func (s *Stream) Advance(t int64) {
	if s.finished || t <= s.released {
		return
	}
	s.pend.release(t, func(ev []Event) { s.out = append(s.out, ev...) })
	s.released = t
	if len(s.out) >= s.chunk() || s.stepped == math.MinInt64 || t-s.stepped >= s.span() {
		s.step(t)
	}
}

// streamChunk is the fewest released events that make a step: a step sorts them and runs every
// active scope's sweeps, so it is worth a batch.
const streamChunk = 1 << 12

// chunk returns how many released events make a step: streamChunk, or 16 for each active scope
// when that is more, so that a step's cost per scope is spread over a few events of each.
func (s *Stream) chunk() int {
	n := streamChunk
	for _, sl := range s.lims {
		n = max(n, 16*len(sl.active))
	}
	return n
}

// span returns how far the frontier may move before a step: a quarter of the widest window,
// refill period or granularity, so that a scope keeps at most a few windows of events.
func (s *Stream) span() int64 {
	var w int64 = 1
	for _, sl := range s.lims {
		w = max(w, sl.lim.w, micros(sl.lim.c.RefillPer), sl.lim.g)
	}
	return max(1, w/4)
}

// step gives the events released since the last step to every limit and runs the sweeps of
// every active scope up to the frontier F.
func (s *Stream) step(F int64) {
	for _, sl := range s.lims {
		sl.take(s.out)
	}
	s.out, s.stepped = s.out[:0], F
	if s.err != nil {
		return
	}
	if err := s.overflow(); err != nil {
		s.err = err
		return
	}
	for _, sl := range s.lims {
		sl.step(F)
	}
}

// overflow reports whether a limit's arithmetic could overflow over the span seen so far, as
// Check refuses the whole history.
func (s *Stream) overflow() error {
	if s.rep.Events == 0 {
		return nil
	}
	for _, sl := range s.lims {
		if err := sl.lim.overflow(s.hi-s.lo, s.permits); err != nil {
			return fmt.Errorf("check: %w", err)
		}
	}
	return nil
}

// Finish releases and checks every event left and returns the Report that Check gives on the
// whole history (Late events aside), or the error Check would return.
func (s *Stream) Finish() (Report, error) {
	if s.finished {
		return Report{}, fmt.Errorf("stream: %w", ErrFinished)
	}
	s.finished = true
	if len(s.errs) > 0 {
		errs := s.errs
		if s.more > 0 {
			errs = append(errs, fmt.Errorf("%w: and %d more bad events", ErrBadLog, s.more))
		}
		return Report{}, fmt.Errorf("check: %w", errors.Join(errs...))
	}
	s.pend.release(posInf, func(ev []Event) { s.out = append(s.out, ev...) })
	s.released = posInf
	s.step(posInf)
	if s.err != nil {
		return Report{}, s.err
	}
	r := s.rep
	r.Limits = make([]LimitReport, len(s.lims))
	for i, sl := range s.lims {
		r.Limits[i] = sl.finish()
	}
	return r, nil
}

// reorder holds the events added but not yet released, in bins of 2^reorderShift µs of Lo, and
// releases them bin by bin (unsorted: each limit sorts by its scope). Events arrive nearly in Lo
// order, so add finds its bin in a small direct-mapped cache of recent bins, without a map look-up.
type reorder struct {
	bins  map[int64]*[]Event
	keys  heapOf[int64] // the bins' keys
	free  []*[]Event
	buf   []Event
	cache [reorderCache]reorderSlot // slot k mod reorderCache: bin k, when it is held
}

// reorderShift sets the width of a reorder bin: 2^10 µs, about a millisecond.
const reorderShift = 10

// reorderCache is the number of bins reorder.add finds without the map (a power of two).
const reorderCache = 16

// reorderSlot is a cached bin: bin is the bin of key k, or nil.
type reorderSlot struct {
	k   int64
	bin *[]Event
}

func (r *reorder) init() {
	r.bins, r.keys = map[int64]*[]Event{}, heapOf[int64]{less: func(a, b int64) bool { return a < b }}
}

func (r *reorder) add(e Event) {
	k := e.Lo() >> reorderShift
	c := &r.cache[k&(reorderCache-1)]
	if c.bin != nil && c.k == k {
		*c.bin = append(*c.bin, e)
		return
	}
	b := r.bins[k]
	if b == nil {
		heap.Push(&r.keys, k)
		if n := len(r.free); n > 0 {
			b, r.free = r.free[n-1], r.free[:n-1]
			*b = (*b)[:0]
		} else {
			b = new([]Event)
		}
		r.bins[k] = b
	}
	*b = append(*b, e)
	c.k, c.bin = k, b
}

// size returns the number of events held.
func (r *reorder) size() int64 {
	n := int64(0)
	for _, b := range r.bins {
		n += int64(len(*b))
	}
	return n
}

// release gives the events of Lo < t to give (posInf: all) and returns how many it gave.
func (r *reorder) release(t int64, give func([]Event)) int {
	out := r.buf[:0]
	for r.keys.Len() > 0 {
		k := r.keys.s[0]
		b := r.bins[k]
		if t != posInf && (k+1)<<reorderShift > t {
			// The bin that holds t: only its events below t go.
			n := partitionFunc(*b, func(e *Event) bool { return e.Lo() < t })
			out = append(out, (*b)[:n]...)
			*b = append((*b)[:0], (*b)[n:]...)
			break
		}
		out = append(out, *b...)
		r.free = append(r.free, b)
		delete(r.bins, k)
		if c := &r.cache[k&(reorderCache-1)]; c.bin == b {
			c.bin = nil
		}
		heap.Pop(&r.keys)
	}
	if len(out) > 0 {
		give(out)
	}
	r.buf = out[:0]
	return len(out)
}
