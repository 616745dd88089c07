package load

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/limitbench/limitbench/algorithms"
)

// ErrBadTrace is matched (errors.Is) by every error ReadTrace, ParseTrace and Trace.Validate
// return for a trace that cannot be replayed. From a file, the error is a *TraceError that lists
// each problem with its file, line and column.
var ErrBadTrace = errors.New("invalid trace")

// Bounds of a trace. They keep every row representable downstream: a client index fits an
// Outcome's uint16 (and Plan.Clients), a cost its uint16, an offset the admission log's range.
const (
	// MaxTraceRows is the most rows a trace may hold (16 bytes each in memory).
	MaxTraceRows = 1 << 24
	// MaxTraceClients is the most distinct clients (as Plan.Clients).
	MaxTraceClients = 65535
	// MaxTraceSubjects is the most distinct subjects.
	MaxTraceSubjects = 1 << 24
	// MaxTraceOffset is the latest offset a row may have.
	MaxTraceOffset = 24 * time.Hour
	// MaxTraceSkew bounds a client's clock offset in either direction.
	MaxTraceSkew = 24 * time.Hour
	// MaxTraceCost is the most permits one row may ask for (as Plan.Cost).
	MaxTraceCost = 65535
	// MaxTraceName is the longest client or subject name, in bytes.
	MaxTraceName = 1024
	// maxTraceProblems is how many problems a read reports before it stops.
	maxTraceProblems = 20
	// maxTraceLine is the longest line of a JSON Lines trace, in bytes.
	maxTraceLine = 1 << 20
)

// TraceFormat is the encoding of a trace file.
type TraceFormat string

// Trace formats. A file's format is chosen by its extension (TraceFormatOf).
const (
	// TraceCSV: a header naming the columns, then one row per line (".csv").
	TraceCSV TraceFormat = "csv"
	// TraceJSONL: one JSON object per line (".jsonl", ".ndjson").
	TraceJSONL TraceFormat = "jsonl"
)

// TraceFormatOf returns the format a trace file's name implies: TraceCSV for ".csv", TraceJSONL
// for ".jsonl" and ".ndjson" (case does not matter), or an error wrapping ErrBadTrace.
func TraceFormatOf(name string) (TraceFormat, error) {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".csv":
		return TraceCSV, nil
	case ".jsonl", ".ndjson":
		return TraceJSONL, nil
	}
	return "", fmt.Errorf("%w: %s: a trace file must end in .csv or .jsonl", ErrBadTrace, name)
}

// Trace is an explicit schedule: every request a run sends, as a row of offset from the start of
// the run, client, subject and cost, replayed exactly (open loop: row n is due at its offset,
// whatever happened to the rows before it).
//
// A valid trace (Validate) has at least one row and at most MaxTraceRows; offsets in
// [0, MaxTraceOffset] that never decrease from one row to the next (rows at one instant keep
// their order, which is the order they are handed to the workers); every row's Client and
// Subject index into Clients and Subjects; costs in [1, MaxTraceCost]. Clients (at most
// MaxTraceClients) and Subjects (at most MaxTraceSubjects) are distinct non-empty names of at
// most MaxTraceName bytes, without control characters or leading or trailing spaces; a subject is also a key's {hash tag}, so
// it must pass algorithms.CheckSubject. Skew is nil (no client has a clock offset) or holds one
// offset per client, each within ±MaxTraceSkew.
//
// A trace read from a file is canonical (see Canonical): clients and subjects are numbered in
// the order they first appear, and Skew is nil unless some offset is non-zero.
//
// Rows are offsets, not wall times: where the run's time zero falls on the clock (for example a
// whole second, for windows aligned on the epoch) is the scenario's arrival.align.
type Trace struct {
	Rows     []Row
	Clients  []string
	Subjects []string
	// Skew, when not nil, is each client's clock offset: the time a client-clock algorithm is
	// given for that client's requests is the harness's clock plus it (as Plan.Skew). Server-
	// clock algorithms ignore it.
	Skew []time.Duration
}

