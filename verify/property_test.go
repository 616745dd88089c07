package verify

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/limitbench/limitbench/algorithms"
)

// TestCheckMatchesBruteForce: on small random histories the fast checker finds exactly what the
// brute-force checker finds: the same numbers of definite and possible violations, the same worst
// excesses, and the same answer on whether unknown outcomes could hide a violation.
func TestCheckMatchesBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genContract(t, "")
		log := genLog(t, 12)
		rep, err := Check(c, cloneLog(log))
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		got := rep.Limits[0]
		want := brute(c, log, Admitted)
		if got.Definite != want.definite || got.Possible != want.possible ||
			got.Worst.Excess != want.worstDef || got.WorstPossible.Excess != want.worstPoss {
			t.Fatalf("%s: Check = definite %d possible %d worst %d/%d; brute force = definite %d possible %d worst %d/%d",
				c, got.Definite, got.Possible, got.Worst.Excess, got.WorstPossible.Excess,
				want.definite, want.possible, want.worstDef, want.worstPoss)
		}
		if got.Definite != int64(len(got.Violations)) {
			t.Fatalf("%d definite violations but %d listed", got.Definite, len(got.Violations))
		}
		if want.definite == 0 && rep.Unknown > 0 {
			if hide := bruteHide(c, log); got.UnknownExcess != hide || got.UnknownCouldHide != (hide > 0) {
				t.Fatalf("%s: UnknownExcess = %d, UnknownCouldHide = %v; brute force: %d",
					c, got.UnknownExcess, got.UnknownCouldHide, hide)
			}
		}
	})
}

// placement draws one instant in each admission's widened interval of log: all at Lo, all at Hi,
// or anywhere.
func placement(t *rapid.T, c algorithms.Contract, log *Log, label string) map[string][2][]int64 {
	g := c.Granularity.Microseconds()
	mode := rapid.IntRange(0, 2).Draw(t, label+"mode")
	out := map[string][2][]int64{}
	for key, evs := range bruteScopes(c, log, Admitted) {
		var ts, ps []int64
		for i, e := range evs {
			lo, hi := log.Base+e.Lo()-g, log.Base+e.Hi()+g
			x := lo
			switch mode {
			case 1:
				x = hi
			case 2:
				x = rapid.Int64Range(lo, hi).Draw(t, fmt.Sprintf("%s%s%d", label, key, i))
			}
			ts, ps = append(ts, x), append(ps, int64(e.Permits))
		}
		out[key] = [2][]int64{ts, ps}
	}
	return out
}

// TestDefiniteMeansEveryPlacement checks the definitions against the contract itself: when Check
// reports a definite violation, every placement of the times violates the contract; when some
// placement violates it, Check reports a possible violation.
func TestDefiniteMeansEveryPlacement(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genContract(t, "")
		log := genLog(t, 10)
		rep, err := Check(c, cloneLog(log))
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		got := rep.Limits[0]
		for i := range 5 {
			violated := false
			for _, tp := range placement(t, c, log, fmt.Sprint(i)) {
				violated = violated || pointViolates(c, tp[0], tp[1])
			}
			if got.Definite > 0 && !violated {
				t.Fatalf("%s: definite violation reported, but a placement keeps the contract", c)
			}
			if violated && got.Possible == 0 {
				t.Fatalf("%s: a placement violates the contract, but no possible violation was reported", c)
			}
		}
	})
}

// trueHistory is a history made by a correct limiter: true times t, algorithm times x within the
// contract's granularity of t, and the decision the limiter took at x.
type trueHistory struct {
	subjects, clients []string
	base              int64 // the Log.Base of its logs
	t, x              []int64
	subject, client   []int
	cost              []int64
	admitted          []bool
}

