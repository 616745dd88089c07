package verify

import (
	"container/heap"
	"math"
)

// fhEndsState runs first-hit-window's definite conditions, possible sets and hides over one
// scope behind the frontier of P̂ (firstHitSweep.phi), as fhEnds, fhRecord, fhPossible and
// fhHide do, and records the ends in order once no condition can find an earlier one.
type fhEndsState struct {
	based  bool
	base   int64    // the scope's first lo − G: (b)'s values are relative to it
	sb, sd startMax // (b)'s token bucket and (d)'s windows
	group  []int
	ai     int // (a): the next admission, Lo order
	i, u   int // the next Hi-order entry; the next unknown outcome (the bucket's hide)
	nd     int // (d) may read the values of the positions before it
	allow  int // the bucket's hide: the first position of lo + G above the last end
	uSum   int64
	// (c): entered and gone admissions, their permits, the interval of P̂ that starts last at
	// or before b − W, the next admission to leave.
	cin, cgone flags
	csum       int64
	cp, cleave int
	pend       heapOf[fhPendingEnd] // in fhEnd.cmp order
	// possible: the next to enter (Lo order), to leave (Hi order), the interval of P̂.
	pin, pout, pk int
	psum          int64
	pgone         flags
	pdone         bool
	// the hide over P̂: the next admission, exit, unknown outcome and interval of P̂.
	hin, hout, hu, hk int
	hsum, husum       int64
	hdone             bool
	hide              int64
}

// fhPendingEnd is an end found, waiting to be recorded in order, with its set described when it
// could become the worst.
type fhPendingEnd struct {
	fhEnd
	where Where
}

// from returns Log.From relative to Base, or −∞ without one.
func (sl *streamLimit) from() int64 {
	if sl.s.hdr.From == 0 {
		return negInf
	}
	return sl.s.hdr.From - sl.s.hdr.Base
}

func (s *fhEndsState) step(sl *streamLimit, sc *streamScope, w *firstHitSweep, F int64) {
	if !s.based {
		lo := int64(posInf)
		for _, q := range []*queue[Event]{&sc.adm, &sc.unknown} {
			if !q.empty() {
				lo = min(lo, q.at(q.off).Lo())
			}
		}
		if lo == posInf {
			return
		}
		s.start(sl, sc, w, lo-sl.lim.g)
	}
	s.instants(sl, sc)
	s.ends(sl, sc, w, F)
	s.release(sl, sc, F)
	s.possible(sl, sc, w, F)
	s.hideOverP(sl, sc, w, F)
}

// start sets the values of (b)'s and (d)'s starts.
func (s *fhEndsState) start(sl *streamLimit, sc *streamScope, w *firstHitSweep, base int64) {
	G, W, L := sl.lim.g, sl.lim.w, sl.lim.l
	bk := &sl.bk
	from := sl.from()
	s.based, s.base = true, base
	s.sb.reset(func(j int) int64 { return bk.p * (sc.adm.at(j).Lo() - G - base) }, bk.q)
	s.sd.reset(func(j int) int64 {
		if a := sc.adm.at(j).Lo() - G; w.cl.counted(a, from, W) {
			return L * w.cl.before(a, W)
		}
		return fhNone
	}, 1)
}

// instants finds condition (a): one admission of more than L permits, or (without granularity)
// admissions of more than L at one exact instant, group of Lo by group.
func (s *fhEndsState) instants(sl *streamLimit, sc *streamScope) {
	G, L := sl.lim.g, sl.lim.l
	for s.ai < sc.adm.end() {
		t := sc.adm.at(s.ai).Lo()
		var sum int64
		for ; s.ai < sc.adm.end() && sc.adm.at(s.ai).Lo() == t; s.ai++ {
			e := sc.adm.at(s.ai)
			if p := int64(e.Permits); p > L {
				b, a := e.Hi()+G, e.Lo()-G
				s.push(sl, sc, fhEnd{b: b, excess: p - L, a: a, cond: fhInstant}, func() Where {
					if a == b {
						return sl.whereExact(sc, b)
					}
					return sl.whereIn(sc, s.ai, s.ai+1, L, func(*Event) bool { return true })
				})
			}
			if G == 0 && e.width() == 0 {
				sum += int64(e.Permits)
			}
		}
		if sum > L {
			s.push(sl, sc, fhEnd{b: t, excess: sum - L, a: t, cond: fhInstant}, func() Where { return sl.whereExact(sc, t) })
		}
	}
}