// Row is one request of a Trace, in 16 bytes.
type Row struct {
	// At is when the request is due, as an offset from the start of the run (>= 0).
	At time.Duration
	// Subject indexes Trace.Subjects.
	Subject uint32
	// Client indexes Trace.Clients.
	Client uint16
	// Cost is the permits asked for (>= 1).
	Cost uint16
}

// Span returns the offset of the last row (0 for an empty trace).
func (t *Trace) Span() time.Duration {
	if len(t.Rows) == 0 {
		return 0
	}
	return t.Rows[len(t.Rows)-1].At
}

// SkewOf returns client c's clock offset (0 when Skew is nil).
func (t *Trace) SkewOf(c uint16) time.Duration {
	if t.Skew == nil {
		return 0
	}
	return t.Skew[c]
}

// Validate reports every problem with t at once (the first few of a kind, and how many more),
// each wrapped with ErrBadTrace, as Trace's doc defines validity.
func (t *Trace) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s", ErrBadTrace, fmt.Sprintf(format, args...)))
	}
	switch {
	case len(t.Rows) == 0:
		bad("no rows")
	case len(t.Rows) > MaxTraceRows:
		bad("%d rows, more than %d", len(t.Rows), MaxTraceRows)
	}
	switch {
	case len(t.Clients) == 0 && len(t.Rows) > 0:
		bad("no clients")
	case len(t.Clients) > MaxTraceClients:
		bad("%d clients, more than %d", len(t.Clients), MaxTraceClients)
	}
	if len(t.Subjects) > MaxTraceSubjects {
		bad("%d subjects, more than %d", len(t.Subjects), MaxTraceSubjects)
	}
	if t.Skew != nil && len(t.Skew) != len(t.Clients) {
		bad("%d skews for %d clients", len(t.Skew), len(t.Clients))
	}
	seen := map[string]bool{}
	for i, name := range t.Clients {
		if err := checkName("client", name); err != nil {
			bad("client %d: %v", i, err)
		} else if seen[name] {
			bad("client %d: %q is named twice", i, name)
		}
		seen[name] = true
		if t.Skew != nil && i < len(t.Skew) {
			if err := checkSkew(t.Skew[i]); err != nil {
				bad("client %q: skew %v", name, err)
			}
		}
	}
	clear(seen)
	for i, name := range t.Subjects {
		if err := checkSubjectName(name); err != nil {
			bad("subject %d: %v", i, err)
		} else if seen[name] {
			bad("subject %d: %q is named twice", i, name)
		}
		seen[name] = true
	}
	shown, more := 0, 0
	prev := time.Duration(0)
	for i, r := range t.Rows {
		var msg string
		switch {
		case r.At < 0 || r.At > MaxTraceOffset:
			msg = fmt.Sprintf("offset %s is outside [0s, %s]", r.At, MaxTraceOffset)
		case r.At < prev:
			msg = fmt.Sprintf("offset %s is earlier than the row before (%s): rows must be in time order", r.At, prev)
		case int(r.Client) >= len(t.Clients):
			msg = fmt.Sprintf("client %d out of range (%d clients)", r.Client, len(t.Clients))
		case int(r.Subject) >= len(t.Subjects):
			msg = fmt.Sprintf("subject %d out of range (%d subjects)", r.Subject, len(t.Subjects))
		case r.Cost == 0:
			msg = "cost 0 (must be >= 1)"
		default:
			prev = r.At
			continue
		}
		prev = max(prev, r.At)
		if shown == 5 {
			more++
			continue
		}
		shown++
		bad("row %d: %s", i, msg)
	}
	if more > 0 {
		bad("and %d more bad rows", more)
	}
	return errors.Join(errs...)
}