// genArrivals draws n requests in time order (µs from origin), with bursts of equal times, and
// the Base of the logs made from them, up to about a second before origin.
func genArrivals(t *rapid.T, n int, origin, maxGap int64) trueHistory {
	h := trueHistory{subjects: []string{"s0", "s1", "s2"}, clients: []string{"c0", "c1"},
		base: origin - rapid.Int64Range(0, 1<<20).Draw(t, "base")}
	now := origin
	for i := range n {
		if rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("burst%d", i)) > 0 {
			now += rapid.Int64Range(0, maxGap).Draw(t, fmt.Sprintf("gap%d", i))
		}
		h.t = append(h.t, now)
		h.subject = append(h.subject, rapid.IntRange(0, 2).Draw(t, fmt.Sprintf("s%d", i)))
		h.client = append(h.client, rapid.IntRange(0, 1).Draw(t, fmt.Sprintf("c%d", i)))
		h.cost = append(h.cost, int64(rapid.SampledFrom([]int{1, 1, 1, 2, 3}).Draw(t, fmt.Sprintf("cost%d", i))))
	}
	return h
}

// decide runs m over h at the algorithm's times: t quantised to g by floor, ceiling or nearest.
func (h *trueHistory) decide(t *rapid.T, m algorithms.Model, g int64) {
	mode := rapid.IntRange(0, 2).Draw(t, "rounding")
	h.x, h.admitted = nil, nil
	for i, ti := range h.t {
		x := ti
		if g > 1 {
			down := floorDiv(ti, g) * g
			switch mode {
			case 0:
				x = down
			case 1:
				x = down
				if down != ti {
					x += g
				}
			case 2:
				x = floorDiv(ti+g/2, g) * g
			}
		}
		h.x = append(h.x, x)
		h.admitted = append(h.admitted, m.Decide(h.subjects[h.subject[i]], h.clients[h.client[i]], h.cost[i], x))
	}
}

// log turns h into an admission log whose intervals contain the true times, widened by up to
// spread µs on each side; some outcomes are logged as unknown, some admissions lost to errors
// are not (Failed is only used for requests that were denied: they admitted nothing).
func (h *trueHistory) log(t *rapid.T, spread int64) *Log {
	log := &Log{Subjects: h.subjects, Clients: h.clients, Base: h.base}
	for i, ti := range h.t {
		lo, hi := ti-h.base, ti-h.base
		if spread > 0 && rapid.Bool().Draw(t, fmt.Sprintf("wide%d", i)) {
			lo -= rapid.Int64Range(0, spread).Draw(t, fmt.Sprintf("lo%d", i))
			hi += rapid.Int64Range(0, spread).Draw(t, fmt.Sprintf("hi%d", i))
		}
		k := Denied
		if h.admitted[i] {
			k = Admitted
		}
		switch rapid.IntRange(0, 9).Draw(t, fmt.Sprintf("fate%d", i)) {
		case 0:
			k = Unknown
		case 1:
			if k == Denied {
				k = Failed
			}
		}
		log.Events = append(log.Events, mustEvent(lo, hi, uint32(h.subject[i]), uint16(h.client[i]), uint16(h.cost[i]), k))
	}
	return log
}

// genScaledContract draws a contract with windows of 1 µs to 1 s.
func genScaledContract(t *rapid.T, label string) algorithms.Contract {
	c := genContract(t, label)
	scale := rapid.SampledFrom([]time.Duration{1, 1000, 1_000_000}).Draw(t, label+"scale")
	c.Window *= scale
	c.RefillPer *= scale
	c.Granularity = time.Duration(rapid.SampledFrom([]int64{0, 1, 1000, 1_000_000}).Draw(t, label+"g")) * time.Microsecond
	return c
}

