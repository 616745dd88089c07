package load

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
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
