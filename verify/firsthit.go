package verify

import (
	"cmp"
	"math"
	"slices"

	"github.com/limitbench/limitbench/algorithms"
)

// This file checks first-hit-window(L, W) as the package doc defines it: conditions (a), (b)
// and (c) for definite violations, the chain of windows (c) rests on, the possible violations
// within the chain's windows, and what unknown outcomes could hide. Times are relative to the
// log's Base and widened by G: lo = Lo − G, hi = Hi + G, and an unknown outcome's hi is +∞.

const (
	posInf = math.MaxInt64
	negInf = math.MinInt64
)

// fhCond says which condition of the package doc found a definite violation.
type fhCond uint8

const (
	fhInstant fhCond = 1 << iota // (a): admissions at one exact instant
	fhCount                      // (b): more than 2L + L·span/W
	fhChain                      // (c): forced into one window of the chain
	fhSplit                      // (d): more than N·L in at most N windows of the chain

	// fhChained are the conditions that rest on the chain, so on the log holding every
	// request that reached the limiter (LimitReport.Chained).
	fhChained = fhChain | fhSplit
)

// fhWindow is one window of the chain: in every world its start s satisfies s > u − 1 (so
// s ≥ u for an integer s) and s ≤ v (v == posInf: no bound); e is the lo from which a request
// is at or after the end of the window before (negInf for the first).
type fhWindow struct{ u, v, e int64 }

// fhEnd is one end b of a definitely violating set, found by cond; a is the least lo of the
// set found by (a) or (c).
type fhEnd struct {
	b, excess, a int64
	cond         fhCond
}

// fhAtEnd gathers the ends found at one b, given in fhEnd.cmp order: the conditions that found
// one, the first end of the largest excess (best), and the same among those of (a) and (b).
type fhAtEnd struct {
	conds      fhCond
	best, free fhEnd
}

func newFhAtEnd() fhAtEnd { return fhAtEnd{best: fhEnd{excess: -1}, free: fhEnd{excess: -1}} }

// add takes the next end and reports whether it is now best, and free.
func (e *fhAtEnd) add(x fhEnd) (best, free bool) {
	e.conds |= x.cond
	if x.excess > e.best.excess {
		e.best, best = x, true
	}
	if x.cond&fhChained == 0 && x.excess > e.free.excess {
		e.free, free = x, true
	}
	return best, free
}

// chained reports whether only (c) or (d) found the end.
func (e *fhAtEnd) chained() bool { return e.conds&^fhChained == 0 }

// cmp orders ends by b, then condition, then a: of the sets that end at one b with the same
// excess, the worst described is the first so ordered.
func (x fhEnd) cmp(y fhEnd) int {
	if c := cmp.Compare(x.b, y.b); c != 0 {
		return c
	}
	if c := cmp.Compare(x.cond, y.cond); c != 0 {
		return c
	}
	return cmp.Compare(x.a, y.a)
}

// fhWorst remembers the set with the largest excess, to describe it afterwards.
type fhWorst struct {
	excess int64
	cond   fhCond
	group  []Event   // the scope's admissions
	b, a   int64     // the end; the least lo of a set of (c), or the start s of a possible one
	cover  fhWindows // the scope's windows, for a set of (d)
}

// fhScope is one scope's events: admissions, unknown outcomes, and denied or failed requests,
// each in Lo then Hi order.
type fhScope struct {
	adm, unknown, rest []Event
}

