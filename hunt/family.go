package hunt

import (
	"math"
	"slices"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/trace"
)

// Family is one way of generating schedules, aimed at one kind of weak point.
type Family struct {
	// Name identifies the family in reports and in hunt.json.
	Name string
	// Aim says, in a sentence, which weak point it aims at.
	Aim string
	// Applies reports whether the family has something to aim at in t.
	Applies func(t Target) bool
	// make builds one schedule into g (see Make).
	make func(g *gen)
}

// Make returns the family's schedule for t within b and seed: a valid, canonical trace.Trace
// with at least one row, at most b.Rows rows, offsets in [0, b.Span], at most b.Clients
// clients and b.Subjects subjects, client clock offsets taken from t.Skews (and only for a
// client-clock t), costs above 1 only when t.Cost, and, one time in two when b.Faults allows
// them, a fault aimed like the rows (see the package doc). It is a pure function of its
// arguments.
// Its time zero is FrameOf(t, b).
func (f Family) Make(t Target, b Bounds, seed uint64) *trace.Trace {
	g := newGen(t, b, seed, f.Name)
	f.make(g)
	g.maybeStrike()
	return g.finish()
}

// Families are every schedule family, in the order a hunt first tries them.
var Families = []Family{
	{
		Name:    "window-boundary",
		Aim:     "the allowance spent just before a window boundary (or a tick of a coarse clock) and again just after it; with client clocks, from clients on either side of the boundary",
		Applies: func(Target) bool { return true },
		make:    windowBoundary,
	},
	{
		Name: "refill-point",
		Aim:  "a drained bucket (or a window on a coarse clock) probed at and around the instants it refills, after the drain and on the epoch",
		Applies: func(t Target) bool {
			return hasKind(t, algorithms.TokenBucket) || t.Contract.Granularity >= DefaultSpan/100
		},
		make: refillPoint,
	},
	{
		Name:    "first-hit",
		Aim:     "a first request opens a window; the allowance is spent at its end and again right after it",
		Applies: func(t Target) bool { return hasKind(t, algorithms.SlidingWindow) || hasKind(t, FirstHitWindow) },
		make:    firstHit,
	},
	{
		Name:    "skewed-newcomer",
		Aim:     "clients whose clocks are off appear for the first time just after the others drained the limiter",
		Applies: Target.skewed,
		make:    skewedNewcomer,
	},
	{
		Name:    "skew-alternation",
		Aim:     "clients ahead and behind take turns, so a limiter that stores the caller's time is rewound and refilled again",
		Applies: func(t Target) bool { return t.skewed() && len(distinct(t.Skews)) >= 2 },
		make:    skewAlternation,
	},
	{
		Name:    "overshoot",
		Aim:     "within one period, requests of a cost the allowance is not a multiple of, from new clients: a count checked only for equality with the limit steps over it and never meets it",
		Applies: func(t Target) bool { return t.Cost },
		make:    overshoot,
	},
	{
		Name:    "anchored",
		Aim:     "one request creates the limiter's state; whole periods later (refills, windows counted from that first request, not from the epoch) the allowance is spent just before the instant and again just after it",
		Applies: func(Target) bool { return true },
		make:    anchored,
	},
	{
		Name:    "key-expiry",
		Aim:     "a window filled from its first request, then requests every few hundred µs across the millisecond its key expires (Redis keeps a key through that millisecond, with PTTL 0), and the allowance again right after",
		Applies: func(Target) bool { return true },
		make:    keyExpiry,
	},
	{
		Name:    "after-drain",
		Aim:     "steady overload, then bursts right after the limiter drained",
		Applies: func(Target) bool { return true },
		make:    afterDrain,
	},
	{
		Name:    "spike",
		Aim:     "many clients at one instant, on a limiter filled close to its limit (a race between reading and writing its state)",
		Applies: func(Target) bool { return true },
		make:    spike,
	},
	{
		Name:    "poisson",
		Aim:     "seeded Poisson arrivals at half to four times the limit's rate",
		Applies: func(Target) bool { return true },
		make:    poisson,
	},
	{
		Name:    "on-off",
		Aim:     "bursts of two to ten times the limit's rate separated by silences",
		Applies: func(Target) bool { return true },
		make:    onOff,
	},
}