// TestCorrectLimiterNeverFlagged: histories from exact reference limiters, one or two limits at
// once, deciding on a clock of the contract's granularity, are never flagged, however the
// intervals are widened around the true times and whatever is logged as unknown.
func TestCorrectLimiterNeverFlagged(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genScaledContract(t, "")
		if rapid.Bool().Draw(t, "two") {
			a := genScaledContract(t, "also")
			a.Granularity = c.Granularity
			c.Also = []algorithms.Contract{a}
		}
		maxGap := max(c.Window, c.RefillPer).Microseconds()/3 + 1
		h := genArrivals(t, rapid.IntRange(0, 200).Draw(t, "n"), 1_700_000_000_000_000, maxGap)
		h.decide(t, newRefLimiter(c), c.Granularity.Microseconds())
		spread := rapid.SampledFrom([]int64{0, 1, maxGap, 10 * maxGap}).Draw(t, "spread")
		rep, err := Check(c, h.log(t, spread))
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		for _, l := range rep.Limits {
			if l.Definite > 0 {
				t.Fatalf("%s: %d definite violations in a correct history; worst %+v", l.Contract, l.Definite, l.Worst)
			}
		}
		if v := Judge(rep, false); v.Verdict == Fail {
			t.Fatalf("Judge = %v", v)
		}
	})
}

// TestMismatchedClockNeverFails: a correct history in which m admissions are logged at wrong
// times (as a server clock that disagreed with the harness's would log them) can be flagged by
// Check, but JudgeWith told of the m mismatches never says fail, and never pass either.
func TestMismatchedClockNeverFails(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genScaledContract(t, "")
		maxGap := max(c.Window, c.RefillPer).Microseconds()/3 + 1
		const origin = 1_700_000_000_000_000
		h := genArrivals(t, rapid.IntRange(1, 200).Draw(t, "n"), origin, maxGap)
		h.decide(t, newRefLimiter(c), c.Granularity.Microseconds())
		log := h.log(t, rapid.SampledFrom([]int64{0, maxGap}).Draw(t, "spread"))
		var adms []int
		for i, e := range log.Events {
			if e.Kind() == Admitted {
				adms = append(adms, i)
			}
		}
		if len(adms) == 0 {
			t.Skip("no admission")
		}
		m := rapid.IntRange(1, min(len(adms), 5)).Draw(t, "m")
		end := h.t[len(h.t)-1] + maxGap
		// Move m admissions, all to one instant or each anywhere: the worst a clock step can do.
		at := rapid.Int64Range(origin, end).Draw(t, "at")
		together := rapid.Bool().Draw(t, "together")
		for k, i := range rapid.Permutation(adms).Draw(t, "moved")[:m] {
			x := at
			if !together {
				x = rapid.Int64Range(origin, end).Draw(t, fmt.Sprint("x", k))
			}
			e := log.Events[i]
			log.Events[i] = mustEvent(x-log.Base, x-log.Base, e.Subject, e.Client, e.Permits, e.Kind())
		}
		rep, err := Check(c, log)
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		if v := JudgeWith(rep, Warnings{ClockMismatch: uint64(m)}); v.Verdict != Inconclusive {
			t.Fatalf("%s, %d mismatched: JudgeWith = %+v; want inconclusive", c, m, v)
		}
	})
}

// TestModelsNeverFlagged: histories made by every registered reference model, at the times the
// model decided on, are never flagged against the algorithm's contract, however widened.
func TestModelsNeverFlagged(t *testing.T) {
	var models int
	for _, a := range algorithms.All() {
		d := a.Describe()
		if a.Model(algorithms.Limit{Limit: 1, Window: time.Second}) == nil {
			continue
		}
		models++
		t.Run(d.Name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				l := algorithms.Limit{
					Limit:         rapid.Int64Range(1, 6).Draw(t, "limit"),
					Window:        time.Duration(rapid.Int64Range(1, 30).Draw(t, "window")) * time.Millisecond,
					Burst:         rapid.Int64Range(0, 8).Draw(t, "burst"),
					ConsumerLimit: rapid.Int64Range(0, 4).Draw(t, "consumer"),
				}
				c, err := a.Contract(l)
				if err != nil {
					t.Fatalf("Contract(%+v): %v", l, err)
				}
				h := genArrivals(t, rapid.IntRange(0, 300).Draw(t, "n"), 1_700_000_000_000_000, l.Window.Microseconds()/4)
				if !d.Cost {
					for i := range h.cost {
						h.cost[i] = 1
					}
				}
				h.decide(t, a.Model(l), 1)
				rep, err := Check(c, h.log(t, rapid.SampledFrom([]int64{0, 0, 100, 5000}).Draw(t, "spread")))
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				for _, lr := range rep.Limits {
					if lr.Definite > 0 {
						t.Fatalf("%s: %d definite violations in the model's history; worst %+v", lr.Contract, lr.Definite, lr.Worst)
					}
				}
			})
		})
	}
	t.Logf("%d registered algorithms have a reference model", models)
}

