package load

import (
	"fmt"
	"time"
)

// The encoding of a Timeline (see Encoder).
const timelineKind, timelineVersion = "lbtl", 1

// The bounds BinFor keeps the timeline's bin within.
const (
	// MinBins is the fewest bins BinFor gives a measured part: about 50 points per line, enough
	// to see a burst of a 2 s run (20 ms bins) as a burst.
	MinBins = 50
	// MaxBins is the most bins BinFor gives a measured part: an hour of 1 s bins. It bounds what
	// a timeline adds to result.json (five numbers a bin, about 60 bytes of indented JSON: some
	// 220 kB per entry at most) and to an accuracy plot's SVG, whose 10-inch PNG shows no more
	// than about a thousand bins anyway. It wins over the contracts' windows: a run longer than
	// MaxBins windows gets bins wider than its narrowest window.
	MaxBins = 3600
	// MinBin is the narrowest bin: 1 ms, a contract window's resolution (windows are whole
	// milliseconds), finer than any rate the plots can show.
	MinBin = time.Millisecond
)

// BinFor returns the timeline bin for a measured part of length d, of a run whose contracts have
// the given windows (their window lengths, a token bucket's refill period; a window <= 0 is
// ignored): a round width of the 1-2-5 series (1 ms, 2 ms, 5 ms, 10 ms, … 1 s, 2 s, 5 s, …) that
//
//   - gives at least MinBins bins (width <= d/MinBins),
//   - is no wider than the narrowest window, so a burst inside one window shows in its own bin,
//   - gives at most MaxBins bins (width >= ⌈d/MaxBins⌉) and is at least MinBin wide,
//
// the widest such width that divides d (so that the last bin is a whole bin and its rate is not
// understated), or the widest such width when none divides d. When the bounds leave no round
// width, the width is a whole number of milliseconds between them, or the upper bound itself.
// When MaxBins or MinBin conflict with the others (a run longer than MaxBins of its windows, a
// window under 1 ms) they win: the width is the narrowest round width from max(⌈d/MaxBins⌉,
// MinBin) on, the first one that divides d within a factor of 10 if any does. A d <= 0 gives
// DefaultBin.
//
// For example a 2 s run of 1 s windows gets 20 ms bins (100 bins), a 10 s run 200 ms bins (50),
// a 60 s run 1 s bins (60), an hour of 100 ms windows 1 s bins (3,600: the cap).
func BinFor(d time.Duration, windows ...time.Duration) time.Duration {
	if d <= 0 {
		return DefaultBin
	}
	hi := d / MinBins
	for _, w := range windows {
		if w > 0 && w < hi {
			hi = w
		}
	}
	lo := max((d+MaxBins-1)/MaxBins, MinBin)
	if hi < lo {
		ws := roundWidths(lo, 10*lo)
		for _, w := range ws {
			if d%w == 0 {
				return w
			}
		}
		return ws[0] // the 1-2-5 series has a width in every factor of 2.5
	}
	ws := roundWidths(lo, hi)
	if len(ws) == 0 {
		if ms := hi.Truncate(time.Millisecond); ms >= lo {
			return ms
		}
		return hi
	}
	for i := len(ws) - 1; i >= 0; i-- {
		if d%ws[i] == 0 {
			return ws[i]
		}
	}
	return ws[len(ws)-1]
}

// roundWidths returns the widths of the 1-2-5 series of milliseconds within [lo, hi], ascending.
func roundWidths(lo, hi time.Duration) []time.Duration {
	var out []time.Duration
	for m := time.Millisecond; m <= hi; m *= 10 {
		for _, f := range []time.Duration{1, 2, 5} {
			if w := f * m; w >= lo && w <= hi {
				out = append(out, w)
			}
		}
	}
	return out
}

// Bin is one interval of a Timeline. Counts are requests, by the bin their intended time fell
// in; AdmittedPermits sums the cost of the admitted ones.
type Bin struct {
	Offered         uint64 // requests sent
	Admitted        uint64
	Denied          uint64
	Failed          uint64 // errors known not to have run
	Unknown         uint64 // errors that may have run
	AdmittedPermits uint64
}

// Timeline counts outcomes in bins of Width by intended time measured from Origin (offset from
// the run's start: Run uses the end of the warmup). An outcome before Origin is counted in
// Dropped. Not safe for concurrent use; Merge per-worker timelines at the end.
type Timeline struct {
	Origin time.Duration
	Width  time.Duration
	Bins   []Bin
	// Dropped counts outcomes intended before Origin.
	Dropped uint64
}

// NewTimeline returns an empty Timeline with bins of width (1 s when width <= 0) from origin,
// with room for span.
func NewTimeline(origin, width, span time.Duration) *Timeline {
	if width <= 0 {
		width = time.Second
	}
	n := 0
	if span > 0 {
		n = int((span + width - 1) / width)
	}
	return &Timeline{Origin: origin, Width: width, Bins: make([]Bin, 0, n)}
}

