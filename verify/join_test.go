package verify

import (
	"slices"
	"testing"
)

// TestJoinSummaries: the join of shards' verifications fails on any shard's definite violation,
// adds the counts and takes the largest excess with its Where, passes when the shards that are
// not passes are inconclusive only for their own reasons (no admission, never pressed) while
// another shard admitted and pressed, and is inconclusive for any other reason.
func TestJoinSummaries(t *testing.T) {
	pressed := &Pressure{Windows: 10, Full: 5, Denials: 2, Pressed: true}
	idle := &Pressure{Windows: 4}
	pass := Summary{Verdict: Pass, Pressure: pressed, Finding: "held"}
	none := Summary{Verdict: Inconclusive, Reasons: []string{ReasonNoAdmission, ReasonNeverPressed}, Pressure: &Pressure{}}
	unpressed := Summary{Verdict: Inconclusive, Reasons: []string{ReasonNeverPressed}, Pressure: idle}
	fail := Summary{Verdict: Fail, DefiniteViolations: 3, PossibleViolations: 4, WorstExcess: 2, Where: "k1",
		Reasons: []string{"3 definite violations"}, ViolationTimesS: []float64{2, 1}, Pressure: pressed, Finding: "broken"}
	behind := Summary{Verdict: Inconclusive, Reasons: []string{"the load generator fell behind its schedule"}, Pressure: pressed}
	noted := Summary{Verdict: Inconclusive, Reasons: []string{ReasonNoAdmission, "note: 1 of 1 decisions replayed through the reference model differ"}}
	tests := []struct {
		name     string
		parts    []Summary
		verdict  Verdict
		definite int64
		reasons  []string
	}{
		{"all pass", []Summary{pass, pass}, Pass, 0, nil},
		{"a shard with no admission", []Summary{pass, none}, Pass, 0, nil},
		{"a shard that never pressed", []Summary{unpressed, pass}, Pass, 0, nil},
		{"a shard with a note and no admission", []Summary{pass, noted}, Pass, 0, []string{"note: 1 of 1 decisions replayed through the reference model differ"}},
		{"no shard admitted", []Summary{none, none}, Inconclusive, 0, []string{ReasonNoAdmission, ReasonNeverPressed}},
		{"no shard pressed", []Summary{unpressed, unpressed}, Inconclusive, 0, []string{ReasonNeverPressed}},
		{"a shard behind", []Summary{pass, behind}, Inconclusive, 0, []string{"the load generator fell behind its schedule"}},
		{"a failed shard", []Summary{pass, fail, behind}, Fail, 3, []string{"3 definite violations", "the load generator fell behind its schedule"}},
		{"two failed shards", []Summary{fail, fail}, Fail, 6, []string{"3 definite violations"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := JoinSummaries(tt.parts)
			if got.Verdict != tt.verdict || got.DefiniteViolations != tt.definite || !slices.Equal(got.Reasons, tt.reasons) {
				t.Errorf("JoinSummaries = %s, %d definite, reasons %q; want %s, %d, %q", got.Verdict, got.DefiniteViolations, got.Reasons,
					tt.verdict, tt.definite, tt.reasons)
			}
			var possible, excess int64
			for _, p := range tt.parts {
				possible += p.PossibleViolations
				excess = max(excess, p.WorstExcess)
			}
			if got.PossibleViolations != possible || got.WorstExcess != excess || (excess > 0 && got.Where != "k1") {
				t.Errorf("JoinSummaries: %d possible, worst %d at %q; want %d, %d at k1", got.PossibleViolations, got.WorstExcess, got.Where, possible, excess)
			}
			if !slices.IsSorted(got.ViolationTimesS) {
				t.Errorf("violation times %v not in order", got.ViolationTimesS)
			}
		})
	}
	if got := JoinSummaries([]Summary{pass, fail}); got.Finding != "broken" || got.Pressure.Windows != 20 || got.Pressure.FullShare != 0.5 {
		t.Errorf("JoinSummaries(pass, fail): finding %q, pressure %+v; want the failed shard's finding, 20 windows, full share 0.5", got.Finding, got.Pressure)
	}
}

// TestJoinAccuracy: the exact limiter's admissions and the false denials add up, the worst
// window is the largest, the efficiency is weighted by the exact limiter's admissions.
func TestJoinAccuracy(t *testing.T) {
	got := JoinAccuracy([]AccuracySummary{{IdealAllowed: 100, Efficiency: 1, FalseDenials: 1, MaxWindowRatio: 0.5},
		{IdealAllowed: 300, Efficiency: 0.9, FalseDenials: 2, MaxWindowRatio: 1.2}})
	want := AccuracySummary{IdealAllowed: 400, Efficiency: 0.925, FalseDenials: 3, MaxWindowRatio: 1.2}
	if got != want {
		t.Errorf("JoinAccuracy = %+v; want %+v", got, want)
	}
}
