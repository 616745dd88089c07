package verify

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/limitbench/limitbench/algorithms"
)

// Approach is how close the admissions of a log came to breaking a contract, as a continuous
// score: a search for the schedule that breaks a limiter ranks its candidates by it, so that a
// history that came close counts before any violation exists.
//
// For one limit, a set S of admissions of one scope is certain when every placement of the
// decision times (each widened by the granularity G to [Lo − G, Hi + G], as in Check) puts S
// under one allowance of the contract, and its allowance A(S) is then:
//
//   - sliding-window(L, W): with K = ⌊2G/W⌋ + 1 (1 when 2G < W), S is certain when
//     max hi − min lo < K·W over S (every placement puts it in K back-to-back windows
//     (t−W, t]), with A(S) = K·L, or when S is one admission (one instant, in one window), with
//     A(S) = L: the package doc's conditions (i) and (ii). A coarse granularity so still scores
//     a burst: under whole seconds (G = 1 s) and a window of 1 s, 2L permits within 1 s score
//     2/3, and more than 3L score above 1.
//   - fixed-window(L, W): S is certain when every interval of S lies wholly inside one aligned
//     window [kW, (k+1)W); A(S) = L.
//   - token-bucket(C, r): every S is certain; A(S) = C + r·(max hi − min lo), the allowance of
//     the longest interval any placement can take S to.
//   - first-hit-window(L, W): where its windows lie depends on every request, so its score is
//     the larger of two nearby ratios: the sliding-window(L, W) ratio (the same admissions in
//     one span shorter than W) and the ratio of its condition (b), token-bucket(2L, L/W) (see
//     the package doc). Neither decides alone: the score is then moved to the next float above
//     1 when Check reports a definite violation of the limit, and held at 1 when it reports
//     none, so that the comparison with 1 means for it what it means for the other kinds.
//
// The limit's Score is the largest P(S)/A(S) over certain sets S, P the permits of S (0 when
// there is no admission). P(S) > A(S) is exactly Check's definite violation, so a Score above
// 1 means Check reports a definite violation of the limit, and a Score of at most 1 that it
// reports none; the comparison with 1 is made in exact integers (a ratio that rounds to 1.0 in
// floating point is moved to the next float above 1 when its set violates the contract). Below
// 1 the score is the nearest miss: 0.95 means some window or interval held 95% of what it
// allows, for every placement.
//
// Unknown outcomes, denials and failures count for nothing (the score, like the verdict, is
// about what was certainly admitted), and Log.From is ignored, as Check does.
type Approach struct {
	// Score is the largest Limits[i].Score: above 1 exactly when Check reports a definite
	// violation of some limit.
	Score float64
	// Limits has one entry per limit of the contract, the main one first, then its Also,
	// depth first (as Report.Limits).
	Limits []LimitApproach
}

// LimitApproach is the approach to one limit.
type LimitApproach struct {
	// Contract is the limit, without its Also.
	Contract algorithms.Contract
	// Score is the largest P(S)/A(S) over certain sets S (see Approach); 0 for a contract of
	// kind none or a log without admissions.
	Score float64
	// Closest is the certain set with that ratio; zero when Score is 0.
	Closest Closest
}

// Closest describes one certain set of admissions. Its JSON form (hunt.json's closest approach)
// has the fields subject and client (omitted when empty), lo_us, hi_us, permits and allowed.
type Closest struct {
	// Subject and Client name the scope; a name that is not part of the scope is empty.
	Subject string `json:"subject,omitempty"`
	Client  string `json:"client,omitempty"`
	// Lo and Hi are the earliest widened Lo and the latest widened Hi of the set, in µs since
	// the Unix epoch.
	Lo int64 `json:"lo_us"`
	Hi int64 `json:"hi_us"`
	// Permits is P(S); Allowed is A(S), exact for windows and r·(Hi − Lo) + C in floating
	// point for token-bucket.
	Permits int64   `json:"permits"`
	Allowed float64 `json:"allowed"`
}

