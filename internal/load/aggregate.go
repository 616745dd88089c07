package load

import (
	"encoding/base64"
	"fmt"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// DefaultMaxLatency is the largest latency Histograms track when Plan.MaxLatency is zero.
const DefaultMaxLatency = time.Minute

// histogramDigits is the HDR precision: 3 significant digits (0.1 %).
const histogramDigits = 3

// Histograms holds HDR histograms of decisions, in microseconds: latency (Received − Intended,
// coordinated-omission corrected) and service time (Received − Sent), each for allowed and
// denied decisions apart. Failed and unknown outcomes are not recorded here (Counts and the
// Timeline count them). Values are truncated to whole microseconds; a value above the maximum
// is recorded as the maximum and counted in Clamped, never dropped. Not safe for concurrent
// use: give each worker (or recording shard) its own and Merge them at the end.
type Histograms struct {
	LatencyAllowed, LatencyDenied *hdrhistogram.Histogram
	ServiceAllowed, ServiceDenied *hdrhistogram.Histogram
	// Clamped counts values above the maximum, recorded as the maximum (negative values,
	// which a monotonic clock never gives, are recorded as 0 and counted here too).
	Clamped uint64
	// Dropped counts values a Merge could not hold (only if geometries differ).
	Dropped uint64

	maxMicros int64
}

// NewHistograms returns empty Histograms that track values from 1 µs to max (DefaultMaxLatency
// when max <= 0).
func NewHistograms(max time.Duration) *Histograms {
	if max <= 0 {
		max = DefaultMaxLatency
	}
	m := max.Microseconds()
	if m < 2 {
		m = 2
	}
	return &Histograms{
		LatencyAllowed: hdrhistogram.New(1, m, histogramDigits),
		LatencyDenied:  hdrhistogram.New(1, m, histogramDigits),
		ServiceAllowed: hdrhistogram.New(1, m, histogramDigits),
		ServiceDenied:  hdrhistogram.New(1, m, histogramDigits),
		maxMicros:      m,
	}
}

// Add records o's latency and service time if it is a decision (ClassOK).
func (h *Histograms) Add(o *Outcome) {
	if o.Class != ClassOK {
		return
	}
	lat, svc := h.LatencyDenied, h.ServiceDenied
	if o.Decision.Allowed {
		lat, svc = h.LatencyAllowed, h.ServiceAllowed
	}
	h.record(lat, o.Latency().Microseconds())
	h.record(svc, o.Service().Microseconds())
}

func (h *Histograms) record(hist *hdrhistogram.Histogram, v int64) {
	switch {
	case v > h.maxMicros:
		v = h.maxMicros
		h.Clamped++
	case v < 0:
		v = 0
		h.Clamped++
	}
	if hist.RecordValue(v) != nil {
		// Cannot happen for 0 <= v <= max; count rather than lose it silently.
		h.Dropped++
	}
}

var _ Aggregator = (*Histograms)(nil)

// Fresh implements Aggregator: empty Histograms of the same range.
func (h *Histograms) Fresh() Aggregator {
	return NewHistograms(time.Duration(h.maxMicros) * time.Microsecond)
}

// Finish implements Aggregator: Clamped and Dropped.
func (h *Histograms) Finish() Counts { return Counts{Clamped: h.Clamped, Dropped: h.Dropped} }

// Merge implements Aggregator: it adds the contents of other, Histograms of the same range, to h.
func (h *Histograms) Merge(other Aggregator) error {
	o, ok := other.(*Histograms)
	if !ok || o.maxMicros != h.maxMicros {
		return fmt.Errorf("%w: merge %T into histograms of 1 µs to %d µs", ErrMismatch, other, h.maxMicros)
	}
	h.Dropped += uint64(h.LatencyAllowed.Merge(o.LatencyAllowed))
	h.Dropped += uint64(h.LatencyDenied.Merge(o.LatencyDenied))
	h.Dropped += uint64(h.ServiceAllowed.Merge(o.ServiceAllowed))
	h.Dropped += uint64(h.ServiceDenied.Merge(o.ServiceDenied))
	h.Clamped += o.Clamped
	h.Dropped += o.Dropped
	return nil
}

// Encodings of Histograms and Timeline (see Encoder).
const (
	histogramsKind, histogramsVersion = "lbhg", 1
	timelineKind, timelineVersion     = "lbtl", 1
)

// MarshalBinary encodes h: its range, Clamped, Dropped, then the four HDR histograms in their
// V2 compressed encoding (zlib, without the base64 hdrhistogram-go wraps it in).
func (h *Histograms) MarshalBinary() ([]byte, error) {
	e := NewEncoder(histogramsKind, histogramsVersion)
	e.Uvarint(uint64(h.maxMicros))
	e.Uvarint(h.Clamped)
	e.Uvarint(h.Dropped)
	for _, hist := range []*hdrhistogram.Histogram{h.LatencyAllowed, h.LatencyDenied, h.ServiceAllowed, h.ServiceDenied} {
		text, err := hist.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
		if err != nil {
			return nil, fmt.Errorf("encode histograms: %w", err)
		}
		raw, err := base64.StdEncoding.DecodeString(string(text))
		if err != nil {
			return nil, fmt.Errorf("encode histograms: %w", err)
		}
		e.Bytes(raw)
	}
	return e.Encoding(), nil
}

// UnmarshalBinary decodes what MarshalBinary encoded into h, replacing what h held. Errors wrap
// ErrEncoding.
func (h *Histograms) UnmarshalBinary(b []byte) error {
	d, err := NewDecoder(b, histogramsKind, histogramsVersion)
	if err != nil {
		return err
	}
	out := Histograms{maxMicros: int64(d.Uvarint()), Clamped: d.Uvarint(), Dropped: d.Uvarint()}
	for _, dst := range []**hdrhistogram.Histogram{&out.LatencyAllowed, &out.LatencyDenied, &out.ServiceAllowed, &out.ServiceDenied} {
		raw := d.Bytes()
		if d.err != nil {
			break
		}
		hist, err := hdrhistogram.Decode([]byte(base64.StdEncoding.EncodeToString(raw)))
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrEncoding, histogramsKind, err)
		}
		if hist.HighestTrackableValue() < out.maxMicros {
			return fmt.Errorf("%w: %s: a histogram tracks up to %d µs, the range is %d µs", ErrEncoding, histogramsKind,
				hist.HighestTrackableValue(), out.maxMicros)
		}
		*dst = hist
	}
	if err := d.Close(); err != nil {
		return err
	}
	*h = out
	return nil
}

