package verify

import (
	"cmp"
	"math"
	"math/bits"
	"slices"

	"github.com/limitbench/limitbench/algorithms"
)

// windowMin is the fewest positions bucketDefinite's segment tree covers (fewer when the scope
// has fewer).
const windowMin = 16

// The sweeps below check one scope g, sorted by Lo then Hi; ord is g's Hi order (nil when it is
// g's own order). lo and hi are widened: lo = Lo − G, hi = Hi + G.

// slidingDefinite finds the definite violations of the package doc's conditions (i) and (ii).
// With K·W and K·L from limit.windows, for each distinct hi value b of an admission it takes
// the permits of S(b) = {lo ≥ b−K·W+1, hi ≤ b, hi − lo < K·W}, the largest set of condition
// (i) that ends at b (it lies in (b−K·W, b] for every placement), and the largest permits of
// one admission ending at b, condition (ii). An admission enters S at its hi and leaves once
// b > lo + K·W − 1, so a two-pointer sweep over Hi order (entries) and Lo order (exits)
// suffices. The excess at b is the larger of P(S(b)) − K·L (when an admission ending at b is
// in S(b)) and that admission's permits − L.
func (s *sweeper) slidingDefinite(g []Event, ord []uint32) {
	G, L := s.lim.g, s.lim.l
	_, W, KL := s.lim.windows()
	narrow := W - 2*G // an admission can be in a set of (i) when its width is below narrow
	var sum int64
	leave, n := 0, len(g)
	for i := 0; i < n; {
		// The admissions of one hi, each decoded once.
		e := &g[at(ord, i)]
		w := e.width()
		hi := e.Lo() + w
		in := false
		var one int64 // the most permits of one admission ending at hi
		for {
			one = max(one, int64(e.Permits))
			if w < narrow {
				sum += int64(e.Permits)
				in = true
			}
			if i++; i == n {
				break
			}
			e = &g[at(ord, i)]
			if w = e.width(); e.Lo()+w != hi {
				break
			}
		}
		b := hi + G
		for last := b + G - W; leave < n; leave++ { // leave once lo + W − 1 < b: Lo <= b + G − W
			e := &g[leave]
			if e.Lo() > last {
				break
			}
			if e.width() < narrow {
				sum -= int64(e.Permits)
			}
		}
		var excess int64
		if in && sum > KL {
			excess = sum - KL
		}
		if one-L > excess {
			if s.definiteAt(b, one-L) {
				s.worst.single = true
			}
		} else if excess > 0 {
			s.definiteAt(b, excess)
		}
	}
}

// slidingPossible finds, for each distinct lo value b, the permits of T(b) = {lo ≤ b,
// hi ≥ b−W+1}: the admissions that can be placed in (b−W, b], all of them at once.
func (s *sweeper) slidingPossible(g []Event, ord []uint32) {
	G, W, L := s.lim.g, s.lim.w, s.lim.l
	var sum int64
	leave, n := 0, len(g)
	for i := 0; i < n; {
		lo := g[i].Lo()
		for ; i < n && g[i].Lo() == lo; i++ {
			sum += int64(g[i].Permits)
		}
		b := lo - G
		for last := b - W - G; leave < n; leave++ { // leave once hi + W <= b: Hi <= b − W − G
			e := &g[at(ord, leave)]
			if e.Hi() > last {
				break
			}
			sum -= int64(e.Permits)
		}
		if sum > L {
			s.possibleAt(b, sum-L, 1)
		}
	}
}

// fixedDefinite sums, per aligned window k, the permits of the admissions whose interval lies
// wholly inside [kW, (k+1)W). Windows are aligned on the Unix epoch: k = ⌊(Base + lo)/W⌋.
func (s *sweeper) fixedDefinite(g []Event) {
	G, W, L := s.lim.g, s.lim.w, s.lim.l
	lo0, hi0 := s.base-G, s.base+G // absolute widened bounds are lo + lo0, hi + hi0
	var k, sum int64
	started := false
	for i := range g {
		e := &g[i]
		kl := floorDiv(e.Lo()+lo0, W)
		if kl != floorDiv(e.Hi()+hi0, W) {
			continue
		}
		if !started || kl != k {
			if started && sum > L {
				s.definiteAt(k*W-s.base, sum-L)
			}
			k, sum, started = kl, 0, true
		}
		sum += int64(e.Permits)
	}
	if started && sum > L {
		s.definiteAt(k*W-s.base, sum-L)
	}
}