// TestPlantedViolationFound: a definite violation planted in a correct history (more permits
// than allowed, with intervals that fit one window whatever the placement; for sliding-window,
// K·L + 1 permits within K·W, so a granularity coarser than half the window plants one too) is
// always found, and the verdict is fail.
func TestPlantedViolationFound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genScaledContract(t, "")
		g := c.Granularity.Microseconds()
		maxGap := max(c.Window, c.RefillPer).Microseconds()/3 + 1
		h := genArrivals(t, rapid.IntRange(0, 100).Draw(t, "n"), 1_700_000_000_000_000, maxGap)
		h.decide(t, newRefLimiter(c), g)
		log := h.log(t, rapid.SampledFrom([]int64{0, maxGap}).Draw(t, "spread"))

		// Plant: the permits allowed plus one, in one scope, all inside one window of room µs.
		var room, allowed int64
		switch c.Kind {
		case algorithms.SlidingWindow:
			// Condition (i): K·L + 1 within K·W, which widening by 2G always leaves room for.
			k := slidingK(c)
			room, allowed = k*c.Window.Microseconds()-1, k*c.Limit
			if allowed > 200 {
				t.Skip("granularity too coarse for the window: too many permits to plant")
			}
		case algorithms.FixedWindow:
			room, allowed = c.Window.Microseconds()-1, c.Limit
		case algorithms.TokenBucket:
			room, allowed = 0, c.Capacity
		}
		start := 1_700_000_000_000_000 + rapid.Int64Range(0, 100*maxGap).Draw(t, "at")
		if c.Kind == algorithms.FixedWindow {
			w := c.Window.Microseconds()
			start = floorDiv(start, w) * w
		}
		// Widening by G on both sides must keep the planted set inside: shrink the room by 2G.
		start += g
		room -= 2 * g
		if room < 0 {
			if c.Kind != algorithms.TokenBucket {
				t.Skip("granularity too coarse for the window: no definite violation is possible")
			}
			room = 0
		}
		if c.Kind == algorithms.TokenBucket && g > 0 {
			// Over a span of 2G the bucket may refill: plant enough to beat it.
			allowed += (c.RefillPermits*(2*g) + c.RefillPer.Microseconds() - 1) / c.RefillPer.Microseconds()
			if allowed > 100 {
				t.Skip("granularity too coarse for the refill rate")
			}
		}
		sub := uint32(rapid.IntRange(0, 2).Draw(t, "subject"))
		cli := uint16(rapid.IntRange(0, 1).Draw(t, "client"))
		for permits := int64(0); permits <= allowed; permits++ {
			lo := start + rapid.Int64Range(0, room).Draw(t, fmt.Sprint("plo", permits))
			// A width the Event keeps exactly: one it rounds up (above 2^20 µs) may leave the room.
			hi := lo + exactWidth(rapid.Int64Range(0, start+room-lo).Draw(t, fmt.Sprint("phi", permits)))
			log.Events = append(log.Events, mustEvent(lo-log.Base, hi-log.Base, sub, cli, 1, Admitted))
		}
		rep, err := Check(c, log)
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		if rep.Limits[0].Definite == 0 {
			t.Fatalf("%s: planted violation not found", c)
		}
		w := Warnings{
			Behind:   rapid.Bool().Draw(t, "behind"),
			Canceled: rapid.Bool().Draw(t, "canceled"),
			Dropped:  rapid.Uint64Range(0, 3).Draw(t, "dropped"),
		}
		if v := JudgeWith(rep, w); v.Verdict != Fail {
			t.Fatalf("JudgeWith(%+v) = %+v; want fail", w, v)
		}
	})
}

