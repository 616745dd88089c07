package trace

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/limitbench/limitbench/internal/problem"
)

// Errors lists the problems of a trace file in file order: at most 20; reading stops at the
// 20th, and the last problem then says so. It matches ErrInvalid.
type Errors struct {
	Problems []problem.Problem
}

// Error prints one problem per line, "file:line:column: field: message" (problem.Problem).
func (e *Errors) Error() string { return problem.Lines(e.Problems) }

// Is reports whether target is ErrInvalid.
func (e *Errors) Is(target error) bool { return target == ErrInvalid }

// Read reads the trace file at path, in the format its extension names (FormatOf).
func Read(path string) (*Trace, error) {
	format, err := FormatOf(path)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	defer func() { _ = f.Close() }() // read only
	return Parse(path, format, f)
}

// Parse reads a trace in the given format from r; name is the file name its problems
// carry. The result is canonical (Trace.Canonical). The whole input is checked: an invalid one
// returns an *Errors (matching ErrInvalid) naming the file, line, column and field of each
// problem; an error reading r is returned wrapped, as it is.
//
// CSV: the first line that is not a comment is the header, naming the columns in any order:
// offset, client and subject are required, cost (default 1) and skew (default 0s) optional;
// fields are trimmed of spaces; every line has as many fields as the header (there are no
// comment lines), and a cell of an optional column may be left empty for its default. JSON Lines: one object per line with the same keys (offset and skew strings,
// cost an integer, client and subject strings); blank lines are skipped. In both, offset and
// skew are Go durations with a unit ("0s", "1.5ms", "-2s"), and a client's skew must be the
// same on each of its rows.
//
// Offsets must not decrease from one row to the next: a trace is replayed in file order, and a
// row earlier than the one before is reported (sort the file by offset), never reordered.
func Parse(name string, format Format, r io.Reader) (*Trace, error) {
	p := &parser{file: name, t: &Trace{}, clients: map[string]uint16{}, subjects: map[string]uint32{}}
	var err error
	switch format {
	case CSV:
		err = p.csv(r)
	case JSONL:
		err = p.jsonl(r)
	default:
		return nil, fmt.Errorf("%w: %s: unknown trace format %q (want csv or jsonl)", ErrInvalid, name, format)
	}
	if err != nil {
		return nil, err
	}
	if len(p.problems) == 0 && len(p.t.Rows) == 0 {
		p.add(0, 0, "", "no rows: a trace needs at least one request")
	}
	if len(p.problems) > 0 {
		// In file order: the checks of one row do not run in column order. A last problem
		// saying the read stopped stays last.
		n := len(p.problems)
		if p.stopped {
			n--
		}
		sort.SliceStable(p.problems[:n], func(i, j int) bool {
			a, b := p.problems[i], p.problems[j]
			if (a.Line == 0) != (b.Line == 0) {
				return b.Line == 0
			}
			if a.Line != b.Line {
				return a.Line < b.Line
			}
			// Problems with the whole line after those with one of its fields.
			return uint(a.Column-1) < uint(b.Column-1)
		})
		return nil, &Errors{Problems: p.problems}
	}
	if !p.skewed {
		p.t.Skew = nil
	}
	return p.t, nil
}

// errStop ends a read that has found maxProblems problems.
var errStop = errors.New("too many problems")

type parser struct {
	file     string
	t        *Trace
	clients  map[string]uint16
	subjects map[string]uint32
	// cur is each client's clock offset at its last row; skewed is whether any offset is
	// non-zero.
	cur      []time.Duration
	skewed   bool
	prev     time.Duration
	prevLine int
	cols     int // fields of the CSV header
	problems []problem.Problem
	stopped  bool // the last problem says the read stopped
}

// add records a problem; it returns errStop once there are maxProblems.
func (p *parser) add(line, col int, field, format string, args ...any) error {
	if len(p.problems) >= maxProblems {
		return errStop
	}
	p.problems = append(p.problems, problem.Problem{File: p.file, Line: line, Column: col, Field: field, Msg: fmt.Sprintf(format, args...)})
	if len(p.problems) == maxProblems {
		p.problems = append(p.problems, problem.Problem{File: p.file, Line: line, Msg: fmt.Sprintf("stopped after %d problems", maxProblems)})
		p.stopped = true
		return errStop
	}
	return nil
}

