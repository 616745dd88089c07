// Package problem is the one shape of a problem with an input file: where it is (file, line,
// column), which field, and what is wrong, rendered "file:line:column: field: message".
//
// Package scenarios reports a scenario file's problems in it and package trace a trace file's;
// a scenario that replays a trace reports the trace file's problems as its own. scenarios
// imports trace, so the type lives below both, in a package of its own: it belongs to neither
// (a trace is no scenario), and a problem is all this package holds.
package problem

import (
	"fmt"
	"strings"
)

// Problem is one thing wrong with an input file. Line and Column are 1-based (Column counts
// bytes); Column is zero for a problem with a whole line, Line too for one with the whole file,
// and File is empty for a problem with no file (a value built in Go or set by a flag).
type Problem struct {
	File         string
	Line, Column int
	// Field names what is wrong in the file's own words: a trace's column ("offset"), a
	// scenario's field path ("arrival.rate", "algorithms[2].allowed", list indexes 0-based);
	// empty for a problem with the place as a whole.
	Field string
	Msg   string
}

// String renders p as "file:line:column: field: message", leaving out the parts that are zero
// or empty; a problem with a line but no file starts "line N".
func (p Problem) String() string {
	var b strings.Builder
	switch {
	case p.File != "" && p.Line > 0:
		fmt.Fprintf(&b, "%s:%d", p.File, p.Line)
	case p.File != "":
		b.WriteString(p.File)
	case p.Line > 0:
		fmt.Fprintf(&b, "line %d", p.Line)
	}
	if p.Line > 0 && p.Column > 0 {
		fmt.Fprintf(&b, ":%d", p.Column)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Lines renders ps one per line, each as String does: the text of an error that lists them.
func Lines(ps []Problem) string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}
