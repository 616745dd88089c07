package segment

import (
	"errors"
	"strings"
	"testing"

	"github.com/limitbench/limitbench/result"
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
		{"missing", []Part{seg("a", "r", "h", 0, 3), seg("b", "r", "h", 2, 3)}, []string{"segment(s) missing: 1/3"}},
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

// TestSegmentArrivingLate: a generator whose start (--start-at) has already passed sends its
// ticks late, and its result says how late it started; the lateness makes its run behind