// TestPlantedSustainedViolationFound: a violation planted as a rate sustained above the contract
// (not a burst at one instant) in a correct history is always found, and the verdict is fail.
// Admission i is decided somewhere in [start + i·d, start + i·d + J] (J the jitter), so after
// widening by G:
//
//   - sliding-window(L, W), d = ⌊(W − 1 − 2G − J)/L⌋: any L+1 consecutive admissions lie within
//     L·d + J + 2G ≤ W − 1 µs, for every placement;
//   - fixed-window(L, W), d = ⌊(W − 1 − 2G − J)/(L+1)⌋, over two windows and more: a whole
//     aligned window leaves W − 1 − J − 2G µs of starts that keep an admission inside it, which
//     hold at least L+1 multiples of d;
//   - token-bucket(C, r), d < 1/r: n admissions with q·n > q·C + p·((n−1)·d + J + 2G), a rate
//     of 1/d above r held long enough to drain the bucket and beat the refill.
func TestPlantedSustainedViolationFound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genScaledContract(t, "")
		g := c.Granularity.Microseconds()
		maxGap := max(c.Window, c.RefillPer).Microseconds()/3 + 1
		const origin = 1_700_000_000_000_000
		h := genArrivals(t, rapid.IntRange(0, 100).Draw(t, "n"), origin, maxGap)
		h.decide(t, newRefLimiter(c), g)
		log := h.log(t, rapid.SampledFrom([]int64{0, maxGap}).Draw(t, "spread"))

		var d, jitter, n int64
		switch c.Kind {
		case algorithms.SlidingWindow, algorithms.FixedWindow:
			w, l := c.Window.Microseconds(), c.Limit
			room := w - 1 - 2*g
			if room < 0 {
				t.Skip("granularity too coarse for the window")
			}
			jitter = rapid.Int64Range(0, room/2).Draw(t, "jitter")
			if c.Kind == algorithms.SlidingWindow {
				d = (room - jitter) / l
				n = rapid.Int64Range(l+1, 4*(l+1)).Draw(t, "count")
			} else {
				d = (room - jitter) / (l + 1)
				if d > 0 {
					n = (2*w+jitter)/d + 2
				}
			}
		case algorithms.TokenBucket:
			dv := gcd(c.RefillPermits, c.RefillPer.Microseconds())
			p, q := c.RefillPermits/dv, c.RefillPer.Microseconds()/dv
			frac := rapid.SampledFrom([]int64{1, 2, 3}).Draw(t, "quarters")
			d = max(1, frac*q/(4*p))
			if p*d >= q {
				t.Skip("rate of a permit per µs or more: only a burst can exceed it")
			}
			jitter = rapid.Int64Range(0, d).Draw(t, "jitter")
			n = (q*c.Capacity+p*(jitter+2*g-d))/(q-p*d) + 1
			if q*n <= q*c.Capacity+p*((n-1)*d+jitter+2*g) {
				t.Fatalf("planted %d admissions every %d µs do not break %s", n, d, c)
			}
		}
		if d <= 0 {
			t.Skip("no rate fits: the burst test covers it")
		}
		if n > 400 {
			t.Skip("too many admissions to plant")
		}
		start := origin + rapid.Int64Range(0, 100*maxGap).Draw(t, "at")
		sub := uint32(rapid.IntRange(0, 2).Draw(t, "subject"))
		cli := uint16(rapid.IntRange(0, 1).Draw(t, "client"))
		for i := range n {
			a := rapid.Int64Range(0, jitter).Draw(t, fmt.Sprint("a", i))
			b := exactWidth(rapid.Int64Range(0, jitter-a).Draw(t, fmt.Sprint("b", i))) // as in TestPlantedViolationFound
			lo := start + i*d + a
			log.Events = append(log.Events, mustEvent(lo-log.Base, lo+b-log.Base, sub, cli, 1, Admitted))
		}
		rep, err := Check(c, log)
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		if rep.Limits[0].Definite == 0 {
			t.Fatalf("%s: planted violation (%d admissions every %d µs, jitter %d) not found", c, n, d, jitter)
		}
		if v := JudgeWith(rep, Warnings{}); v.Verdict != Fail {
			t.Fatalf("JudgeWith = %+v; want fail", v)
		}
	})
}

