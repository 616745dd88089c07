package verify

import (
	"math"

	"github.com/limitbench/limitbench/algorithms"
)

// The streaming forms of the sliding-window and fixed-window sweeps (sweep.go, hide.go): the
// same sums over the same sets, kept from step to step, each end processed once every event
// that can be in its set has arrived. Times are relative to the header's Base and widened as
// in the batch sweeps.

// newSweeper returns the streaming sweeps of lim's kind.
func newSweeper(lim limit) scopeSweeper {
	switch lim.kind {
	case algorithms.SlidingWindow:
		return &slidingSweep{}
	case algorithms.FixedWindow:
		return &fixedSweep{}
	case algorithms.TokenBucket:
		return &bucketSweep{}
	case algorithms.FirstHitWindow:
		return newFirstHitSweep()
	}
	return nil
}

// slidingSweep is slidingDefinite with slidingHide (the same sum over the same sets, at the
// ends of the admissions and of the unknown outcomes merged), and slidingPossible.
type slidingSweep struct {
	i, leave, u int // the next Hi-order entry, the next to leave (Lo order), the next unknown
	sum, uSum   int64
	pi, pleave  int // possible: the next to enter (Lo order), the next to leave (Hi order)
	psum        int64
	hide        int64
}

func (w *slidingSweep) step(sl *streamLimit, sc *streamScope, F int64) needs {
	w.definite(sl, sc)
	w.possible(sl, sc)
	sl.hide = max(sl.hide, w.hide)
	return needs{adm: min(w.leave, w.pi), hi: min(w.i, w.pleave), unknown: w.u, rest: sc.rest.end()}
}

func (w *slidingSweep) finish(*streamLimit, *streamScope) {}

func (w *slidingSweep) definite(sl *streamLimit, sc *streamScope) {
	G, L := sl.lim.g, sl.lim.l
	_, KW, KL := sl.lim.windows()
	narrow := KW - 2*G
	for {
		b, known := sc.nextEnd(w.i, w.u, G)
		if b == posInf {
			return
		}
		in, one := false, int64(0)
		for ; w.i < sc.hiOrd.end(); w.i++ {
			e := sc.adm.at(sc.hiOrd.at(w.i).pos)
			if e.Hi()+G != b {
				break
			}
			one = max(one, int64(e.Permits))
			if e.width() < narrow {
				w.sum += int64(e.Permits)
				in = true
			}
		}
		for ; w.u < sc.unknown.end() && sc.unknown.at(w.u).Lo()+G <= b; w.u++ {
			p := int64(sc.unknown.at(w.u).Permits)
			w.uSum += p
			w.hide = max(w.hide, p-L)
		}
		for ; w.leave < sc.adm.end(); w.leave++ {
			e := sc.adm.at(w.leave)
			if e.Lo() > b+G-KW {
				break
			}
			if e.width() < narrow {
				w.sum -= int64(e.Permits)
			}
		}
		if w.uSum > 0 {
			w.hide = max(w.hide, w.sum+w.uSum-KL)
		}
		if !known {
			continue
		}
		var excess int64
		if in && w.sum > KL {
			excess = w.sum - KL
		}
		if one-L > excess {
			sl.definiteAt(sc, b, one-L, func() Where { return sl.single(sc, b) })
		} else if excess > 0 {
			sl.definiteAt(sc, b, excess, func() Where {
				return sl.whereIn(sc, w.leave, sc.adm.end(), KL, func(e *Event) bool {
					return e.Lo()-G > b-KW && e.Hi()+G <= b && e.width()+2*G < KW
				})
			})
		}
	}
}

