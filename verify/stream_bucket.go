package verify

import "math"

// The streaming forms of the token-bucket sweeps (bucketDefinite and bucketHide over one
// startMax, the ends of the admissions and of the unknown outcomes merged; bucketPossible),
// and what startMax answers for them beyond maxStarts: a prefix maximum past the last end, and
// the start that gave a maximum.

// bucketSweep is a token bucket's sweeps over one scope.
type bucketSweep struct {
	based bool
	base  int64    // the scope's first lo − G: values are relative to it (see limit.overflow)
	sm    startMax // the starts of the definite and hide sets
	group []int
	i     int // the next Hi-order entry
	allow int // the first position of lo + G above the last end
	u     int // the next unknown outcome
	uSum  int64
	hide  int64
	pos   bucketPossible
}

// bucketPossible is bucketPossible's state, with what describes its worst set: the start of
// the best candidate a (its hi + G) and the first position not passed before it.
type bucketPossible struct {
	k, j0    int // the next to enter (Lo order), the next to pass (Hi order)
	a        int64
	aT, aLo  int64 // the start a came from, and the least lo − G of its set
	sk, sj0  int64
	passed   flags // the positions passed in Hi order
	unpassed int   // the first position not passed
	maxHi    int64 // the largest hi + G entered
	haveA    bool
}

func (w *bucketSweep) finish(sl *streamLimit, _ *streamScope) { sl.hide = max(sl.hide, w.hide) }

func (w *bucketSweep) step(sl *streamLimit, sc *streamScope, F int64) needs {
	if !w.based {
		lo := int64(posInf)
		if !sc.adm.empty() {
			lo = sc.adm.at(sc.adm.off).Lo()
		}
		if !sc.unknown.empty() {
			lo = min(lo, sc.unknown.at(sc.unknown.off).Lo())
		}
		if lo == posInf {
			return needs{adm: sc.adm.end(), hi: sc.hiOrd.end(), unknown: sc.unknown.end(), rest: sc.rest.end()}
		}
		w.based, w.base = true, lo-sl.lim.g
		p := sl.lim.p
		w.sm.reset(func(j int) int64 { return p * (sc.adm.at(j).Lo() - sl.lim.g - w.base) }, sl.lim.q)
	}
	w.ends(sl, sc)
	w.possible(sl, sc)
	sl.hide = max(sl.hide, w.hide)
	return needs{adm: min(w.sm.need(), w.pos.k), hi: min(w.i, w.pos.j0), unknown: w.u, rest: sc.rest.end()}
}

// ends runs the definite sets and the hide sets over the final ends: the admissions' hi + G
// and the unknown outcomes' Lo + G, merged.
func (w *bucketSweep) ends(sl *streamLimit, sc *streamScope) {
	G, p, q := sl.lim.g, sl.lim.p, sl.lim.q
	qC := q * sl.lim.cap
	for {
		b, known := sc.nextEnd(w.i, w.u, G)
		if b == posInf {
			return
		}
		if known {
			w.group = w.group[:0]
			for ; w.i < sc.hiOrd.end() && sc.hiOrd.at(w.i).hi+G == b; w.i++ {
				w.group = append(w.group, sc.hiOrd.at(w.i).pos)
			}
			m := w.sm.end(&sc.adm, w.group, sc.adm.end())
			if f := m - p*(b-w.base); f > qC {
				top := w.group[len(w.group)-1]
				sl.definiteAt(sc, b, ceilDiv(f-qC, q), func() Where { return w.where(sl, sc, b, m, top) })
			}
		}
		for ; w.allow < sc.adm.end() && sc.adm.at(w.allow).Lo()+G <= b; w.allow++ {
		}
		for ; w.u < sc.unknown.end() && sc.unknown.at(w.u).Lo()+G <= b; w.u++ {
			w.uSum += q * int64(sc.unknown.at(w.u).Permits)
		}
		if w.uSum == 0 {
			continue
		}
		f := p * (b - 2*G - w.base)
		if w.allow > 0 {
			f = max(f, w.sm.upTo(&sc.adm, w.allow-1))
		}
		if f += w.uSum - p*(b-w.base); f > qC {
			w.hide = max(w.hide, ceilDiv(f-qC, q))
		}
	}
}

// where describes the definite set whose value at end b is m, top the last position of an
// admission ending at b, as sweeper.describe does: {lo ≥ a, hi ≤ b} for the largest start a
// of value m.
func (w *bucketSweep) where(sl *streamLimit, sc *streamScope, b, m int64, top int) Where {
	a, permits := w.sm.argmax(&sc.adm, top, m)
	wh := Where{Lo: sl.s.hdr.Base + a - sl.lim.g, Hi: sl.s.hdr.Base + b, Permits: permits / sl.lim.q}
	wh.Subject, wh.Client = sl.names(sc)
	wh.Allowed = sl.lim.cap + sl.lim.p*(wh.Hi-wh.Lo)/sl.lim.q
	wh.Excess = wh.Permits - wh.Allowed
	return wh
}

