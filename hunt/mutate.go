package hunt

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/limitbench/limitbench/internal/trace"
)

// mutation edits the schedule being built in g. It may leave rows out of order or out of
// range: finish puts them back.
type mutation struct {
	name string
	do   func(g *gen)
}

// mutations are the edits the search applies to a kept candidate, one to three at a time.
var mutations = []mutation{
	{"shift", shiftGroup},
	{"to-boundary", moveToBoundary},
	{"scale", scaleTimes},
	{"duplicate", duplicate},
	{"drop", dropRows},
	{"new-client", toNewClient},
	{"reassign", reassign},
	{"subject", toSubject},
	{"cost", recost},
	{"jitter", jitter},
	{"burst", addBurst},
}

// mutate returns a mutated copy of tr: one to three mutations drawn from rng (faultMutations too
// when b.Faults allows faults), then the rows put in order and range as Family.Make does.
func mutate(t Target, b Bounds, rng *rand.Rand, tr *trace.Trace) *trace.Trace {
	g := editGen(t, b, rng, tr)
	muts := mutations
	if g.faulty() {
		muts = append(slices.Clip(mutations), faultMutations...)
	}
	for range 1 + rng.IntN(3) {
		muts[rng.IntN(len(muts))].do(g)
		if len(g.tr.Rows) == 0 {
			break
		}
	}
	return g.finish()
}

// group returns the rows [i, j) around a random row: those within w of it, w drawn like a
// burst's distance from the limit's unit (a burst at one instant, or a stretch of rows).
func (g *gen) group() (int, int) {
	rows := g.tr.Rows
	if len(rows) == 0 {
		return 0, 0
	}
	k := g.rng.IntN(len(rows))
	w := g.small(g.a.unit * time.Duration(1+g.rng.IntN(int(min(g.a.allow, 100)))))
	at := rows[k].At
	i, j := k, k+1
	for i > 0 && at-rows[i-1].At <= w {
		i--
	}
	for j < len(rows) && rows[j].At-at <= w {
		j++
	}
	return i, j
}

// sign returns d or −d, evenly.
func (g *gen) sign(d time.Duration) time.Duration {
	if g.rng.IntN(2) == 0 {
		return -d
	}
	return d
}

// shiftGroup moves a group of rows by a small distance either way.
func shiftGroup(g *gen) {
	i, j := g.group()
	d := g.sign(g.small(min(g.a.window, g.b.Span) / 2))
	for k := i; k < j; k++ {
		g.tr.Rows[k].At += d
	}
}

// moveToBoundary moves a group so that it starts just before or just after a period boundary
// (of the client's clock, for a skewed client), keeping its shape.
func moveToBoundary(g *gen) {
	i, j := g.group()
	if i == j {
		return
	}
	r := g.tr.Rows[i]
	to := g.boundary() - g.tr.SkewOf(r.Client) + g.sign(g.small(g.a.unit))
	d := to - r.At
	for k := i; k < j; k++ {
		g.tr.Rows[k].At += d
	}
}

// scaleTimes stretches or squeezes every offset around a row's by a factor in [0.5, 2].
func scaleTimes(g *gen) {
	if len(g.tr.Rows) == 0 {
		return
	}
	pivot := g.tr.Rows[g.rng.IntN(len(g.tr.Rows))].At
	f := math.Exp((g.rng.Float64()*2 - 1) * math.Ln2)
	for k := range g.tr.Rows {
		g.tr.Rows[k].At = pivot + time.Duration(float64(g.tr.Rows[k].At-pivot)*f)
	}
}

// duplicate adds copies of a row, at its instant or near it, from its client or a new one.
func duplicate(g *gen) {
	if len(g.tr.Rows) == 0 {
		return
	}
	r := g.tr.Rows[g.rng.IntN(len(g.tr.Rows))]
	c := r.Client
	if g.rng.IntN(3) == 0 {
		c = g.newClient(g.skew())
	}
	n := 1 + g.rng.IntN(int(min(g.a.allow, int64(g.b.Rows/4)+1)))
	for range n {
		at := r.At
		if g.rng.IntN(2) == 0 {
			at += g.small(g.a.unit)
		}
		g.add(at, c, r.Subject, r.Cost)
	}
}

// dropRows deletes a stretch of rows, or every row of a client.
func dropRows(g *gen) {
	rows := g.tr.Rows
	if len(rows) <= 1 {
		return
	}
	if g.rng.IntN(3) == 0 {
		c := rows[g.rng.IntN(len(rows))].Client
		g.tr.Rows = slices.DeleteFunc(rows, func(r trace.Row) bool { return r.Client == c })
		return
	}
	i := g.rng.IntN(len(rows))
	n := 1 + g.rng.IntN(max(1, len(rows)/4))
	g.tr.Rows = slices.Delete(rows, i, min(len(rows), i+n))
}

// toNewClient gives a group to a new client, with an allowed clock offset.
func toNewClient(g *gen) {
	i, j := g.group()
	c := g.newClient(g.skew())
	for k := i; k < j; k++ {
		g.tr.Rows[k].Client = c
	}
}

// reassign gives a group to an existing client.
func reassign(g *gen) {
	i, j := g.group()
	if len(g.tr.Clients) == 0 {
		return
	}
	c := uint16(g.rng.IntN(len(g.tr.Clients)))
	for k := i; k < j; k++ {
		g.tr.Rows[k].Client = c
	}
}

// toSubject moves a group to another subject (a new one, or the first).
func toSubject(g *gen) {
	i, j := g.group()
	s := g.subject(g.rng.IntN(len(g.tr.Subjects) + 1))
	for k := i; k < j; k++ {
		g.tr.Rows[k].Subject = s
	}
}

// recost sets a group's costs to 1 or, when the target takes costs, to 1 to 3.
func recost(g *gen) {
	i, j := g.group()
	c := uint16(1)
	if g.t.Cost {
		c = uint16(1 + g.rng.IntN(3))
	}
	for k := i; k < j; k++ {
		g.tr.Rows[k].Cost = c
	}
}

// jitter moves every row by its own small amount.
func jitter(g *gen) {
	most := max(g.a.unit/4, time.Microsecond)
	for k := range g.tr.Rows {
		g.tr.Rows[k].At += g.sign(g.small(most))
	}
}

// addBurst adds a burst of about the allowance at or around a boundary.
func addBurst(g *gen) {
	n := g.count()
	s := g.subject(0)
	if len(g.tr.Rows) > 0 {
		s = g.tr.Rows[g.rng.IntN(len(g.tr.Rows))].Subject
	}
	sk := g.skew()
	g.burst(g.boundary()-sk+g.sign(g.small(g.a.unit)), g.small(g.a.unit), n, g.burstClients(n, sk), s)
}
