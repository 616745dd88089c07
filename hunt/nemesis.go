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

// ClockJump is the kind of nemesis, beside the faults of scenarios.NemesisKinds, that steps a
// client's clock forward or back during a schedule (trace.Jump), to another offset the target
// allows: only a client-clock target with two offsets or more has one to take (Target.skewed).
const ClockJump = "clock-jump"

// Fault durations of the kinds that last (pause, blackhole): log-uniform in [minStrike,
// maxStrike].
const (
	minStrike = 10 * time.Millisecond
	maxStrike = 300 * time.Millisecond
)

// faulty reports whether schedules may place faults.
func (g *gen) faulty() bool { return len(g.b.Faults) > 0 }

// strike adds a fault of a kind the bounds allow at at (finish clamps it into the span): for
// ClockJump, a jump of a client's clock (jump).
func (g *gen) strike(at time.Duration) {
	k := g.b.Faults[g.rng.IntN(len(g.b.Faults))]
	if k == ClockJump {
		g.jump(at)
		return
	}
	f := trace.Fault{At: at, Kind: k}
	if scenarios.FaultKind(k).Lasts() {
		f.Duration = max(minStrike, g.small(maxStrike))
	}
	g.tr.Faults = append(g.tr.Faults, f)
}

// jump makes the clock of a client of the schedule jump at at to another offset the target
// allows; nothing when the target reads no client clock or allows one offset only.
func (g *gen) jump(at time.Duration) {
	d := distinct(g.t.Skews)
	if !g.t.skewed() || len(d) < 2 || len(g.tr.Rows) == 0 {
		return
	}
	c := g.tr.Rows[g.rng.IntN(len(g.tr.Rows))].Client
	now := g.tr.SkewAt(c, at)
	to := d[g.rng.IntN(len(d))]
	if to == now {
		to = d[(slices.Index(d, to)+1)%len(d)]
	}
	g.tr.Jumps = append(g.tr.Jumps, trace.Jump{At: at, Client: c, Skew: to})
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
// earliest), each lasting at most to the span's end; and the clock jumps likewise.
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
	js := g.tr.Jumps
	for i := range js {
		js[i].At = min(max(js[i].At, 0), g.b.Span)
	}
	slices.SortStableFunc(js, func(x, y trace.Jump) int { return cmp.Compare(x.At, y.At) })
	if len(js) > MaxFaults {
		js = js[:MaxFaults]
	}
	if len(js) == 0 {
		js = nil
	}
	g.tr.Jumps = js
}

// faultMutations are the mutations of a faulty search, besides mutations: a fault or a clock
// jump added, moved, or taken away.
var faultMutations = []mutation{
	{"strike", func(g *gen) { g.strike(g.faultInstant()) }},
	{"move-fault", moveFault},
	{"drop-fault", dropFault},
}

// moveFault moves a fault or a clock jump a little either way, or to a faultInstant.
func moveFault(g *gen) {
	n := len(g.tr.Faults) + len(g.tr.Jumps)
	if n == 0 {
		return
	}
	var at *time.Duration
	if i := g.rng.IntN(n); i < len(g.tr.Faults) {
		at = &g.tr.Faults[i].At
	} else {
		at = &g.tr.Jumps[i-len(g.tr.Faults)].At
	}
	if g.rng.IntN(2) == 0 {
		*at += g.sign(g.small(min(g.a.window, g.b.Span) / 2))
		return
	}
	*at = g.faultInstant()
}

// dropFault takes a fault or a clock jump away.
func dropFault(g *gen) {
	n := len(g.tr.Faults) + len(g.tr.Jumps)
	if n == 0 {
		return
	}
	if i := g.rng.IntN(n); i < len(g.tr.Faults) {
		g.tr.Faults = slices.Delete(g.tr.Faults, i, i+1)
	} else {
		i -= len(g.tr.Faults)
		g.tr.Jumps = slices.Delete(g.tr.Jumps, i, i+1)
	}
}

// dropJumpAt is the shrinker's pass that deletes clock jump pos.
func dropJumpAt(t *trace.Trace, pos int) *trace.Trace {
	c := t.Clone()
	c.Jumps = slices.Delete(c.Jumps, pos, pos+1)
	if len(c.Jumps) == 0 {
		c.Jumps = nil
	}
	return c
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