// TestPrefixTree checks the segment tree against a plain array.
func TestPrefixTree(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 40).Draw(t, "n")
		vals := rapid.SliceOfN(rapid.Int64Range(-50, 50), n, n).Draw(t, "vals")
		var m prefixTree
		m.reset(vals, rapid.IntRange(0, 64).Draw(t, "reserve"))
		naive := append([]int64(nil), vals...)
		for i := range 30 {
			if rapid.Bool().Draw(t, fmt.Sprint("op", i)) {
				r := rapid.IntRange(0, n).Draw(t, fmt.Sprint("r", i))
				v := rapid.Int64Range(-20, 20).Draw(t, fmt.Sprint("v", i))
				m.add(r, v)
				for j := range r {
					naive[j] += v
				}
				continue
			}
			r := rapid.IntRange(1, n).Draw(t, fmt.Sprint("r", i))
			want := int64(math.MinInt64)
			for j := range r {
				want = max(want, naive[j])
			}
			if got := m.max(r); got != want {
				t.Fatalf("max(%d) = %d; want %d", r, got, want)
			}
		}
	})
}

// TestSortEventsLarge: the radix sort of 2^18 events, deep enough to recurse a few times,
// orders them exactly as the comparison sort does.
func TestSortEventsLarge(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 1))
	ev := make([]Event, 1<<18)
	for i := range ev {
		lo := rng.Int64N(1<<24) - 1<<23
		ev[i] = mustEvent(lo, lo+genWidth(rng), uint32(rng.IntN(1000)), uint16(rng.IntN(64)), 1, genKind(rng))
	}
	for _, sc := range []algorithms.Scope{algorithms.PerSubject, algorithms.PerClient, algorithms.PerConsumer} {
		got, want := slices.Clone(ev), slices.Clone(ev)
		sortEvents(got, sc)
		sortByScope(want, sc)
		checkSameOrder(t, sc, got, want)
	}
}

// genWidth draws an interval width: mostly 0 to 2 µs, sometimes wide enough to be rounded up
// (see Event), so events of one Lo are ordered by a coded Hi.
func genWidth(rng *rand.Rand) int64 {
	if rng.IntN(8) == 0 {
		return rng.Int64N(1 << 42)
	}
	return rng.Int64N(3)
}

// genKind draws any Kind.
func genKind(rng *rand.Rand) Kind { return Kind(rng.IntN(4)) + Admitted }

// checkSameOrder fails t unless got and want hold events of the same scope key, Lo, Hi and Kind
// at every index (the order sortEvents must give; ties in all four may come in any order).
func checkSameOrder(t interface{ Fatalf(string, ...any) }, sc algorithms.Scope, got, want []Event) {
	key := scopeKey(sc)
	for i := range got {
		a, b := &got[i], &want[i]
		if key(a) != key(b) || a.Lo() != b.Lo() || a.Hi() != b.Hi() || a.Kind() != b.Kind() {
			t.Fatalf("scope %d: event %d = %v; want %v", sc, i, *a, *b)
		}
	}
}

