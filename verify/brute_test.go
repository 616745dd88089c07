package verify

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"pgregory.net/rapid"

	"github.com/limitbench/limitbench/algorithms"
)

// This file holds the test oracles: a brute-force checker that enumerates every subset and every
// window of a small history, an exact point checker for one placement of the times, exact
// reference limiters, and rapid generators.

// bruteResult is what the brute-force checker finds for one limit.
type bruteResult struct {
	definite, possible  int64
	worstDef, worstPoss int64 // largest excess, 0 when none
}

// mustEvent is NewEvent for times a test knows to fit; it panics on an error.
func mustEvent(lo, hi int64, subject uint32, client uint16, permits uint16, k Kind) Event {
	e, err := NewEvent(lo, hi, subject, client, permits, k)
	if err != nil {
		panic(err)
	}
	return e
}

// exactWidth returns the largest width at most w that an Event stores exactly, not rounded up
// (see Event): a test that needs an interval inside a window draws its width through it.
func exactWidth(w int64) int64 {
	for u := 0; ; u++ {
		step := int64(1) << (unitBits * u)
		if w/step <= mantMask {
			return w / step * step
		}
	}
}

// us is a duration of n µs.
func us(n int64) time.Duration { return time.Duration(n) * time.Microsecond }

// bruteScopes groups the events of the given kinds by the scope of c, as strings.
func bruteScopes(c algorithms.Contract, log *Log, kinds ...Kind) map[string][]Event {
	out := map[string][]Event{}
	for _, e := range log.Events {
		ok := false
		for _, k := range kinds {
			ok = ok || e.Kind() == k
		}
		if !ok {
			continue
		}
		var key string
		switch c.Scope {
		case algorithms.PerSubject:
			key = log.Subjects[e.Subject]
		case algorithms.PerClient:
			key = log.Subjects[e.Subject] + "\x00" + log.Clients[e.Client]
		case algorithms.PerConsumer:
			key = log.Clients[e.Client]
		}
		out[key] = append(out[key], e)
	}
	return out
}

// brute checks one contract (Also ignored) by enumeration, with the definitions of the package
// doc written out literally. Scopes must hold at most ~12 events.
func brute(c algorithms.Contract, log *Log, kinds ...Kind) bruteResult {
	var r bruteResult
	g := c.Granularity.Microseconds()
	w := c.Window.Microseconds()
	var p, q int64
	if c.Kind == algorithms.TokenBucket {
		d := gcd(c.RefillPermits, c.RefillPer.Microseconds())
		p, q = c.RefillPermits/d, c.RefillPer.Microseconds()/d
	}
	for _, evs := range bruteScopes(c, log, kinds...) {
		los, his, ps := make([]int64, len(evs)), make([]int64, len(evs)), make([]int64, len(evs))
		for i, e := range evs {
			los[i], his[i], ps[i] = log.Base+e.Lo()-g, log.Base+e.Hi()+g, int64(e.Permits)
		}
		if c.Kind == algorithms.FixedWindow {
			minK, maxK := int64(1<<62), int64(-1<<62)
			for i := range evs {
				minK, maxK = min(minK, floorDiv(los[i], w)), max(maxK, floorDiv(his[i], w))
			}
			for k := minK; k <= maxK; k++ {
				var inside, meets int64
				for i := range evs {
					kl, kh := floorDiv(los[i], w), floorDiv(his[i], w)
					if kl == k && kh == k {
						inside += ps[i]
					}
					if kl <= k && k <= kh {
						meets += ps[i]
					}
				}
				if inside > c.Limit {
					r.definite++
					r.worstDef = max(r.worstDef, inside-c.Limit)
				}
				if meets > c.Limit {
					r.possible++
					r.worstPoss = max(r.worstPoss, meets-c.Limit)
				}
			}
			continue
		}
		defEnds, posEnds := map[int64]bool{}, map[int64]bool{}
		for mask := 1; mask < 1<<len(evs); mask++ {
			var sum int64
			single := mask&(mask-1) == 0
			minLo, maxLo, minHi, maxHi := int64(1<<62), int64(-1<<62), int64(1<<62), int64(-1<<62)
			for i := range evs {
				if mask&(1<<i) == 0 {
					continue
				}
				sum += ps[i]
				minLo, maxLo = min(minLo, los[i]), max(maxLo, los[i])
				minHi, maxHi = min(minHi, his[i]), max(maxHi, his[i])
			}
			switch c.Kind {
			case algorithms.SlidingWindow:
				// (i): more than K·L within less than K·W; (ii): one admission of more than L.
				k := slidingK(c)
				if sum > k*c.Limit && maxHi-minLo < k*w {
					defEnds[maxHi] = true
					r.worstDef = max(r.worstDef, sum-k*c.Limit)
				}
				if single && sum > c.Limit {
					defEnds[maxHi] = true
					r.worstDef = max(r.worstDef, sum-c.Limit)
				}
				if sum > c.Limit && maxLo-minHi < w {
					posEnds[maxLo] = true
					r.worstPoss = max(r.worstPoss, sum-c.Limit)
				}
			case algorithms.TokenBucket:
				if span := maxHi - minLo; q*sum > q*c.Capacity+p*span {
					defEnds[maxHi] = true
					r.worstDef = max(r.worstDef, sum-c.Capacity-p*span/q)
				}
				if span := max(0, maxLo-minHi); q*sum > q*c.Capacity+p*span {
					posEnds[maxLo] = true
					r.worstPoss = max(r.worstPoss, sum-c.Capacity-p*span/q)
				}
			}
		}
		r.definite += int64(len(defEnds))
		r.possible += int64(len(posEnds))
	}
	return r
}

