package verify

import (
	"math"
	"slices"

	"github.com/limitbench/limitbench/algorithms"
)

// An unknown outcome may have been admitted at any instant x from its Lo on: the harness gave up
// waiting at Hi, but the request may still have run later, even after the run ended. The sweeps
// below answer whether unknown outcomes could hide a definite violation: whether some admissions
// S of one scope, with at least one unknown outcome among them, violate the contract definitely
// (as the package doc defines it, known admissions at their widened intervals) for some choice
// of the unknowns' instants x_u >= Lo_u, each widened to [x_u − G, x_u + G]. They return the
// largest excess of such a set, 0 when there is none.
//
// Placing every unknown of S at one instant, the latest of their x_u, loses nothing: it keeps
// max hi and can only raise min lo, so it keeps S inside a window (sliding-window), inside an
// aligned window (fixed-window) and does not widen its span (token-bucket). An unknown u can
// then join any window that ends at b >= Lo_u + G and is at least 2G long.

// hide computes LimitReport.UnknownExcess: known holds the admissions sorted by scope, Lo and Hi
// (as pass leaves them), unknown the unknown outcomes, which it sorts the same way.
func (s *sweeper) hide(known, unknown []Event) int64 {
	s.sort.sort(unknown, s.lim.scope)
	key := scopeKey(s.lim.scope)
	var best int64
	i, j := 0, 0
	for j < len(unknown) {
		ku := key(&unknown[j])
		// Skip the scopes without unknown outcomes: they have no definite violation.
		for i < len(known) && key(&known[i]) < ku {
			i++
		}
		i2 := i
		for i2 < len(known) && key(&known[i2]) == ku {
			i2++
		}
		j2 := j + 1
		for j2 < len(unknown) && key(&unknown[j2]) == ku {
			j2++
		}
		g, u := known[i:i2], unknown[j:j2]
		var ord []uint32
		for k := 1; k < len(g); k++ {
			if g[k].Hi() < g[k-1].Hi() {
				ord = s.hiOrder(g)
				break
			}
		}
		switch s.lim.kind {
		case algorithms.SlidingWindow:
			best = max(best, s.slidingHide(g, ord, u))
		case algorithms.FixedWindow:
			best = max(best, s.fixedHide(g, u))
		case algorithms.TokenBucket:
			best = max(best, s.bucketHide(g, ord, u))
		}
		i, j = i2, j2
	}
	return best
}

// slidingHide: with K·W and K·L from limit.windows, for a span ending at b the known
// admissions of condition (i) in it for every placement are {lo ≥ b−K·W+1, hi ≤ b} (as in
// slidingDefinite) and the unknowns that can join are those with Lo + G ≤ b (K·W − 1 ≥ 2G
// always). Both sums step up only at a known hi or an unknown's Lo + G, so those are the ends
// to try. Condition (ii) adds an unknown outcome alone: its permits − L.
func (s *sweeper) slidingHide(g []Event, ord []uint32, u []Event) int64 {
	G, L := s.lim.g, s.lim.l
	_, W, KL := s.lim.windows()
	var sum, uSum, best int64
	for i := range u {
		best = max(best, int64(u[i].Permits)-L)
	}
	i, leave, j, n := 0, 0, 0, len(g)
	for i < n || j < len(u) {
		b := int64(math.MaxInt64)
		if i < n {
			b = g[at(ord, i)].Hi() + G
		}
		if j < len(u) {
			b = min(b, u[j].Lo()+G)
		}
		for ; i < n && g[at(ord, i)].Hi()+G <= b; i++ {
			if e := &g[at(ord, i)]; e.width()+2*G < W {
				sum += int64(e.Permits)
			}
		}
		for ; j < len(u) && u[j].Lo()+G <= b; j++ {
			uSum += int64(u[j].Permits)
		}
		for ; leave < n && g[leave].Lo()-G+W <= b; leave++ {
			if e := &g[leave]; e.width()+2*G < W {
				sum -= int64(e.Permits)
			}
		}
		if uSum > 0 {
			best = max(best, sum+uSum-KL)
		}
	}
	return best
}

// fixedHide: in aligned window k the known admissions wholly inside it, plus the unknowns with
// Lo + G ≤ (k+1)W − 1, provided W − 1 ≥ 2G; a window after every known admission takes all the
// unknowns. Windows are aligned on the Unix epoch (see fixedDefinite).
func (s *sweeper) fixedHide(g []Event, u []Event) int64 {
	G, W, L := s.lim.g, s.lim.w, s.lim.l
	if W-1 < 2*G {
		return 0
	}
	var uTotal int64
	for i := range u {
		uTotal += int64(u[i].Permits)
	}
	best := max(0, uTotal-L)
	var uSum int64
	j := 0
	// window k with sum inside: counted once the next window starts.
	flush := func(k, sum int64) {
		end := (k+1)*W - 1 - s.base // relative
		for ; j < len(u) && u[j].Lo()+G <= end; j++ {
			uSum += int64(u[j].Permits)
		}
		if uSum > 0 {
			best = max(best, sum+uSum-L)
		}
	}
	var k, sum int64
	started := false
	for i := range g {
		e := &g[i]
		kl := floorDiv(s.base+e.Lo()-G, W)
		if kl != floorDiv(s.base+e.Hi()+G, W) {
			continue
		}
		if started && kl != k {
			flush(k, sum)
			sum = 0
		}
		k, started = kl, true
		sum += int64(e.Permits)
	}
	if started {
		flush(k, sum)
	}
	return best
}

