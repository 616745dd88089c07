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
		var got Histograms
		roundTrip(t, h, &got)
		if !h.Equal(&got) {
			t.Fatalf("decoded histograms differ: range, Clamped, Dropped = %d, %d, %d; want %d, %d, %d",
				got.maxMicros, got.Clamped, got.Dropped, h.maxMicros, h.Clamped, h.Dropped)
		}
	})
}

// roundTrip decodes the encoding of from into into, failing t on an error.
func roundTrip(t *rapid.T, from encoding.BinaryMarshaler, into encoding.BinaryUnmarshaler) {
	b, err := from.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if err := into.UnmarshalBinary(b); err != nil {
		t.Fatalf("UnmarshalBinary: %v", err)
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
		var got Timeline
		roundTrip(t, tl, &got)
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