func (w *slidingSweep) possible(sl *streamLimit, sc *streamScope) {
	G, W, L := sl.lim.g, sl.lim.w, sl.lim.l
	for w.pi < sc.adm.end() {
		lo := sc.adm.at(w.pi).Lo()
		for ; w.pi < sc.adm.end() && sc.adm.at(w.pi).Lo() == lo; w.pi++ {
			w.psum += int64(sc.adm.at(w.pi).Permits)
		}
		b := lo - G
		for ; w.pleave < sc.hiOrd.end(); w.pleave++ {
			h := sc.hiOrd.at(w.pleave)
			if h.hi > b-W-G {
				break
			}
			w.psum -= int64(h.permits)
		}
		if w.psum > L {
			sl.possibleAt(sc, b, w.psum-L, 1, func() Where {
				return sl.whereIn(sc, sc.adm.off, w.pi, L, func(e *Event) bool { return e.Lo()-G <= b && e.Hi()+G > b-W })
			})
		}
	}
}

// single describes the admission ending at b with the most permits, the first of them, as
// sweeper.describe does for sliding-window's condition (ii).
func (sl *streamLimit) single(sc *streamScope, b int64) Where {
	G := sl.lim.g
	var one *Event
	for i := sc.adm.off; i < sc.adm.end(); i++ {
		if e := sc.adm.at(i); e.Hi()+G == b && (one == nil || e.Permits > one.Permits) {
			one = e
		}
	}
	return sl.whereIn(sc, sc.adm.off, sc.adm.end(), sl.lim.l, func(e *Event) bool { return e == one })
}

// whereIn describes the admissions of sc at positions [from, to) for which in is true, whose
// allowance is allowed, as sweeper.describe does.
func (sl *streamLimit) whereIn(sc *streamScope, from, to int, allowed int64, in func(e *Event) bool) Where {
	G := sl.lim.g
	wh := Where{Lo: math.MaxInt64, Hi: math.MinInt64, Allowed: allowed}
	for i := from; i < to; i++ {
		if e := sc.adm.at(i); in(e) {
			wh.Permits += int64(e.Permits)
			wh.Lo, wh.Hi = min(wh.Lo, e.Lo()-G), max(wh.Hi, e.Hi()+G)
		}
	}
	wh.Subject, wh.Client = sl.names(sc)
	base := sl.s.hdr.Base
	wh.Lo, wh.Hi = base+wh.Lo, base+wh.Hi
	wh.Excess = wh.Permits - wh.Allowed
	return wh
}

// fixedSweep is fixedDefinite with fixedHide (the same windows), and fixedPossible.
type fixedSweep struct {
	i          int // the next admission, Lo order
	k, sum     int64
	started    bool
	first      int   // the current window's first admission inside it
	u          int   // the next unknown outcome
	uSum, hide int64 // unknown permits counted so far; the largest hide
	pi, pj     int   // possible: the next to enter (Lo order), the next to exit (Hi order)
	psum, cur  int64 // the permits from breakpoint cur on
	have       bool  // a breakpoint was processed
}

func (w *fixedSweep) step(sl *streamLimit, sc *streamScope, F int64) needs {
	G, W := sl.lim.g, sl.lim.w
	lo0, hi0 := sl.s.hdr.Base-G, sl.s.hdr.Base+G
	for ; w.i < sc.adm.end(); w.i++ {
		e := sc.adm.at(w.i)
		kl := floorDiv(e.Lo()+lo0, W)
		if kl != floorDiv(e.Hi()+hi0, W) {
			continue
		}
		if !w.started || kl != w.k {
			w.close(sl, sc)
			w.k, w.sum, w.started, w.first = kl, 0, true, w.i
		}
		w.sum += int64(e.Permits)
	}
	// Unknown outcomes that the next window closed will count: up to the end of the open
	// window, or of the first window an admission still to come can lie in.
	end := int64(posInf)
	switch {
	case w.started:
		end = (w.k+1)*W - 1 - sl.s.hdr.Base
	case F != posInf:
		end = (floorDiv(F+lo0, W)+1)*W - 1 - sl.s.hdr.Base
	}
	w.count(sl, sc, end)
	w.possible(sl, sc, F)
	need := w.i
	if w.started {
		need = w.first
	}
	return needs{adm: min(need, w.pi), hi: w.pj, unknown: w.u, rest: sc.rest.end()}
}