// bruteHide is the brute-force UnknownExcess of c (Also ignored): the largest excess of a
// definite violation by a set of admissions and unknown outcomes, at least one of them unknown,
// the unknowns decided at any instants from their Lo on. It places the unknowns of a set at one
// instant x (moving each to the latest of them keeps a set inside a window and does not widen
// its span) and tries every x from the largest of their Lo to past every window that matters.
// Scopes must hold at most ~12 events.
func bruteHide(c algorithms.Contract, log *Log) int64 {
	var best int64
	g := c.Granularity.Microseconds()
	w := c.Window.Microseconds()
	var p, q int64
	if c.Kind == algorithms.TokenBucket {
		d := gcd(c.RefillPermits, c.RefillPer.Microseconds())
		p, q = c.RefillPermits/d, c.RefillPer.Microseconds()/d
	}
	for _, evs := range bruteScopes(c, log, Admitted, Unknown) {
		maxT := int64(-1 << 62)
		for _, e := range evs {
			maxT = max(maxT, log.Base+e.Hi())
		}
		for mask := 1; mask < 1<<len(evs); mask++ {
			var known, unknown int64
			minLo, maxHi, xMin := int64(1<<62), int64(-1<<62), int64(-1<<62)
			for i, e := range evs {
				if mask&(1<<i) == 0 {
					continue
				}
				if e.Kind() == Unknown {
					unknown += int64(e.Permits)
					xMin = max(xMin, log.Base+e.Lo())
					continue
				}
				known += int64(e.Permits)
				minLo, maxHi = min(minLo, log.Base+e.Lo()-g), max(maxHi, log.Base+e.Hi()+g)
			}
			if unknown == 0 {
				continue
			}
			sum := known + unknown
			for x := xMin; x <= max(xMin, maxT)+w+2*g+1; x++ {
				lo, hi := min(minLo, x-g), max(maxHi, x+g)
				switch c.Kind {
				case algorithms.SlidingWindow:
					if k := slidingK(c); hi-lo < k*w {
						best = max(best, sum-k*c.Limit)
					}
					if mask&(mask-1) == 0 {
						best = max(best, sum-c.Limit) // (ii): the unknown outcome alone
					}
				case algorithms.FixedWindow:
					if floorDiv(lo, w) == floorDiv(hi, w) {
						best = max(best, sum-c.Limit)
					}
				case algorithms.TokenBucket:
					if q*sum > q*c.Capacity+p*(hi-lo) {
						best = max(best, sum-c.Capacity-p*(hi-lo)/q)
					}
				}
			}
		}
	}
	return best
}

// slidingK returns K = ⌊2G/W⌋ + 1 for sliding-window contract c, as the package doc defines it.
func slidingK(c algorithms.Contract) int64 {
	return 2*c.Granularity.Microseconds()/c.Window.Microseconds() + 1
}

