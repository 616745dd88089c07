package verify

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/limitbench/limitbench/internal/clock"
	"github.com/limitbench/limitbench/internal/load"
)

// drawSegmentLog draws an admission log of up to 300 events in no order, with any kinds, widths
// (exact, narrow, over a second) and indices, on the clock of a segment's log.
func drawSegmentLog(t *rapid.T) *AdmissionLog {
	l := &AdmissionLog{Origin: rapid.Int64Range(0, 1<<52).Draw(t, "origin"), OneClock: true,
		Server:   &clock.Offset{Offset: time.Duration(rapid.Int64Range(-1e9, 1e9).Draw(t, "offset")), Err: time.Duration(rapid.Int64Range(0, 1e6).Draw(t, "err"))},
		Narrowed: rapid.Uint64().Draw(t, "narrowed"), Mismatched: rapid.Uint64Range(0, 9).Draw(t, "mismatched"), Dropped: rapid.Uint64Range(0, 9).Draw(t, "dropped")}
	n := rapid.IntRange(0, 300).Draw(t, "events")
	for range n {
		lo := rapid.Int64Range(MinLo, MaxLo).Draw(t, "lo")
		if rapid.Bool().Draw(t, "near") {
			lo = rapid.Int64Range(-5, 5000).Draw(t, "lo_near") // sorted neighbours, small gaps
		}
		w := rapid.SampledFrom([]int64{0, 0, 1, 700, 1 << 20, 1<<20 + 3, 1 << 33}).Draw(t, "width")
		e, err := NewEvent(lo, lo+w, rapid.Uint32().Draw(t, "subject"), rapid.Uint16().Draw(t, "client"),
			rapid.Uint16().Draw(t, "permits"), Kind(rapid.IntRange(1, 4).Draw(t, "kind")))
		if err != nil {
			t.Fatal(err)
		}
		l.cur = append(l.cur, e)
		l.n++
	}
	return l
}

// TestSortedLogRoundTrip: a log written with WriteSorted reads back, through a LogReader, as its
// head and every event in the order of their times; so does a log in the older encoding
// (MarshalBinary), which the reader sorts.
func TestSortedLogRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := drawSegmentLog(t)
		want := l.Events()
		slices.SortFunc(want, func(a, b Event) int { return cmpTime(&a, &b) })
		sorted, err := l.SortedLog()
		if err != nil {
			t.Fatal(err)
		}
		older, err := l.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			name   string
			b      []byte
			sorted bool
		}{{"sorted", sorted, true}, {"older", older, false}} {
			r, err := NewLogReader(bytes.NewReader(tt.b))
			if err != nil {
				t.Fatalf("%s: NewLogReader: %v", tt.name, err)
			}
			var got []Event
			for e, ok := r.Next(); ok; e, ok = r.Next() {
				got = append(got, e)
			}
			if err := r.Err(); err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			if d := cmp.Diff(want, got, cmpopts.EquateEmpty(), cmp.Comparer(func(a, b Event) bool { return a == b })); d != "" {
				t.Errorf("%s: events (-want +got):\n%s", tt.name, d)
			}
			h := r.Head
			if h.Origin != l.Origin || *h.Server != *l.Server || h.OneClock != l.OneClock || h.SharedClock || h.ClientClock ||
				h.Narrowed != l.Narrowed || h.Mismatched != l.Mismatched || h.Dropped != l.Dropped || r.N != int64(len(want)) ||
				h.Len() != 0 || r.Sorted() != tt.sorted {
				t.Errorf("%s: head %+v, %d events, sorted %v; want the log's, %d events, no events held, sorted %v",
					tt.name, h, r.N, r.Sorted(), len(want), tt.sorted)
			}
		}
	})
}

// TestSortedLogRefusesOtherBytes: bytes that are not a log and a log cut short (in its events,
// or only its gzip checksum) are errors wrapping load.ErrEncoding, at NewLogReader or at the
// end of the events.
func TestSortedLogRefusesOtherBytes(t *testing.T) {
	l := &AdmissionLog{Origin: 1_700_000_000_000_000}
	for i := range 5000 {
		e, err := NewEvent(int64(i*37), int64(i*37+5), uint32(i%7), uint16(i%3), 1, Admitted)
		if err != nil {
			t.Fatal(err)
		}
		l.cur = append(l.cur, e)
		l.n++
	}
	good, err := l.SortedLog()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"not a log", []byte("hello, world")},
		{"cut short", good[:len(good)/2]},
		{"checksum cut off", good[:len(good)-4]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewLogReader(bytes.NewReader(tt.b))
			if err == nil {
				for _, ok := r.Next(); ok; _, ok = r.Next() {
				}
				err = r.Err()
			}
			if !errors.Is(err, load.ErrEncoding) {
				t.Errorf("reading %s: %v; want an error wrapping load.ErrEncoding", tt.name, err)
			}
		})
	}
}