// count adds the unknown outcomes of Lo + G ≤ end to uSum.
func (w *fixedSweep) count(sl *streamLimit, sc *streamScope, end int64) {
	for ; w.u < sc.unknown.end() && sc.unknown.at(w.u).Lo()+sl.lim.g <= end; w.u++ {
		w.uSum += int64(sc.unknown.at(w.u).Permits)
	}
}

// close ends the open window: a definite violation when it holds more than L, and what the
// unknown outcomes could hide in it.
func (w *fixedSweep) close(sl *streamLimit, sc *streamScope) {
	if !w.started {
		return
	}
	G, W, L := sl.lim.g, sl.lim.w, sl.lim.l
	base, k := sl.s.hdr.Base, w.k
	if w.sum > L {
		sl.definiteAt(sc, k*W-base, w.sum-L, func() Where {
			return sl.whereIn(sc, w.first, w.i, L, func(e *Event) bool {
				return floorDiv(base+e.Lo()-G, W) == k && floorDiv(base+e.Hi()+G, W) == k
			})
		})
	}
	if W-1 >= 2*G {
		w.count(sl, sc, (k+1)*W-1-base)
		if w.uSum > 0 {
			w.hide = max(w.hide, w.sum+w.uSum-L)
		}
	}
	w.started = false
	sl.hide = max(sl.hide, w.hide)
}

// finish closes the last window and counts every unknown outcome: a window after every
// admission takes them all.
func (w *fixedSweep) finish(sl *streamLimit, sc *streamScope) {
	w.close(sl, sc)
	w.count(sl, sc, posInf)
	if sl.lim.w-1 >= 2*sl.lim.g {
		w.hide = max(w.hide, w.uSum-sl.lim.l)
	}
	sl.hide = max(sl.hide, w.hide)
}

// possible is fixedPossible: the permits meeting each aligned window change only at
// breakpoints (an admission's first window, the window after its last), and the windows from
// one breakpoint to the next are counted once the next is known: below kF, the first window an
// admission still to come can enter.
func (w *fixedSweep) possible(sl *streamLimit, sc *streamScope, F int64) {
	G, W, L := sl.lim.g, sl.lim.w, sl.lim.l
	base := sl.s.hdr.Base
	lo0, hi0 := base-G, base+G
	kF := int64(math.MaxInt64)
	if F != posInf {
		kF = floorDiv(F+lo0, W)
	}
	for {
		p := int64(math.MaxInt64)
		if w.pi < sc.adm.end() {
			p = floorDiv(sc.adm.at(w.pi).Lo()+lo0, W)
		}
		if w.pj < sc.hiOrd.end() {
			p = min(p, floorDiv(sc.hiOrd.at(w.pj).hi+hi0, W)+1)
		}
		if p >= kF || p == math.MaxInt64 {
			if w.have && w.psum > L && kF != math.MaxInt64 && kF > w.cur {
				w.record(sl, sc, kF)
				w.cur = kF
			}
			return
		}
		if w.have && w.psum > L {
			w.record(sl, sc, p)
		}
		for ; w.pi < sc.adm.end() && floorDiv(sc.adm.at(w.pi).Lo()+lo0, W) == p; w.pi++ {
			w.psum += int64(sc.adm.at(w.pi).Permits)
		}
		for ; w.pj < sc.hiOrd.end(); w.pj++ {
			h := sc.hiOrd.at(w.pj)
			if floorDiv(h.hi+hi0, W)+1 != p {
				break
			}
			w.psum -= int64(h.permits)
		}
		w.cur, w.have = p, true
	}
}

// record counts the windows cur…next−1, each meeting more than L permits.
func (w *fixedSweep) record(sl *streamLimit, sc *streamScope, next int64) {
	G, W, L := sl.lim.g, sl.lim.w, sl.lim.l
	base, k := sl.s.hdr.Base, w.cur
	sl.possibleAt(sc, k*W-base, w.psum-L, next-k, func() Where {
		return sl.whereIn(sc, sc.adm.off, w.pi, L, func(e *Event) bool {
			return floorDiv(base+e.Lo()-G, W) <= k && floorDiv(base+e.Hi()+G, W) >= k
		})
	})
}
