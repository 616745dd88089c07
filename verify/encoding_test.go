package verify

import (
	"encoding"
	"encoding/binary"
	"errors"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/clock"
	"github.com/limitbench/limitbench/internal/load"
)

var (
	_ encoding.BinaryMarshaler   = (*AdmissionLog)(nil)
	_ encoding.BinaryUnmarshaler = (*AdmissionLog)(nil)
)

// drawLog draws an admission log on any clock holding outcomes of every class and clock, some
// narrowed, some mismatched, some dropped.
func drawLog(t *rapid.T) *AdmissionLog {
	var server *clock.Offset
	if rapid.Bool().Draw(t, "external") {
		server = &clock.Offset{Offset: time.Duration(rapid.Int64Range(-int64(time.Second), int64(time.Second)).Draw(t, "offset")),
			Err: time.Duration(rapid.Int64Range(0, int64(ms)).Draw(t, "err"))}
	}
	start := time.UnixMicro(rapid.Int64Range(1_600_000_000_000_000, 1_800_000_000_000_000).Draw(t, "start"))
	l := NewAdmissionLog(start, rapid.Bool().Draw(t, "shared"), server, rapid.Bool().Draw(t, "client clock"))
	for range rapid.IntRange(0, 300).Draw(t, "n") {
		sent := time.Duration(rapid.Int64Range(0, int64(10*time.Second)).Draw(t, "sent"))
		if rapid.IntRange(0, 50).Draw(t, "far") == 0 {
			sent += 7 * day // does not fit: dropped
		}
		o := load.Outcome{Subject: rapid.Uint32Range(0, 1000).Draw(t, "subject"), Client: rapid.Uint16().Draw(t, "client"),
			Cost: rapid.Uint16Range(1, 5).Draw(t, "cost"), Intended: sent, Sent: sent,
			Received: sent + time.Duration(rapid.Int64Range(0, int64(2*time.Second)).Draw(t, "service")),
			Class:    load.Class(rapid.IntRange(0, 2).Draw(t, "class"))}
		o.Decision = algorithms.Decision{Allowed: rapid.Bool().Draw(t, "allowed"), Clock: algorithms.Clock(rapid.IntRange(0, 2).Draw(t, "clock"))}
		if rapid.Bool().Draw(t, "timed") {
			o.Decision.TimeMicros = start.UnixMicro() + sent.Microseconds() + rapid.Int64Range(-5000, 5000).Draw(t, "at")
		}
		l.Add(&o)
	}
	return l
}

// TestAdmissionLogEncodingRoundTrip: a log decoded from its encoding equals the encoded one: its
// clock, its counts and its events in order.
func TestAdmissionLogEncodingRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := drawLog(t)
		b, err := l.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var got AdmissionLog
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatalf("UnmarshalBinary: %v", err)
		}
		sameLog(t, l, &got, true)
		if want := 5 + 16*l.Len(); len(b) < want || len(b) > want+60 {
			t.Fatalf("encoding of %d events is %d bytes; want 16 per event and a header of at most 60", l.Len(), len(b))
		}
	})
}

// sameLog fails t unless a and b are on the same clock with the same counts and events (in the
// same order when ordered, else as multisets).
func sameLog(t interface{ Fatalf(string, ...any) }, a, b *AdmissionLog, ordered bool) {
	if a.Origin != b.Origin || a.SharedClock != b.SharedClock || a.ClientClock != b.ClientClock ||
		(a.Server == nil) != (b.Server == nil) || a.Server != nil && *a.Server != *b.Server {
		t.Fatalf("clock: got origin %d shared %v client %v server %v; want %d %v %v %v", b.Origin, b.SharedClock,
			b.ClientClock, b.Server, a.Origin, a.SharedClock, a.ClientClock, a.Server)
	}
	if a.Narrowed != b.Narrowed || a.Mismatched != b.Mismatched || a.Dropped != b.Dropped || a.Len() != b.Len() {
		t.Fatalf("Narrowed, Mismatched, Dropped, Len = %d, %d, %d, %d; want %d, %d, %d, %d", b.Narrowed, b.Mismatched,
			b.Dropped, b.Len(), a.Narrowed, a.Mismatched, a.Dropped, a.Len())
	}
	ea, eb := a.Events(), b.Events()
	if !ordered {
		cmpEvent := func(x, y Event) int {
			switch {
			case x.t != y.t:
				return cmpU64(x.t, y.t)
			case x.Subject != y.Subject:
				return cmpU64(uint64(x.Subject), uint64(y.Subject))
			case x.Client != y.Client:
				return cmpU64(uint64(x.Client), uint64(y.Client))
			}
			return cmpU64(uint64(x.Permits), uint64(y.Permits))
		}
		slices.SortFunc(ea, cmpEvent)
		slices.SortFunc(eb, cmpEvent)
	}
	if !slices.Equal(ea, eb) {
		t.Fatalf("events differ")
	}
}

func cmpU64(x, y uint64) int {
	if x < y {
		return -1
	}
	return 1
}

// TestAdmissionLogDecodeRefusesOtherBytes: another kind, a later version, a truncated encoding,
// trailing bytes and unknown clock flags are errors wrapping load.ErrEncoding.
func TestAdmissionLogDecodeRefusesOtherBytes(t *testing.T) {
	l := NewAdmissionLog(time.UnixMicro(1_700_000_000_000_000), true, nil, false)
	o := decided(true, 0, ms, 2*ms)
	l.Add(&o)
	b, _ := l.MarshalBinary()
	h, _ := load.NewHistograms(time.Second).MarshalBinary()
	edit := func(i int, v byte) []byte { c := append([]byte(nil), b...); c[i] = v; return c }
	flags := 5 + len(binary.AppendVarint(nil, l.Origin)) // the clock flags follow the header and Origin
	for name, bad := range map[string][]byte{
		"histograms":      h,
		"a later version": edit(4, 2),
		"truncated":       b[:len(b)-1],
		"trailing bytes":  append(append([]byte(nil), b...), 0),
		"unknown flags":   edit(flags, 16|1),
	} {
		var got AdmissionLog
		if err := got.UnmarshalBinary(bad); !errors.Is(err, load.ErrEncoding) {
			t.Errorf("%s: UnmarshalBinary = %v; want an error wrapping load.ErrEncoding", name, err)
		}
	}
}
