package verify

import (
	"testing"
	"time"

	"github.com/limitbench/limitbench/algorithms"
)

// Regression: a warmup that empties a token bucket left the ideal limiter of the measured part
// full, so a correct algorithm's denials right after the warmup counted as false denials and its
// efficiency read far below 1 (0.72 for gcra in the demo scenario). Log.From fixes it: the warmup
// primes the ideal limiter and is not counted.
func TestAccuracyFromPrimesTheIdealLimiter(t *testing.T) {
	c := algorithms.Contract{Kind: algorithms.TokenBucket, Capacity: 5, RefillPermits: 5, RefillPer: time.Second}
	// Times are absolute; the log's Base is not, so From (absolute) is compared right.
	const warm, from, base = 1_700_000_001_000_000, 1_700_000_001_000_100, 1_700_000_000_000_007
	var warmup, measured []Event
	for range 5 {
		warmup = append(warmup, mustEvent(warm-base, warm-base, 0, 0, 1, Admitted))
	}
	for range 5 {
		measured = append(measured, mustEvent(from-base, from-base, 0, 0, 1, Denied))
	}
	names := func(ev []Event) *Log {
		return &Log{Subjects: []string{"s"}, Clients: []string{"c"}, Base: base, Events: ev}
	}

	alone, err := Accuracy(c, names(append([]Event(nil), measured...)), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if alone.IdealAllowed != 5 || alone.FalseDenials != 5 {
		t.Errorf("without the warmup: ideal %d, false denials %d; want 5 and 5 (the bias From removes)", alone.IdealAllowed, alone.FalseDenials)
	}

	log := names(append(append([]Event(nil), warmup...), measured...))
	log.From = from
	got, err := Accuracy(c, log, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got.Offered != 5 || got.Admitted != 0 || got.IdealAllowed != 0 || got.FalseDenials != 0 {
		t.Errorf("with From: offered %d admitted %d ideal %d false denials %d; want 5 0 0 0",
			got.Offered, got.Admitted, got.IdealAllowed, got.FalseDenials)
	}
	if len(got.Series) != 1 || got.Series[0].Offered != 5 {
		t.Errorf("with From: series %+v; want one bin with the 5 measured requests", got.Series)
	}
}
