package algorithms

import (
	"testing"
	"time"
)

func TestContractAllowance(t *testing.T) {
	for _, tt := range []struct {
		c    Contract
		d    time.Duration
		want float64
	}{
		{Contract{Kind: SlidingWindow, Limit: 100, Window: time.Second}, 250 * time.Millisecond, 25},
		{Contract{Kind: FixedWindow, Limit: 100, Window: time.Minute}, time.Second, 100.0 / 60},
		{Contract{Kind: TokenBucket, Capacity: 10, RefillPermits: 5, RefillPer: 100 * time.Millisecond}, time.Second, 50},
		{Contract{Kind: NoContract}, time.Second, 0},
	} {
		if got := tt.c.Allowance(tt.d); got != tt.want {
			t.Errorf("%s.Allowance(%s) = %g; want %g", tt.c, tt.d, got, tt.want)
		}
	}
}