// firstHit checks one first-hit-window limit. adm, unknown and rest are the log's admissions,
// unknown outcomes and other events, as Check partitions them; it sorts each by scope, Lo and Hi.
func (s *sweeper) firstHit(lim limit, adm, unknown, rest []Event) LimitReport {
	rep := LimitReport{Contract: lim.c}
	s.lim, s.rep = lim, &rep
	if !(s.sortedOK && s.sorted == lim.scope) {
		s.sort.sort(adm, lim.scope)
		s.sorted, s.sortedOK = lim.scope, true
	}
	s.sort.sort(unknown, lim.scope)
	s.sort.sort(rest, lim.scope)
	from := int64(negInf)
	if s.log.From != 0 {
		from = s.log.From - s.base
	}
	// s.max grows with the scopes swept (the buffers sized by it grow a few times at most).
	s.definite, s.max = 0, 0
	var worst, worstFree, worstP fhWorst
	s.fhEach(adm, unknown, rest, func(sc fhScope) {
		if len(sc.adm) > 0 {
			rep.Scopes++
		}
		if sumPermits(sc.adm) <= lim.l {
			return // no set of its admissions exceeds L, nor 2L + L·span/W
		}
		s.group = sc.adm
		s.max = max(s.max, len(sc.adm))
		var ord []uint32
		for i := 1; i < len(sc.adm); i++ {
			if sc.adm[i].Hi() < sc.adm[i-1].Hi() {
				ord = s.hiOrder(sc.adm)
				break
			}
		}
		chain := s.fhChain(sc)
		starts := s.fhStarts(sc, chain)
		cover := s.fhWindowsOf(starts, maxHi(sc.adm)+lim.g)
		ends := s.fhEnds(sc.adm, ord, starts, &cover, from)
		s.fhRecord(&rep, sc.adm, ends, from, &cover, &worst, &worstFree)
		s.fhPossible(&rep, sc.adm, ord, starts, from, &worstP)
	})
	rep.Definite = s.definite
	if worst.excess > 0 {
		rep.Worst = s.fhDescribe(worst)
	}
	if worstFree.excess > 0 {
		rep.WorstUnchained = s.fhDescribe(worstFree)
	}
	if worstP.excess > 0 {
		rep.WorstPossible = s.fhDescribe(worstP)
	}
	if rep.Definite == 0 && len(unknown) > 0 {
		rep.UnknownExcess = s.fhHide(adm, unknown, rest)
		rep.UnknownCouldHide = rep.UnknownExcess > 0
	}
	s.rep, s.group, s.lim = nil, nil, lim
	return rep
}

// sumPermits returns the permits of g.
func sumPermits(g []Event) int64 {
	var n int64
	for i := range g {
		n += int64(g[i].Permits)
	}
	return n
}

// fhEach calls f with each scope of the three sorted slices, in scope order.
func (s *sweeper) fhEach(adm, unknown, rest []Event, f func(sc fhScope)) {
	key := scopeKey(s.lim.scope)
	a, u, r := 0, 0, 0
	run := func(ev []Event, i int, k uint64) int {
		j := i
		for j < len(ev) && key(&ev[j]) == k {
			j++
		}
		return j
	}
	for a < len(adm) || u < len(unknown) || r < len(rest) {
		k := uint64(math.MaxUint64)
		if a < len(adm) {
			k = min(k, key(&adm[a]))
		}
		if u < len(unknown) {
			k = min(k, key(&unknown[u]))
		}
		if r < len(rest) {
			k = min(k, key(&rest[r]))
		}
		a2, u2, r2 := run(adm, a, k), run(unknown, u, k), run(rest, r, k)
		f(fhScope{adm: adm[a:a2], unknown: unknown[u:u2], rest: rest[r:r2]})
		a, u, r = a2, u2, r2
	}
}