// whereExact describes the admissions decided exactly at t, as fhDescribe does.
func (sl *streamLimit) whereExact(sc *streamScope, t int64) Where {
	return sl.whereIn(sc, sc.adm.off, sc.adm.end(), sl.lim.l, func(e *Event) bool { return e.Lo() == t && e.width() == 0 })
}

// push keeps an end for release, describing its set when it could be the worst (or, found by
// (a) or (b), the worst of those): the worst only grows, so one that cannot be now never will.
func (s *fhEndsState) push(sl *streamLimit, sc *streamScope, e fhEnd, where func() Where) {
	x := fhPendingEnd{fhEnd: e}
	if sl.worst.better(e.excess, sc.key, e.b) || (e.cond&fhChained == 0 && sl.worstFree.better(e.excess, sc.key, e.b)) {
		x.where = where()
	}
	if s.pend.less == nil {
		s.pend.less = func(a, b fhPendingEnd) bool { return a.cmp(b.fhEnd) < 0 }
	}
	heap.Push(&s.pend, x)
}

// ends runs conditions (b), (c) and (d) at each final end that P̂ is final far enough past (its
// clumps, up to W after it, and, with From, up to W after From), with the hide of (b)'s
// bucket at the unknown outcomes' ends merged in.
func (s *fhEndsState) ends(sl *streamLimit, sc *streamScope, w *firstHitSweep, F int64) {
	G, W := sl.lim.g, sl.lim.w
	from := sl.from()
	ready := func(b int64) bool {
		return w.phi == posInf || (w.phi > b+W && (from == negInf || w.phi > from+W))
	}
	for s.nd < sc.adm.end() && (w.phi == posInf || sc.adm.at(s.nd).Lo()-G < w.phi-W) {
		s.nd++
	}
	for {
		b, known := sc.nextEnd(s.i, s.u, G)
		if b == posInf || !ready(b) {
			return
		}
		if known {
			s.group = s.group[:0]
			for ; s.i < sc.hiOrd.end() && sc.hiOrd.at(s.i).hi+G == b; s.i++ {
				s.group = append(s.group, sc.hiOrd.at(s.i).pos)
			}
			s.count(sl, sc, b)
			s.chain(sl, sc, w, b)
			s.split(sl, sc, w, b)
		}
		s.bucketHide(sl, sc, b)
	}
}

// count is condition (b): the token bucket (2L, L/W) over the sets {lo ≥ a, hi ≤ b}.
func (s *fhEndsState) count(sl *streamLimit, sc *streamScope, b int64) {
	bk := &sl.bk
	m := s.sb.end(&sc.adm, s.group, sc.adm.end())
	f := m - bk.p*(b-s.base)
	if f <= bk.q*bk.cap {
		return
	}
	top := s.group[len(s.group)-1]
	s.push(sl, sc, fhEnd{b: b, excess: ceilDiv(f-bk.q*bk.cap, bk.q), cond: fhCount}, func() Where {
		a, qp := s.sb.argmax(&sc.adm, top, m)
		wh := Where{Lo: sl.s.hdr.Base + a - sl.lim.g, Hi: sl.s.hdr.Base + b, Permits: qp / bk.q}
		wh.Subject, wh.Client = sl.names(sc)
		wh.Allowed = bk.cap + bk.p*(wh.Hi-wh.Lo)/bk.q
		wh.Excess = wh.Permits - wh.Allowed
		return wh
	})
}

