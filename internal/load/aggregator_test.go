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
		{"template not expanded, not sent", fmt.Errorf("mine: keys[0]: %w: {{now_ms / cost}}: division by zero", algorithms.ErrTemplate), ClassFailed},
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