// fhChain returns the chain of windows of one scope (package doc, condition (c)):
//
//	u_1 = m (Log.Fresh) or m − W + 1, v_1 = min hi over sure requests, e_1 = −∞;
//	e_{k+1} = v_k + W, v_{k+1} = min{hi : sure, lo ≥ e_{k+1}},
//	u_{k+1} = max(u_k + W, min{lo : any request, hi ≥ u_k + W}),
//
// m the least lo of the scope, sure requests the admitted and denied ones; it stops after a
// window whose v is +∞.
func (s *sweeper) fhChain(sc fhScope) []fhWindow {
	G, W := s.lim.g, s.lim.w
	groups := [3][]Event{sc.adm, sc.unknown, sc.rest}
	m := int64(posInf)
	for _, g := range groups {
		if len(g) > 0 {
			m = min(m, g[0].Lo()-G)
		}
	}
	// hi returns e's widened hi: +∞ for an unknown outcome.
	hi := func(e *Event) int64 {
		if e.Kind() == Unknown {
			return posInf
		}
		return e.Hi() + G
	}
	sure := func(e *Event) bool { return e.Kind() == Admitted || e.Kind() == Denied }
	// minHiFrom returns min hi over sure requests with lo ≥ e; e never decreases. p[g] is the
	// first position of group g (admissions, then denied or failed requests) with lo ≥ e. From
	// there the groups are read merged in Lo order while lo < the best so far (a request of
	// lo ≥ best has hi ≥ best): [e, result), which the next e = result + W passes.
	var p, q [3]int
	minHiFrom := func(e int64) int64 {
		g := [2][]Event{sc.adm, sc.rest}
		var j [2]int
		for gi := range g {
			for p[gi] < len(g[gi]) && g[gi][p[gi]].Lo()-G < e {
				p[gi]++
			}
			j[gi] = p[gi]
		}
		best := int64(posInf)
		for {
			gi := -1
			for k := range g {
				if j[k] < len(g[k]) && g[k][j[k]].Lo()-G < best && (gi < 0 || g[k][j[k]].Lo() < g[gi][j[gi]].Lo()) {
					gi = k
				}
			}
			if gi < 0 {
				return best
			}
			if x := &g[gi][j[gi]]; sure(x) {
				best = min(best, hi(x))
			}
			j[gi]++
		}
	}
	// minLoFrom returns min lo over every request with hi ≥ t; t never decreases. q[g] is the
	// first position of group g, in Lo order, whose hi ≥ t: the least lo of the group's
	// requests with hi ≥ t, and a request passed has hi below every later t too.
	minLoFrom := func(t int64) int64 {
		best := int64(posInf)
		for gi, g := range groups {
			i := &q[gi]
			for *i < len(g) && hi(&g[*i]) < t {
				*i++
			}
			if *i < len(g) {
				best = min(best, g[*i].Lo()-G)
			}
		}
		return best
	}
	u := m - W + 1
	if s.log.Fresh {
		u = m
	}
	w := fhWindow{u: u, v: minHiFrom(negInf), e: negInf}
	chain := append(s.fhChainBuf[:0], w)
	for w.v != posInf {
		t := w.u + W
		nu := minLoFrom(t)
		if nu == posInf {
			break // no request can be placed at or after the window's end
		}
		ne := w.v + W
		w = fhWindow{u: max(t, nu), v: minHiFrom(ne), e: ne}
		chain = append(chain, w)
	}
	s.fhChainBuf = chain
	return chain
}

// ival is an interval [lo, hi] of integer µs; hi may be posInf.
type ival struct{ lo, hi int64 }

// fhStarts returns P̂ of one scope (package doc) as disjoint intervals in order: the union of
// the chain's ranges [u_k, v_k] intersected with the union of every request's interval,
// joined with the first range whole when the log is not fresh (the first window may have begun
// before the log, at no request of it).
func (s *sweeper) fhStarts(sc fhScope, chain []fhWindow) []ival {
	G := s.lim.g
	// The requests' union, the three groups merged in Lo order.
	req := s.fhReqBuf[:0]
	groups := [3][]Event{sc.adm, sc.unknown, sc.rest}
	var at [3]int
	for {
		gi := -1
		for k := range groups {
			if at[k] < len(groups[k]) && (gi < 0 || groups[k][at[k]].Lo() < groups[gi][at[gi]].Lo()) {
				gi = k
			}
		}
		if gi < 0 {
			break
		}
		e := &groups[gi][at[gi]]
		at[gi]++
		x := ival{e.Lo() - G, e.Hi() + G}
		if e.Kind() == Unknown {
			x.hi = posInf
		}
		if n := len(req); n > 0 && x.lo-1 <= req[n-1].hi { // hi may be posInf
			req[n-1].hi = max(req[n-1].hi, x.hi)
			continue
		}
		req = append(req, x)
	}
	s.fhReqBuf = req
	// The chain's ranges (u and v both increase), intersected with req.
	out := s.fhStartBuf[:0]
	add := func(x ival) {
		if n := len(out); n > 0 && x.lo-1 <= out[n-1].hi {
			out[n-1].hi = max(out[n-1].hi, x.hi)
			return
		}
		out = append(out, x)
	}
	if !s.log.Fresh {
		add(ival{chain[0].u, chain[0].v})
	}
	j := 0
	for _, w := range chain {
		for j < len(req) && req[j].hi < w.u {
			j++
		}
		for k := j; k < len(req) && req[k].lo <= w.v; k++ {
			add(ival{max(w.u, req[k].lo), min(w.v, req[k].hi)})
		}
	}
	s.fhStartBuf = out
	return out
}