// fixedPossible counts the aligned windows met by admissions with more than L permits: an
// admission meets windows ⌊lo/W⌋ … ⌊hi/W⌋ (lo and hi absolute, as in fixedDefinite); the sum is
// constant between breakpoints.
func (s *sweeper) fixedPossible(g []Event, ord []uint32) {
	G, W, L := s.lim.g, s.lim.w, s.lim.l
	lo0, hi0 := s.base-G, s.base+G
	var sum int64
	i, j, n := 0, 0, len(g)
	next := func() int64 {
		p := int64(math.MaxInt64)
		if i < n {
			p = floorDiv(g[i].Lo()+lo0, W)
		}
		if j < n {
			p = min(p, floorDiv(g[at(ord, j)].Hi()+hi0, W)+1)
		}
		return p
	}
	for i < n || j < n {
		p := next()
		for ; i < n && floorDiv(g[i].Lo()+lo0, W) == p; i++ {
			sum += int64(g[i].Permits)
		}
		for ; j < n; j++ {
			e := &g[at(ord, j)]
			if floorDiv(e.Hi()+hi0, W)+1 != p {
				break
			}
			sum -= int64(e.Permits)
		}
		if sum > L {
			s.possibleAt(p*W-s.base, sum-L, next()-p)
		}
	}
}

// The token-bucket sweeps maximise, for each end b, f = q·P(S) − p·span(S) over the candidate
// sets S ending at b; S violates when f > q·C, by ⌈(f − q·C)/q⌉ permits. Values are relative to
// base (the scope's earliest lo) so they fit in int64 (see limit.overflow).

// bucketDefinite finds the definite violations of a token bucket in one scope g: for each
// distinct end b, f = max over the starts lo_j of p·(lo_j − base) + q·P{position ≥ j, hi ≤ b}
// − p·(b − base), the candidate sets {lo ≥ lo_j, hi ≤ b} holding an admission ending at b,
// with maxStarts.
func (s *sweeper) bucketDefinite(g []Event, ord []uint32) {
	G, p, q := s.lim.g, s.lim.p, s.lim.q
	qC := q * s.lim.cap
	base := g[0].Lo() - G
	val := func(j int) int64 { return p * (g[j].Lo() - G - base) }
	s.maxStarts(g, ord, val, q, func(b, m int64) {
		if f := m - p*(b-base); f > qC {
			s.definiteAt(b, ceilDiv(f-qC, q))
		}
	})
}

// maxStarts runs a startMax over one scope g (ord its Hi order, nil when it is g's order): for
// each distinct end b (an admission's hi + G), in order, end(b, m) receives m, the largest
// value over the starts j ≤ top, top the last position of an admission ending at b.
func (s *sweeper) maxStarts(g []Event, ord []uint32, val func(j int) int64, q int64, end func(b, m int64)) {
	G, n := s.lim.g, len(g)
	st := &s.starts
	st.reset(val, q)
	ev := queue[Event]{v: g}
	group := s.endAt[:0]
	for i := 0; i < n; {
		b := g[at(ord, i)].Hi() + G
		group = group[:0]
		for ; i < n && g[at(ord, i)].Hi()+G == b; i++ {
			group = append(group, at(ord, i))
		}
		end(b, st.end(&ev, group, n))
	}
	s.endAt = group
}

