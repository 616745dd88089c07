package load

import (
	"encoding"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

var (
	_ encoding.BinaryMarshaler   = (*Histograms)(nil)
	_ encoding.BinaryUnmarshaler = (*Histograms)(nil)
	_ encoding.BinaryMarshaler   = (*Timeline)(nil)
	_ encoding.BinaryUnmarshaler = (*Timeline)(nil)
)

// drawOutcome draws an outcome of any class, intended within the first few seconds of a run.
func drawOutcome(t *rapid.T) Outcome {
	intended := time.Duration(rapid.Int64Range(-int64(time.Second), int64(5*time.Second)).Draw(t, "intended"))
	sent := intended + time.Duration(rapid.Int64Range(0, int64(50*ms)).Draw(t, "late"))
	o := Outcome{
		Subject:  rapid.Uint32Range(0, 9).Draw(t, "subject"),
		Client:   rapid.Uint16Range(0, 3).Draw(t, "client"),
		Cost:     rapid.Uint16Range(1, 3).Draw(t, "cost"),
		Intended: intended,
		Sent:     sent,
		Received: sent + time.Duration(rapid.Int64Range(-int64(ms), int64(3*time.Second)).Draw(t, "service")),
		Class:    Class(rapid.IntRange(0, 2).Draw(t, "class")),
	}
	o.Decision.Allowed = rapid.Bool().Draw(t, "allowed")
	return o
}

// TestHistogramsEncodingRoundTrip: Histograms decoded from their encoding equal the encoded
// ones, counts included.
func TestHistogramsEncodingRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := NewHistograms(time.Duration(rapid.Int64Range(int64(time.Millisecond), int64(time.Minute)).Draw(t, "max")))
		for range rapid.IntRange(0, 200).Draw(t, "n") {
			o := drawOutcome(t)
			h.Add(&o)
		}
		b, err := h.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var got Histograms
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatalf("UnmarshalBinary: %v", err)
		}
		sameHistograms(t, h, &got)
	})
}

// sameHistograms fails t unless a and b hold the same values and counts.
func sameHistograms(t interface{ Fatalf(string, ...any) }, a, b *Histograms) {
	if a.maxMicros != b.maxMicros || a.Clamped != b.Clamped || a.Dropped != b.Dropped {
		t.Fatalf("range, Clamped, Dropped = %d, %d, %d; want %d, %d, %d", b.maxMicros, b.Clamped, b.Dropped,
			a.maxMicros, a.Clamped, a.Dropped)
	}
	for i, pair := range [][2]interface{ TotalCount() int64 }{
		{a.LatencyAllowed, b.LatencyAllowed}, {a.LatencyDenied, b.LatencyDenied},
		{a.ServiceAllowed, b.ServiceAllowed}, {a.ServiceDenied, b.ServiceDenied},
	} {
		if pair[0].TotalCount() != pair[1].TotalCount() {
			t.Fatalf("histogram %d holds %d values; want %d", i, pair[1].TotalCount(), pair[0].TotalCount())
		}
	}
	if !a.LatencyAllowed.Equals(b.LatencyAllowed) || !a.LatencyDenied.Equals(b.LatencyDenied) ||
		!a.ServiceAllowed.Equals(b.ServiceAllowed) || !a.ServiceDenied.Equals(b.ServiceDenied) {
		t.Fatalf("histograms differ")
	}
}

// TestTimelineEncodingRoundTrip: a Timeline decoded from its encoding equals the encoded one.
func TestTimelineEncodingRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tl := NewTimeline(time.Duration(rapid.Int64Range(0, int64(time.Second)).Draw(t, "origin")),
			time.Duration(rapid.Int64Range(int64(ms), int64(time.Second)).Draw(t, "width")), 0)
		for range rapid.IntRange(0, 200).Draw(t, "n") {
			o := drawOutcome(t)
			tl.Add(&o)
		}
		b, err := tl.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var got Timeline
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatalf("UnmarshalBinary: %v", err)
		}
		if got.Bins == nil {
			got.Bins = []Bin{}
		}
		want := *tl
		if want.Bins == nil {
			want.Bins = []Bin{}
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("round trip (-want +got):\n%s", d)
		}
	})
}

// TestDecodeRefusesOtherBytes: a decoder refuses another kind, another version, truncated
// encodings and trailing bytes, each with an error wrapping ErrEncoding, and leaves its
// aggregator as it was.
func TestDecodeRefusesOtherBytes(t *testing.T) {
	h := NewHistograms(time.Second)
	o := decided(true, 0, ms, 2*ms)
	h.Add(&o)
	hb, _ := h.MarshalBinary()
	tl := NewTimeline(0, time.Second, 0)
	tl.Add(&o)
	tb, _ := tl.MarshalBinary()
	version := func(b []byte, v byte) []byte { c := append([]byte(nil), b...); c[4] = v; return c }
	tests := []struct {
		name string
		into interface{ UnmarshalBinary([]byte) error }
		b    []byte
	}{
		{"empty", &Timeline{}, nil},
		{"a timeline read as histograms", &Histograms{}, tb},
		{"histograms read as a timeline", &Timeline{}, hb},
		{"a later version", &Timeline{}, version(tb, 2)},
		{"truncated timeline", &Timeline{}, tb[:len(tb)-1]},
		{"truncated histograms", &Histograms{}, hb[:len(hb)-3]},
		{"trailing bytes", &Timeline{}, append(append([]byte(nil), tb...), 0)},
		{"a bin count larger than the bytes", &Timeline{}, []byte("lbtl\x01\x00\x02\x00\xff\xff\x03")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.into.UnmarshalBinary(tt.b); !errors.Is(err, ErrEncoding) {
				t.Errorf("UnmarshalBinary = %v; want an error wrapping ErrEncoding", err)
			}
		})
	}
	var fresh Timeline
	_ = fresh.UnmarshalBinary(hb)
	if fresh.Width != 0 || fresh.Bins != nil {
		t.Errorf("a failed decode changed the timeline: %+v", fresh)
	}
}
