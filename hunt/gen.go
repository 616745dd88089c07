package hunt

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/trace"
)

// gen builds or edits one schedule: the target, its bounds and frame, the limit aimed at, a
// seeded generator and the rows so far.
type gen struct {
	t      Target
	b      Bounds
	a      aim
	rng    *rand.Rand
	frame  arrival.Align
	bounds []time.Duration // period boundaries in [0, Span]
	tr     *trace.Trace
	costly bool // rows of new bursts may cost more than 1
}

// newGen returns a gen for an empty trace; name separates the random streams of families.
func newGen(t Target, b Bounds, seed uint64, name string) *gen {
	b = b.withDefaults()
	h := fnv.New64a()
	_, _ = h.Write([]byte(name)) // never fails
	g := &gen{
		t:     t,
		b:     b,
		rng:   rand.New(rand.NewPCG(seed, h.Sum64())),
		frame: FrameOf(t, b),
		tr:    &trace.Trace{},
	}
	g.bounds = boundaries(g.frame, b.Span)
	aims := t.aims()
	g.a = aims[0]
	if len(aims) > 1 && g.rng.IntN(3) == 0 {
		g.a = aims[1+g.rng.IntN(len(aims)-1)]
	}
	g.costly = t.Cost && g.rng.IntN(3) == 0
	return g
}

// editGen returns a gen that edits a copy of tr.
func editGen(t Target, b Bounds, rng *rand.Rand, tr *trace.Trace) *gen {
	b = b.withDefaults()
	g := &gen{t: t, b: b, rng: rng, frame: FrameOf(t, b), tr: tr.Clone()}
	g.bounds = boundaries(g.frame, b.Span)
	aims := t.aims()
	g.a = aims[rng.IntN(len(aims))]
	g.costly = t.Cost && rng.IntN(3) == 0
	if g.tr.Skew == nil {
		g.tr.Skew = make([]time.Duration, len(g.tr.Clients))
	}
	return g
}

// newClient adds a client with clock offset skew (0 unless the target is skewed) and returns
// its index; past b.Clients it returns an existing client instead.
func (g *gen) newClient(skew time.Duration) uint16 {
	if !g.t.skewed() {
		skew = 0
	}
	if len(g.tr.Clients) >= g.b.Clients {
		// Reuse one with the same offset if there is one.
		for i, s := range g.tr.Skew {
			if s == skew {
				return uint16(i)
			}
		}
		return uint16(g.rng.IntN(len(g.tr.Clients)))
	}
	g.tr.Clients = append(g.tr.Clients, g.freshName())
	g.tr.Skew = append(g.tr.Skew, skew)
	return uint16(len(g.tr.Clients) - 1)
}

// freshName returns a client name the trace does not use.
func (g *gen) freshName() string {
	for i := len(g.tr.Clients); ; i++ {
		name := fmt.Sprintf("c%d", i)
		if !slices.Contains(g.tr.Clients, name) {
			return name
		}
	}
}

// clients returns k new clients with the clock offset skew.
func (g *gen) clients(k int, skew time.Duration) []uint16 {
	out := make([]uint16, max(k, 1))
	for i := range out {
		out[i] = g.newClient(skew)
	}
	return out
}

// subject returns the index of subject i (0-based, below b.Subjects), adding names as needed.
func (g *gen) subject(i int) uint32 {
	i = min(i, g.b.Subjects-1)
	for len(g.tr.Subjects) <= i {
		name := ""
		for k := len(g.tr.Subjects); name == "" || slices.Contains(g.tr.Subjects, name); k++ {
			name = fmt.Sprintf("s%d", k)
		}
		g.tr.Subjects = append(g.tr.Subjects, name)
	}
	return uint32(i)
}

// cost returns the cost of a new row: 1, or 1 to 3 when the schedule is costly.
func (g *gen) cost() uint16 {
	if !g.costly {
		return 1
	}
	return uint16(1 + g.rng.IntN(3))
}

// add appends a row; finish sorts and clamps.
func (g *gen) add(at time.Duration, c uint16, s uint32, cost uint16) {
	g.tr.Rows = append(g.tr.Rows, trace.Row{At: at, Client: c, Subject: s, Cost: cost})
}

