package verify

import (
	"cmp"
	"math"
	"slices"

	"github.com/limitbench/limitbench/algorithms"
)

// The sweeps below check one scope g, sorted by Lo then Hi; ord is g's Hi order (nil when it is
// g's own order). lo and hi are widened: lo = Lo − G, hi = Hi + G.

// slidingDefinite finds, for each distinct hi value b of an admission that can belong to a
// definite set (hi − lo < W), the permits of S(b) = {lo ≥ b−W+1, hi ≤ b, hi − lo < W}: the
// largest set that ends at b and lies in (b−W, b] for every placement. An admission enters S at
// its hi and leaves once b > lo + W − 1, so a two-pointer sweep over Hi order (entries) and Lo
// order (exits) suffices.
func (s *sweeper) slidingDefinite(g []Event, ord []uint32) {
	G, W, L := s.lim.g, s.lim.w, s.lim.l
	var sum int64
	leave, n := 0, len(g)
	for i := 0; i < n; {
		b := g[at(ord, i)].Hi + G
		in := false
		for ; i < n; i++ {
			e := &g[at(ord, i)]
			if e.Hi+G != b {
				break
			}
			if e.Hi-e.Lo+2*G < W {
				sum += int64(e.Permits)
				in = true
			}
		}
		for leave < n && g[leave].Lo-G+W <= b {
			e := &g[leave]
			leave++
			if e.Hi-e.Lo+2*G < W {
				sum -= int64(e.Permits)
			}
		}
		if in && sum > L {
			s.definiteAt(b, sum-L)
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
		b := g[i].Lo - G
		for ; i < n && g[i].Lo-G == b; i++ {
			sum += int64(g[i].Permits)
		}
		for leave < n {
			e := &g[at(ord, leave)]
			if e.Hi+G+W > b {
				break
			}
			sum -= int64(e.Permits)
			leave++
		}
		if sum > L {
			s.possibleAt(b, sum-L, 1)
		}
	}
}

// fixedDefinite sums, per aligned window k, the permits of the admissions whose interval lies
// wholly inside [kW, (k+1)W).
func (s *sweeper) fixedDefinite(g []Event) {
	G, W, L := s.lim.g, s.lim.w, s.lim.l
	var k, sum int64
	started := false
	for i := range g {
		e := &g[i]
		kl := floorDiv(e.Lo-G, W)
		if kl != floorDiv(e.Hi+G, W) {
			continue
		}
		if !started || kl != k {
			if started && sum > L {
				s.definiteAt(k*W, sum-L)
			}
			k, sum, started = kl, 0, true
		}
		sum += int64(e.Permits)
	}
	if started && sum > L {
		s.definiteAt(k*W, sum-L)
	}
}

// fixedPossible counts the aligned windows met by admissions with more than L permits: an
// admission meets windows ⌊lo/W⌋ … ⌊hi/W⌋; the sum is constant between breakpoints.
func (s *sweeper) fixedPossible(g []Event, ord []uint32) {
	G, W, L := s.lim.g, s.lim.w, s.lim.l
	var sum int64
	i, j, n := 0, 0, len(g)
	next := func() int64 {
		p := int64(math.MaxInt64)
		if i < n {
			p = floorDiv(g[i].Lo-G, W)
		}
		if j < n {
			p = min(p, floorDiv(g[at(ord, j)].Hi+G, W)+1)
		}
		return p
	}
	for i < n || j < n {
		p := next()
		for ; i < n && floorDiv(g[i].Lo-G, W) == p; i++ {
			sum += int64(g[i].Permits)
		}
		for ; j < n; j++ {
			e := &g[at(ord, j)]
			if floorDiv(e.Hi+G, W)+1 != p {
				break
			}
			sum -= int64(e.Permits)
		}
		if sum > L {
			s.possibleAt(p*W, sum-L, next()-p)
		}
	}
}

// The token-bucket sweeps maximise, for each end b, f = q·P(S) − p·span(S) over the candidate
// sets S ending at b; S violates when f > q·C, by ⌈(f − q·C)/q⌉ permits. Values are relative to
// base (the scope's earliest lo) so they fit in int64 (see limit.overflow).

// bucketDefiniteOrdered is bucketDefinite when Hi order is Lo order: the sets {lo ≥ a, hi ≤ b}
// are then runs of g, and a running maximum (Kadane) gives, after admission k,
// M = max over j ≤ k of p·(lo_j − base) + q·P(g[j..k]).
func (s *sweeper) bucketDefiniteOrdered(g []Event) {
	G, p, q := s.lim.g, s.lim.p, s.lim.q
	qC := q * s.lim.cap
	base := g[0].Lo - G
	m := int64(math.MinInt64)
	for i, n := 0, len(g); i < n; {
		b := g[i].Hi + G
		for ; i < n && g[i].Hi+G == b; i++ {
			m = max(m, p*(g[i].Lo-G-base)) + q*int64(g[i].Permits)
		}
		if f := m - p*(b-base); f > qC {
			s.definiteAt(b, ceilDiv(f-qC, q))
		}
	}
}

// bucketDefinite: for each distinct hi value b, with every admission of hi <= b added,
// value(a) = p·(a − base) + q·P{lo ≥ a, hi ≤ b} for each candidate start a (the lo values, by
// position in g), and f = max over a <= lo of some admission ending at b, minus p·(b − base).
// Adding an admission at position j adds to the values of positions 0..j: a segment tree with
// range add and range max.
func (s *sweeper) bucketDefinite(g []Event, ord []uint32) {
	G, p, q := s.lim.g, s.lim.p, s.lim.q
	qC := q * s.lim.cap
	base := g[0].Lo - G
	vals := slices.Grow(s.vals[:0], s.max)
	for i := range g {
		vals = append(vals, p*(g[i].Lo-G-base))
	}
	s.vals = vals
	s.tree.reset(vals, s.max)
	for i, n := 0, len(g); i < n; {
		b := g[ord[i]].Hi + G
		top := 0
		for ; i < n; i++ {
			j := int(ord[i])
			if g[j].Hi+G != b {
				break
			}
			s.tree.add(j+1, q*int64(g[j].Permits))
			top = max(top, j)
		}
		if f := s.tree.max(top+1) - p*(b-base); f > qC {
			s.definiteAt(b, ceilDiv(f-qC, q))
		}
	}
}

// bucketPossibleOrdered is bucketPossible when Hi order is Lo order. For an end b (a lo value,
// g[..k) the admissions with lo <= b), the candidate sets are runs g[j..k): those with hi_j >= b
// all meet b (span 0), the best being the longest, g[j0..k); the others cost p·(b − hi_j), and
// A = max over j < j0 of p·(hi_j − base) − q·P(g[..j)) is kept as j0 advances.
func (s *sweeper) bucketPossibleOrdered(g []Event) {
	G, p, q := s.lim.g, s.lim.p, s.lim.q
	qC := q * s.lim.cap
	base := g[0].Lo - G
	a := int64(math.MinInt64)
	var sk, sj0 int64 // q·P(g[..k)), q·P(g[..j0))
	j0 := 0
	for k, n := 0, len(g); k < n; {
		b := g[k].Lo - G
		for ; k < n && g[k].Lo-G == b; k++ {
			sk += q * int64(g[k].Permits)
		}
		for ; j0 < k && g[j0].Hi+G < b; j0++ {
			a = max(a, p*(g[j0].Hi+G-base)-sj0)
			sj0 += q * int64(g[j0].Permits)
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

// bucketPossible: for each distinct lo value b, with every admission of lo <= b added, the sets
// are {lo ≤ b, hi ≥ a}. For a = b they all meet b (span 0): meet, kept by two pointers. For a < b
// only hi values matter: value(a) = p·(a − base) + q·P{lo ≤ b, hi ≥ a} over the distinct hi
// values a < b, and f = max(meet, max value − p·(b − base)). Adding an admission adds to the
// values of the hi values up to its own: a segment tree with prefix add and prefix max.
func (s *sweeper) bucketPossible(g []Event, ord []uint32) {
	G, p, q := s.lim.g, s.lim.p, s.lim.q
	qC := q * s.lim.cap
	base := g[0].Lo - G
	n := len(g)
	// cand: the distinct hi values, ascending; pos[i] is the index in cand of g[i]'s hi.
	cand := slices.Grow(s.cand[:0], s.max)
	pos := slices.Grow(s.pos[:0], s.max)[:n]
	for _, j := range ord {
		if v := g[j].Hi + G; len(cand) == 0 || cand[len(cand)-1] != v {
			cand = append(cand, v)
		}
		pos[j] = uint32(len(cand) - 1)
	}
	s.cand, s.pos = cand, pos
	vals := slices.Grow(s.vals[:0], s.max)
	for _, v := range cand {
		vals = append(vals, p*(v-base))
	}
	s.vals = vals
	s.tree.reset(vals, s.max)
	var meet int64       // q·P of the admissions added with hi >= b
	leave, below := 0, 0 // admissions (in Hi order) with hi < b; cand values < b
	for k := 0; k < n; {
		b := g[k].Lo - G
		for ; k < n && g[k].Lo-G == b; k++ {
			s.tree.add(int(pos[k])+1, q*int64(g[k].Permits))
			meet += q * int64(g[k].Permits)
		}
		for ; leave < n && g[ord[leave]].Hi+G < b; leave++ {
			meet -= q * int64(g[ord[leave]].Permits)
		}
		for below < len(cand) && cand[below] < b {
			below++
		}
		f := meet
		if below > 0 {
			f = max(f, s.tree.max(below)-p*(b-base))
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
		if possible {
			in = func(e *Event) bool { return e.Lo-G <= b && e.Hi+G > b-W }
		} else {
			in = func(e *Event) bool { return e.Lo-G > b-W && e.Hi+G <= b && e.Hi-e.Lo+2*G < W }
		}
	case algorithms.FixedWindow:
		k := floorDiv(b, W)
		if possible {
			in = func(e *Event) bool { return floorDiv(e.Lo-G, W) <= k && floorDiv(e.Hi+G, W) >= k }
		} else {
			in = func(e *Event) bool { return floorDiv(e.Lo-G, W) == k && floorDiv(e.Hi+G, W) == k }
		}
	case algorithms.TokenBucket:
		a := s.bestStart(g, b, possible)
		if possible {
			in = func(e *Event) bool { return e.Lo-G <= b && e.Hi+G >= a }
		} else {
			in = func(e *Event) bool { return e.Lo-G >= a && e.Hi+G <= b }
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
		wh.Lo, wh.Hi = min(wh.Lo, e.Lo-G), max(wh.Hi, e.Hi+G)
		maxLo, minHi = max(maxLo, e.Lo-G), min(minHi, e.Hi+G)
	}
	wh.Subject, wh.Client = s.names(&g[0])
	switch s.lim.kind {
	case algorithms.TokenBucket:
		span := wh.Hi - wh.Lo
		if possible {
			span = max(0, maxLo-minHi)
		}
		wh.Allowed = s.lim.cap + s.lim.p*span/s.lim.q
	default:
		wh.Allowed = s.lim.l
	}
	wh.Excess = wh.Permits - wh.Allowed
	return wh
}

// bestStart returns the start a that maximises q·P − p·(b − a) over the token-bucket candidate
// sets ending at b: {lo ≥ a, hi ≤ b} (definite) or {lo ≤ b, hi ≥ a}, a <= b (possible).
func (s *sweeper) bestStart(g []Event, b int64, possible bool) int64 {
	G, p, q := s.lim.g, s.lim.p, s.lim.q
	type pt struct{ t, permits int64 }
	var pts []pt
	for i := range g {
		e := &g[i]
		if possible && e.Lo-G <= b {
			pts = append(pts, pt{min(e.Hi+G, b), int64(e.Permits)})
		}
		if !possible && e.Hi+G <= b {
			pts = append(pts, pt{e.Lo - G, int64(e.Permits)})
		}
	}
	// Descending t: the candidate set for a = t is every point at or after it.
	slices.SortFunc(pts, func(x, y pt) int { return cmp.Compare(y.t, x.t) })
	best, bestA := int64(math.MinInt64), b
	var sum int64
	for i, x := range pts {
		sum += x.permits
		if i+1 < len(pts) && pts[i+1].t == x.t {
			continue
		}
		if f := q*sum - p*(b-x.t); f > best {
			best, bestA = f, x.t
		}
	}
	return bestA
}

// prefixTree holds int64 values v[0..n) and supports, in O(log n), adding to a prefix v[0..r)
// and the maximum of a prefix: a segment tree over a power-of-two number of leaves, walked from
// the root, with the pending add of each inner node kept beside its maximum.
type prefixTree struct {
	n    int        // leaves, a power of two
	node []treeNode // node[1] is the root, node[n:2n] the leaves
}

type treeNode struct {
	t int64 // the maximum of the node's subtree, d included
	d int64 // added to all of an inner node's subtree, already in t
}

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
		m.node[i] = treeNode{t: math.MinInt64 / 4} // padding: never added to, never the maximum
	}
	for i := n - 1; i > 0; i-- {
		m.node[i] = treeNode{t: max(m.node[2*i].t, m.node[2*i+1].t)}
	}
}

// add adds v to v[0..r), 0 <= r <= len(vals).
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
	// Node i covers [lo, hi) with lo < r < hi.
	i, lo, hi := 1, 0, m.n
	for {
		mid := (lo + hi) >> 1
		if r <= mid {
			i, hi = 2*i, mid
			if r == mid {
				nd[i].t += v
				nd[i].d += v
				break
			}
		} else {
			nd[2*i].t += v
			nd[2*i].d += v
			i, lo = 2*i+1, mid
		}
	}
	for i > 1 {
		i >>= 1
		nd[i].t = max(nd[2*i].t, nd[2*i+1].t) + nd[i].d
	}
}

// max returns the maximum of v[0..r), 1 <= r <= len(vals).
func (m *prefixTree) max(r int) int64 {
	nd := m.node
	if r >= m.n {
		return nd[1].t
	}
	res := int64(math.MinInt64)
	var acc int64 // the pending adds of node i's strict ancestors
	i, lo, hi := 1, 0, m.n
	for {
		acc += nd[i].d
		mid := (lo + hi) >> 1
		if r <= mid {
			i, hi = 2*i, mid
			if r == mid {
				return max(res, nd[i].t+acc)
			}
		} else {
			res = max(res, nd[2*i].t+acc)
			i, lo = 2*i+1, mid
		}
	}
}
