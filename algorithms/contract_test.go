package algorithms

import (
	"errors"
	"reflect"
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
		{Contract{Kind: FirstHitWindow, Limit: 10, Window: 2 * time.Second}, time.Second, 5},
		{Contract{Kind: TokenBucket, Capacity: 10, RefillPermits: 5, RefillPer: 100 * time.Millisecond}, time.Second, 50},
		{Contract{Kind: NoContract}, time.Second, 0},
	} {
		if got := tt.c.Allowance(tt.d); got != tt.want {
			t.Errorf("%s.Allowance(%s) = %g; want %g", tt.c, tt.d, got, tt.want)
		}
	}
}

// TestFirstHitContractText: first-hit-window renders and parses as the other window contracts.
func TestFirstHitContractText(t *testing.T) {
	c := Contract{Kind: FirstHitWindow, Limit: 100, Window: 1500 * time.Millisecond, Scope: PerClient}
	if got, want := c.String(), "first-hit-window(100, 1.5s) per subject+client"; got != want {
		t.Errorf("String() = %q; want %q", got, want)
	}
	got, err := ParseContract(c.String())
	if err != nil || !reflect.DeepEqual(got, c) {
		t.Errorf("ParseContract(%q) = %+v, %v; want %+v", c.String(), got, err, c)
	}
	if _, err := ParseContract("first-hit-window"); !errors.Is(err, ErrBadContractText) {
		t.Errorf("ParseContract(first-hit-window) = %v; want ErrBadContractText", err)
	}
}