// TestSortEvents: the radix sort orders events exactly as the comparison sort does.
func TestSortEvents(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 3000).Draw(t, "n")
		sc := algorithms.Scope(rapid.IntRange(0, 2).Draw(t, "scope"))
		span := rapid.SampledFrom([]int64{1, 100, 1 << 20, 1 << 40}).Draw(t, "span")
		subjects := rapid.SampledFrom([]int{1, 3, 300, 100000}).Draw(t, "subjects")
		clients := rapid.SampledFrom([]int{1, 2, 64, 65535}).Draw(t, "clients")
		seed := rapid.Uint64().Draw(t, "seed")
		rng := rand.New(rand.NewPCG(seed, 1))
		ev := make([]Event, n)
		for i := range ev {
			lo := MinLo + rng.Int64N(span)
			ev[i] = mustEvent(lo, lo+genWidth(rng), uint32(rng.IntN(subjects)), uint16(rng.IntN(clients)), 1, genKind(rng))
		}
		want := append([]Event(nil), ev...)
		sortByScope(want, sc)
		sortEvents(ev, sc)
		checkSameOrder(t, sc, ev, want)
	})
}

// TestCheckMatchesQuadratic: on histories of hundreds of admissions per scope, where intervals
// nest among neighbours and a few hold many others (so the token-bucket sweep places and moves
// its windowed tree, and Hi order comes from insertion sort or, past its budget, a comparison
// sort), the fast checker finds what a polynomial checker with the brute-force definitions finds.
func TestCheckMatchesQuadratic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genContract(t, "")
		if c.Kind == algorithms.FixedWindow {
			c.Kind, c.Window = algorithms.SlidingWindow, c.Window*10
		}
		c.Limit *= 4
		c.Capacity *= 4
		step := rapid.Int64Range(1, 4).Draw(t, "step")
		log := genWideLog(t, 600, step)
		rep, err := Check(c, cloneLog(log))
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		got, want := rep.Limits[0], quadratic(c, log)
		if got.Definite != want.definite || got.Possible != want.possible ||
			got.Worst.Excess != want.worstDef || got.WorstPossible.Excess != want.worstPoss {
			t.Fatalf("%s: Check = definite %d possible %d worst %d/%d; quadratic = definite %d possible %d worst %d/%d",
				c, got.Definite, got.Possible, got.Worst.Excess, got.WorstPossible.Excess,
				want.definite, want.possible, want.worstDef, want.worstPoss)
		}
	})
}

// TestQuadraticMatchesBruteForce: the polynomial checker is itself the brute-force one on small
// histories.
func TestQuadraticMatchesBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genContract(t, "")
		if c.Kind == algorithms.FixedWindow {
			c.Kind = algorithms.SlidingWindow
		}
		log := genLog(t, 12)
		if got, want := quadratic(c, log), brute(c, log, Admitted); got != want {
			t.Fatalf("%s: quadratic = %+v; brute force = %+v", c, got, want)
		}
	})
}

// TestHiOrder: hiOrder sorts the positions of a scope in Lo order by Hi, then Lo, whether the
// intervals nest a little (insertion sort) or deeply (past its budget).
func TestHiOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 3000).Draw(t, "n")
		rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 3))
		width := rapid.SampledFrom([]int64{1, 10, 1000, 1 << 30}).Draw(t, "width")
		g := make([]Event, n)
		for i := range g {
			lo := rng.Int64N(int64(n))
			g[i] = mustEvent(lo, lo+rng.Int64N(width), 0, 0, 1, Admitted)
		}
		slices.SortFunc(g, func(a, b Event) int { return cmpTime(&a, &b) })
		s := sweeper{max: n}
		ord := s.hiOrder(g)
		seen := make([]bool, n)
		for i, j := range ord {
			if seen[j] {
				t.Fatalf("position %d twice in %v", j, ord)
			}
			seen[j] = true
			if i > 0 {
				a, b := &g[ord[i-1]], &g[j]
				if a.Hi() > b.Hi() || (a.Hi() == b.Hi() && a.Lo() > b.Lo()) {
					t.Fatalf("ord[%d] = %d %v after ord[%d] = %d %v", i, j, b, i-1, ord[i-1], a)
				}
			}
		}
		if len(ord) != n {
			t.Fatalf("len(ord) = %d; want %d", len(ord), n)
		}
	})
}