// ApproachOf scores how close the admissions of log came to breaking c and its Also contracts,
// as Approach defines. Like Check, it moves the admissions to the front of log.Events and
// reorders them, and returns an error wrapping ErrBadContract, ErrBadLog or ErrOverflow when it
// cannot score.
//
// Cost: a sort and a sweep per scope for windows; for token-bucket, an exact pass in integers
// (is there a definite violation) and a few passes of Dinkelbach's method in floating point
// (the largest ratio), each O(n log n) for n admissions of a scope, with a segment tree of 2n
// nodes.
func ApproachOf(c algorithms.Contract, log *Log) (Approach, error) {
	lims, err := flatten(c)
	if err != nil {
		return Approach{}, fmt.Errorf("approach: %w", err)
	}
	if err := log.validate(); err != nil {
		return Approach{}, fmt.Errorf("approach: %w", err)
	}
	// First-hit windows depend on denied, unknown and failed requests too: Check says whether a
	// limit is definitely violated before the admissions are moved to the front.
	firstHit := make([]bool, len(lims))
	for i, lim := range lims {
		if lim.kind != algorithms.FirstHitWindow {
			continue
		}
		rep, err := Check(lim.c, log)
		if err != nil {
			return Approach{}, fmt.Errorf("approach: %w", err)
		}
		firstHit[i] = rep.Limits[0].Definite > 0
	}
	ev := log.Events
	n := partition(ev, Admitted)
	adm := ev[:n]
	var lo, hi, permits int64 = math.MaxInt64, math.MinInt64, 0
	for i := range adm {
		lo, hi = min(lo, adm[i].Lo()), max(hi, adm[i].Hi())
		permits += int64(adm[i].Permits)
	}
	var out Approach
	var st sorter
	for i, lim := range lims {
		if lim.kind == algorithms.TokenBucket && n > 0 {
			if err := lim.overflow(hi-lo, permits); err != nil {
				return Approach{}, fmt.Errorf("approach: %w", err)
			}
		}
		la := LimitApproach{Contract: lim.c}
		if lim.kind != algorithms.NoContract && n > 0 {
			st.sort(adm, lim.scope)
			a := approacher{lim: lim, log: log}
			key := scopeKey(lim.scope)
			for i := 0; i < n; {
				j := i + 1
				for j < n && key(&adm[j]) == key(&adm[i]) {
					j++
				}
				a.scope(adm[i:j])
				i = j
			}
			la.Score, la.Closest = a.score, a.closest
		}
		if lim.kind == algorithms.FirstHitWindow {
			switch {
			case firstHit[i]:
				la.Score = max(la.Score, math.Nextafter(1, 2))
			case la.Score > 1:
				la.Score = 1
			}
		}
		out.Score = max(out.Score, la.Score)
		out.Limits = append(out.Limits, la)
	}
	return out, nil
}

// approacher scores one limit, scope by scope.
type approacher struct {
	lim     limit
	log     *Log
	score   float64
	closest Closest
	tree    maxTree[float64]
	tree64  maxTree[int64]
	ord     []int
}

// offer keeps the set of g with the given bounds (widened, relative), permits and allowance
// when its ratio beats the best so far.
func (a *approacher) offer(g []Event, ratio float64, lo, hi, permits int64, allowed float64) {
	if permits == 0 || (ratio <= a.score && a.score > 0) {
		return
	}
	sw := sweeper{lim: a.lim, log: a.log}
	sub, cli := sw.names(&g[0])
	a.score = ratio
	a.closest = Closest{Subject: sub, Client: cli, Lo: a.log.Base + lo, Hi: a.log.Base + hi, Permits: permits, Allowed: allowed}
}

// scope scores the admissions g of one scope, sorted by Lo then Hi.
func (a *approacher) scope(g []Event) {
	switch a.lim.kind {
	case algorithms.SlidingWindow:
		a.sliding(g)
	case algorithms.FixedWindow:
		a.fixed(g)
	case algorithms.TokenBucket:
		a.bucket(g)
	case algorithms.FirstHitWindow:
		// Two nearby limits score the same admissions; the approacher keeps the better set.
		fh := a.lim
		a.lim.kind = algorithms.SlidingWindow
		a.sliding(g)
		a.lim = fh.bucket()
		a.bucket(g)
		a.lim = fh
	}
}