// startMax holds, for a scope's admissions in Lo order (by position), the candidate starts of
// the token-bucket-like sets {lo ≥ lo_j, hi ≤ b}: each position j is a start whose value at an
// end b is val(j) + q·P{position ≥ j, hi ≤ b}. The admissions are added end by end, in Hi
// order (end), and m, the largest value over the starts j ≤ top, comes back, top the last
// position of an admission ending at b. For a token bucket val(j) = p·(lo_j − base), and
// m − p·(b − base) is the largest q·P(S) − p·span(S) over the sets S = {lo ≥ lo_j, hi ≤ b}
// that hold an admission ending at b; first-hit-window's condition (d) counts windows instead
// (see fhWindows). The checker runs it over a scope at once (maxStarts), the streaming checker
// end by end as the ends become final.
//
// Adding an admission at position k adds q·permits to the values of positions 0..k. With Q the
// q·permits added so far, value(j) − Q = val(j) − q·P{position < j, added}. Once every position
// before j is added, that is val(j) − q·P(before j) and no longer changes. So, with F the first
// position not added, fin = the maximum of value − Q over the positions before F is one number,
// extended as F advances, and only positions from F on need more: every position of an
// admission ending at b is at least F (as F was before it was added), so max over j <= top is
// max(fin + Q, max over F <= j <= top).
//
// When the admissions ending at b are exactly the positions F, F+1, …, top and no later position
// was added (no interval nests inside an earlier one there), all positions up to top are then
// added and the maximum is fin + Q once F has moved past them (a running maximum, Kadane's).
// Else a segment tree with prefix add and prefix max holds value(j) for a window of positions
// [wb, wb+wk), wb <= F, that contains every position added since it was placed: it is placed at
// F, at least twice as wide as F..top (and windowMin), and placed again at F, carrying over the
// values of the old one, when an admission beyond it is added; it is dropped once F has passed
// every position added. A placing costs O(old + new width): a first one, O(windowMin) and the
// positions up to top, which F will pass; a later one follows an advance of the latest position
// added by at least a quarter of the old width. So a scope costs O(n log w), w the widest
// window, which stays small (and in cache) when intervals nest only among neighbours, and
// startMax holds O(w), with a bit for each position from F on.
type startMax struct {
	val         func(j int) int64
	q           int64
	added       flags // the positions added, from F on
	first, last int   // F; the last position added (−1: none)
	pre, sum    int64 // q·P of the positions before F; Q
	fin         int64 // max over the starts before F of val(j) − q·P(before j); MinInt64: none
	finArg      int   // the last start before F with that value, its Lo and its val
	finLo       int64
	finVal      int64
	wb, wk      int // the window [wb, wb+wk); wk == 0: none
	tree        prefixTree
	vals        []int64
	at          startMaxAt // what the last end's maximum was taken over, for argmax
}

// startMaxAt is what the last end's maximum was taken over: the settled starts' fin (and its
// start) as it stood, and the window, as end left them.
type startMaxAt struct {
	fin, finLo, finVal int64
	finArg, wb, wk     int
}

// reset makes m empty, for starts valued by val and admissions weighing q each permit.
func (m *startMax) reset(val func(j int) int64, q int64) {
	*m = startMax{val: val, q: q, added: flags{w: m.added.w[:0]}, last: -1, fin: math.MinInt64,
		tree: m.tree, vals: m.vals}
}

// end adds the admissions of one end, at the positions of group (ev holds them; n is one past
// the last position there is), and returns the largest value over the starts up to the last of
// them.
func (m *startMax) end(ev *queue[Event], group []int, n int) int64 {
	q := m.q
	low, top := group[0], group[0]
	for _, j := range group {
		low, top = min(low, j), max(top, j)
	}
	if m.wk == 0 && low == m.first && top-m.first == len(group)-1 {
		for ; m.first <= top; m.first++ {
			m.settle(ev)
			m.pre += q * int64(ev.at(m.first).Permits)
		}
		m.sum, m.last = m.pre, top
		m.at = startMaxAt{fin: m.fin, finLo: m.finLo, finVal: m.finVal, finArg: m.finArg}
		return m.fin + m.sum
	}
	if m.wk == 0 || top >= m.wb+m.wk {
		m.place(min(n-m.first, 1<<bits.Len(uint(max(windowMin, 2*(top-m.first+1))-1))))
	}
	for _, j := range group {
		perm := q * int64(ev.at(j).Permits)
		m.tree.add(j-m.wb+1, perm)
		m.sum += perm
		m.added.set(j)
	}
	m.last = max(m.last, top)
	r := m.tree.max(top - m.wb + 1)
	if m.fin != math.MinInt64 {
		r = max(r, m.fin+m.sum)
	}
	m.at = startMaxAt{fin: m.fin, finLo: m.finLo, finVal: m.finVal, finArg: m.finArg, wb: m.wb, wk: m.wk}
	for ; m.first < n && m.added.get(m.first); m.first++ {
		m.settle(ev)
		m.pre += q * int64(ev.at(m.first).Permits)
	}
	m.added.dropTo(m.first)
	if m.first > m.last {
		m.wk = 0
	}
	return r
}