// TestCheckLimitsAlone: each limit of a contract with Also is checked as if it were alone,
// whatever the scopes of the limits before it (the admissions are sorted for one limit and
// reused, or only refined, for the next).
func TestCheckLimitsAlone(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cs := make([]algorithms.Contract, rapid.IntRange(2, 4).Draw(t, "limits"))
		for i := range cs {
			cs[i] = genContract(t, fmt.Sprint(i))
			cs[i].Limit *= 4
			cs[i].Capacity *= 4
		}
		log := genWideLog(t, 800, rapid.Int64Range(1, 3).Draw(t, "step"))
		all := cs[0]
		all.Also = cs[1:]
		rep, err := Check(all, cloneLog(log))
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		for i, c := range cs {
			alone, err := Check(c, cloneLog(log))
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if diff := cmp.Diff(alone.Limits[0], rep.Limits[i]); diff != "" {
				t.Fatalf("limit %d, %s: (-alone +with the others)\n%s", i, c, diff)
			}
		}
	})
}

// TestCheckScopeAtItsAllowance: a scope whose admissions hold the allowance (L, or C for
// token-bucket) plus δ permits in all, δ in {−1, 0, 1}, among other scopes, is checked as the
// brute-force checker does: Check skips the scopes of at most the allowance, and this catches a
// skip that reaches one permit too far. All at one instant, δ = 1 is a definite violation.
func TestCheckScopeAtItsAllowance(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genContract(t, "")
		allow := c.Limit
		if c.Kind == algorithms.TokenBucket {
			allow = c.Capacity
		}
		delta := rapid.Int64Range(-1, 1).Draw(t, "delta")
		log := genLog(t, 4)
		at := rapid.Int64Range(0, 60).Draw(t, "at")
		sub := uint32(rapid.IntRange(0, 1).Draw(t, "subject"))
		cli := uint16(rapid.IntRange(0, 1).Draw(t, "client"))
		// The scope's other admissions are in log already: count them, then fill to allow+δ.
		var have int64
		together := true // every admission of the scope at the instant at
		probe := Event{Subject: sub, Client: cli}
		for _, e := range log.Events {
			if e.Kind() == Admitted && scopeKey(c.Scope)(&e) == scopeKey(c.Scope)(&probe) {
				have += int64(e.Permits)
				together = together && e.Lo() == at && e.Hi() == at
			}
		}
		for have < allow+delta {
			n := min(rapid.Int64Range(1, 3).Draw(t, fmt.Sprint("p", have)), allow+delta-have)
			log.Events = append(log.Events, mustEvent(at, at, sub, cli, uint16(n), Admitted))
			have += n
		}
		rep, err := Check(c, cloneLog(log))
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		got, want := rep.Limits[0], brute(c, log, Admitted)
		if got.Definite != want.definite || got.Possible != want.possible ||
			got.Worst.Excess != want.worstDef || got.WorstPossible.Excess != want.worstPoss {
			t.Fatalf("%s, scope total %d: Check = definite %d possible %d worst %d/%d; brute force = definite %d possible %d worst %d/%d",
				c, have, got.Definite, got.Possible, got.Worst.Excess, got.WorstPossible.Excess,
				want.definite, want.possible, want.worstDef, want.worstPoss)
		}
		if together && have > allow && c.Granularity == 0 && got.Definite == 0 {
			t.Fatalf("%s: %d permits at one instant, allowance %d: no definite violation", c, have, allow)
		}
	})
}