// pointViolates reports whether admissions at the given instants (µs, the algorithm's clock)
// break contract c (Also ignored), by checking every window that matters.
func pointViolates(c algorithms.Contract, ts, ps []int64) bool {
	idx := make([]int, len(ts))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return ts[idx[a]] < ts[idx[b]] })
	w := c.Window.Microseconds()
	switch c.Kind {
	case algorithms.SlidingWindow:
		for _, end := range idx {
			var sum int64
			for i := range ts {
				if ts[i] > ts[end]-w && ts[i] <= ts[end] {
					sum += ps[i]
				}
			}
			if sum > c.Limit {
				return true
			}
		}
	case algorithms.FixedWindow:
		sums := map[int64]int64{}
		for i := range ts {
			k := floorDiv(ts[i], w)
			sums[k] += ps[i]
			if sums[k] > c.Limit {
				return true
			}
		}
	case algorithms.TokenBucket:
		per := c.RefillPer.Microseconds()
		for _, a := range idx {
			for _, b := range idx {
				if ts[b] < ts[a] {
					continue
				}
				var sum int64
				for i := range ts {
					if ts[i] >= ts[a] && ts[i] <= ts[b] {
						sum += ps[i]
					}
				}
				if sum*per > c.Capacity*per+c.RefillPermits*(ts[b]-ts[a]) {
					return true
				}
			}
		}
	}
	return false
}

// refLimiter is an exact reference limiter for one contract (Also included, all or nothing),
// written for the tests: a log of the admissions in the window (sliding-window), a counter per
// aligned window (fixed-window), or a bucket of tokens counted in 1/RefillPer µs units that starts
// full (token-bucket). It implements algorithms.Model.
type refLimiter struct {
	cs    []algorithms.Contract
	state []map[string]*refState
}

type refState struct {
	ts, ps       []int64 // sliding: admissions in the window
	k, sum       int64   // fixed: window index and permits in it
	tokens, last int64
	started      bool
}

func newRefLimiter(c algorithms.Contract) *refLimiter {
	r := &refLimiter{cs: append([]algorithms.Contract{c}, c.Also...)}
	for range r.cs {
		r.state = append(r.state, map[string]*refState{})
	}
	return r
}

func refKey(c algorithms.Contract, subject, client string) string {
	switch c.Scope {
	case algorithms.PerClient:
		return subject + "\x00" + client
	case algorithms.PerConsumer:
		return client
	}
	return subject
}

// Decide implements algorithms.Model: t must not decrease.
func (r *refLimiter) Decide(subject, client string, cost, t int64) bool {
	sts := make([]*refState, len(r.cs))
	ok := true
	for i, c := range r.cs {
		k := refKey(c, subject, client)
		st := r.state[i][k]
		if st == nil {
			st = &refState{}
			r.state[i][k] = st
		}
		sts[i] = st
		switch c.Kind {
		case algorithms.SlidingWindow:
			w := c.Window.Microseconds()
			var ts, ps []int64
			var sum int64
			for j := range st.ts {
				if st.ts[j] > t-w {
					ts, ps = append(ts, st.ts[j]), append(ps, st.ps[j])
					sum += st.ps[j]
				}
			}
			st.ts, st.ps = ts, ps
			ok = ok && sum+cost <= c.Limit
		case algorithms.FixedWindow:
			if k := floorDiv(t, c.Window.Microseconds()); !st.started || k != st.k {
				st.k, st.sum, st.started = k, 0, true
			}
			ok = ok && st.sum+cost <= c.Limit
		case algorithms.TokenBucket:
			per := c.RefillPer.Microseconds()
			full := c.Capacity * per
			if !st.started {
				st.tokens, st.started = full, true
			} else {
				st.tokens = min(full, st.tokens+c.RefillPermits*(t-st.last))
			}
			st.last = t
			ok = ok && st.tokens >= cost*per
		}
	}
	if !ok {
		return false
	}
	for i, c := range r.cs {
		st := sts[i]
		switch c.Kind {
		case algorithms.SlidingWindow:
			st.ts, st.ps = append(st.ts, t), append(st.ps, cost)
		case algorithms.FixedWindow:
			st.sum += cost
		case algorithms.TokenBucket:
			st.tokens -= cost * c.RefillPer.Microseconds()
		}
	}
	return true
}

