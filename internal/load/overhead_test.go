package load

import (
	"context"
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
