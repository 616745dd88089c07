package load

import (
	"sort"
	"time"

	"github.com/limitbench/limitbench/internal/trace"
)

// TracePacer replays a trace.Trace: its rows in order. It is a Pacer whose hit k is row k, due
// at that row's offset, and it names each hit's row (Row), so workers send exactly that row's
// client, subject and cost at its time. A segment of a trace is the plan's Share of it (see
// Plan.Share): the segments of a segmented run each send their ticks, that is their rows, so n
// generators replaying one trace against one Redis send what one generator replaying the whole
// trace sends. A TracePacer is safe for concurrent use.
type TracePacer struct {
	t *trace.Trace
}

var _ Pacer = (*TracePacer)(nil)

// Replay returns the TracePacer of trace t: a Plan's Arrival that replays it.
func Replay(t *trace.Trace) *TracePacer { return &TracePacer{t: t} }

// Trace returns the trace p replays.
func (p *TracePacer) Trace() *trace.Trace { return p.t }

// Len returns the number of rows p replays.
func (p *TracePacer) Len() uint64 { return uint64(len(p.t.Rows)) }

// Row returns row k, and false when there is none.
func (p *TracePacer) Row(k uint64) (trace.Row, bool) {
	if k >= p.Len() {
		return trace.Row{}, false
	}
	return p.t.Rows[k], true
}

// At implements Pacer: the offset of row k.
func (p *TracePacer) At(k uint64) (time.Duration, bool) {
	r, ok := p.Row(k)
	return r.At, ok
}

// Pace implements Pacer.
func (p *TracePacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	return paceFromAt(p, elapsed, hits)
}

// Rate implements Pacer: the rows due in the second up to elapsed, (elapsed − 1s, elapsed], per
// second.
func (p *TracePacer) Rate(elapsed time.Duration) float64 {
	due := func(until time.Duration) int {
		return sort.Search(len(p.t.Rows), func(k int) bool { return p.t.Rows[k].At > until })
	}
	return float64(due(elapsed) - due(elapsed-time.Second))
}