// bucketHide maximises f = q·P(S) − p·(b − a) over windows [a, b] with b − a ≥ 2G, S the known
// admissions inside [a, b] and the unknowns with Lo + G ≤ b. As in bucketDefinite, with every
// known admission of hi ≤ b added, the tree holds value(j) = p·(lo_j − base) + q·P{position ≥ j,
// hi ≤ b} for the starts a = lo_j; the starts allowed are the lo values up to b − 2G (a prefix
// maximum) and a = b − 2G itself. A known admission is at least 2G wide, so the only ones inside
// [b − 2G, b] start at b − 2G and are in the prefix: the start b − 2G adds the unknowns alone,
// f = p·2G less. Between the ends where a known admission enters or an unknown's Lo + G is
// reached, f only falls as b grows, so those are the ends to try.
func (s *sweeper) bucketHide(g []Event, ord []uint32, u []Event) int64 {
	G, p, q := s.lim.g, s.lim.p, s.lim.q
	qC := q * s.lim.cap
	n := len(g)
	base := u[0].Lo() - G
	if n > 0 {
		base = min(base, g[0].Lo()-G)
		vals := slices.Grow(s.vals[:0], s.max)
		for i := range g {
			vals = append(vals, p*(g[i].Lo()-G-base))
		}
		s.vals = vals
		s.tree.reset(vals, s.max)
	}
	var uSum, best int64
	in, allowed, j := 0, 0, 0 // known entered (Hi order), known with lo ≤ b − 2G, unknowns
	for in < n || j < len(u) {
		b := int64(math.MaxInt64)
		if in < n {
			b = g[at(ord, in)].Hi() + G
		}
		if j < len(u) {
			b = min(b, u[j].Lo()+G)
		}
		for ; in < n && g[at(ord, in)].Hi()+G <= b; in++ {
			k := at(ord, in)
			s.tree.add(k+1, q*int64(g[k].Permits))
		}
		for allowed < n && g[allowed].Lo()+G <= b {
			allowed++
		}
		for ; j < len(u) && u[j].Lo()+G <= b; j++ {
			uSum += q * int64(u[j].Permits)
		}
		if uSum == 0 {
			continue
		}
		f := p * (b - 2*G - base)
		if allowed > 0 {
			f = max(f, s.tree.max(allowed))
		}
		if f += uSum - p*(b-base); f > qC {
			best = max(best, ceilDiv(f-qC, q))
		}
	}
	return best
}

// fhHide computes UnknownExcess for first-hit-window (package doc): per scope with unknown
// outcomes, the larger of the token-bucket hide of condition (b) (C = 2L, r = L/W) and
//
//	max over s in P̂ of P{admissions: lo ≤ s + W − 1, hi ≥ s} + U(s) − L,  U(s) > 0,
//
// U(s) = P{unknown outcomes: lo ≤ s + W − 1}, everything that can lie in a window [s, s+W).
// The sum changes only where an admission or an unknown outcome enters (s = lo − W + 1), an
// admission leaves (s = hi + 1), or P̂ begins an interval, so those are the starts to try.
func (s *sweeper) fhHide(adm, unknown, rest []Event) int64 {
	G, W, L := s.lim.g, s.lim.w, s.lim.l
	var best int64
	lim := s.lim
	s.fhEach(adm, unknown, rest, func(sc fhScope) {
		u, g := sc.unknown, sc.adm
		if len(u) == 0 {
			return
		}
		var ord []uint32
		s.max = max(s.max, len(g))
		for i := 1; i < len(g); i++ {
			if g[i].Hi() < g[i-1].Hi() {
				ord = s.hiOrder(g)
				break
			}
		}
		s.lim = lim.bucket()
		best = max(best, s.bucketHide(g, ord, u))
		s.lim = lim
		starts := s.fhStarts(sc, s.fhChain(sc))
		var sum, uSum int64
		i, out, j, k, n := 0, 0, 0, 0, len(g)
		for {
			// The next start to try: the least of the next entries, exits and interval start.
			c := int64(posInf)
			if i < n {
				c = g[i].Lo() - G - W + 1
			}
			if out < n {
				c = min(c, g[at(ord, out)].Hi()+G+1)
			}
			if j < len(u) {
				c = min(c, u[j].Lo()-G-W+1)
			}
			for k < len(starts) && starts[k].hi < c {
				k++
			}
			if k == len(starts) || c == posInf {
				break
			}
			c = max(c, starts[k].lo)
			for ; i < n && g[i].Lo()-G-W+1 <= c; i++ {
				sum += int64(g[i].Permits)
			}
			for ; out < n && g[at(ord, out)].Hi()+G+1 <= c; out++ {
				sum -= int64(g[at(ord, out)].Permits)
			}
			for ; j < len(u) && u[j].Lo()-G-W+1 <= c; j++ {
				uSum += int64(u[j].Permits)
			}
			if uSum > 0 {
				best = max(best, sum+uSum-L)
			}
		}
	})
	return best
}