// burst adds n rows from at, spread evenly over spread (all at one instant when 0), cycling
// through cs, for subject s.
func (g *gen) burst(at, spread time.Duration, n int, cs []uint16, s uint32) {
	for i := range n {
		t := at
		if spread > 0 && n > 1 {
			t += spread * time.Duration(i) / time.Duration(n-1)
		}
		g.add(t, cs[i%len(cs)], s, g.cost())
	}
}

// small returns a duration drawn log-uniformly from [1µs, most], or 0 one time in five: the
// distance of a burst from the instant it aims at.
func (g *gen) small(most time.Duration) time.Duration {
	if most <= time.Microsecond || g.rng.IntN(5) == 0 {
		return 0
	}
	lo, hi := math.Log(float64(time.Microsecond)), math.Log(float64(most))
	return time.Duration(math.Exp(lo + g.rng.Float64()*(hi-lo)))
}

// count returns the size of a burst: the aimed limit's allowance times 1, 1.25, 1.5 or 2, or
// the allowance less a few (a burst that only comes close), at least 1.
func (g *gen) count() int {
	n := float64(g.a.allow)
	switch g.rng.IntN(6) {
	case 0:
		n *= 1.25
	case 1:
		n *= 1.5
	case 2:
		n *= 2
	case 3:
		n -= float64(1 + g.rng.IntN(3))
	}
	return max(1, min(int(math.Ceil(n)), g.b.Rows/2))
}

// boundary returns a period boundary in [0, Span], or a random instant in its middle half when
// the frame has none.
func (g *gen) boundary() time.Duration {
	if len(g.bounds) > 0 {
		return g.bounds[g.rng.IntN(len(g.bounds))]
	}
	return g.b.Span/4 + time.Duration(g.rng.Int64N(int64(g.b.Span/2)+1))
}

// instant returns a random offset in [0, Span·frac].
func (g *gen) instant(frac float64) time.Duration {
	return time.Duration(g.rng.Float64() * frac * float64(g.b.Span))
}

// skew returns a clock offset allowed by the target (0 when it is not skewed).
func (g *gen) skew() time.Duration {
	if !g.t.skewed() {
		return 0
	}
	return g.t.Skews[g.rng.IntN(len(g.t.Skews))]
}

// twoSkews returns two different allowed offsets, the first smaller (0, 0 when not skewed).
func (g *gen) twoSkews() (time.Duration, time.Duration) {
	d := distinct(g.t.Skews)
	if !g.t.skewed() || len(d) < 2 {
		return 0, 0
	}
	i := g.rng.IntN(len(d))
	j := g.rng.IntN(len(d) - 1)
	if j >= i {
		j++
	}
	return min(d[i], d[j]), max(d[i], d[j])
}

// oneClient reports whether a burst should come from one client: always when the aimed limit
// counts per client or per consumer, else half the time.
func (g *gen) oneClient() bool {
	return g.a.scope != algorithms.PerSubject || g.rng.IntN(2) == 0
}

// burstClients returns the clients of a burst of n: one, or a few, with clock offset skew.
func (g *gen) burstClients(n int, skew time.Duration) []uint16 {
	if g.oneClient() {
		return g.clients(1, skew)
	}
	return g.clients(min(n, 1+g.rng.IntN(8)), skew)
}

// finish returns the trace: offsets clamped to [0, Span], rows in time order (stable), at most
// b.Rows of them (the earliest), faults in order (finishFaults), canonical. An empty schedule gets one row at 0.
func (g *gen) finish() *trace.Trace {
	tr := g.tr
	for i := range tr.Rows {
		tr.Rows[i].At = min(max(tr.Rows[i].At, 0), g.b.Span)
	}
	slices.SortStableFunc(tr.Rows, func(x, y trace.Row) int { return cmp.Compare(x.At, y.At) })
	if len(tr.Rows) > g.b.Rows {
		tr.Rows = tr.Rows[:g.b.Rows]
	}
	if len(tr.Rows) == 0 {
		g.add(0, g.newClient(0), g.subject(0), 1)
	}
	if len(tr.Skew) != len(tr.Clients) {
		tr.Skew = make([]time.Duration, len(tr.Clients))
	}
	g.finishFaults()
	return tr.Canonical()
}