// Add counts o in the bin of its intended time.
func (t *Timeline) Add(o *Outcome) {
	d := o.Intended - t.Origin
	if d < 0 {
		t.Dropped++
		return
	}
	i := int(d / t.Width)
	for len(t.Bins) <= i {
		t.Bins = append(t.Bins, Bin{})
	}
	b := &t.Bins[i]
	b.Offered++
	switch o.Class {
	case ClassOK:
		if o.Decision.Allowed {
			b.Admitted++
			b.AdmittedPermits += uint64(o.Cost)
		} else {
			b.Denied++
		}
	case ClassFailed:
		b.Failed++
	default:
		b.Unknown++
	}
}

var _ Aggregator = (*Timeline)(nil)

// Fresh implements Aggregator: an empty Timeline with the same Origin and Width.
func (t *Timeline) Fresh() Aggregator {
	return NewTimeline(t.Origin, t.Width, time.Duration(cap(t.Bins))*t.Width)
}

// Finish implements Aggregator: Dropped.
func (t *Timeline) Finish() Counts { return Counts{Dropped: t.Dropped} }

// MarshalBinary encodes t: Origin and Width in ns, Dropped, then each bin's six counts.
func (t *Timeline) MarshalBinary() ([]byte, error) {
	e := NewEncoder(timelineKind, timelineVersion)
	e.Varint(int64(t.Origin))
	e.Varint(int64(t.Width))
	e.Uvarint(t.Dropped)
	e.Uvarint(uint64(len(t.Bins)))
	for _, b := range t.Bins {
		for _, v := range []uint64{b.Offered, b.Admitted, b.Denied, b.Failed, b.Unknown, b.AdmittedPermits} {
			e.Uvarint(v)
		}
	}
	return e.Encoding(), nil
}

// UnmarshalBinary decodes what MarshalBinary encoded into t, replacing what t held. Errors wrap
// ErrEncoding.
func (t *Timeline) UnmarshalBinary(b []byte) error {
	return Decode(t, b, timelineKind, timelineVersion, func(d *Decoder) (Timeline, error) {
		out := Timeline{Origin: time.Duration(d.Varint()), Width: time.Duration(d.Varint()), Dropped: d.Uvarint()}
		if d.err == nil && out.Width <= 0 {
			return out, d.Errorf("bin width %s", out.Width)
		}
		out.Bins = make([]Bin, d.Count(6)) // six counts of at least a byte each
		for i := range out.Bins {
			bin := &out.Bins[i]
			for _, dst := range []*uint64{&bin.Offered, &bin.Admitted, &bin.Denied, &bin.Failed, &bin.Unknown, &bin.AdmittedPermits} {
				*dst = d.Uvarint()
			}
		}
		return out, nil
	})
}

// Merge implements Aggregator: it adds the bins of other, a Timeline with the same Origin and
// Width, to t.
func (t *Timeline) Merge(other Aggregator) error {
	o, ok := other.(*Timeline)
	if !ok || o.Origin != t.Origin || o.Width != t.Width {
		return fmt.Errorf("%w: merge %T into a timeline from %s by %s", ErrMismatch, other, t.Origin, t.Width)
	}
	for len(t.Bins) < len(o.Bins) {
		t.Bins = append(t.Bins, Bin{})
	}
	for i, b := range o.Bins {
		a := &t.Bins[i]
		a.Offered += b.Offered
		a.Admitted += b.Admitted
		a.Denied += b.Denied
		a.Failed += b.Failed
		a.Unknown += b.Unknown
		a.AdmittedPermits += b.AdmittedPermits
	}
	t.Dropped += o.Dropped
	return nil
}

// Series is what a Timeline shows in a result entry (result.json's timeline, with the contract's
// limit per bin beside it): per bin of BinS seconds from the start of the measured part, the
// requests offered, the permits admitted, the requests denied and the errors (failed and
// unknown). All slices have one element per bin; nil without bins.
type Series struct {
	BinS     float64 `json:"bin_s"`
	Offered  []int64 `json:"offered"`
	Admitted []int64 `json:"admitted"`
	Denied   []int64 `json:"denied"`
	Errors   []int64 `json:"errors"`
}

// Series returns t's counts as a result entry holds them.
func (t *Timeline) Series() Series {
	s := Series{BinS: t.Width.Seconds()}
	for _, b := range t.Bins {
		s.Offered = append(s.Offered, int64(b.Offered))
		s.Admitted = append(s.Admitted, int64(b.AdmittedPermits))
		s.Denied = append(s.Denied, int64(b.Denied))
		s.Errors = append(s.Errors, int64(b.Failed+b.Unknown))
	}
	return s
}