// field is one value of a row with its place.
type field struct {
	present   bool
	text      string
	line, col int
}

// row checks one row's fields and appends it; it returns errStop when the read must end. Each
// field is checked even after another failed, so that a line's problems are reported at once.
func (p *parser) row(line int, offset, client, subject, cost, skew field) error {
	c := rowCheck{p: p, ok: true}
	var r Row
	var err error
	if r.At, err = c.offset(offset); err != nil {
		return err
	}
	if r.Cost, err = c.cost(cost); err != nil {
		return err
	}
	sk, err := c.skew(skew)
	if err != nil {
		return err
	}
	if r.Subject, err = c.subject(subject); err != nil {
		return err
	}
	if r.Client, err = c.client(client, sk, r.At); err != nil {
		return err
	}
	if !c.ok {
		return nil
	}
	if len(p.t.Rows) >= MaxRows {
		return c.fail(offset, "", "more than %d rows", MaxRows)
	}
	p.t.Rows = append(p.t.Rows, r)
	p.prev, p.prevLine = r.At, line
	return nil
}

// rowCheck is the check of one row: ok until a field of it fails. A new subject or client is
// numbered only in a row whose fields before it are ok.
type rowCheck struct {
	p  *parser
	ok bool
}

// fail records a problem with field f (named name) and marks the row bad; it returns errStop
// when the read must end.
func (c *rowCheck) fail(f field, name, format string, args ...any) error {
	c.ok = false
	return c.p.add(f.line, f.col, name, format, args...)
}

// offset returns the row's offset: a duration in [0, MaxOffset], not earlier than the row
// before.
func (c *rowCheck) offset(f field) (time.Duration, error) {
	at, err := parseDuration(f.text)
	switch {
	case err != nil:
		return 0, c.fail(f, "offset", "%v", err)
	case at < 0 || at > MaxOffset:
		return 0, c.fail(f, "offset", "%s is outside [0s, %s]", at, MaxOffset)
	case at < c.p.prev:
		return 0, c.fail(f, "offset", "%s is earlier than %s on line %d: rows must be in time order (sort the file by offset)", at, c.p.prev, c.p.prevLine)
	}
	return at, nil
}

// cost returns the row's cost: an integer in [1, MaxCost], 1 when the row gives none.
func (c *rowCheck) cost(f field) (uint16, error) {
	if !f.present {
		return 1, nil
	}
	n, err := strconv.ParseInt(f.text, 10, 64)
	switch {
	case err != nil:
		return 1, c.fail(f, "cost", "%q is not an integer", f.text)
	case n < 1 || n > MaxCost:
		return 1, c.fail(f, "cost", "%d is outside [1, %d]", n, MaxCost)
	}
	return uint16(n), nil
}

// skew returns the row's clock offset for its client: a duration within ±MaxSkew, 0 when the
// row gives none.
func (c *rowCheck) skew(f field) (time.Duration, error) {
	if !f.present {
		return 0, nil
	}
	sk, err := parseDuration(f.text)
	if err == nil {
		err = checkSkew(sk)
	}
	if err != nil {
		return sk, c.fail(f, "skew", "%v", err)
	}
	return sk, nil
}

// subject returns the index of the row's subject, numbering a new one.
func (c *rowCheck) subject(f field) (uint32, error) {
	p := c.p
	if err := checkSubjectName(f.text); err != nil {
		return 0, c.fail(f, "subject", "%v", err)
	}
	if s, seen := p.subjects[f.text]; seen {
		return s, nil
	}
	if len(p.t.Subjects) >= MaxSubjects {
		return 0, c.fail(f, "subject", "more than %d subjects", MaxSubjects)
	}
	if !c.ok {
		return 0, nil
	}
	s := uint32(len(p.t.Subjects))
	p.subjects[f.text] = s
	p.t.Subjects = append(p.t.Subjects, f.text)
	return s, nil
}

