package load

import (
	"encoding/base64"
	"fmt"
	"math"
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

// The encoding of Histograms (see Encoder).
const histogramsKind, histogramsVersion = "lbhg", 1

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
	return Decode(h, b, histogramsKind, histogramsVersion, func(d *Decoder) (Histograms, error) {
		out := Histograms{maxMicros: int64(d.Uvarint()), Clamped: d.Uvarint(), Dropped: d.Uvarint()}
		for _, dst := range []**hdrhistogram.Histogram{&out.LatencyAllowed, &out.LatencyDenied, &out.ServiceAllowed, &out.ServiceDenied} {
			raw := d.Bytes()
			if d.err != nil {
				return out, nil // Decode reports the truncation
			}
			hist, err := hdrhistogram.Decode([]byte(base64.StdEncoding.EncodeToString(raw)))
			if err != nil {
				return out, d.Errorf("%v", err)
			}
			if hist.HighestTrackableValue() < out.maxMicros {
				return out, d.Errorf("a histogram tracks up to %d µs, the range is %d µs", hist.HighestTrackableValue(), out.maxMicros)
			}
			*dst = hist
		}
		return out, nil
	})
}

// Equal reports whether h and o track the same range and hold the same values and counts: what a
// run split over several Histograms and merged must give.
func (h *Histograms) Equal(o *Histograms) bool {
	return h.maxMicros == o.maxMicros && h.Clamped == o.Clamped && h.Dropped == o.Dropped &&
		h.LatencyAllowed.Equals(o.LatencyAllowed) && h.LatencyDenied.Equals(o.LatencyDenied) &&
		h.ServiceAllowed.Equals(o.ServiceAllowed) && h.ServiceDenied.Equals(o.ServiceDenied)
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

// Latency is the summary of a latency distribution, in microseconds, as a result entry holds it
// (result.json's latency_us and service_latency_us). The zero value means nothing was recorded.
type Latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// Summarize returns the latency summary of h, whose values are microseconds: percentiles as
// recorded (HDR precision), the mean rounded to three decimals; the zero Latency for an empty or
// nil histogram.
func Summarize(h *hdrhistogram.Histogram) Latency {
	if h == nil || h.TotalCount() == 0 {
		return Latency{}
	}
	return Latency{
		P50:  float64(h.ValueAtQuantile(50)),
		P90:  float64(h.ValueAtQuantile(90)),
		P99:  float64(h.ValueAtQuantile(99)),
		P999: float64(h.ValueAtQuantile(99.9)),
		Max:  float64(h.Max()),
		Mean: math.Round(h.Mean()*1000) / 1000,
	}
}