// genContract draws a small contract with times of a few µs.
func genContract(t *rapid.T, label string) algorithms.Contract {
	c := algorithms.Contract{
		Kind:        rapid.SampledFrom([]algorithms.ContractKind{algorithms.SlidingWindow, algorithms.FixedWindow, algorithms.TokenBucket}).Draw(t, label+"kind"),
		Granularity: us(rapid.Int64Range(0, 2).Draw(t, label+"granularity")),
		Scope:       algorithms.Scope(rapid.IntRange(0, 2).Draw(t, label+"scope")),
	}
	switch c.Kind {
	case algorithms.TokenBucket:
		c.Capacity = rapid.Int64Range(1, 5).Draw(t, label+"capacity")
		c.RefillPermits = rapid.Int64Range(1, 4).Draw(t, label+"refill")
		c.RefillPer = us(rapid.Int64Range(1, 12).Draw(t, label+"per"))
	default:
		c.Limit = rapid.Int64Range(1, 5).Draw(t, label+"limit")
		c.Window = us(rapid.Int64Range(1, 20).Draw(t, label+"window"))
	}
	return c
}

// genBase draws a Log.Base: 0, or one that is no multiple of the small windows (so fixed-window's
// windows, aligned on the Unix epoch, do not start at relative multiples of W), or a real date.
func genBase(t *rapid.T) int64 {
	return rapid.SampledFrom([]int64{0, 0, -7, 13, 1_700_000_000_000_003}).Draw(t, "base")
}

// genLog draws a small log: at most n events over about 60 µs, with some point intervals.
func genLog(t *rapid.T, n int) *Log {
	log := &Log{Subjects: []string{"a", "b"}, Clients: []string{"x", "y"}, Base: genBase(t)}
	count := rapid.IntRange(0, n).Draw(t, "events")
	for i := range count {
		lo := rapid.Int64Range(0, 60).Draw(t, fmt.Sprintf("lo%d", i))
		width := rapid.SampledFrom([]int64{0, 0, 1, 2, 5, 12}).Draw(t, fmt.Sprintf("width%d", i))
		log.Events = append(log.Events, mustEvent(lo, lo+width,
			uint32(rapid.IntRange(0, 1).Draw(t, fmt.Sprintf("subject%d", i))),
			uint16(rapid.IntRange(0, 1).Draw(t, fmt.Sprintf("client%d", i))),
			uint16(rapid.IntRange(1, 3).Draw(t, fmt.Sprintf("permits%d", i))),
			rapid.SampledFrom([]Kind{Admitted, Admitted, Admitted, Unknown, Denied, Failed}).Draw(t, fmt.Sprintf("kind%d", i))))
	}
	return log
}

// cloneLog returns a copy of log with its own events (names shared).
func cloneLog(log *Log) *Log {
	c := *log
	c.Events = append([]Event(nil), log.Events...)
	return &c
}