// sliding: with K·W and K·L from limit.windows, a certain set of condition (i) ending at its
// latest hi b lies in {lo > b − K·W, hi ≤ b, width < K·W} (widened), which is itself certain;
// so the best such set ends at some hi b and is that whole set. An admission as wide as K·W
// (widened) is in no such set; every other one with lo ≤ b − K·W has hi < lo + K·W ≤ b, so
// P{lo > b−K·W, hi ≤ b} = P{hi ≤ b} − P{lo ≤ b−K·W}: two pointers. Condition (ii)'s sets are
// single admissions, allowed L: the one with the most permits is the best of them.
func (a *approacher) sliding(g []Event) {
	G, L := a.lim.g, a.lim.l
	_, W, KL := a.lim.windows()
	var los, his []pt // in Lo order, in Hi order
	var one *Event    // the admission with the most permits
	for i := range g {
		e := &g[i]
		if one == nil || e.Permits > one.Permits {
			one = e
		}
		if e.width()+2*G >= W {
			continue
		}
		los = append(los, pt{e.Lo() - G, int64(e.Permits)})
		his = append(his, pt{e.Hi() + G, int64(e.Permits)})
	}
	a.slidingSets(g, los, his, W, KL)
	if one != nil {
		// After the sets of (i), which keep a tie.
		p := int64(one.Permits)
		a.offer(g, ratio(p, L), one.Lo()-G, one.Hi()+G, p, float64(L))
	}
}

// pt is an instant and the permits of an admission there.
type pt struct{ t, p int64 }

// slidingSets offers the best set of sliding's condition (i): los and his hold the (widened)
// lo and hi of the admissions of g narrower than W = K·W, in Lo order, his in any order; KL is
// K·L.
func (a *approacher) slidingSets(g []Event, los, his []pt, W, KL int64) {
	G := a.lim.g
	if len(his) == 0 {
		return
	}
	// The set's earliest lo, once its end is known: the first in Lo order past b − W whose hi
	// is at most b.
	firstLo := func(b int64) int64 {
		for i := range g {
			e := &g[i]
			if lo, hi := e.Lo()-G, e.Hi()+G; lo > b-W && hi <= b && hi-lo < W {
				return lo
			}
		}
		return b
	}
	slices.SortFunc(his, func(x, y pt) int { return cmp.Compare(x.t, y.t) })
	var sumHi, sumLo, best, bestB int64
	k := 0
	for i := 0; i < len(his); {
		b := his[i].t
		for ; i < len(his) && his[i].t == b; i++ {
			sumHi += his[i].p
		}
		for ; k < len(los) && los[k].t <= b-W; k++ {
			sumLo += los[k].p
		}
		if p := sumHi - sumLo; p > best {
			best, bestB = p, b
		}
	}
	if best == 0 {
		return
	}
	a.offer(g, ratio(best, KL), firstLo(bestB), bestB, best, float64(KL))
}