// checkName checks a client or subject name (what says which in messages).
func checkName(what, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty %s name", what)
	case len(name) > MaxTraceName:
		return fmt.Errorf("%s name of %d bytes, more than %d", what, len(name), MaxTraceName)
	case !utf8.ValidString(name):
		return fmt.Errorf("%s name %q is not valid UTF-8", what, name)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return fmt.Errorf("%s name %q holds a control character", what, name)
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("%s name %q starts or ends with a space", what, name)
	}
	return nil
}

// checkSubjectName checks a subject name: a name, and a key's {hash tag}.
func checkSubjectName(name string) error {
	if err := checkName("subject", name); err != nil {
		return err
	}
	if err := algorithms.CheckSubject(name); err != nil {
		return err
	}
	return nil
}

func checkSkew(d time.Duration) error {
	if d < -MaxTraceSkew || d > MaxTraceSkew {
		return fmt.Errorf("%s is outside ±%s", d, MaxTraceSkew)
	}
	return nil
}

// Canonical returns a copy of t with clients and subjects renumbered in the order rows first
// use them, names no row uses left out, and Skew nil when every used client's offset is zero.
// Reading what WriteCSV or WriteJSONL wrote gives back t.Canonical(). t must be valid.
func (t *Trace) Canonical() *Trace {
	out := &Trace{Rows: make([]Row, len(t.Rows))}
	cmap := make(map[uint16]uint16)
	smap := make(map[uint32]uint32)
	var skew []time.Duration
	nonzero := false
	for i, r := range t.Rows {
		c, ok := cmap[r.Client]
		if !ok {
			c = uint16(len(out.Clients))
			cmap[r.Client] = c
			out.Clients = append(out.Clients, t.Clients[r.Client])
			s := t.SkewOf(r.Client)
			skew = append(skew, s)
			nonzero = nonzero || s != 0
		}
		s, ok := smap[r.Subject]
		if !ok {
			s = uint32(len(out.Subjects))
			smap[r.Subject] = s
			out.Subjects = append(out.Subjects, t.Subjects[r.Subject])
		}
		out.Rows[i] = Row{At: r.At, Client: c, Subject: s, Cost: r.Cost}
	}
	if nonzero {
		out.Skew = skew
	}
	return out
}

// Clone returns a deep copy of t.
func (t *Trace) Clone() *Trace {
	out := &Trace{
		Rows:     append([]Row(nil), t.Rows...),
		Clients:  append([]string(nil), t.Clients...),
		Subjects: append([]string(nil), t.Subjects...),
	}
	if t.Skew != nil {
		out.Skew = append([]time.Duration(nil), t.Skew...)
	}
	return out
}

// TraceProblem is one thing wrong with a trace file. Line and Column are 1-based (Column counts
// bytes); Column is zero for a problem with a whole line, Line too for one with the whole file.
type TraceProblem struct {
	File         string
	Line, Column int
	// Field is the column's name ("offset", "client", "subject", "cost", "skew"), or empty.
	Field string
	Msg   string
}

// String renders p as "file:line:column: field: message", leaving out the parts that are
// empty.
func (p TraceProblem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
		if p.Column > 0 {
			fmt.Fprintf(&b, ":%d", p.Column)
		}
	}
	b.WriteString(": ")
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// TraceError lists the problems of a trace file in file order: at most 20; reading stops at the
// 20th, and the last problem then says so. It matches ErrBadTrace.
type TraceError struct {
	Problems []TraceProblem
}