// fhEnds returns the ends of the definitely violating sets of one scope's admissions g (ord its
// Hi order), by conditions (a), (b), (c) and (d), sorted by end. starts is P̂, cover the
// chain's windows refined to it.
func (s *sweeper) fhEnds(g []Event, ord []uint32, starts []ival, cover *fhWindows, from int64) []fhEnd {
	G, W, L := s.lim.g, s.lim.w, s.lim.l
	ends := s.fhEndBuf[:0]
	// (a) One admission of more than L permits, wherever it lies, or admissions at one exact
	// instant (only without granularity). In Lo then Hi order, the exact ones of a Lo come
	// first.
	for i := 0; i < len(g); {
		t := g[i].Lo()
		var sum int64
		for ; i < len(g) && g[i].Lo() == t; i++ {
			if p := int64(g[i].Permits); p > L {
				ends = append(ends, fhEnd{b: g[i].Hi() + G, excess: p - L, a: g[i].Lo() - G, cond: fhInstant})
			}
			if G == 0 && g[i].width() == 0 {
				sum += int64(g[i].Permits)
			}
		}
		if sum > L {
			ends = append(ends, fhEnd{b: t, excess: sum - L, a: t, cond: fhInstant})
		}
	}
	// (b) The token-bucket sweep with C = 2L and r = L/W, collecting its ends.
	lim := s.lim
	s.lim = lim.bucket()
	s.ends, s.collecting = ends, true
	s.bucketDefinite(g, ord)
	ends = s.ends
	s.ends, s.collecting, s.lim = nil, false, lim
	// (c) For each distinct hi b, S(b) = {lo ≥ a, hi ≤ b} with a = y + W, y the latest point of
	// P̂ at or before b − W (a = −∞ when there is none): admissions enter in Hi order and
	// leave in Lo order as a grows (two bits per admission: entered, gone before entering).
	n := len(g)
	words := (n + 63) / 64
	bits := slices.Grow(s.fhBits[:0], 2*words)[:2*words]
	clear(bits)
	s.fhBits = bits
	entered, gone := bits[:words], bits[words:]
	var sum int64
	p, leave := 0, 0
	for i := 0; i < n; {
		b := g[at(ord, i)].Hi() + G
		top := int64(negInf) // the largest lo among the admissions of hi b
		for ; i < n; i++ {
			j := at(ord, i)
			if g[j].Hi()+G != b {
				break
			}
			top = max(top, g[j].Lo()-G)
			if gone[j>>6]&(1<<(j&63)) == 0 {
				sum += int64(g[j].Permits)
				entered[j>>6] |= 1 << (j & 63)
			}
		}
		t := b - W
		for p+1 < len(starts) && starts[p+1].lo <= t {
			p++
		}
		a := int64(negInf)
		if p < len(starts) && starts[p].lo <= t {
			a = min(starts[p].hi, t) + W
		}
		for ; leave < n && g[leave].Lo()-G < a; leave++ {
			if entered[leave>>6]&(1<<(leave&63)) != 0 {
				sum -= int64(g[leave].Permits)
			}
			gone[leave>>6] |= 1 << (leave & 63)
		}
		if sum > L && top >= a {
			ends = append(ends, fhEnd{b: b, excess: sum - L, a: a, cond: fhChain})
		}
	}
	ends = s.fhSplits(g, ord, cover, from, ends)
	slices.SortFunc(ends, fhEnd.cmp)
	s.fhEndBuf = ends
	return ends
}

// bucket returns the token bucket of condition (b): C = 2L, r = L/W per µs, reduced.
func (lim limit) bucket() limit {
	d := gcd(lim.l, lim.w)
	return limit{c: lim.c, kind: algorithms.TokenBucket, scope: lim.scope, cap: 2 * lim.l, p: lim.l / d, q: lim.w / d, g: lim.g}
}

// fhRecord counts the distinct ends at or after from, lists them as violations, and keeps the
// worst set (worst) and the worst found by (a) or (b) (free).
func (s *sweeper) fhRecord(rep *LimitReport, g []Event, ends []fhEnd, from int64, cover *fhWindows, worst, free *fhWorst) {
	for i := 0; i < len(ends); {
		b := ends[i].b
		at := newFhAtEnd()
		for ; i < len(ends) && ends[i].b == b; i++ {
			at.add(ends[i])
		}
		best, bestFree := at.best, at.free
		if b < from {
			continue
		}
		s.definite++
		if at.chained() {
			rep.Chained++
		}
		if best.excess > worst.excess {
			*worst = fhWorst{excess: best.excess, cond: best.cond, group: g, b: b, a: best.a}
			if best.cond == fhSplit {
				worst.a = from
				worst.cover = fhWindows{start: slices.Clone(cover.start), last: slices.Clone(cover.last), w: cover.w}
			}
		}
		if bestFree.excess > free.excess {
			*free = fhWorst{excess: bestFree.excess, cond: bestFree.cond, group: g, b: b, a: bestFree.a}
		}
		if len(rep.Violations) >= MaxViolations {
			rep.ViolationsDropped++
			continue
		}
		sub, cli := s.names(&g[0])
		rep.Violations = append(rep.Violations, Violation{Subject: sub, Client: cli, At: s.base + b, Excess: best.excess})
	}
}