// fixed: the admissions wholly inside one aligned window, window by window. In Lo order the
// window of such admissions never decreases.
func (a *approacher) fixed(g []Event) {
	G, W, B := a.lim.g, a.lim.w, a.log.Base
	var best, bestK, sum int64
	k, started := int64(0), false
	flush := func() {
		if started && sum > best {
			best, bestK = sum, k
		}
	}
	for i := range g {
		e := &g[i]
		kl, kh := floorDiv(B+e.Lo()-G, W), floorDiv(B+e.Hi()+G, W)
		if kl != kh {
			continue
		}
		if !started || kl != k {
			flush()
			k, sum, started = kl, 0, true
		}
		sum += int64(e.Permits)
	}
	flush()
	if best == 0 {
		return
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for i := range g {
		e := &g[i]
		if floorDiv(B+e.Lo()-G, W) == bestK && floorDiv(B+e.Hi()+G, W) == bestK {
			lo, hi = min(lo, e.Lo()-G), max(hi, e.Hi()+G)
		}
	}
	a.offer(g, ratio(best, a.lim.l), lo, hi, best, float64(a.lim.l))
}

// ratio returns p/allowed in floating point, moved to the next float above 1 when p > allowed
// (exactly) but the division rounds to 1 or below.
func ratio(p, allowed int64) float64 {
	r := float64(p) / float64(allowed)
	if p > allowed && r <= 1 {
		r = math.Nextafter(1, 2)
	}
	return r
}

// bucket: with positions in Lo order (g's order), the candidate sets are
// S(j, b) = {positions ≥ j, hi ≤ b}: a certain set with earliest lo at position j and latest hi
// b lies in S(j, b), whose span is at most b − lo_j, so the best ratio is among them, with
// allowance at most C + r·(b − lo_j) (equal when S(j, b) holds positions j and an admission
// ending at b).
//
// exactBest finds the largest q·P(S) − p·(b − lo_j) over them in integers: it is above q·C
// exactly when Check reports a definite violation. Then Dinkelbach's method maximises the ratio
// P/(C + r·span): for λ, the largest P(S(j, b)) − λ·(C + r·(b − lo_j)) is above 0 exactly when
// some set beats ratio λ, and its argmax (its exact ratio, from integers) is the next λ; the
// ratios increase strictly until none beats the last, which is the largest (a finite number of
// sets; in practice a handful of passes).
func (a *approacher) bucket(g []Event) {
	n := len(g)
	ord := slices.Grow(a.ord[:0], n)[:n]
	for i := range ord {
		ord[i] = i
	}
	slices.SortStableFunc(ord, func(x, y int) int { return cmp.Compare(g[x].Hi(), g[y].Hi()) })
	a.ord = ord
	// The exact pass: is there a definite violation, and which set has the largest excess.
	j, b := a.exactBest(g, ord)
	bestP, bestSpan, lo, hi := a.set(g, j, b)
	q, p, C := a.lim.q, a.lim.p, a.lim.cap
	exact := func(P, span int64) float64 { return ratio(q*P, q*C+p*span) }
	best := exact(bestP, bestSpan)
	r := float64(p) / float64(q) // permits per µs
	for range 100 {
		lam := best
		jj, bb, obj := a.floatBest(g, ord, lam*r)
		if obj-lam*float64(C) <= 0 {
			break
		}
		P, span, l, h := a.set(g, jj, bb)
		if x := exact(P, span); x > best {
			best, bestP, bestSpan, lo, hi = x, P, span, l, h
		} else {
			break
		}
	}
	if bestP == 0 {
		return
	}
	a.offer(g, best, lo, hi, bestP, float64(C)+r*float64(bestSpan))
}

// set returns the permits, span and bounds (widened) of S(j, b).
func (a *approacher) set(g []Event, j int, b int64) (permits, span, lo, hi int64) {
	G := a.lim.g
	lo, hi = math.MaxInt64, math.MinInt64
	for i := j; i < len(g); i++ {
		e := &g[i]
		if e.Hi()+G > b {
			continue
		}
		permits += int64(e.Permits)
		lo, hi = min(lo, e.Lo()-G), max(hi, e.Hi()+G)
	}
	if permits == 0 {
		return 0, 0, 0, 0
	}
	return permits, hi - lo, lo, hi
}

// exactBest returns the (j, b) with the largest q·P(S(j, b)) − p·(b − lo_j), in int64 (within
// the bounds limit.overflow checks): leaf j of a segment tree holds p·(lo_j − base) plus q times
// the permits added at positions ≥ j; admissions are added in Hi order, each to the prefix of
// positions up to its own, and after the admissions ending at b the maximum over the positions
// whose lo ≤ b is taken.
func (a *approacher) exactBest(g []Event, ord []int) (int, int64) {
	G, p, q := a.lim.g, a.lim.p, a.lim.q
	base := g[0].Lo() - G
	t := &a.tree64
	t.reset(len(g), func(j int) int64 { return p * (g[j].Lo() - G - base) })
	bestJ, bestB, best := 0, int64(0), int64(math.MinInt64)
	k := 0 // positions with lo ≤ b
	for i := 0; i < len(ord); {
		b := g[ord[i]].Hi() + G
		for ; i < len(ord) && g[ord[i]].Hi()+G == b; i++ {
			t.add(ord[i]+1, q*int64(g[ord[i]].Permits))
		}
		for k < len(g) && g[k].Lo()-G <= b {
			k++
		}
		m, j := t.max(k)
		if v := m - p*(b-base); v > best {
			best, bestJ, bestB = v, j, b
		}
	}
	return bestJ, bestB
}

// floatBest is exactBest for P − μ·(b − lo_j), μ = λ·r permits per µs, in floating point; it
// also returns that largest value.
func (a *approacher) floatBest(g []Event, ord []int, mu float64) (int, int64, float64) {
	G := a.lim.g
	base := g[0].Lo() - G
	t := &a.tree
	t.reset(len(g), func(j int) float64 { return mu * float64(g[j].Lo()-G-base) })
	bestJ, bestB, best := 0, int64(0), math.Inf(-1)
	k := 0
	for i := 0; i < len(ord); {
		b := g[ord[i]].Hi() + G
		for ; i < len(ord) && g[ord[i]].Hi()+G == b; i++ {
			t.add(ord[i]+1, float64(g[ord[i]].Permits))
		}
		for k < len(g) && g[k].Lo()-G <= b {
			k++
		}
		m, j := t.max(k)
		if v := m - mu*float64(b-base); v > best {
			best, bestJ, bestB = v, j, b
		}
	}
	return bestJ, bestB, best
}

// maxTree holds values v[0..n) of type T and supports adding to a prefix v[0..r) and the
// maximum of a prefix with its first index, in O(log n): a segment tree with lazy adds.
type maxTree[T int64 | float64] struct {
	n    int
	node []T     // maximum of the subtree, its lazy add included
	lazy []T     // added to all of the subtree, not yet in the children
	arg  []int32 // index of the maximum
}

// reset makes the tree hold v[j] = leaf(j) for j < n, n >= 1.
func (m *maxTree[T]) reset(n int, leaf func(j int) T) {
	m.n = n
	m.node = slices.Grow(m.node[:0], 4*n)[:4*n]
	m.lazy = slices.Grow(m.lazy[:0], 4*n)[:4*n]
	m.arg = slices.Grow(m.arg[:0], 4*n)[:4*n]
	clear(m.lazy)
	m.build(1, 0, n, leaf)
}

func (m *maxTree[T]) build(x, l, h int, leaf func(j int) T) {
	if h-l == 1 {
		m.node[x], m.arg[x] = leaf(l), int32(l)
		return
	}
	mid := (l + h) / 2
	m.build(2*x, l, mid, leaf)
	m.build(2*x+1, mid, h, leaf)
	m.pull(x)
}

// pull recomputes node x from its children; ties go to the left, the smaller index.
func (m *maxTree[T]) pull(x int) {
	c := 2 * x
	if m.node[c+1] > m.node[c] {
		c++
	}
	m.node[x], m.arg[x] = m.node[c]+m.lazy[x], m.arg[c]
}

// add adds v to v[0..r).
func (m *maxTree[T]) add(r int, v T) { m.addRange(1, 0, m.n, r, v) }

func (m *maxTree[T]) addRange(x, l, h, r int, v T) {
	if r <= l {
		return
	}
	if h <= r {
		m.node[x] += v
		m.lazy[x] += v
		return
	}
	mid := (l + h) / 2
	m.addRange(2*x, l, mid, r, v)
	m.addRange(2*x+1, mid, h, r, v)
	m.pull(x)
}

// max returns the maximum of v[0..r), 1 <= r <= n, and its first index.
func (m *maxTree[T]) max(r int) (T, int) {
	v, j := m.maxRange(1, 0, m.n, r)
	return v, int(j)
}

func (m *maxTree[T]) maxRange(x, l, h, r int) (T, int32) {
	if h <= r {
		return m.node[x], m.arg[x]
	}
	mid := (l + h) / 2
	v, j := m.maxRange(2*x, l, mid, r)
	if r > mid {
		if w, k := m.maxRange(2*x+1, mid, h, r); w > v {
			v, j = w, k
		}
	}
	return v + m.lazy[x], j
}