// Error prints one problem per line.
func (e *TraceError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Is reports whether target is ErrBadTrace.
func (e *TraceError) Is(target error) bool { return target == ErrBadTrace }

// ReadTrace reads the trace file at path, in the format its extension names (TraceFormatOf).
func ReadTrace(path string) (*Trace, error) {
	format, err := TraceFormatOf(path)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	defer func() { _ = f.Close() }() // read only
	return ParseTrace(path, format, f)
}

// ParseTrace reads a trace in the given format from r; name is the file name its problems
// carry. The result is canonical (Trace.Canonical). The whole input is checked: an invalid one
// returns a *TraceError (matching ErrBadTrace) naming the file, line, column and field of each
// problem; an error reading r is returned wrapped, as it is.
//
// CSV: the first line that is not a comment is the header, naming the columns in any order:
// offset, client and subject are required, cost (default 1) and skew (default 0s) optional;
// fields are trimmed of spaces; every line has as many fields as the header (there are no
// comment lines). JSON Lines: one object per line with the same keys (offset and skew strings,
// cost an integer, client and subject strings); blank lines are skipped. In both, offset and
// skew are Go durations with a unit ("0s", "1.5ms", "-2s"), and a client's skew must be the
// same on each of its rows.
//
// Offsets must not decrease from one row to the next: a trace is replayed in file order, and a
// row earlier than the one before is reported (sort the file by offset), never reordered.
func ParseTrace(name string, format TraceFormat, r io.Reader) (*Trace, error) {
	p := &traceParser{file: name, t: &Trace{}, clients: map[string]uint16{}, subjects: map[string]uint32{}}
	var err error
	switch format {
	case TraceCSV:
		err = p.csv(r)
	case TraceJSONL:
		err = p.jsonl(r)
	default:
		return nil, fmt.Errorf("%w: %s: unknown trace format %q (want csv or jsonl)", ErrBadTrace, name, format)
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
		return nil, &TraceError{Problems: p.problems}
	}
	if !p.skewed {
		p.t.Skew = nil
	}
	return p.t, nil
}

// errStop ends a read that has found maxTraceProblems problems.
var errStop = errors.New("too many problems")

type traceParser struct {
	file     string
	t        *Trace
	clients  map[string]uint16
	subjects map[string]uint32
	// skewLine is the line that set each client's skew; skewed is whether any is non-zero.
	skewLine []int
	skewed   bool
	prev     time.Duration
	prevLine int
	cols     int // fields of the CSV header
	problems []TraceProblem
	stopped  bool // the last problem says the read stopped
}

// add records a problem; it returns errStop once there are maxTraceProblems.
func (p *traceParser) add(line, col int, field, format string, args ...any) error {
	if len(p.problems) >= maxTraceProblems {
		return errStop
	}
	p.problems = append(p.problems, TraceProblem{File: p.file, Line: line, Column: col, Field: field, Msg: fmt.Sprintf(format, args...)})
	if len(p.problems) == maxTraceProblems {
		p.problems = append(p.problems, TraceProblem{File: p.file, Line: line, Msg: fmt.Sprintf("stopped after %d problems", maxTraceProblems)})
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

// row checks one row's fields and appends it; it returns errStop when the read must end.
func (p *traceParser) row(line int, offset, client, subject, cost, skew field) error {
	var r Row
	ok := true
	fail := func(f field, name, format string, args ...any) error {
		ok = false
		return p.add(f.line, f.col, name, format, args...)
	}
	at, err := parseTraceDuration(offset.text)
	switch {
	case err != nil:
		err = fail(offset, "offset", "%v", err)
	case at < 0 || at > MaxTraceOffset:
		err = fail(offset, "offset", "%s is outside [0s, %s]", at, MaxTraceOffset)
	case at < p.prev:
		err = fail(offset, "offset", "%s is earlier than %s on line %d: rows must be in time order (sort the file by offset)", at, p.prev, p.prevLine)
	default:
		r.At = at
	}
	if err != nil {
		return err
	}
	r.Cost = 1
	if cost.present {
		n, perr := strconv.ParseInt(cost.text, 10, 64)
		switch {
		case perr != nil:
			err = fail(cost, "cost", "%q is not an integer", cost.text)
		case n < 1 || n > MaxTraceCost:
			err = fail(cost, "cost", "%d is outside [1, %d]", n, MaxTraceCost)
		default:
			r.Cost = uint16(n)
		}
		if err != nil {
			return err
		}
	}
	var sk time.Duration
	if skew.present {
		sk, err = parseTraceDuration(skew.text)
		if err == nil {
			err = checkSkew(sk)
		}
		if err != nil {
			if err = fail(skew, "skew", "%v", err); err != nil {
				return err
			}
		}
	}
	if e := checkSubjectName(subject.text); e != nil {
		if err := fail(subject, "subject", "%v", e); err != nil {
			return err
		}
	} else if s, seen := p.subjects[subject.text]; seen {
		r.Subject = s
	} else if len(p.t.Subjects) >= MaxTraceSubjects {
		if err := fail(subject, "subject", "more than %d subjects", MaxTraceSubjects); err != nil {
			return err
		}
	} else if ok {
		r.Subject = uint32(len(p.t.Subjects))
		p.subjects[subject.text] = r.Subject
		p.t.Subjects = append(p.t.Subjects, subject.text)
	}
	if e := checkName("client", client.text); e != nil {
		return fail(client, "client", "%v", e)
	}
	c, seen := p.clients[client.text]
	switch {
	case seen:
		if ok && p.t.Skew[c] != sk {
			at := skew
			if !at.present {
				at = client // no skew given: 0s
			}
			return fail(at, "skew", "%s for client %q, which has %s on line %d: a client's clock offset is the same on all its rows",
				sk, client.text, p.t.Skew[c], p.skewLine[c])
		}
	case len(p.t.Clients) >= MaxTraceClients:
		return fail(client, "client", "more than %d clients", MaxTraceClients)
	case ok:
		c = uint16(len(p.t.Clients))
		p.clients[client.text] = c
		p.t.Clients = append(p.t.Clients, client.text)
		p.t.Skew = append(p.t.Skew, sk)
		p.skewLine = append(p.skewLine, line)
		p.skewed = p.skewed || sk != 0
	}
	if !ok {
		return nil
	}
	if len(p.t.Rows) >= MaxTraceRows {
		return fail(offset, "", "more than %d rows", MaxTraceRows)
	}
	r.Client = c
	p.t.Rows = append(p.t.Rows, r)
	p.prev, p.prevLine = r.At, line
	return nil
}

// parseTraceDuration parses a Go duration with a unit; a bare number is refused with a hint.
func parseTraceDuration(s string) (time.Duration, error) {
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

// traceColumns are the columns a trace may have, required ones first.
var traceColumns = []string{"offset", "client", "subject", "cost", "skew"}

func (p *traceParser) csv(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	if b, err := br.Peek(3); err == nil && bytes.Equal(b, []byte("\xef\xbb\xbf")) {
		_, _ = br.Discard(3) // a UTF-8 byte order mark, as spreadsheets write
	}
	cr := csv.NewReader(br)
	cr.TrimLeadingSpace = true
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	var idx [5]int // column of each of traceColumns, -1 when absent
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
			return field{present: true, text: strings.TrimSpace(rec[i]), line: l, col: c}
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
func (p *traceParser) header(cr *csv.Reader, rec []string, idx *[5]int) bool {
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
		for j, c := range traceColumns {
			if name == c {
				k = j
			}
		}
		switch {
		case k < 0:
			ok = false
			p.add(line, col, "", "unknown column %q (want %s)", name, strings.Join(traceColumns, ", "))
		case idx[k] >= 0:
			ok = false
			p.add(line, col, "", "column %q named twice", name)
		default:
			idx[k] = i
		}
	}
	for k, c := range traceColumns[:3] {
		if idx[k] < 0 {
			ok = false
			p.add(line, 0, "", "the header has no %q column (offset, client and subject are required)", c)
		}
	}
	return ok
}

func (p *traceParser) jsonl(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxTraceLine)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if line == 1 {
			b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		if p.jsonLine(line, b) != nil {
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			p.add(line+1, 0, "", "line longer than %d bytes", maxTraceLine)
			return nil
		}
		return fmt.Errorf("read trace %s: %w", p.file, err)
	}
	return nil
}

// jsonLine reads one JSON object; it returns errStop when the read must end. It scans the line
// itself (a flat object of strings and numbers), which is several times faster than
// encoding/json's tokenizer and knows the column of every key and value.
func (p *traceParser) jsonLine(line int, b []byte) error {
	sc := jsonScan{b: b}
	fail := func(at int, format string, args ...any) error { return p.add(line, at+1, "", format, args...) }
	sc.ws()
	if !sc.eat('{') {
		return fail(sc.i, "want a JSON object {\"offset\": ..., \"client\": ..., \"subject\": ...}")
	}
	var fs [5]field
	sc.ws()
	if !sc.eat('}') {
		for {
			sc.ws()
			kc := sc.i
			if sc.i >= len(b) {
				return fail(sc.i, "the line ends inside the JSON object (one whole object per line)")
			}
			if sc.peek() != '"' {
				return fail(sc.i, "want a quoted field name")
			}
			key, msg := sc.str()
			if msg != "" {
				return fail(sc.i, "%s", msg)
			}
			sc.ws()
			if !sc.eat(':') {
				return fail(sc.i, "want : after the field name %q", key)
			}
			sc.ws()
			vc := sc.i
			kind, text, msg := sc.value()
			if msg != "" {
				return fail(sc.i, "%s", msg)
			}
			k := slices.Index(traceColumns, key)
			switch {
			case kind == '[' || kind == '{':
				what := map[byte]string{'[': "an array", '{': "an object"}[kind]
				return p.add(line, vc+1, key, "want %s, got %s", jsonKind(k), what)
			case k < 0:
				if err := p.add(line, kc+1, "", "unknown field %q (want %s)", key, strings.Join(traceColumns, ", ")); err != nil {
					return err
				}
			case fs[k].present:
				if err := p.add(line, kc+1, key, "given twice"); err != nil {
					return err
				}
			case kind == '"' && k == 3:
				return p.add(line, vc+1, key, "want an integer, got the string %q", text)
			case kind == '0' && k != 3:
				return p.add(line, vc+1, key, "want %s, got the number %s", jsonKind(k), text)
			case kind == 'l':
				return p.add(line, vc+1, key, "want %s, got %s", jsonKind(k), text)
			default:
				fs[k] = field{present: true, text: text, line: line, col: vc + 1}
			}
			sc.ws()
			if sc.eat(',') {
				continue
			}
			if sc.eat('}') {
				break
			}
			if sc.i >= len(b) {
				return fail(sc.i, "the line ends inside the JSON object (one whole object per line)")
			}
			return fail(sc.i, "want , or } after a value")
		}
	}
	sc.ws()
	if sc.i < len(b) {
		return fail(sc.i, "more after the object: one object per line")
	}
	missing := false
	for k, c := range traceColumns[:3] {
		if !fs[k].present {
			missing = true
			if err := p.add(line, 0, c, "missing (offset, client and subject are required)"); err != nil {
				return err
			}
		}
	}
	if missing {
		return nil
	}
	return p.row(line, fs[0], fs[1], fs[2], fs[3], fs[4])
}

// jsonScan scans a flat JSON object on one line: b[i:] is what is left.
type jsonScan struct {
	b []byte
	i int
}

func (s *jsonScan) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *jsonScan) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *jsonScan) eat(c byte) bool {
	if s.peek() == c {
		s.i++
		return true
	}
	return false
}

// str reads a string at s.i (a quote), or says what is wrong (s.i at the problem).
func (s *jsonScan) str() (string, string) {
	start := s.i
	s.i++
	escaped := false
	for ; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '\\':
			escaped = true
			s.i++
		case c == '"':
			s.i++
			raw := s.b[start:s.i]
			if !escaped {
				return string(raw[1 : len(raw)-1]), ""
			}
			var out string
			if err := json.Unmarshal(raw, &out); err != nil {
				s.i = start
				return "", "invalid escape in a string"
			}
			return out, ""
		case c < 0x20:
			return "", "control character in a string"
		}
	}
	return "", "the line ends inside a string"
}

