package load

import (
	"fmt"
	"sort"
	"time"

	"github.com/limitbench/limitbench/internal/trace"
)

// TracePacer replays one segment of a trace.Trace: the rows whose index r has r mod n == i, for
// segment i of n (all rows when n == 1), in order. It is a Pacer whose hit k is the segment's
// k-th row, due at that row's offset, and it names each hit's row (Row), so workers send exactly
// that row's client, subject and cost at its time. The n segments of a trace are disjoint and
// together hold every row once, each at its own offset, so n generators replaying them against
// one Redis send what one generator replaying the whole trace sends; taking every n-th row also
// spreads each segment's share evenly over the trace's time. A TracePacer is safe for
// concurrent use.
type TracePacer struct {
	t           *trace.Trace
	first, step int
	n           int // rows in the segment
}

var _ Pacer = (*TracePacer)(nil)

// Replay returns the TracePacer of the whole trace t: a Plan's Arrival that replays it.
func Replay(t *trace.Trace) *TracePacer {
	p, _ := ReplaySegment(t, 0, 1) // (0, 1) is always a valid segment
	return p
}

// ReplaySegment returns the TracePacer of segment i of n of t (0 <= i < n). It returns an error
// wrapping trace.ErrInvalid for other i and n. A segment may be empty when the trace has fewer
// than n rows.
func ReplaySegment(t *trace.Trace, i, n int) (*TracePacer, error) {
	if n < 1 || i < 0 || i >= n {
		return nil, fmt.Errorf("%w: segment %d/%d: want 0 <= segment < segments", trace.ErrInvalid, i, n)
	}
	rows := 0
	if i < len(t.Rows) {
		rows = (len(t.Rows)-i-1)/n + 1
	}
	return &TracePacer{t: t, first: i, step: n, n: rows}, nil
}

// Trace returns the trace p replays.
func (p *TracePacer) Trace() *trace.Trace { return p.t }

// Len returns the number of rows in p's segment.
func (p *TracePacer) Len() uint64 { return uint64(p.n) }

// Index returns the index in the whole trace of the segment's k-th row: i + k·n. Use it as the
// outcome's tick, so that outcomes of different segments name their rows alike.
func (p *TracePacer) Index(k uint64) uint64 { return uint64(p.first) + k*uint64(p.step) }

// Row returns the segment's k-th row, and false when there is none.
func (p *TracePacer) Row(k uint64) (trace.Row, bool) {
	if k >= uint64(p.n) {
		return trace.Row{}, false
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