// client returns the index of the row's client, numbering a new one with the row's clock
// offset sk; a client seen before whose offset was another at its last row has its clock jump
// at this row (Trace.Jumps), at offset at.
func (c *rowCheck) client(f field, sk, at time.Duration) (uint16, error) {
	p := c.p
	if err := checkName("client", f.text); err != nil {
		return 0, c.fail(f, "client", "%v", err)
	}
	id, seen := p.clients[f.text]
	switch {
	case seen:
		if c.ok && p.cur[id] != sk {
			p.t.Jumps = append(p.t.Jumps, Jump{At: at, Client: id, Skew: sk})
			p.cur[id] = sk
			p.skewed = p.skewed || sk != 0
		}
		return id, nil
	case len(p.t.Clients) >= MaxClients:
		return 0, c.fail(f, "client", "more than %d clients", MaxClients)
	case !c.ok:
		return 0, nil
	}
	id = uint16(len(p.t.Clients))
	p.clients[f.text] = id
	p.t.Clients = append(p.t.Clients, f.text)
	p.t.Skew = append(p.t.Skew, sk)
	p.cur = append(p.cur, sk)
	p.skewed = p.skewed || sk != 0
	return id, nil
}

// parseDuration parses a Go duration with a unit; a bare number is refused with a hint.
func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, errors.New("empty (write a duration such as 0s or 1.5ms)")
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil && s != "0" {
		return 0, fmt.Errorf("%q has no unit (write %ss, %sms or %sus)", s, s, s, s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (write one such as 0s, 1.5ms or 250us)", s)
	}
	return d, nil
}

// columns are the columns a trace may have, the required ones (requiredColumns) first.
var columns = []string{"offset", "client", "subject", "cost", "skew"}

// requiredColumns are the columns every row must fill.
var requiredColumns = columns[:3]

func (p *parser) csv(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	if b, err := br.Peek(3); err == nil && bytes.Equal(b, []byte("\xef\xbb\xbf")) {
		_, _ = br.Discard(3) // a UTF-8 byte order mark, as spreadsheets write
	}
	cr := csv.NewReader(br)
	cr.TrimLeadingSpace = true
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	var idx [5]int // column of each of columns, -1 when absent
	header := false
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			if p.add(pe.Line, pe.Column, "", "%v", pe.Err) != nil {
				return nil
			}
			if errors.Is(pe.Err, csv.ErrQuote) || errors.Is(pe.Err, csv.ErrBareQuote) {
				return nil // the reader cannot find the next record reliably
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("read trace %s: %w", p.file, err)
		}
		line, _ := cr.FieldPos(0)
		if !header {
			header = true
			if !p.header(cr, rec, &idx) {
				return nil
			}
			continue
		}
		if len(rec) != p.cols {
			if p.add(line, 0, "", "%d fields, but the header names %d", len(rec), p.cols) != nil {
				return nil
			}
			continue
		}
		get := func(k int) field {
			i := idx[k]
			if i < 0 {
				return field{}
			}
			l, c := cr.FieldPos(i)
			text := strings.TrimSpace(rec[i])
			if text == "" && k >= len(requiredColumns) {
				return field{} // an optional cell left empty: the column's default
			}
			return field{present: true, text: text, line: l, col: c}
		}
		if p.row(line, get(0), get(1), get(2), get(3), get(4)) != nil {
			return nil
		}
	}
	if !header {
		p.add(0, 0, "", "empty file: a trace needs a header (offset,client,subject,cost) and at least one row")
	}
	return nil
}

// header reads the CSV header into idx; false when it is unusable.
func (p *parser) header(cr *csv.Reader, rec []string, idx *[5]int) bool {
	for k := range idx {
		idx[k] = -1
	}
	p.cols = len(rec)
	line, _ := cr.FieldPos(0)
	if len(rec) > 0 {
		if _, err := time.ParseDuration(strings.TrimSpace(rec[0])); err == nil {
			p.add(line, 1, "", "no header: the first line must name the columns, such as offset,client,subject,cost")
			return false
		}
	}
	ok := true
	for i, name := range rec {
		name = strings.TrimSpace(name)
		_, col := cr.FieldPos(i)
		k := -1
		for j, c := range columns {
			if name == c {
				k = j
			}
		}
		switch {
		case k < 0:
			ok = false
			p.add(line, col, "", "unknown column %q (want %s)", name, strings.Join(columns, ", "))
		case idx[k] >= 0:
			ok = false
			p.add(line, col, "", "column %q named twice", name)
		default:
			idx[k] = i
		}
	}
	for k, c := range requiredColumns {
		if idx[k] < 0 {
			ok = false
			p.add(line, 0, "", "the header has no %q column (offset, client and subject are required)", c)
		}
	}
	return ok
}