// value reads a value at s.i: its kind ('"' string, '0' number, 'l' true, false or null, '['
// or '{' for an array or object, not read), its text, or what is wrong.
func (s *jsonScan) value() (byte, string, string) {
	switch c := s.peek(); {
	case c == '"':
		text, msg := s.str()
		return '"', text, msg
	case c == '-' || (c >= '0' && c <= '9'):
		start := s.i
		for s.i < len(s.b) && strings.IndexByte("0123456789+-.eE", s.b[s.i]) >= 0 {
			s.i++
		}
		text := string(s.b[start:s.i])
		if !json.Valid(s.b[start:s.i]) {
			s.i = start
			return 0, "", fmt.Sprintf("invalid number %s", text)
		}
		return '0', text, ""
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
				s.i += len(lit)
				return 'l', lit, ""
			}
		}
	case c == '[' || c == '{':
		return c, "", ""
	case s.i >= len(s.b):
		return 0, "", "the line ends inside the JSON object (one whole object per line)"
	}
	return 0, "", fmt.Sprintf("unexpected %q", s.b[s.i])
}

// jsonKind names the JSON type column k takes.
func jsonKind(k int) string {
	switch k {
	case 0, 4:
		return "a duration string such as \"1.5ms\""
	case 3:
		return "an integer"
	}
	return "a string"
}

