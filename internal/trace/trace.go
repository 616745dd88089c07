package trace

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/limitbench/limitbench/algorithms"
)

// ErrInvalid is matched (errors.Is) by every error Read, Parse and Trace.Validate return for a
// trace that cannot be replayed. From a file, the error is an *Errors that lists each problem
// with its file, line and column.
var ErrInvalid = errors.New("invalid trace")

// Bounds of a trace. They keep every row representable downstream: a client index fits a
// load.Outcome's uint16 (and load.Plan.Clients), a cost its uint16, an offset the admission
// log's range.
const (
	// MaxRows is the most rows a trace may hold (16 bytes each in memory).
	MaxRows = 1 << 24
	// MaxClients is the most distinct clients (as load.Plan.Clients).
	MaxClients = 65535
	// MaxSubjects is the most distinct subjects.
	MaxSubjects = 1 << 24
	// MaxOffset is the latest offset a row may have.
	MaxOffset = 24 * time.Hour
	// MaxSkew bounds a client's clock offset in either direction.
	MaxSkew = 24 * time.Hour
	// MaxCost is the most permits one row may ask for (as load.Plan.Cost).
	MaxCost = 65535
	// MaxName is the longest client or subject name, in bytes.
	MaxName = 1024
	// maxProblems is how many problems a read reports before it stops.
	maxProblems = 20
	// maxLine is the longest line of a JSON Lines trace, in bytes.
	maxLine = 1 << 20
)

// Format is the encoding of a trace file.
type Format string

// Trace formats. A file's format is chosen by its extension (FormatOf).
const (
	// CSV: a header naming the columns, then one row per line (".csv").
	CSV Format = "csv"
	// JSONL: one JSON object per line (".jsonl", ".ndjson").
	JSONL Format = "jsonl"
)

// FormatOf returns the format a trace file's name implies: CSV for ".csv", JSONL for ".jsonl"
// and ".ndjson" (case does not matter), or an error wrapping ErrInvalid.
func FormatOf(name string) (Format, error) {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".csv":
		return CSV, nil
	case ".jsonl", ".ndjson":
		return JSONL, nil
	}
	return "", fmt.Errorf("%w: %s: a trace file must end in .csv or .jsonl", ErrInvalid, name)
}

// Trace is an explicit schedule: every request a run sends, as a row of offset from the start of
// the run, client, subject and cost, replayed exactly (open loop: row n is due at its offset,
// whatever happened to the rows before it).
//
// A valid trace (Validate) has at least one row and at most MaxRows; offsets in [0, MaxOffset]
// that never decrease from one row to the next (rows at one instant keep their order, which is
// the order they are handed to the workers); every row's Client and Subject index into Clients
// and Subjects; costs in [1, MaxCost]. Clients (at most MaxClients) and Subjects (at most
// MaxSubjects) are distinct non-empty names of at most MaxName bytes, without control characters
// or leading or trailing spaces; a subject is also a key's {hash tag}, so it must pass
// algorithms.CheckSubject. Skew is nil (no client has a clock offset) or holds one offset per
// client, each within ±MaxSkew. Faults are in time order, at offsets in [0, MaxOffset], each
// with a kind and a duration of at least 0.
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
	// given for that client's requests is the harness's clock plus it (as load.Plan.Skew). Server-
	// clock algorithms ignore it.
	Skew []time.Duration
	// Jumps, when not nil, are steps of clients' clocks, in time order: from a jump's At on, its
	// client's offset is the jump's Skew instead of Skew's (see SkewAt). In a file, a client
	// whose skew changes from one of its rows to the next has its clock jump at that row.
	Jumps []Jump
	// Faults, when not nil, are the faults the schedule places, in time order (a hunt's
	// nemesis). The trace files do not carry them: a scenario that replays the trace lists them
	// in its faults: field (scenarios.FaultsOf converts them), which is also how a trace with
	// faults is run.
	Faults []Fault
}

// Jump is a step of one client's clock during a trace, as NTP or a virtual machine's migration
// steps a clock forward or back: from At on, the client's clock offset is Skew.
type Jump struct {
	At     time.Duration
	Client uint16
	Skew   time.Duration
}

