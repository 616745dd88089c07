package verify

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAddThreshold: a broken threshold makes any verdict fail, one that cannot be evaluated turns
// a pass (only) into inconclusive, a held one changes nothing; the two first add their reason.
func TestAddThreshold(t *testing.T) {
	for _, tt := range []struct {
		from   Verdict
		status ThresholdStatus
		want   Verdict
		reason bool
	}{
		{Pass, ThresholdHeld, Pass, false},
		{Pass, ThresholdBroken, Fail, true},
		{Inconclusive, ThresholdBroken, Fail, true},
		{Pass, ThresholdUnevaluated, Inconclusive, true},
		{Fail, ThresholdUnevaluated, Fail, true},
		{Inconclusive, ThresholdHeld, Inconclusive, false},
	} {
		s := Summary{Verdict: tt.from}
		c := ThresholdCheck{Threshold: "p99 < 1ms", Status: tt.status}
		s.AddThreshold(c, "why")
		var reasons []string
		if tt.reason {
			reasons = []string{"why"}
		}
		want := Summary{Verdict: tt.want, Reasons: reasons, Thresholds: []ThresholdCheck{c}}
		if d := cmp.Diff(want, s); d != "" {
			t.Errorf("%s then %s (-want +got):\n%s", tt.from, tt.status, d)
		}
		if got := s.ThresholdBroken(); got != (tt.status == ThresholdBroken) {
			t.Errorf("%s then %s: ThresholdBroken = %v", tt.from, tt.status, got)
		}
	}
}
