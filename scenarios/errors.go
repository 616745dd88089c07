package scenarios

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrInvalid is matched (errors.Is) by every error Load, Parse, Validate and Apply return for a
// scenario that cannot be run. The error itself is an *Errors listing each problem.
var ErrInvalid = errors.New("invalid scenario")

// ErrBadThreshold is wrapped by ParseThreshold's errors.
var ErrBadThreshold = errors.New("bad threshold")

// Problem is one thing wrong with a scenario. Line and Column are 1-based; zero when the problem
// has no place in a file (a scenario built in Go, a value set by a command-line flag, a default).
type Problem struct {
	File   string
	Line   int
	Column int
	// Field is the path of the field in the YAML spelling, for example "arrival.rate" or
	// "algorithms[2].allowed"; list indexes are 0-based. Empty for problems with the file as a whole.
	Field string
	Msg   string
}

// String renders p as "file:line: field: message", leaving out the parts that are empty.
func (p Problem) String() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File)
		if p.Line > 0 {
			fmt.Fprintf(&b, ":%d", p.Line)
		}
		b.WriteString(": ")
	} else if p.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", p.Line)
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Errors is every problem found in one scenario, in file order. It matches ErrInvalid.
type Errors struct {
	Problems []Problem
}

// Error prints one problem per line, as Problem.String does.
func (e *Errors) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Is reports whether target is ErrInvalid.
func (e *Errors) Is(target error) bool { return target == ErrInvalid }

// errorsOf returns probs sorted by place as an *Errors, or nil when there are none.
func errorsOf(probs []Problem) error {
	if len(probs) == 0 {
		return nil
	}
	sorted := append([]Problem(nil), probs...)
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
	return &Errors{Problems: sorted}
}