// settle extends fin with the start at F, which every position before it has been added to.
func (m *startMax) settle(ev *queue[Event]) {
	if x := m.val(m.first); x-m.pre >= m.fin {
		m.fin, m.finArg, m.finLo, m.finVal = x-m.pre, m.first, ev.at(m.first).Lo(), x
	}
}

// need returns the first position that m may still read.
func (m *startMax) need() int {
	if m.wk > 0 {
		return m.wb
	}
	return m.first
}

// place places the window at F, w positions wide: values from the old window, or val where no
// later position is added.
func (m *startMax) place(w int) {
	vals := m.tree.leaves(m.vals[:0], m.wk)
	vals = append(vals[:0], vals[min(m.first-m.wb, len(vals)):]...)
	for k := m.first + len(vals); k < m.first+w; k++ {
		vals = append(vals, m.val(k))
	}
	m.vals = vals
	m.tree.reset(vals, len(vals))
	m.wb, m.wk = m.first, w
}

// bucketPossible: for each distinct lo value b, with g[..k) the admissions of lo <= b, the
// candidate sets are {lo ≤ b, hi ≥ a}. Those with a = b all meet b (span 0), the best being
// meet = q·P{lo ≤ b, hi ≥ b}. For a < b only the hi values matter, and every admission with
// hi < a has lo <= hi < b, so q·P{lo ≤ b, hi ≥ a} = q·P(g[..k)) − q·P{hi < a}: the value of
// the start a, p·(a − base) − q·P{hi < a}, does not depend on b. Walking Hi order (admissions j0
// with hi < b, in order), A = max over them of p·(hi_j0 − base) − q·P(admissions before j0 in
// Hi order) is a running maximum, and f = max(meet, A + q·P(g[..k)) − p·(b − base)): one pass
// over Lo order and one over Hi order.
func (s *sweeper) bucketPossible(g []Event, ord []uint32) {
	G, p, q := s.lim.g, s.lim.p, s.lim.q
	qC := q * s.lim.cap
	base := g[0].Lo() - G
	a := int64(math.MinInt64)
	var sk, sj0 int64 // q·P(g[..k)), q·P of the admissions j0 passed in Hi order
	j0 := 0
	for k, n := 0, len(g); k < n; {
		b := g[k].Lo() - G
		for ; k < n && g[k].Lo()-G == b; k++ {
			sk += q * int64(g[k].Permits)
		}
		for ; j0 < n; j0++ {
			e := &g[at(ord, j0)]
			hi := e.Hi() + G
			if hi >= b {
				break
			}
			a = max(a, p*(hi-base)-sj0)
			sj0 += q * int64(e.Permits)
		}
		f := sk - sj0
		if a != math.MinInt64 {
			f = max(f, a+sk-p*(b-base))
		}
		if f > qC {
			s.possibleAt(b, ceilDiv(f-qC, q), 1)
		}
	}
}