// quadratic checks one sliding-window or token-bucket contract (Also ignored) as brute does, in
// polynomial time, for scopes of hundreds of admissions: a set violates definitely or possibly
// only if the largest set with the same earliest lo and latest hi (definite: {lo ≥ A, hi ≤ B}),
// or the same latest lo and earliest hi (possible: {lo ≤ B, hi ≥ A}), does too, with the same
// end, so it tries each such set, for every pair (A, B) of times of the scope's admissions.
func quadratic(c algorithms.Contract, log *Log) bruteResult {
	var r bruteResult
	g := c.Granularity.Microseconds()
	w := c.Window.Microseconds()
	var p, q int64
	if c.Kind == algorithms.TokenBucket {
		d := gcd(c.RefillPermits, c.RefillPer.Microseconds())
		p, q = c.RefillPermits/d, c.RefillPer.Microseconds()/d
	}
	// excess returns the excess of permits over a set of the given span (-1 when none), for a
	// definite violation (sliding-window's condition (i): K·L within K·W) or a possible one.
	excess := func(permits, span int64, definite bool) int64 {
		switch c.Kind {
		case algorithms.SlidingWindow:
			k := int64(1)
			if definite {
				k = slidingK(c)
			}
			if permits > k*c.Limit && span < k*w {
				return permits - k*c.Limit
			}
		case algorithms.TokenBucket:
			span = max(0, span)
			if q*permits > q*c.Capacity+p*span {
				return permits - c.Capacity - p*span/q
			}
		}
		return -1
	}
	for _, evs := range bruteScopes(c, log, Admitted) {
		type iv struct{ lo, hi, p int64 }
		ivs := make([]iv, len(evs))
		for i, e := range evs {
			ivs[i] = iv{e.Lo() - g, e.Hi() + g, int64(e.Permits)}
		}
		defEnds, posEnds := map[int64]bool{}, map[int64]bool{}
		if c.Kind == algorithms.SlidingWindow {
			// Condition (ii): one admission of more than L.
			for _, x := range ivs {
				if x.p > c.Limit {
					defEnds[x.hi] = true
					r.worstDef = max(r.worstDef, x.p-c.Limit)
				}
			}
		}
		// Definite: for each B, {lo ≥ A, hi ≤ B} by descending lo.
		byLo := slices.Clone(ivs)
		slices.SortFunc(byLo, func(a, b iv) int { return cmp.Compare(b.lo, a.lo) })
		for _, end := range ivs {
			b := end.hi
			var sum int64
			minLo, maxHi := int64(math.MaxInt64), int64(math.MinInt64)
			for i, x := range byLo {
				if x.hi <= b {
					sum += x.p
					minLo, maxHi = x.lo, max(maxHi, x.hi)
				}
				if sum == 0 || (i+1 < len(byLo) && byLo[i+1].lo == x.lo) {
					continue // not yet the whole set {lo ≥ x.lo, hi ≤ b}
				}
				if ex := excess(sum, maxHi-minLo, true); ex >= 0 {
					defEnds[maxHi] = true
					r.worstDef = max(r.worstDef, ex)
				}
			}
		}
		// Possible: for each B, {lo ≤ B, hi ≥ A} by descending hi.
		byHi := slices.Clone(ivs)
		slices.SortFunc(byHi, func(a, b iv) int { return cmp.Compare(b.hi, a.hi) })
		for _, end := range ivs {
			b := end.lo
			var sum int64
			maxLo, minHi := int64(math.MinInt64), int64(math.MaxInt64)
			for i, x := range byHi {
				if x.lo <= b {
					sum += x.p
					maxLo, minHi = max(maxLo, x.lo), x.hi
				}
				if sum == 0 || (i+1 < len(byHi) && byHi[i+1].hi == x.hi) {
					continue // not yet the whole set {lo ≤ b, hi ≥ x.hi}
				}
				if ex := excess(sum, maxLo-minHi, false); ex >= 0 {
					posEnds[maxLo] = true
					r.worstPoss = max(r.worstPoss, ex)
				}
			}
		}
		r.definite += int64(len(defEnds))
		r.possible += int64(len(posEnds))
	}
	return r
}

// genWideLog draws a log of up to n events of one or two scopes spread over about n·step µs,
// whose intervals are points, a few steps wide (nesting among neighbours) or, rarely, wide
// enough to hold many others, with some unknown outcomes and denials.
func genWideLog(t *rapid.T, n int, step int64) *Log {
	log := &Log{Subjects: []string{"a", "b"}, Clients: []string{"x", "y"}, Base: genBase(t)}
	count := rapid.IntRange(0, n).Draw(t, "events")
	subjects := rapid.IntRange(1, 2).Draw(t, "subjects")
	rare := rapid.IntRange(0, 20).Draw(t, "rare")
	// Times on a grid of grain µs: coarse grains make many equal Lo and Hi values.
	grain := rapid.SampledFrom([]int64{1, 1, 2, 3 * step}).Draw(t, "grain")
	for i := range count {
		lo := int64(i)*step + rapid.Int64Range(0, step).Draw(t, fmt.Sprintf("lo%d", i))
		var width int64
		switch k := rapid.IntRange(0, 20).Draw(t, fmt.Sprintf("shape%d", i)); {
		case k < rare/2:
			width = rapid.Int64Range(0, 200*step).Draw(t, fmt.Sprintf("wide%d", i))
		case k < 10:
			width = rapid.Int64Range(0, 8*step).Draw(t, fmt.Sprintf("width%d", i))
		}
		lo, hi := lo/grain*grain, (lo+width)/grain*grain
		log.Events = append(log.Events, mustEvent(lo, hi,
			uint32(rapid.IntRange(0, subjects-1).Draw(t, fmt.Sprintf("subject%d", i))),
			uint16(rapid.IntRange(0, 1).Draw(t, fmt.Sprintf("client%d", i))),
			uint16(rapid.IntRange(1, 3).Draw(t, fmt.Sprintf("permits%d", i))),
			rapid.SampledFrom([]Kind{Admitted, Admitted, Admitted, Admitted, Unknown, Denied}).Draw(t, fmt.Sprintf("kind%d", i))))
	}
	// Any order: Check sorts.
	perm := rapid.Permutation(log.Events).Draw(t, "order")
	log.Events = perm
	return log
}
