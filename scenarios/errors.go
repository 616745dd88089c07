package scenarios

import (
	"errors"
	"sort"

	"github.com/limitbench/limitbench/internal/problem"
)

// ErrInvalid is matched (errors.Is) by every error Load, Parse, Validate and Apply return for a
// scenario that cannot be run. The error itself is an *Errors listing each problem.
var ErrInvalid = errors.New("invalid scenario")

// ErrBadThreshold is wrapped by ParseThreshold's errors.
var ErrBadThreshold = errors.New("bad threshold")

// Errors is every problem found in one scenario, in file order: by line, then by column, and
// problems without a line last, in the order they were found. It matches ErrInvalid.
//
// A scenario's problems name their line, not their column: Column is zero in them, as in
// ProblemAt's (the column only orders the problems of one line). A problem of the trace file a
// scenario replays says its column in its message ("column 3: ...").
type Errors struct {
	Problems []problem.Problem
}

// Error prints one problem per line, as problem.Problem.String does.
func (e *Errors) Error() string { return problem.Lines(e.Problems) }

// Is reports whether target is ErrInvalid.
func (e *Errors) Is(target error) bool { return target == ErrInvalid }

// errorsOf returns probs sorted by place, without their columns, as an *Errors, or nil when
// there are none.
func errorsOf(probs []problem.Problem) error {
	if len(probs) == 0 {
		return nil
	}
	sorted := append([]problem.Problem(nil), probs...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		// Problems without a line go last, in the order they were found.
		if (a.Line == 0) != (b.Line == 0) {
			return b.Line == 0
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	for i := range sorted {
		sorted[i].Column = 0
	}
	return &Errors{Problems: sorted}
}