// chain is condition (c): S(b) = {lo ≥ a, hi ≤ b}, a = y + W, y the latest point of P̂ at or
// before b − W.
func (s *fhEndsState) chain(sl *streamLimit, sc *streamScope, w *firstHitSweep, b int64) {
	G, W, L := sl.lim.g, sl.lim.w, sl.lim.l
	top := int64(negInf)
	for _, j := range s.group {
		top = max(top, sc.adm.at(j).Lo()-G)
		if !s.cgone.get(j) {
			s.csum += int64(sc.adm.at(j).Permits)
			s.cin.set(j)
		}
	}
	t := b - W
	s.cp = max(s.cp, w.ph.off)
	for s.cp+1 < w.ph.end() && w.ph.at(s.cp+1).lo <= t {
		s.cp++
	}
	a := int64(negInf)
	if s.cp < w.ph.end() && w.ph.at(s.cp).lo <= t {
		a = min(w.ph.at(s.cp).hi, t) + W
	}
	for ; s.cleave < sc.adm.end() && sc.adm.at(s.cleave).Lo()-G < a; s.cleave++ {
		if s.cin.get(s.cleave) {
			s.csum -= int64(sc.adm.at(s.cleave).Permits)
		}
		s.cgone.set(s.cleave)
	}
	s.cin.dropTo(s.cleave)
	s.cgone.dropTo(s.cleave)
	if s.csum > L && top >= a {
		s.push(sl, sc, fhEnd{b: b, excess: s.csum - L, a: a, cond: fhChain}, func() Where {
			return sl.whereIn(sc, s.cleave, sc.adm.end(), L, func(e *Event) bool { return e.Lo()-G >= a && e.Hi()+G <= b })
		})
	}
}

// split is condition (d): the starts' values L·before(a), the sets' N·L, with clumps.
func (s *fhEndsState) split(sl *streamLimit, sc *streamScope, w *firstHitSweep, b int64) {
	G, W, L := sl.lim.g, sl.lim.w, sl.lim.l
	m := s.sd.end(&sc.adm, s.group, s.nd)
	f := m - L*w.cl.upTo(b)
	if f <= 0 {
		return
	}
	top := s.group[len(s.group)-1]
	s.push(sl, sc, fhEnd{b: b, excess: f, cond: fhSplit}, func() Where {
		lo, permits := s.sd.argmax(&sc.adm, top, m)
		a := lo - G
		wh := Where{Lo: sl.s.hdr.Base + a, Hi: sl.s.hdr.Base + b, Permits: permits,
			Allowed: L * (w.cl.upTo(b) - w.cl.before(a, W))}
		wh.Subject, wh.Client = sl.names(sc)
		wh.Excess = wh.Permits - wh.Allowed
		return wh
	})
}

// bucketHide is the token-bucket hide of condition (b)'s bucket at end b (bucketHide).
func (s *fhEndsState) bucketHide(sl *streamLimit, sc *streamScope, b int64) {
	G := sl.lim.g
	bk := &sl.bk
	for ; s.allow < sc.adm.end() && sc.adm.at(s.allow).Lo()+G <= b; s.allow++ {
	}
	for ; s.u < sc.unknown.end() && sc.unknown.at(s.u).Lo()+G <= b; s.u++ {
		s.uSum += bk.q * int64(sc.unknown.at(s.u).Permits)
	}
	if s.uSum == 0 {
		return
	}
	f := bk.p * (b - 2*G - s.base)
	if s.allow > 0 {
		f = max(f, s.sb.upTo(&sc.adm, s.allow-1))
	}
	if f += s.uSum - bk.p*(b-s.base); f > bk.q*bk.cap {
		s.hide = max(s.hide, ceilDiv(f-bk.q*bk.cap, bk.q))
	}
}