// Latency returns a new histogram of the latency of every decision, allowed and denied.
func (h *Histograms) Latency() *hdrhistogram.Histogram {
	out := hdrhistogram.New(1, h.maxMicros, histogramDigits)
	out.Merge(h.LatencyAllowed)
	out.Merge(h.LatencyDenied)
	return out
}

// Service returns a new histogram of the service time of every decision, allowed and denied.
func (h *Histograms) Service() *hdrhistogram.Histogram {
	out := hdrhistogram.New(1, h.maxMicros, histogramDigits)
	out.Merge(h.ServiceAllowed)
	out.Merge(h.ServiceDenied)
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
	d, err := NewDecoder(b, timelineKind, timelineVersion)
	if err != nil {
		return err
	}
	out := Timeline{Origin: time.Duration(d.Varint()), Width: time.Duration(d.Varint()), Dropped: d.Uvarint()}
	if d.err == nil && out.Width <= 0 {
		d.fail(fmt.Sprintf("bin width %s", out.Width))
	}
	out.Bins = make([]Bin, d.Count(6)) // six counts of at least a byte each
	for i := range out.Bins {
		bin := &out.Bins[i]
		for _, dst := range []*uint64{&bin.Offered, &bin.Admitted, &bin.Denied, &bin.Failed, &bin.Unknown, &bin.AdmittedPermits} {
			*dst = d.Uvarint()
		}
	}
	if err := d.Close(); err != nil {
		return err
	}
	*t = out
	return nil
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
