package segment

import (
	"errors"
	"strings"
	"testing"

	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// TestMergeRefusesOtherRuns: results that are not every segment of one run, once each, are
// refused with ErrNotOneRun, naming what is wrong.
func TestMergeRefusesOtherRuns(t *testing.T) {
	seg := func(dir, run, hash string, i, n int) Part {
		return Part{Dir: dir, Result: &result.Result{Segment: &result.Segment{RunID: run, ScenarioHash: hash, Index: i, Count: n}}}
	}
	tests := []struct {
		name  string
		parts []Part
		want  []string
	}{
		{"none", nil, []string{"no results given"}},
		{"not a segment", []Part{{Dir: "plain", Result: &result.Result{}}}, []string{"plain is not a segment's result"}},
		{"mixed runs", []Part{seg("a", "r1", "h", 0, 2), seg("b", "r2", "h", 1, 2)}, []string{`b is of run "r2", a of run "r1"`}},
		{"mixed scenarios", []Part{seg("a", "r", "h1", 0, 2), seg("b", "r", "h2", 1, 2)}, []string{"b ran another scenario"}},
		{"mixed counts", []Part{seg("a", "r", "h", 0, 2), seg("b", "r", "h", 1, 3)}, []string{"b is one of 3 segments, a one of 2"}},
		{"duplicate", []Part{seg("a", "r", "h", 0, 2), seg("b", "r", "h", 0, 2), seg("c", "r", "h", 1, 2)},
			[]string{"segment 0/2 is given twice: a and b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Merge(tt.parts)
			if !errors.Is(err, ErrNotOneRun) {
				t.Fatalf("Merge = %v; want an error wrapping ErrNotOneRun", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Merge = %q; want it to say %q", err, w)
				}
			}
		})
	}
}

// TestPartialVerdict: without some segments a pass is inconclusive, a definite violation stays
// definite, except under a first-hit window, where it becomes possible; the missing segments are
// named in the reasons.
func TestPartialVerdict(t *testing.T) {
	missing := []string{"1/3"}
	tests := []struct {
		name               string
		in                 verify.Summary
		firstHit           bool
		verdict            verify.Verdict
		definite, possible int64
	}{
		{"a pass", verify.Summary{Verdict: verify.Pass}, false, verify.Inconclusive, 0, 0},
		{"a pass under a first-hit window", verify.Summary{Verdict: verify.Pass}, true, verify.Inconclusive, 0, 0},
		{"a fail", verify.Summary{Verdict: verify.Fail, DefiniteViolations: 3, PossibleViolations: 4}, false, verify.Fail, 3, 4},
		{"a fail under a first-hit window", verify.Summary{Verdict: verify.Fail, DefiniteViolations: 3, PossibleViolations: 4,
			ViolationTimesS: []float64{1, 2, 3}}, true, verify.Inconclusive, 0, 7},
		{"inconclusive already", verify.Summary{Verdict: verify.Inconclusive, Reasons: []string{"dominated by errors"}}, false, verify.Inconclusive, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.in
			partialVerdict(&v, missing, tt.firstHit)
			if v.Verdict != tt.verdict || v.DefiniteViolations != tt.definite || v.PossibleViolations != tt.possible {
				t.Errorf("verdict %s, %d definite, %d possible; want %s, %d, %d", v.Verdict, v.DefiniteViolations, v.PossibleViolations,
					tt.verdict, tt.definite, tt.possible)
			}
			if v.DefiniteViolations == 0 && len(v.ViolationTimesS) > 0 {
				t.Errorf("violation times %v kept without definite violations", v.ViolationTimesS)
			}
			if tt.in.Verdict != verify.Inconclusive && !strings.Contains(strings.Join(v.Reasons, "; "), "segment(s) 1/3") {
				t.Errorf("reasons %q do not name the missing segment", v.Reasons)
			}
		})
	}
}

// TestSegmentArrivingLate: a generator whose start (--start-at) has already passed sends its
// ticks late, and its result says how late it started; the lateness makes its run behind
