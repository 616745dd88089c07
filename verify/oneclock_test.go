package verify

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/clock"
	"github.com/limitbench/limitbench/internal/load"
)

// TestAdmissionLogOneClock: with OneClock, a client-clock decision is moved to the server's clock
// like any event of an external server, so that the logs of generators whose clocks differ merge
// into one history; the flag survives encoding and Fresh, and logs with and without it do not
// merge.
func TestAdmissionLogOneClock(t *testing.T) {
	start := time.UnixMicro(1_000_000_000_000_000)
	origin := start.UnixMicro()
	o := &load.Outcome{Subject: 1, Client: 0, Cost: 1, Sent: time.Millisecond, Received: 1500*time.Microsecond + 1,
		Decision: algorithms.Decision{Allowed: true, TimeMicros: origin + 999_999, Clock: algorithms.ClockClient}}
	ext := &clock.Offset{Offset: 10 * ms, Err: 100 * time.Microsecond}
	l := NewAdmissionLog(start, false, ext, true)
	l.OneClock = true
	l.Add(o)
	want := []event{{Lo: origin + 1000 + 9900, Hi: origin + 1502 + 10_100, Subject: 1, Permits: 1, Kind: Admitted}}
	if diff := cmp.Diff(want, events(l.Log(nil, nil))); diff != "" {
		t.Errorf("Events (-want +got):\n%s", diff)
	}
	if l.Narrowed != 0 {
		t.Errorf("Narrowed = %d; want 0 (a client-clock decision is never narrowed)", l.Narrowed)
	}
	if got := l.Micros(0); got != origin+10_000 {
		t.Errorf("Micros(0) = %d; want %d (on the server's clock)", got, origin+10_000)
	}
	b, err := l.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var back AdmissionLog
	if err := back.UnmarshalBinary(b); err != nil {
		t.Fatalf("UnmarshalBinary: %v", err)
	}
	if !back.OneClock || !back.Fresh().(*AdmissionLog).OneClock {
		t.Errorf("OneClock lost in encoding or Fresh")
	}
	other := NewAdmissionLog(start, false, ext, true)
	if err := back.Merge(other); err == nil {
		t.Errorf("Merge of a OneClock log with a log on the harness's clock = nil; want an error")
	}
}