// release records, in order, the ends that no condition can now precede: below the next
// admission's Lo ((a)) and the next final end ((b) to (d)).
func (s *fhEndsState) release(sl *streamLimit, sc *streamScope, F int64) {
	bound := int64(posInf)
	if F != posInf {
		bound = F
		if s.i < sc.hiOrd.end() {
			bound = min(bound, sc.hiOrd.at(s.i).hi+sl.lim.g)
		}
	}
	from := sl.from()
	for s.pend.Len() > 0 && s.pend.s[0].b < bound {
		b := s.pend.s[0].b
		at := newFhAtEnd()
		var best, free Where
		for s.pend.Len() > 0 && s.pend.s[0].b == b {
			x := heap.Pop(&s.pend).(fhPendingEnd)
			isBest, isFree := at.add(x.fhEnd)
			if isBest {
				best = x.where
			}
			if isFree {
				free = x.where
			}
		}
		if b < from {
			continue
		}
		if at.chained() {
			sl.chained++
		}
		sl.definiteAt(sc, b, at.best.excess, func() Where { return best })
		if at.free.excess > 0 && sl.worstFree.better(at.free.excess, sc.key, b) {
			sl.worstFree = found{excess: at.free.excess, key: sc.key, b: b, where: free}
		}
	}
}

// possible is fhPossible: for each distinct lo b, with s* the least point of P̂ at or after
// b − W + 1, T = {lo ≤ b, hi ≥ s*}; a group waits until P̂ and the Hi order are final past its
// largest hi.
func (s *fhEndsState) possible(sl *streamLimit, sc *streamScope, w *firstHitSweep, F int64) {
	G, W, L := sl.lim.g, sl.lim.w, sl.lim.l
	from := sl.from()
	final := func(t int64) int64 { // exits below t are final: hi < F
		if F == posInf {
			return t
		}
		return min(t, F+G)
	}
	for !s.pdone && s.pin < sc.adm.end() {
		b := sc.adm.at(s.pin).Lo() - G
		top, j := int64(negInf), s.pin
		for ; j < sc.adm.end() && sc.adm.at(j).Lo()-G == b; j++ {
			top = max(top, sc.adm.at(j).Hi()+G)
		}
		if F != posInf && (w.phi <= top || F < top-G) {
			return
		}
		for ; s.pin < j; s.pin++ {
			if !s.pgone.get(s.pin) {
				s.psum += int64(sc.adm.at(s.pin).Permits)
			}
		}
		first := b - W + 1
		var ok bool
		if s.pk, ok = w.skip(s.pk, first); !ok {
			if w.phi == posInf {
				s.pdone = true
				return
			}
			s.exit(sl, sc, final(w.phi)) // s* ≥ phi > top: no violation at b
			continue
		}
		start := max(w.ph.at(s.pk).lo, first)
		s.exit(sl, sc, final(start))
		if s.psum > L && top >= start && b >= from {
			sl.possibleAt(sc, b, s.psum-L, 1, func() Where {
				return sl.whereIn(sc, sc.adm.off, s.pin, L, func(e *Event) bool { return e.Lo()-G <= b && e.Hi()+G >= start })
			})
		}
	}
}

// exit passes, in Hi order, the admissions of hi + G below t: those entered leave T, the others
// are gone before they enter.
func (s *fhEndsState) exit(sl *streamLimit, sc *streamScope, t int64) {
	for ; s.pout < sc.hiOrd.end(); s.pout++ {
		h := sc.hiOrd.at(s.pout)
		if h.hi+sl.lim.g >= t {
			break
		}
		if h.pos < s.pin {
			s.psum -= int64(h.permits)
		}
		s.pgone.set(h.pos)
	}
	s.pgone.dropTo(s.pin)
}