// describe returns the violating set that gave w: its scope, span, permits and excess.
func (s *sweeper) describe(w worstAt, possible bool) Where {
	g, b := w.group, w.at
	G, W := s.lim.g, s.lim.w
	var in func(e *Event) bool
	switch s.lim.kind {
	case algorithms.SlidingWindow:
		_, KW, _ := s.lim.windows()
		switch {
		case possible:
			in = func(e *Event) bool { return e.Lo()-G <= b && e.Hi()+G > b-W }
		case w.single:
			// Condition (ii): the admission ending at b with the most permits.
			var one *Event
			for i := range g {
				if e := &g[i]; e.Hi()+G == b && (one == nil || e.Permits > one.Permits) {
					one = e
				}
			}
			in = func(e *Event) bool { return e == one }
		default:
			in = func(e *Event) bool { return e.Lo()-G > b-KW && e.Hi()+G <= b && e.width()+2*G < KW }
		}
	case algorithms.FixedWindow:
		B := s.base
		k := floorDiv(B+b, W)
		if possible {
			in = func(e *Event) bool { return floorDiv(B+e.Lo()-G, W) <= k && floorDiv(B+e.Hi()+G, W) >= k }
		} else {
			in = func(e *Event) bool { return floorDiv(B+e.Lo()-G, W) == k && floorDiv(B+e.Hi()+G, W) == k }
		}
	case algorithms.TokenBucket:
		a := s.bestStart(g, b, possible)
		if possible {
			in = func(e *Event) bool { return e.Lo()-G <= b && e.Hi()+G >= a }
		} else {
			in = func(e *Event) bool { return e.Lo()-G >= a && e.Hi()+G <= b }
		}
	}
	wh := Where{Lo: math.MaxInt64, Hi: math.MinInt64}
	maxLo, minHi := int64(math.MinInt64), int64(math.MaxInt64)
	for i := range g {
		e := &g[i]
		if !in(e) {
			continue
		}
		wh.Permits += int64(e.Permits)
		wh.Lo, wh.Hi = min(wh.Lo, e.Lo()-G), max(wh.Hi, e.Hi()+G)
		maxLo, minHi = max(maxLo, e.Lo()-G), min(minHi, e.Hi()+G)
	}
	wh.Subject, wh.Client = s.names(&g[0])
	wh.Lo, wh.Hi = s.base+wh.Lo, s.base+wh.Hi
	switch s.lim.kind {
	case algorithms.TokenBucket:
		span := wh.Hi - wh.Lo
		if possible {
			span = max(0, maxLo-minHi)
		}
		wh.Allowed = s.lim.cap + s.lim.p*span/s.lim.q
	case algorithms.SlidingWindow:
		wh.Allowed = s.lim.l
		if !possible && !w.single {
			_, _, wh.Allowed = s.lim.windows()
		}
	default:
		wh.Allowed = s.lim.l
	}
	wh.Excess = wh.Permits - wh.Allowed
	return wh
}

// bestStart returns the start a that maximises q·P − p·(b − a) over the token-bucket candidate
// sets ending at b: {lo ≥ a, hi ≤ b} holding an admission that ends at b (definite: the sets
// the sweep compares; one that ends earlier may be worth more at b when From left its own end
// out) or {lo ≤ b, hi ≥ a}, a <= b (possible); of equal values, the largest a.
func (s *sweeper) bestStart(g []Event, b int64, possible bool) int64 {
	G, p, q := s.lim.g, s.lim.p, s.lim.q
	type pt struct{ t, permits int64 }
	var pts []pt
	top := int64(math.MinInt64) // definite: the largest lo of an admission ending at b
	for i := range g {
		e := &g[i]
		if possible && e.Lo()-G <= b {
			pts = append(pts, pt{min(e.Hi()+G, b), int64(e.Permits)})
		}
		if !possible && e.Hi()+G <= b {
			pts = append(pts, pt{e.Lo() - G, int64(e.Permits)})
			if e.Hi()+G == b {
				top = max(top, e.Lo()-G)
			}
		}
	}
	// Descending t: the candidate set for a = t is every point at or after it.
	slices.SortFunc(pts, func(x, y pt) int { return cmp.Compare(y.t, x.t) })
	best, bestA := int64(math.MinInt64), b
	var sum int64
	for i, x := range pts {
		sum += x.permits
		if (i+1 < len(pts) && pts[i+1].t == x.t) || (!possible && x.t > top) {
			continue // a definite set holds an admission ending at b: the one the sweep found
		}
		if f := q*sum - p*(b-x.t); f > best {
			best, bestA = f, x.t
		}
	}
	return bestA
}