// WriteCSV writes t, which must be valid, as a CSV trace that ParseTrace reads back as
// t.Canonical(): the header offset,client,subject,cost (with ,skew when some client's offset is
// not zero), then one line per row, offsets and skews as time.Duration.String writes them
// (exact to the nanosecond). The output depends only on t.
func (t *Trace) WriteCSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	cw := csv.NewWriter(bw)
	skew := t.hasSkew()
	head := traceColumns[:4]
	if skew {
		head = traceColumns
	}
	if err := cw.Write(head); err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	rec := make([]string, len(head))
	for _, r := range t.Rows {
		rec[0] = r.At.String()
		rec[1] = t.Clients[r.Client]
		rec[2] = t.Subjects[r.Subject]
		rec[3] = strconv.Itoa(int(r.Cost))
		if skew {
			rec[4] = t.SkewOf(r.Client).String()
		}
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("write trace: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	return nil
}

// WriteJSONL writes t, which must be valid, as JSON Lines that ParseTrace reads back as
// t.Canonical(): one object per row with the keys offset, client, subject, cost (and skew when
// some client's offset is not zero), in that order. The output depends only on t.
func (t *Trace) WriteJSONL(w io.Writer) error {
	bw := bufio.NewWriter(w)
	skew := t.hasSkew()
	quote := func(s string) []byte {
		b, _ := json.Marshal(s) // a string always marshals
		return b
	}
	cq := make([][]byte, len(t.Clients))
	for i, c := range t.Clients {
		cq[i] = quote(c)
	}
	sq := make(map[uint32][]byte)
	var buf []byte
	for _, r := range t.Rows {
		s, ok := sq[r.Subject]
		if !ok {
			s = quote(t.Subjects[r.Subject])
			sq[r.Subject] = s
		}
		buf = append(buf[:0], `{"offset":"`...)
		buf = append(buf, r.At.String()...)
		buf = append(buf, `","client":`...)
		buf = append(buf, cq[r.Client]...)
		buf = append(buf, `,"subject":`...)
		buf = append(buf, s...)
		buf = append(buf, `,"cost":`...)
		buf = strconv.AppendInt(buf, int64(r.Cost), 10)
		if skew {
			buf = append(buf, `,"skew":"`...)
			buf = append(buf, t.SkewOf(r.Client).String()...)
			buf = append(buf, '"')
		}
		buf = append(buf, "}\n"...)
		if _, err := bw.Write(buf); err != nil {
			return fmt.Errorf("write trace: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	return nil
}

// hasSkew reports whether some client that a row uses has a non-zero clock offset.
func (t *Trace) hasSkew() bool {
	if t.Skew == nil {
		return false
	}
	for _, r := range t.Rows {
		if t.Skew[r.Client] != 0 {
			return true
		}
	}
	return false
}

// WriteTrace writes t to the file at path in the format its extension names, creating or
// truncating it; it reports an error closing the file.
func WriteTrace(path string, t *Trace) (err error) {
	format, err := TraceFormatOf(path)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("write trace: %w", cerr)
		}
	}()
	if format == TraceJSONL {
		return t.WriteJSONL(f)
	}
	return t.WriteCSV(f)
}

// TracePacer replays one segment of a Trace: the rows whose index r has r mod n == i, for
// segment i of n (all rows when n == 1), in order. It is a Pacer whose hit k is the segment's
// k-th row, due at that row's offset, and it names each hit's row (Row), so workers send exactly
// that row's client, subject and cost at its time. The n segments of a trace are disjoint and
// together hold every row once, each at its own offset, so n generators replaying them against
// one Redis send what one generator replaying the whole trace sends; taking every n-th row also
// spreads each segment's share evenly over the trace's time. A TracePacer is safe for
// concurrent use.
type TracePacer struct {
	t           *Trace
	first, step int
	n           int // rows in the segment
}

var _ Pacer = (*TracePacer)(nil)

// Pacer returns the TracePacer of the whole trace.
func (t *Trace) Pacer() *TracePacer {
	p, _ := t.Segment(0, 1) // (0, 1) is always a valid segment
	return p
}

// Segment returns the TracePacer of segment i of n (0 <= i < n). It returns an error wrapping
// ErrBadTrace for other i and n. A segment may be empty when the trace has fewer than n rows.
func (t *Trace) Segment(i, n int) (*TracePacer, error) {
	if n < 1 || i < 0 || i >= n {
		return nil, fmt.Errorf("%w: segment %d/%d: want 0 <= segment < segments", ErrBadTrace, i, n)
	}
	rows := 0
	if i < len(t.Rows) {
		rows = (len(t.Rows)-i-1)/n + 1
	}
	return &TracePacer{t: t, first: i, step: n, n: rows}, nil
}

// Trace returns the trace p replays.
func (p *TracePacer) Trace() *Trace { return p.t }

// Len returns the number of rows in p's segment.
func (p *TracePacer) Len() uint64 { return uint64(p.n) }

// Index returns the index in the whole trace of the segment's k-th row: i + k·n. Use it as the
// outcome's tick, so that outcomes of different segments name their rows alike.
func (p *TracePacer) Index(k uint64) uint64 { return uint64(p.first) + k*uint64(p.step) }

// Row returns the segment's k-th row, and false when there is none.
func (p *TracePacer) Row(k uint64) (Row, bool) {
	if k >= uint64(p.n) {
		return Row{}, false
	}
	return p.t.Rows[p.Index(k)], true
}

// At implements Pacer: the offset of the segment's k-th row.
func (p *TracePacer) At(k uint64) (time.Duration, bool) {
	r, ok := p.Row(k)
	return r.At, ok
}

// Pace implements Pacer.
func (p *TracePacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	return paceFromAt(p, elapsed, hits)
}

// Rate implements Pacer: the segment's rows due in the second up to elapsed, (elapsed − 1s,
// elapsed], per second.
func (p *TracePacer) Rate(elapsed time.Duration) float64 {
	due := func(until time.Duration) int {
		return sort.Search(p.n, func(k int) bool { return p.t.Rows[p.first+k*p.step].At > until })
	}
	return float64(due(elapsed) - due(elapsed-time.Second))
}