// skip returns the first interval of P̂ from k whose hi is at least c, and whether there is
// one. An interval is passed only when its hi is final: it is not the last one, or its hi is
// below phi − 1 (a later part of P̂ cannot merge into it); the last one, which may still grow,
// is kept.
func (w *firstHitSweep) skip(k int, c int64) (int, bool) {
	k = max(k, w.ph.off)
	for k < w.ph.end() && w.ph.at(k).hi < c && (k+1 < w.ph.end() || w.ph.at(k).hi < w.phi-1 || w.phi == posInf) {
		k++
	}
	return k, k < w.ph.end() && w.ph.at(k).hi >= c
}

// hideOverP is the second part of fhHide: over the points s of P̂, what can lie in [s, s + W)
// with the unknown outcomes counted as admissions, at the candidate starts in order.
func (s *fhEndsState) hideOverP(sl *streamLimit, sc *streamScope, w *firstHitSweep, F int64) {
	G, W, L := sl.lim.g, sl.lim.w, sl.lim.l
	cF := int64(math.MaxInt64) // a candidate still to come is at least cF
	if F != posInf {
		cF = F - G - W + 1
	}
	for !s.hdone {
		c := int64(posInf)
		if s.hin < sc.adm.end() {
			c = sc.adm.at(s.hin).Lo() - G - W + 1
		}
		if s.hout < sc.hiOrd.end() {
			c = min(c, sc.hiOrd.at(s.hout).hi+G+1)
		}
		if s.hu < sc.unknown.end() {
			c = min(c, sc.unknown.at(s.hu).Lo()-G-W+1)
		}
		if c >= cF {
			return
		}
		if c == posInf {
			s.hdone = true
			return
		}
		var ok bool
		if s.hk, ok = w.skip(s.hk, c); !ok {
			s.hdone = w.phi == posInf
			return
		}
		if c = max(c, w.ph.at(s.hk).lo); c >= cF {
			return
		}
		for ; s.hin < sc.adm.end() && sc.adm.at(s.hin).Lo()-G-W+1 <= c; s.hin++ {
			s.hsum += int64(sc.adm.at(s.hin).Permits)
		}
		for ; s.hout < sc.hiOrd.end() && sc.hiOrd.at(s.hout).hi+G+1 <= c; s.hout++ {
			s.hsum -= int64(sc.hiOrd.at(s.hout).permits)
		}
		for ; s.hu < sc.unknown.end() && sc.unknown.at(s.hu).Lo()-G-W+1 <= c; s.hu++ {
			s.husum += int64(sc.unknown.at(s.hu).Permits)
		}
		if s.husum > 0 {
			s.hide = max(s.hide, s.hsum+s.husum-L)
		}
	}
}

// needs returns the first positions of the scope's queues that w may still read, and drops
// what it keeps itself and no longer reads: the requests' union before the next window, P̂
// before the intervals its sweeps are at, clumps that every start still to value counts.
func (w *firstHitSweep) needs(sl *streamLimit, sc *streamScope) needs {
	s := &w.ends
	c := &w.ch
	n := needs{
		adm:     min(c.pa, w.ra, s.ai, s.sb.need(), s.sd.need(), s.cleave, s.pin, s.hin),
		hi:      min(s.i, s.pout, s.hout),
		unknown: min(w.ru, s.u, s.hu),
		rest:    min(c.pr, w.rr),
	}
	if !s.based {
		n.adm, n.hi, n.unknown = sc.adm.off, sc.hiOrd.off, sc.unknown.off
		return n
	}
	w.req.dropTo(min(w.reqAt, c.r))
	w.ph.dropTo(min(s.cp, s.pk, s.hk, w.cl.i))
	// (d) values the starts from sd.need() on, and describes its best settled one too.
	if j := max(s.sd.need(), sc.adm.off); j < sc.adm.end() {
		lo := sc.adm.at(j).Lo()
		if s.sd.fin != math.MinInt64 {
			lo = min(lo, s.sd.finLo)
		}
		k := int(w.cl.before(lo-sl.lim.g, sl.lim.w))
		w.cl.start.dropTo(k)
		w.cl.last.dropTo(k)
	}
	return n
}
