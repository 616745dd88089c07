package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/verify"
)

const ms = time.Millisecond

func decided(allowed bool, intended, sent, received time.Duration) Outcome {
	return Outcome{Cost: 1, Intended: intended, Sent: sent, Received: received, Decision: algorithms.Decision{Allowed: allowed}}
}

func TestHistogramsAddAndMerge(t *testing.T) {
	a, b := NewHistograms(time.Second), NewHistograms(time.Second)
	for _, o := range []Outcome{
		decided(true, 0, 10*ms, 11*ms),     // latency 11 ms, service 1 ms
		decided(false, 0, 0, 2*ms),         // denied
		decided(true, 0, 0, 5*time.Second), // above max: clamped
		{Class: ClassFailed, Err: errors.New("x")},
	} {
		a.Add(&o)
	}
	o := decided(true, 0, 0, 3*ms)
	b.Add(&o)
	a.Merge(b)
	tests := []struct {
		name string
		got  int64
		want int64
	}{
		{"allowed latency count", a.LatencyAllowed.TotalCount(), 3},
		{"denied latency count", a.LatencyDenied.TotalCount(), 1},
		{"allowed service count", a.ServiceAllowed.TotalCount(), 3},
		{"allowed latency min µs", a.LatencyAllowed.Min(), 3000},
		{"clamped", int64(a.Clamped), 2}, // latency and service of the 5 s decision
		{"dropped", int64(a.Dropped), 0},
		{"all latency", a.Latency().TotalCount(), 4},
		{"all service", a.Service().TotalCount(), 4},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %d; want %d", tt.name, tt.got, tt.want)
		}
	}
	if got := a.LatencyAllowed.Max(); !a.LatencyAllowed.ValuesAreEquivalent(got, 1_000_000) {
		t.Errorf("max allowed latency = %d µs; want 1000000 (clamped to the maximum)", got)
	}
	if got := a.LatencyAllowed.ValueAtQuantile(50); !a.LatencyAllowed.ValuesAreEquivalent(got, 11_000) {
		t.Errorf("median allowed latency = %d µs; want 11000 (measured from intended)", got)
	}
	if got := a.ServiceAllowed.ValueAtQuantile(50); !a.ServiceAllowed.ValuesAreEquivalent(got, 3000) {
		t.Errorf("median allowed service = %d µs; want 3000 (measured from sent)", got)
	}
}

func TestTimeline(t *testing.T) {
	a := NewTimeline(time.Second, 500*ms, 2*time.Second)
	b := NewTimeline(time.Second, 500*ms, 2*time.Second)
	for _, o := range []Outcome{
		decided(true, 999*ms, 0, 0), // before origin
		decided(true, time.Second, 0, 0),
		decided(false, 1400*ms, 0, 0),
		{Intended: 1500 * ms, Class: ClassFailed},
		{Intended: 2600 * ms, Class: ClassUnknown},
	} {
		a.Add(&o)
	}
	o := decided(true, 1600*ms, 0, 0)
	o.Cost = 3
	b.Add(&o)
	a.Merge(b)
	want := []Bin{
		{Offered: 2, Admitted: 1, Denied: 1, AdmittedPermits: 1},
		{Offered: 2, Admitted: 1, Failed: 1, AdmittedPermits: 3},
		{},
		{Offered: 1, Unknown: 1},
	}
	if diff := cmp.Diff(want, a.Bins); diff != "" {
		t.Errorf("Bins (-want +got):\n%s", diff)
	}
	if a.Dropped != 1 {
		t.Errorf("Dropped = %d; want 1 (the outcome before the origin)", a.Dropped)
	}
}

// event is a verify.Event spelled out, its times absolute.
type event struct {
	Lo, Hi  int64
	Subject uint32
	Client  uint16
	Permits uint16
	Kind    verify.Kind
}

// events returns the events of log with absolute times.
func events(log *verify.Log) []event {
	var out []event
	for _, e := range log.Events {
		out = append(out, event{log.Base + e.Lo(), log.Base + e.Hi(), e.Subject, e.Client, e.Permits, e.Kind()})
	}
	return out
}

