// Package clock measures a Redis server's clock against the harness's: Measure reads TIME over a
// few round trips and keeps the closest reading, an Offset with its error.
//
// Why a package of its own: the offset is measured once per measurement, before the load, by
// the code that runs the measurement (internal/measure, which also widens its error by the one
// drift allowance, measure.Drift), and it is read by the verifier's admission log (verify.NewAdmissionLog), which
// places each admission of an external server at the server's TIME minus the offset, give or
// take its error, and by a segment's partial result. It is neither the load generator's concern
// nor the verifier's (which only reads histories), so it sits below both: a value type and the
// one function that measures it.
package clock

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Offset is a server clock measured against the harness clock: server time minus harness time
// is Offset, give or take Err.
type Offset struct {
	Offset time.Duration
	Err    time.Duration
}

// Measure measures the offset of the Redis server behind c against the local clock with samples
// TIME round trips (8 when samples <= 0) and keeps the one with the shortest round trip:
// if the harness read t0 before and t1 after and the server said s, the offset is
// s − (t0+t1)/2 with error (t1−t0)/2 + 1 µs (TIME's resolution). On a cluster, TIME goes to
// one node: nodes are assumed to share a clock.
func Measure(ctx context.Context, c redis.Cmdable, samples int) (Offset, error) {
	if samples <= 0 {
		samples = 8
	}
	best := Offset{Err: -1}
	for range samples {
		t0 := time.Now()
		s, err := c.Time(ctx).Result()
		t1 := time.Now()
		if err != nil {
			return Offset{}, fmt.Errorf("measure clock offset: TIME: %w", err)
		}
		rtt := t1.Sub(t0)
		mid := t0.Add(rtt / 2)
		off := Offset{Offset: s.Sub(mid), Err: rtt/2 + time.Microsecond}
		if best.Err < 0 || off.Err < best.Err {
			best = off
		}
	}
	return best, nil
}
