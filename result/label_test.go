package result

import (
	"testing"

	"github.com/limitbench/limitbench/verify"
)

func TestLabel(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    verify.Summary
		want string
	}{
		{"pass", verify.Summary{Verdict: verify.Pass}, "pass"},
		{"fail", verify.Summary{Verdict: verify.Fail, DefiniteViolations: 3}, "fail"},
		{"inconclusive", verify.Summary{Verdict: verify.Inconclusive}, "inconclusive"},
		{"caught", verify.Summary{Verdict: verify.Fail, DefiniteViolations: 3, ExpectedViolation: true}, "expected violation caught"},
		{"missed", verify.Summary{Verdict: verify.Pass, ExpectedViolation: true}, "expected violation missed"},
		{"expected but inconclusive", verify.Summary{Verdict: verify.Inconclusive, ExpectedViolation: true}, "inconclusive"},
		{"empty", verify.Summary{}, "unknown"},
		{"tolerated", verify.Summary{Verdict: verify.Fail, DefiniteViolations: 2, MayViolate: true}, "fail (tolerated)"},
		{"tolerated but passed", verify.Summary{Verdict: verify.Pass, MayViolate: true}, "pass"},
		{"broken threshold", verify.Summary{Verdict: verify.Fail, Thresholds: []verify.ThresholdCheck{{Threshold: "p99 < 1ms", Status: verify.ThresholdBroken}}}, "fail"},
		{"caught but a threshold broke", verify.Summary{Verdict: verify.Fail, DefiniteViolations: 3, ExpectedViolation: true,
			Thresholds: []verify.ThresholdCheck{{Threshold: "p99 < 1ms", Status: verify.ThresholdBroken}}}, "fail"},
		{"tolerated but a threshold broke", verify.Summary{Verdict: verify.Fail, DefiniteViolations: 3, MayViolate: true,
			Thresholds: []verify.ThresholdCheck{{Threshold: "p99 < 1ms", Status: verify.ThresholdBroken}}}, "fail"},
		{"caught, thresholds held", verify.Summary{Verdict: verify.Fail, DefiniteViolations: 3, ExpectedViolation: true,
			Thresholds: []verify.ThresholdCheck{{Threshold: "p99 < 1ms", Status: verify.ThresholdHeld}}}, "expected violation caught"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := Entry{Verification: tc.v}
			if got := e.Label(); got != tc.want {
				t.Errorf("Label(%+v) = %q; want %q", tc.v, got, tc.want)
			}
		})
	}
}