func TestAdmissionLog(t *testing.T) {
	start := time.UnixMicro(1_000_000_000_000_000)
	origin := start.UnixMicro()
	server := func(allowed bool, tMicros int64) algorithms.Decision {
		return algorithms.Decision{Allowed: allowed, TimeMicros: tMicros, Clock: algorithms.ClockServer}
	}
	client := algorithms.Decision{Allowed: true, TimeMicros: origin + 999_999, Clock: algorithms.ClockClient}
	base := Outcome{Subject: 3, Client: 2, Cost: 1, Sent: 1000 * time.Microsecond, Received: 1500*time.Microsecond + 1}
	with := func(class Class, d algorithms.Decision) *Outcome {
		o := base
		o.Class, o.Decision = class, d
		return &o
	}
	wide := event{Lo: origin + 1000, Hi: origin + 1502, Subject: 3, Client: 2, Permits: 1}
	ev := func(e event, k verify.Kind, lo, hi int64) event {
		e.Kind = k
		if lo != 0 {
			e.Lo, e.Hi = lo, hi
		}
		return e
	}
	ext := &ClockOffset{Offset: 10 * ms, Err: 100 * time.Microsecond}
	tests := []struct {
		name           string
		shared         bool
		offset         *ClockOffset
		clientClock    bool
		o              *Outcome
		want           event
		narrowed, miss uint64
	}{
		{"client clock never narrowed", true, nil, true, with(ClassOK, client), ev(wide, verify.Admitted, 0, 0), 0, 0},
		{"no clock information", false, nil, false, with(ClassOK, server(true, origin+1200)), ev(wide, verify.Admitted, 0, 0), 0, 0},
		{"shared clock narrows to the server time", true, nil, false, with(ClassOK, server(true, origin+1200)), ev(wide, verify.Admitted, origin+1200, origin+1200), 1, 0},
		{"shared clock denied", true, nil, false, with(ClassOK, server(false, origin+1200)), ev(wide, verify.Denied, origin+1200, origin+1200), 1, 0},
		{"shared clock mismatch counted", true, nil, false, with(ClassOK, server(true, origin+5000)), ev(wide, verify.Admitted, origin+5000, origin+5000), 1, 1},
		// Regression: an external server's times were moved to the harness clock, where a fixed
		// window aligned on the server's clock straddles two, and a correct fixed-window limiter
		// was flagged. The log now stays on the server's clock.
		{"external: the server time, on the server's clock", false, ext, false,
			with(ClassOK, server(true, origin+10_000+1450)), ev(wide, verify.Admitted, origin+11_450, origin+11_450), 1, 0},
		{"external: inconsistent server time counted, still used", false, &ClockOffset{Offset: -10 * ms, Err: 100 * time.Microsecond}, false,
			with(ClassOK, server(true, origin+1200)), ev(wide, verify.Admitted, origin+1200, origin+1200), 1, 1},
		{"external: unknown moved to the server's clock ± error", false, ext, false,
			with(ClassUnknown, algorithms.Decision{}), ev(wide, verify.Unknown, origin+1000+9900, origin+1502+10_100), 0, 0},
		{"external: client clock stays on the harness clock", false, ext, true,
			with(ClassOK, client), ev(wide, verify.Admitted, 0, 0), 0, 0},
		{"failed", true, nil, false, with(ClassFailed, algorithms.Decision{}), ev(wide, verify.Failed, 0, 0), 0, 0},
		{"unknown", true, nil, false, with(ClassUnknown, algorithms.Decision{}), ev(wide, verify.Unknown, 0, 0), 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewAdmissionLog(start, tt.shared, tt.offset, tt.clientClock)
			l.Add(tt.o)
			if diff := cmp.Diff([]event{tt.want}, events(l.Log(nil, nil))); diff != "" {
				t.Errorf("Events (-want +got):\n%s", diff)
			}
			if l.Narrowed != tt.narrowed || l.Mismatched != tt.miss {
				t.Errorf("Narrowed, Mismatched = %d, %d; want %d, %d", l.Narrowed, l.Mismatched, tt.narrowed, tt.miss)
			}
		})
	}
}

func TestAdmissionLogMerge(t *testing.T) {
	start := time.UnixMicro(0)
	a, b := NewAdmissionLog(start, true, nil, false), NewAdmissionLog(start, true, nil, false)
	for _, s := range []time.Duration{5, 1, 3} {
		o := decided(true, 0, s*time.Microsecond, s*time.Microsecond)
		a.Add(&o)
	}
	o := decided(true, 0, 2*time.Microsecond, 2*time.Microsecond)
	o.Decision.Clock, o.Decision.TimeMicros = algorithms.ClockServer, 2
	b.Add(&o)
	a.Merge(b)
	if a.Len() != 4 || a.Narrowed != 1 {
		t.Errorf("after Merge: Len %d, Narrowed %d; want 4, 1", a.Len(), a.Narrowed)
	}
	var got []int64
	for _, e := range events(a.Log(nil, nil)) {
		got = append(got, e.Lo)
	}
	// Many chunks: the order is kept across chunk boundaries.
	if diff := cmp.Diff([]int64{5, 1, 3, 2}, got); diff != "" {
		t.Errorf("merged Lo (-want +got):\n%s", diff)
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want Class
	}{
		{"nil", nil, ClassOK},
		{"pool timeout", fmt.Errorf("lim: %w", redis.ErrPoolTimeout), ClassFailed},
		{"closed client", redis.ErrClosed, ClassFailed},
		{"dial refused", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, ClassFailed},
		{"redis error reply", fmt.Errorf("lim: %w", redis.ErrNoScript), ClassFailed},
		{"cost unsupported", algorithms.ErrCostUnsupported, ClassFailed},
		{"bad reply may have admitted", fmt.Errorf("lim: %w", algorithms.ErrBadReply), ClassUnknown},
		{"read timeout", &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}, ClassUnknown},
		{"EOF", io.EOF, ClassUnknown},
		{"context deadline", context.DeadlineExceeded, ClassUnknown},
		{"anything else", errors.New("mystery"), ClassUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.err); got != tt.want {
				t.Errorf("Classify(%v) = %s; want %s", tt.err, got, tt.want)
			}
		})
	}
}

func TestAdmissionLogChunks(t *testing.T) {
	a, b := NewAdmissionLog(time.UnixMicro(0), false, nil, false), NewAdmissionLog(time.UnixMicro(0), false, nil, false)
	const n = 3*logChunk + 17
	for i := range n {
		o := decided(true, 0, time.Duration(i)*time.Microsecond, time.Duration(i)*time.Microsecond)
		if i%3 == 0 {
			b.Add(&o)
		} else {
			a.Add(&o)
		}
	}
	a.Merge(b)
	o := decided(true, 0, n*time.Microsecond, n*time.Microsecond)
	a.Add(&o)
	ev := a.Events()
	if len(ev) != n+1 || a.Len() != n+1 {
		t.Fatalf("len(Events()) = %d, Len() = %d; want %d", len(ev), a.Len(), n+1)
	}
	seen := make([]bool, n+1)
	for _, e := range ev {
		seen[e.Lo()] = true
	}
	for i, ok := range seen {
		if !ok {
			t.Fatalf("event %d lost", i)
		}
	}
}