// FamiliesFor returns the families that apply to t, in Families' order.
func FamiliesFor(t Target) []Family {
	var out []Family
	for _, f := range Families {
		if f.Applies(t) {
			out = append(out, f)
		}
	}
	return out
}

// FamilyNamed returns the family called name.
func FamilyNamed(name string) (Family, bool) {
	for _, f := range Families {
		if f.Name == name {
			return f, true
		}
	}
	return Family{}, false
}

func hasKind(t Target, k algorithms.ContractKind) bool {
	for _, a := range t.aims() {
		if a.kind == k {
			return true
		}
	}
	return false
}

// distinct returns the distinct values of s, sorted.
func distinct(s []time.Duration) []time.Duration {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// windowBoundary: the allowance just before a boundary B and again just after it. With client
// clocks, a client with offset s sees B at true time B − s, so the first burst comes from a
// client with the smaller offset just before its B and the second from one with the larger
// offset just after its B: both in one true window, in two of the algorithm's.
func windowBoundary(g *gen) {
	b := g.boundary()
	room := min(g.a.window, g.b.Span) / 2
	sa, sb := g.twoSkews()
	n1, n2 := g.count(), g.count()
	// Strictly before the boundary; at or after it.
	d1, d2 := g.small(room)+time.Microsecond, g.small(room)
	s := g.subject(0)
	g.burst(b-sa-d1, g.small(d1), n1, g.burstClients(n1, sa), s)
	g.burst(b-sb+d2, g.small(room), n2, g.burstClients(n2, sb), s)
	if g.rng.IntN(3) == 0 {
		// Again at the next boundary, which a limiter that got the first one right may not.
		if bb := b + g.frame.Every; g.frame.Every > 0 && bb <= g.b.Span {
			g.burst(bb-sb+g.small(room), 0, g.count(), g.burstClients(1, sb), s)
		}
	}
}

// refillPoint: drain the bucket at t0, then probe at and around the instants it refills one or
// a few permits (t0 + j·unit) and at the period boundaries after t0.
func refillPoint(g *gen) {
	t0 := g.instant(0.5)
	if g.rng.IntN(2) == 0 {
		t0 = g.boundary() - g.small(g.a.unit)
	}
	s := g.subject(0)
	drain := g.count()
	cs := g.burstClients(drain, g.skew())
	g.burst(t0, g.small(g.a.unit), drain, cs, s)
	step := g.a.unit * time.Duration(1+g.rng.IntN(4))
	for j := 1; j <= 1+g.rng.IntN(6); j++ {
		eps := g.small(g.a.unit / 2)
		if g.rng.IntN(2) == 0 {
			eps = -eps
		}
		k := []int{1, 2, max(1, int(g.a.allow/2)), int(g.a.allow)}[g.rng.IntN(4)]
		g.burst(t0+time.Duration(j)*step+eps, 0, k, cs, s)
	}
	if g.rng.IntN(2) == 0 {
		for _, b := range g.bounds {
			if b > t0 {
				g.burst(b+g.small(g.a.unit), 0, g.count(), g.burstClients(1, g.skew()), s)
			}
		}
	}
}

// anchorPeriods returns the periods a limiter may count from its first request, likeliest
// first: the window (or the time a bucket takes to refill its capacity), a bucket's refill
// period and fractions of it, and a few permits' refill times, each once, at most half the span.
func (g *gen) anchorPeriods() []time.Duration {
	var out []time.Duration
	add := func(d time.Duration) {
		if d >= time.Millisecond && d <= g.b.Span/2 && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	add(g.a.window)
	if c := g.a.c; c.Kind == algorithms.TokenBucket {
		for _, div := range []time.Duration{1, 2, 4} {
			add(c.RefillPer / div)
		}
	}
	for _, m := range []time.Duration{1, 2, 5, 10} {
		add(g.a.unit * m)
	}
	return out
}

// anchorGuard is how far at least the anchored family's bursts stay from the instant they
// straddle.
const anchorGuard = 3 * time.Millisecond

// anchored: one request at t0 creates the limiter's state, and with it whatever the limiter
// counts from its first request (a refill every P, a window of W); k whole periods Q later the
// allowance is spent just before t0 + k·Q and again just after it. A bucket that adds R tokens
// every P from its first request, full by then, admits C before the instant and R after it.
func anchored(g *gen) {
	qs := g.anchorPeriods()
	if len(qs) == 0 {
		windowBoundary(g)
		return
	}
	// The likelier periods first: the first half the time, the second a quarter, and so on.
	i := 0
	for i < len(qs)-1 && g.rng.IntN(2) == 0 {
		i++
	}
	q := qs[i]
	room := max(min(q/4, 50*time.Millisecond), anchorGuard)
	most := int((g.b.Span - room) / q) // periods that fit after t0 = 0
	if most < 1 {
		most = 1
	}
	k := time.Duration(1 + g.rng.IntN(min(most, 3)))
	t0 := time.Duration(0)
	if slack := g.b.Span - room - k*q; slack > 0 {
		t0 = time.Duration(g.rng.Int64N(int64(slack) + 1))
	}
	s := g.subject(0)
	cs := g.burstClients(2, g.skew())
	g.add(t0, cs[0], s, 1)
	at := t0 + k*q
	// On either side of the instant by a few milliseconds at least: the limiter counts from the
	// moment the first request reached it, some way into its round trip (a new connection's
	// dial included), and a burst of many requests is not decided at one instant either.
	d1 := anchorGuard + g.small(room)
	g.burst(at-d1, g.small(d1-anchorGuard/2), g.count(), cs, s)
	g.burst(at+anchorGuard+g.small(room), g.small(room), g.count(), cs, s)
}

// keyExpiry: the first request at t0 creates a key that lives W (a window counted from its
// first hit); the allowance less one fills the window soon after; requests every 100 to 300 µs
// sweep [t0 + W − 2 ms, t0 + W + 1 ms], so that some reach the millisecond the key expires in
// (Redis keeps it through that millisecond and reports PTTL 0 there); then the allowance again
// right after. t0 lies 500 to 700 µs past a whole millisecond of the frame, so that the key's
// last millisecond (counted from the millisecond the first request reached it in) falls mostly
// before t0 + W, inside the first window.
func keyExpiry(g *gen) {
	w := g.a.window
	if w > g.b.Span-4*time.Millisecond {
		firstHit(g)
		return
	}
	t0 := g.instant(0.1)
	if room := g.b.Span - w - w/2; room > 0 {
		t0 = time.Duration(g.rng.Int64N(int64(room) + 1))
	}
	t0 = t0.Truncate(time.Millisecond) + 500*time.Microsecond + time.Duration(g.rng.Int64N(int64(200*time.Microsecond)))
	s := g.subject(0)
	cs := g.burstClients(2, g.skew())
	g.add(t0, cs[0], s, 1)
	g.burst(t0+time.Millisecond+g.small(w/4), g.small(w/4), max(0, int(g.a.allow)-1), cs, s)
	gap := 100*time.Microsecond + time.Duration(g.rng.Int64N(int64(200*time.Microsecond)))
	for at := t0 + w - 2*time.Millisecond; at <= t0+w+time.Millisecond; at += gap {
		g.add(at, cs[len(cs)-1], s, 1)
	}
	g.burst(t0+w+time.Millisecond+g.small(w/4), g.small(w/4), max(g.count(), int(g.a.allow)), cs, s)
}

// firstHit: one request at t0 opens a window [t0, t0+W); the allowance less one is spent just
// before t0 + W and the allowance again at or just after it.
func firstHit(g *gen) {
	w := g.a.window
	t0 := g.instant(0.25)
	if room := g.b.Span - w - w/2; room > 0 {
		// The whole pattern, up to half a window after the end, fits in the span.
		t0 = time.Duration(g.rng.Int64N(int64(room) + 1))
	}
	s := g.subject(0)
	cs := g.burstClients(2, g.skew())
	g.add(t0, cs[0], s, 1)
	n := g.count() - 1
	d1 := g.small(w / 2)
	g.burst(t0+w-d1, g.small(d1), n, cs, s)
	d2 := g.small(w / 2)
	if g.rng.IntN(3) == 0 {
		d2 = 0 // at the window's end exactly
	}
	g.burst(t0+w+d2, g.small(w/4), g.count(), cs, s)
}

// skewedNewcomer: in each round the clients so far drain the limiter, and a new client with
// another clock offset appears just after.
func skewedNewcomer(g *gen) {
	d := distinct(g.t.Skews)
	base := d[0]
	for _, s := range d {
		if s.Abs() < base.Abs() {
			base = s
		}
	}
	s := g.subject(0)
	old := g.clients(1+g.rng.IntN(3), base)
	rounds := 1 + g.rng.IntN(4)
	for r := range rounds {
		at := g.instant(1) * time.Duration(r+1) / time.Duration(rounds+1)
		if g.rng.IntN(2) == 0 {
			at = g.boundary() - g.small(g.a.window)
		}
		n := g.count()
		g.burst(at, g.small(g.a.unit), n, old, s)
		skew := d[g.rng.IntN(len(d))]
		for skew == base && len(d) > 1 {
			skew = d[g.rng.IntN(len(d))]
		}
		nc := g.clients(1+g.rng.IntN(2), skew)
		g.burst(at+g.small(g.a.unit)+time.Microsecond, g.small(g.a.unit), g.count(), nc, s)
		old = append(old, nc...)
	}
}

// skewAlternation: a client ahead and a client behind take turns: the one ahead spends the
// allowance, the one behind sends a request or two, and again, within a short stretch.
func skewAlternation(g *gen) {
	lo, hi := g.twoSkews()
	if g.rng.IntN(2) == 0 {
		d := distinct(g.t.Skews)
		lo, hi = d[0], d[len(d)-1]
	}
	s := g.subject(0)
	ahead, behind := g.clients(1, hi), g.clients(1, lo)
	rounds := 2 + g.rng.IntN(7)
	t0 := g.instant(0.5)
	stretch := max(g.small(min(g.a.window, g.b.Span/2)), time.Duration(rounds)*time.Microsecond)
	fresh := g.rng.IntN(3) == 0
	for r := range rounds {
		at := t0 + stretch*time.Duration(r)/time.Duration(rounds)
		if fresh {
			ahead, behind = g.clients(1, hi), g.clients(1, lo)
		}
		g.burst(at, 0, g.count(), ahead, s)
		g.burst(at+time.Microsecond+g.small(stretch/time.Duration(2*rounds)), 0, 1+g.rng.IntN(2), behind, s)
	}
}

// overshoot: just after a period boundary (a tick of a coarse clock, or a window), requests of
// one cost c, 3 or 2, of which the allowance is not a multiple: a count that takes c at a time
// from 0 steps over the limit, in whatever order they run, without ever equalling it, and a
// limit checked only for equality (`==`) never refuses them. For a limit counted per subject
// each comes from a new client (whose own limits are fresh): ⌈4·allow/c⌉ of them and a few
// more, past what even a clock of whole seconds allows in a second (three times the limit for
// a window of 1 s), with room for the shrinker to cut; for a limit counted per client, one
// client sends them all. An allowance that is a multiple of 6 gets a request of cost 1 first and
// a pause (a tenth of the period, at most 50 ms) before the others. Rows are up to 1 ms apart,
// in the first half of the period.
func overshoot(g *gen) {
	s := g.subject(0)
	c := int64(3)
	if g.a.allow%3 == 0 {
		c = 2
	}
	one := g.a.allow%c == 0
	n := min(int(min((4*g.a.allow+c-1)/c, int64(g.b.Rows)))+g.rng.IntN(4), g.b.Rows)
	period := g.a.window
	if g.frame.Every > 0 {
		period = g.frame.Every
	}
	pause := min(period/10, 50*time.Millisecond)
	at := g.boundary() + g.small(g.a.unit)
	gap := max(time.Microsecond, min(time.Millisecond, (period/2-pause)/time.Duration(n)))
	var cl uint16
	for i := range n {
		if i == 0 || g.a.scope == algorithms.PerSubject {
			cl = g.clients(1, g.skew())[0]
		}
		cost := uint16(c)
		if one && i == 0 {
			cost = 1
		}
		g.add(at, cl, s, cost)
		at += gap
		if one && i == 0 {
			at += pause
		}
	}
}

// afterDrain: a steady rate above the limit from the start, then bursts right after.
func afterDrain(g *gen) {
	rho := 1.2 + 1.8*g.rng.Float64()
	gap := time.Duration(float64(g.a.unit) / rho)
	if gap <= 0 {
		gap = time.Microsecond
	}
	s := g.subject(0)
	steady := g.clients(1+g.rng.IntN(3), g.skew())
	end := time.Duration((0.25 + 0.5*g.rng.Float64()) * float64(g.b.Span))
	for at, i := time.Duration(0), 0; at < end && i < g.b.Rows/2; at, i = at+gap, i+1 {
		g.add(at, steady[i%len(steady)], s, g.cost())
	}
	for range 1 + g.rng.IntN(3) {
		n := g.count()
		g.burst(end+g.small(g.a.unit), g.small(g.a.unit), n, g.burstClients(n, g.skew()), s)
		end += g.a.unit * time.Duration(1+g.rng.IntN(int(min(g.a.allow, 50))))
	}
}

// spike: the limiter filled close to its limit, then many clients at one instant, maybe again.
func spike(g *gen) {
	s := g.subject(0)
	t0 := g.b.Span/8 + g.instant(0.5)
	if g.rng.IntN(2) == 0 {
		t0 = g.boundary() + g.small(g.a.unit)
	}
	if g.rng.IntN(2) == 0 {
		prime := max(0, int(g.a.allow)-1-g.rng.IntN(3))
		room := min(g.a.window, t0) / 2
		g.burst(t0-room, max(0, room-time.Microsecond), prime, g.clients(1, g.skew()), s)
	}
	k := max(2, min(g.b.Clients, int(2*g.a.allow)+2, 2+g.rng.IntN(64)))
	for range 1 + g.rng.IntN(2) {
		cs := g.clients(k, g.skew())
		g.burst(t0, 0, k, cs, s)
		t0 += g.a.window/2 + g.small(g.a.window/2)
	}
}

// poisson: exponential gaps at rho times the limit's rate per subject, rho in [0.5, 4] drawn
// log-uniformly, over a few clients (offsets cycled from the target's) and subjects.
func poisson(g *gen) {
	rho := math.Exp(math.Log(0.5) + g.rng.Float64()*math.Log(8))
	subjects := 1
	if g.rng.IntN(3) == 0 {
		subjects = 1 + g.rng.IntN(g.b.Subjects)
	}
	rate := rho * g.a.rate() * float64(subjects) // per second
	cs := make([]uint16, 1+g.rng.IntN(min(8, g.b.Clients)))
	for i := range cs {
		cs[i] = g.newClient(g.skew())
	}
	at := time.Duration(0)
	for i := 0; i < g.b.Rows; i++ {
		at += time.Duration(g.rng.ExpFloat64() / rate * float64(time.Second))
		if at > g.b.Span {
			break
		}
		g.add(at, cs[g.rng.IntN(len(cs))], g.subject(g.rng.IntN(subjects)), g.cost())
	}
}

// onOff: periods of two to ten times the limit's rate, each a fraction of a window long,
// separated by silences as long.
func onOff(g *gen) {
	s := g.subject(0)
	cs := g.clients(1+g.rng.IntN(4), g.skew())
	at := g.instant(0.25)
	for n := 0; at < g.b.Span && n < g.b.Rows; {
		on := time.Duration((0.1 + 0.9*g.rng.Float64()) * float64(min(g.a.window, g.b.Span)))
		gap := time.Duration(float64(g.a.unit) / (2 + 8*g.rng.Float64()))
		if gap <= 0 {
			gap = time.Microsecond
		}
		for end := at + on; at < end && n < g.b.Rows; at, n = at+gap, n+1 {
			g.add(at, cs[n%len(cs)], s, g.cost())
		}
		at += time.Duration((0.1 + 0.9*g.rng.Float64()) * float64(min(g.a.window, g.b.Span)))
	}
}