// fhPossible counts the possible violations of one scope's admissions g (ord its Hi order): for
// each distinct lo b at or after from, with s* the least point of P̂ (starts) at or after
// b − W + 1, the admissions T = {lo ≤ b, hi ≥ s*} can all lie in [s*, s*+W); the set violates
// when P(T) > L and T holds an admission of lo b. s* never decreases as b grows, so T is kept
// with two pointers: entries in Lo order, exits in Hi order (a bit per admission marks those
// gone before they entered).
func (s *sweeper) fhPossible(rep *LimitReport, g []Event, ord []uint32, starts []ival, from int64, worst *fhWorst) {
	G, W, L := s.lim.g, s.lim.w, s.lim.l
	n := len(g)
	gone := slices.Grow(s.fhBits[:0], (n+63)/64)[:(n+63)/64]
	clear(gone)
	s.fhBits = gone
	var sum int64
	in, out, k := 0, 0, 0 // entered (Lo order), passed (Hi order), interval of starts
	for in < n {
		b := g[in].Lo() - G
		top := int64(negInf) // the largest hi of lo b
		for ; in < n && g[in].Lo()-G == b; in++ {
			if gone[in>>6]&(1<<(in&63)) == 0 {
				sum += int64(g[in].Permits)
			}
			top = max(top, g[in].Hi()+G)
		}
		first := b - W + 1
		for k < len(starts) && starts[k].hi < first {
			k++
		}
		if k == len(starts) {
			return // no window can start late enough, for this b or any later one
		}
		start := max(starts[k].lo, first)
		for ; out < n; out++ {
			j := at(ord, out)
			if g[j].Hi()+G >= start {
				break
			}
			if j < in {
				sum -= int64(g[j].Permits)
			}
			gone[j>>6] |= 1 << (j & 63)
		}
		if sum > L && top >= start && b >= from {
			rep.Possible++
			if sum-L > worst.excess {
				*worst = fhWorst{excess: sum - L, cond: 0, group: g, b: b, a: start}
			}
		}
	}
}

// fhDescribe returns the set w found: its scope, span, permits, allowance and excess. A
// possible set (cond 0) is {lo ≤ b, hi ≥ s} with s = w.a.
func (s *sweeper) fhDescribe(w fhWorst) Where {
	G, L := s.lim.g, s.lim.l
	if w.cond == fhSplit {
		return s.fhDescribeSplit(w.group, w.b, w.excess, w.a, &w.cover)
	}
	if w.cond == fhCount {
		lim := s.lim
		s.lim = lim.bucket()
		wh := s.describe(worstAt{excess: w.excess, group: w.group, at: w.b}, false)
		s.lim = lim
		return wh
	}
	var in func(e *Event) bool
	switch w.cond {
	case fhInstant:
		if w.a != w.b {
			// One admission of more than L permits: the first such of span [a, b].
			for i := range w.group {
				if e := &w.group[i]; e.Lo()-G == w.a && e.Hi()+G == w.b && int64(e.Permits)-L == w.excess {
					in = func(x *Event) bool { return x == e }
					break
				}
			}
		} else {
			in = func(e *Event) bool { return e.Lo() == w.b && e.width() == 0 }
		}
	case fhChain:
		in = func(e *Event) bool { return e.Lo()-G >= w.a && e.Hi()+G <= w.b }
	default:
		in = func(e *Event) bool { return e.Lo()-G <= w.b && e.Hi()+G >= w.a }
	}
	wh := Where{Lo: math.MaxInt64, Hi: math.MinInt64, Allowed: L}
	for i := range w.group {
		e := &w.group[i]
		if in(e) {
			wh.Permits += int64(e.Permits)
			wh.Lo, wh.Hi = min(wh.Lo, e.Lo()-G), max(wh.Hi, e.Hi()+G)
		}
	}
	wh.Subject, wh.Client = s.names(&w.group[0])
	wh.Lo, wh.Hi = s.base+wh.Lo, s.base+wh.Hi
	wh.Excess = wh.Permits - wh.Allowed
	return wh
}
