package load

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ClockOffset is a server clock measured against the harness clock: server time minus harness
// time is Offset, give or take Err.
type ClockOffset struct {
	Offset time.Duration
	Err    time.Duration
}

// MeasureOffset measures the offset of the Redis server behind c against the local clock with
// samples TIME round trips (8 when samples <= 0) and keeps the one with the shortest round trip:
// if the harness read t0 before and t1 after and the server said s, the offset is
// s − (t0+t1)/2 with error (t1−t0)/2 + 1 µs (TIME's resolution). On a cluster, TIME goes to
// one node: nodes are assumed to share a clock.
func MeasureOffset(ctx context.Context, c redis.Cmdable, samples int) (ClockOffset, error) {
	if samples <= 0 {
		samples = 8
	}
	best := ClockOffset{Err: -1}
	for range samples {
		t0 := time.Now()
		s, err := c.Time(ctx).Result()
		t1 := time.Now()
		if err != nil {
			return ClockOffset{}, fmt.Errorf("measure clock offset: TIME: %w", err)
		}
		rtt := t1.Sub(t0)
		mid := t0.Add(rtt / 2)
		off := ClockOffset{Offset: s.Sub(mid), Err: rtt/2 + time.Microsecond}
		if best.Err < 0 || off.Err < best.Err {
			best = off
		}
	}
	return best, nil
}
