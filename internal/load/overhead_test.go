package load

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
)

// slowLimiter takes d per decision, without Redis.
type slowLimiter struct{ d time.Duration }

func (slowLimiter) Keys(algorithms.Request) []string { return nil }

func (l slowLimiter) NewCall() algorithms.Call { return l }

func (l slowLimiter) Send(context.Context, redis.Cmdable, algorithms.Request) { time.Sleep(l.d) }

func (slowLimiter) Result() (algorithms.Decision, error) {
	return algorithms.Decision{Allowed: true}, nil
}

func TestRunFallsBehind(t *testing.T) {
	// One client taking 10 ms per request cannot keep 1000/s: the run must say so.
	res, _, err := recorded(context.Background(), nil, slowLimiter{d: 10 * time.Millisecond}, Plan{Arrival: Constant(1000), Duration: 300 * time.Millisecond, Clients: 1})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !res.Behind || res.Counts.Missed == 0 || res.Scheduled != 300 {
		t.Errorf("Behind %v, Missed %d, Scheduled %d; want behind with missed ticks of 300", res.Behind, res.Counts.Missed, res.Scheduled)
	}
	if res.Counts.Requests+res.Counts.Missed != res.Scheduled {
		t.Errorf("Requests %d + Missed %d != Scheduled %d", res.Counts.Requests, res.Counts.Missed, res.Scheduled)
	}
}

// stallOnce is a limiter without Redis that stalls once, on its call number at (0-based), for d.
type stallOnce struct {
	at    int64
	d     time.Duration
	calls atomic.Int64
}

func (*stallOnce) Keys(algorithms.Request) []string { return nil }

func (l *stallOnce) NewCall() algorithms.Call { return algorithms.PendingCall(l.do) }

func (l *stallOnce) do(context.Context, redis.Cmdable, algorithms.Request) algorithms.Pending {
	if l.calls.Add(1)-1 == l.at {
		time.Sleep(l.d)
	}
	return func() (algorithms.Decision, error) { return algorithms.Decision{Allowed: true}, nil }
}

// TestRunStallAtTheEnd is the regression test of a run marked behind schedule for a stall of
// the machine near its end that it tolerated anywhere else: ticks due before the end were
// missed once the end had passed by 10 ms, where in the middle of the run they are sent, and
// are not late, up to LateAfter behind their time. One client at 100/s stalls 200 ms on the
// tick due 250 ms into a 300 ms run: the four ticks due after it are sent up to 240 ms late,
// within a LateAfter of 2 s.
func TestRunStallAtTheEnd(t *testing.T) {
	lim := &stallOnce{at: 25, d: 200 * time.Millisecond}
	res, _, err := recorded(context.Background(), nil, lim, Plan{Arrival: Constant(100), Duration: 300 * time.Millisecond,
		Clients: 1, LateAfter: 2 * time.Second})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if c := res.Counts; res.Behind || c.Missed != 0 || c.Late != 0 || c.Requests != 30 || res.Scheduled != 30 {
		t.Errorf("behind %v: %d of %d scheduled sent, %d missed, %d late; want all 30 sent, none missed or late",
			res.Behind, c.Requests, res.Scheduled, c.Missed, c.Late)
	}
}

func TestBehind(t *testing.T) {
	tests := []struct {
		scheduled, missed, late uint64
		want                    bool
	}{
		{1000, 0, 0, false}, {1000, 10, 0, false}, {1000, 0, 10, false}, {1000, 6, 5, true}, {1000, 11, 0, true}, {0, 0, 0, false}, {0, 1, 0, true},
	}
	for _, tt := range tests {
		if got := behind(tt.scheduled, tt.missed, tt.late); got != tt.want {
			t.Errorf("behind(%d, %d, %d) = %v; want %v", tt.scheduled, tt.missed, tt.late, got, tt.want)
		}
	}
}
