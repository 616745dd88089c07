package hunt

import (
	"cmp"
	"slices"
	"time"

	"github.com/limitbench/limitbench/internal/trace"
	"github.com/limitbench/limitbench/scenarios"
)

// The nemesis: with Bounds.Faults set, schedules place faults (trace.Fault) against the
// limiter's windows as they place bursts, and the search mutates and shrinks them with the rows.
// Without it none of this draws a number, so a hunt without faults explores exactly what it
// explored before.

// Fault durations of the kinds that last (pause, blackhole): log-uniform in [minStrike,
// maxStrike].
const (
	minStrike = 10 * time.Millisecond
	maxStrike = 300 * time.Millisecond
)

// faulty reports whether schedules may place faults.
func (g *gen) faulty() bool { return len(g.b.Faults) > 0 }

// strike adds a fault of a kind the bounds allow at at (finish clamps it into the span).
func (g *gen) strike(at time.Duration) {
	k := g.b.Faults[g.rng.IntN(len(g.b.Faults))]
	f := trace.Fault{At: at, Kind: k}
	if scenarios.FaultKind(k).Lasts() {
		f.Duration = max(minStrike, g.small(maxStrike))
	}
	g.tr.Faults = append(g.tr.Faults, f)
}

// faultInstant returns an instant worth striking at: a period boundary, the time of a row (in
// a burst, between the admissions it holds), or a period counted from the first row (where a
// limiter that counts from its first request refills or opens a window), each give or take a
// little.
func (g *gen) faultInstant() time.Duration {
	jitter := g.sign(g.small(g.a.unit))
	rows := g.tr.Rows
	switch g.rng.IntN(3) {
	case 0:
		if len(rows) > 0 {
			return rows[g.rng.IntN(len(rows))].At + jitter
		}
	case 1:
		if qs := g.anchorPeriods(); len(rows) > 0 && len(qs) > 0 {
			return rows[0].At + qs[g.rng.IntN(len(qs))] + jitter
		}
	}
	return g.boundary() + jitter
}

// maybeStrike, on a faulty gen, places a fault at a faultInstant one time in two: what a family
// adds to its schedule.
func (g *gen) maybeStrike() {
	if g.faulty() && g.rng.IntN(2) == 0 {
		g.strike(g.faultInstant())
	}
}

// finishFaults puts the faults in time order within [0, Span], at most MaxFaults of them (the
// earliest), each lasting at most to the span's end.
func (g *gen) finishFaults() {
	fs := g.tr.Faults
	for i := range fs {
		end := g.b.Span
		if fs[i].Duration > 0 {
			end -= time.Millisecond // room for the shortest
		}
		fs[i].At = min(max(fs[i].At, 0), end)
		if fs[i].Duration > 0 {
			fs[i].Duration = max(min(fs[i].Duration, g.b.Span-fs[i].At), time.Millisecond)
		}
	}
	slices.SortStableFunc(fs, func(x, y trace.Fault) int { return cmp.Compare(x.At, y.At) })
	if len(fs) > MaxFaults {
		fs = fs[:MaxFaults]
	}
	if len(fs) == 0 {
		fs = nil
	}
	g.tr.Faults = fs
}

// faultMutations are the mutations of a faulty search, besides mutations: a fault added,
// moved, or taken away.
var faultMutations = []mutation{
	{"strike", func(g *gen) { g.strike(g.faultInstant()) }},
	{"move-fault", moveFault},
	{"drop-fault", dropFault},
}

// moveFault moves a fault a little either way, or to a faultInstant.
func moveFault(g *gen) {
	if len(g.tr.Faults) == 0 {
		return
	}
	f := &g.tr.Faults[g.rng.IntN(len(g.tr.Faults))]
	if g.rng.IntN(2) == 0 {
		f.At += g.sign(g.small(min(g.a.window, g.b.Span) / 2))
		return
	}
	f.At = g.faultInstant()
}

// dropFault takes a fault away.
func dropFault(g *gen) {
	if len(g.tr.Faults) == 0 {
		return
	}
	g.tr.Faults = slices.Delete(g.tr.Faults, 0, 1)
}

// dropFaultAt is the shrinker's pass that deletes fault pos.
func dropFaultAt(t *trace.Trace, pos int) *trace.Trace {
	c := t.Clone()
	c.Faults = slices.Delete(c.Faults, pos, pos+1)
	if len(c.Faults) == 0 {
		c.Faults = nil
	}
	return c
}

// earlierFault is the shrinker's pass that moves fault pos/2 onto the row before it (pos even)
// or after it (pos odd), so that a fault in the midst of a gap lands on a request's time: a
// rounder schedule, easier to read.
func earlierFault(t *trace.Trace, pos int) *trace.Trace {
	f := t.Faults[pos/2]
	i, _ := slices.BinarySearchFunc(t.Rows, f.At, func(r trace.Row, at time.Duration) int { return cmp.Compare(r.At, at) })
	var at time.Duration
	switch {
	case pos%2 == 0 && i > 0:
		at = t.Rows[i-1].At
	case pos%2 == 1 && i < len(t.Rows):
		at = t.Rows[i].At
	default:
		return nil
	}
	if at == f.At {
		return nil
	}
	c := t.Clone()
	c.Faults[pos/2].At = at
	slices.SortStableFunc(c.Faults, func(x, y trace.Fault) int { return cmp.Compare(x.At, y.At) })
	return c
}