// Fault is the schedule's part of a fault: when it strikes and what it does. The rest of what a
// fault is (its target, recovery, and the kinds' own settings) is a scenario's (scenarios.Fault),
// which gives a Fault of a trace its meaning: Kind is a scenarios.FaultKind's name, and it acts
// on the master of the first shard.
type Fault struct {
	// At is when it strikes, as an offset from the start of the run, like a row's.
	At time.Duration
	// Kind names what it does (scenarios.FaultKind: restart, evict, pause, ...).
	Kind string
	// Duration is how long it lasts, for the kinds that last (pause and the network faults);
	// 0 for the others.
	Duration time.Duration
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

// SkewOf returns client c's clock offset at the start (0 when Skew is nil); SkewAt gives it at
// any offset, its jumps counted.
func (t *Trace) SkewOf(c uint16) time.Duration {
	if t.Skew == nil {
		return 0
	}
	return t.Skew[c]
}

// SkewAt returns client c's clock offset at offset at: its last jump at or before at, else
// SkewOf(c).
func (t *Trace) SkewAt(c uint16, at time.Duration) time.Duration {
	s := t.SkewOf(c)
	for _, j := range t.Jumps {
		if j.At > at {
			break
		}
		if j.Client == c {
			s = j.Skew
		}
	}
	return s
}

// RowSkews returns the clock offset each row is sent with (SkewAt of its client at its offset),
// in row order; nil when no client's clock jumps (SkewOf then gives every row's).
func (t *Trace) RowSkews() []time.Duration {
	if len(t.Jumps) == 0 {
		return nil
	}
	cur := make([]time.Duration, len(t.Clients))
	for c := range cur {
		cur[c] = t.SkewOf(uint16(c))
	}
	out := make([]time.Duration, len(t.Rows))
	j := 0
	for i, r := range t.Rows {
		for ; j < len(t.Jumps) && t.Jumps[j].At <= r.At; j++ {
			cur[t.Jumps[j].Client] = t.Jumps[j].Skew
		}
		out[i] = cur[r.Client]
	}
	return out
}

// Validate reports every problem with t at once (the first few of a kind, and how many more),
// each wrapped with ErrInvalid, as Trace's doc defines validity.
func (t *Trace) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...)))
	}
	switch {
	case len(t.Rows) == 0:
		bad("no rows")
	case len(t.Rows) > MaxRows:
		bad("%d rows, more than %d", len(t.Rows), MaxRows)
	}
	switch {
	case len(t.Clients) == 0 && len(t.Rows) > 0:
		bad("no clients")
	case len(t.Clients) > MaxClients:
		bad("%d clients, more than %d", len(t.Clients), MaxClients)
	}
	if len(t.Subjects) > MaxSubjects {
		bad("%d subjects, more than %d", len(t.Subjects), MaxSubjects)
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
		case r.At < 0 || r.At > MaxOffset:
			msg = fmt.Sprintf("offset %s is outside [0s, %s]", r.At, MaxOffset)
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
	for i, j := range t.Jumps {
		switch {
		case j.At < 0 || j.At > MaxOffset:
			bad("jump %d: offset %s is outside [0s, %s]", i, j.At, MaxOffset)
		case i > 0 && j.At < t.Jumps[i-1].At:
			bad("jump %d: offset %s is earlier than the jump before (%s): jumps must be in time order", i, j.At, t.Jumps[i-1].At)
		case int(j.Client) >= len(t.Clients):
			bad("jump %d: client %d out of range (%d clients)", i, j.Client, len(t.Clients))
		default:
			if err := checkSkew(j.Skew); err != nil {
				bad("jump %d: skew %v", i, err)
			}
		}
	}
	for i, f := range t.Faults {
		switch {
		case f.At < 0 || f.At > MaxOffset:
			bad("fault %d: offset %s is outside [0s, %s]", i, f.At, MaxOffset)
		case i > 0 && f.At < t.Faults[i-1].At:
			bad("fault %d: offset %s is earlier than the fault before (%s): faults must be in time order", i, f.At, t.Faults[i-1].At)
		case f.Kind == "":
			bad("fault %d: no kind", i)
		case f.Duration < 0:
			bad("fault %d: negative duration %s", i, f.Duration)
		}
	}
	return errors.Join(errs...)
}

// checkName checks a client or subject name (what says which in messages).
func checkName(what, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty %s name", what)
	case len(name) > MaxName:
		return fmt.Errorf("%s name of %d bytes, more than %d", what, len(name), MaxName)
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
	if d < -MaxSkew || d > MaxSkew {
		return fmt.Errorf("%s is outside ±%s", d, MaxSkew)
	}
	return nil
}

// Canonical returns a copy of t with clients and subjects renumbered in the order rows first
// use them, names no row uses left out, and Skew nil when every used client's offset is zero;
// each client's offset is the one its first row is sent with, and a jump of its clock is at
// the first of its rows sent after it (a jump no row of the client follows is left out).
// Reading what WriteCSV or WriteJSONL wrote gives back t.Canonical() without its Faults, which
// the files do not carry. t must be valid.
func (t *Trace) Canonical() *Trace {
	out := &Trace{Rows: make([]Row, len(t.Rows))}
	cmap := make(map[uint16]uint16)
	smap := make(map[uint32]uint32)
	var skew, cur []time.Duration // each client's offset at its first row, and at its last so far
	nonzero := false
	rowSkew := t.RowSkews()
	skewOf := func(i int, r Row) time.Duration {
		if rowSkew != nil {
			return rowSkew[i]
		}
		return t.SkewOf(r.Client)
	}
	for i, r := range t.Rows {
		c, ok := cmap[r.Client]
		if !ok {
			c = uint16(len(out.Clients))
			cmap[r.Client] = c
			out.Clients = append(out.Clients, t.Clients[r.Client])
			s := skewOf(i, r)
			skew = append(skew, s)
			cur = append(cur, s)
			nonzero = nonzero || s != 0
		} else if s := skewOf(i, r); s != cur[c] {
			// The client's clock jumped since its last row: at this row, as a file says it.
			out.Jumps = append(out.Jumps, Jump{At: r.At, Client: c, Skew: s})
			cur[c] = s
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
	out.Faults = slices.Clone(t.Faults)
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
	out.Jumps = slices.Clone(t.Jumps)
	out.Faults = slices.Clone(t.Faults)
	return out
}