// prefixTree holds int64 values v[0..n) and supports, in O(log n), adding to a prefix v[0..r)
// and the maximum of a prefix: a segment tree over a power-of-two number of leaves, with the
// pending add of each inner node kept beside its maximum. Both operations walk up from leaf r,
// whose ancestors are the parents of every node they touch, without a data-dependent branch.
type prefixTree struct {
	n    int        // leaves, a power of two
	node []treeNode // node[1] is the root, node[n:2n] the leaves
}

type treeNode struct {
	t int64 // the maximum of the node's subtree, d included
	d int64 // added to all of an inner node's subtree, already in t
}

// treeNone is the value of padding leaves and of "no maximum yet": never added to, never the
// maximum, and far enough from math.MinInt64 that the pending adds (at most 2^62, see
// limit.overflow) cannot overflow it.
const treeNone = math.MinInt64 / 2

// reset makes the tree hold vals, with room for up to reserve values without reallocating.
func (m *prefixTree) reset(vals []int64, reserve int) {
	n := 1
	for n < len(vals) {
		n <<= 1
	}
	m.n = n
	r := 1
	for r < reserve {
		r <<= 1
	}
	m.node = slices.Grow(m.node[:0], 2*max(n, r))[:2*n]
	for i, v := range vals {
		m.node[n+i] = treeNode{t: v}
	}
	for i := n + len(vals); i < 2*n; i++ {
		m.node[i] = treeNode{t: treeNone}
	}
	for i := n - 1; i > 0; i-- {
		m.node[i] = treeNode{t: max(m.node[2*i].t, m.node[2*i+1].t)}
	}
}

// add adds v to v[0..r), 0 <= r <= len(vals). Leaf r's ancestor at each level is i; when i is a
// right child, its left sibling i−1 = i^1 lies wholly inside [0, r) and takes v (when i is a left
// child, i^1 is outside and takes 0); then their parent, the next ancestor, is recomputed.
func (m *prefixTree) add(r int, v int64) {
	if r <= 0 {
		return
	}
	nd := m.node
	if r >= m.n {
		nd[1].t += v
		nd[1].d += v
		return
	}
	for i := r + m.n; i > 1; i >>= 1 {
		x := v & -int64(i&1)
		nd[i^1].t += x
		nd[i^1].d += x
		p := i >> 1
		nd[p].t = max(nd[2*p].t, nd[2*p+1].t) + nd[p].d
	}
}

// leaves appends v[0..count) to dst, count <= len(vals), and returns it. It moves the pending adds
// of every inner node down to the leaves.
func (m *prefixTree) leaves(dst []int64, count int) []int64 {
	if count == 0 {
		return dst
	}
	nd := m.node
	for i := 1; i < m.n; i++ {
		if d := nd[i].d; d != 0 {
			nd[2*i].t += d
			nd[2*i].d += d
			nd[2*i+1].t += d
			nd[2*i+1].d += d
			nd[i].d = 0
		}
	}
	for i := range count {
		dst = append(dst, nd[m.n+i].t)
	}
	return dst
}

// max returns the maximum of v[0..r), 1 <= r <= len(vals). Walking up from leaf r as add does,
// the left siblings of its ancestors cover [0, r); the pending adds of the ancestors apply to
// every node found below them.
func (m *prefixTree) max(r int) int64 {
	nd := m.node
	if r >= m.n {
		return nd[1].t
	}
	res := int64(treeNone)
	for i := r + m.n; i > 1; {
		c := nd[i^1].t
		if i&1 == 0 {
			c = treeNone
		}
		res = max(res, c)
		i >>= 1
		res += nd[i].d
	}
	return res
}