// possible is bucketPossible: for each distinct lo value b, the sets {lo ≤ b, hi ≥ a}, a = b
// (meet) or the hi + G of an admission passed in Hi order (a running maximum).
func (w *bucketSweep) possible(sl *streamLimit, sc *streamScope) {
	G, p, q := sl.lim.g, sl.lim.p, sl.lim.q
	qC := q * sl.lim.cap
	v := &w.pos
	for v.k < sc.adm.end() {
		b := sc.adm.at(v.k).Lo() - G
		for ; v.k < sc.adm.end() && sc.adm.at(v.k).Lo()-G == b; v.k++ {
			v.sk += q * int64(sc.adm.at(v.k).Permits)
			v.maxHi = max(v.maxHi, sc.adm.at(v.k).Hi()+G)
		}
		for ; v.j0 < sc.hiOrd.end(); v.j0++ {
			j := sc.hiOrd.at(v.j0).pos
			e := sc.adm.at(j)
			hi := e.Hi() + G
			if hi >= b {
				break
			}
			if x := p*(hi-w.base) - v.sj0; !v.haveA || x >= v.a {
				for v.passed.get(v.unpassed) {
					v.unpassed++
				}
				v.a, v.aT, v.aLo, v.haveA = x, hi, sc.adm.at(v.unpassed).Lo()-G, true
			}
			v.sj0 += q * int64(e.Permits)
			v.passed.set(j)
		}
		for v.passed.get(v.unpassed) {
			v.unpassed++
		}
		v.passed.dropTo(v.unpassed)
		f, fromA := v.sk-v.sj0, false
		if v.haveA {
			if x := v.a + v.sk - p*(b-w.base); x > f {
				f, fromA = x, true
			}
		}
		if f > qC {
			sl.possibleAt(sc, b, ceilDiv(f-qC, q), 1, func() Where { return w.wherePossible(sl, sc, b, f, fromA) })
		}
	}
}

// wherePossible describes the possible set of value f at b, as sweeper.describe does: the
// candidate start a is the best passed admission's hi + G (fromA) or b itself.
func (w *bucketSweep) wherePossible(sl *streamLimit, sc *streamScope, b, f int64, fromA bool) Where {
	G, p, q := sl.lim.g, sl.lim.p, sl.lim.q
	v := &w.pos
	a, lo, minHi := b, int64(0), int64(math.MaxInt64)
	if fromA {
		a, lo, minHi = v.aT, v.aLo, v.aT
	} else {
		// The set is every admission entered and not passed.
		for v.passed.get(v.unpassed) {
			v.unpassed++
		}
		lo = sc.adm.at(v.unpassed).Lo() - G
		for j := v.unpassed; j < v.k; j++ {
			if !v.passed.get(j) {
				minHi = min(minHi, sc.adm.at(j).Hi()+G)
			}
		}
	}
	base := sl.s.hdr.Base
	wh := Where{Lo: base + lo, Hi: base + v.maxHi, Permits: (f + p*(b-a)) / q}
	wh.Subject, wh.Client = sl.names(sc)
	wh.Allowed = sl.lim.cap + p*max(0, b-minHi)/q
	wh.Excess = wh.Permits - wh.Allowed
	return wh
}

// upTo returns the largest value over the starts at positions up to j, which may lie past the
// last end: a start that no admission at or after it was added to is worth val.
func (m *startMax) upTo(ev *queue[Event], j int) int64 {
	r := int64(math.MinInt64)
	if m.fin != math.MinInt64 && m.first > 0 {
		r = m.fin + m.sum
	}
	if m.wk > 0 && j >= m.wb {
		r = max(r, m.tree.max(min(j, m.wb+m.wk-1)-m.wb+1))
	}
	if past := m.first; m.wk > 0 {
		if past = m.wb + m.wk; j >= past {
			r = max(r, m.val(j))
		}
	} else if j >= past {
		r = max(r, m.val(j))
	}
	return r
}

// argmax returns the lo of the start of the largest position up to top whose value was v at the
// last end (v its maximum there), and q·P of its set: the set Check's describe finds. It reads
// what end took the maximum over: the window's leaves and the settled starts' fin as they stood.
func (m *startMax) argmax(ev *queue[Event], top int, v int64) (lo, qPermits int64) {
	at := &m.at
	if at.wk > 0 && top >= at.wb {
		m.vals = m.tree.leaves(m.vals[:0], min(at.wk, top-at.wb+1))
		for j := len(m.vals) - 1; j >= 0; j-- {
			if m.vals[j] == v {
				k := at.wb + j
				if at.fin+m.sum != v || at.fin == math.MinInt64 || k > at.finArg {
					return ev.at(k).Lo(), v - m.val(k)
				}
				break
			}
		}
	}
	return at.finLo, v - at.finVal
}
