package verify

import "sort"

// The streaming form of first-hit-window's check (firsthit.go): the requests' union, the chain
// of windows, P̂ and its clumps are made as the events come and are final below a frontier;
// the conditions (a) to (d), the possible sets and the hides run behind it (see
// stream_firsthit_ends.go). Times are relative to the header's Base and widened by G, an
// unknown outcome's hi +∞.

// firstHitSweep is first-hit-window's sweeps over one scope.
type firstHitSweep struct {
	ra, ru  int // the requests' union: the next admission and unknown outcome to take
	rr      int // and the next denied or failed request
	req     queue[ival]
	ch      fhChainState
	wins    queue[fhWindow] // final windows not yet turned into P̂
	reqAt   int             // the first interval of req a window may still meet
	ph      queue[ival]     // P̂, final below phi
	phi     int64
	emitted bool // the first window was turned into P̂
	cl      fhClumps
	until   int64 // the largest hi of an admission (widened): clumps end there at the history's end
	ends    fhEndsState
}

func newFirstHitSweep() *firstHitSweep { return &firstHitSweep{phi: negInf, until: negInf} }

// fhHiW returns e's widened hi: +∞ for an unknown outcome.
func fhHiW(e *Event, G int64) int64 {
	if e.Kind() == Unknown {
		return posInf
	}
	return e.Hi() + G
}

func (w *firstHitSweep) step(sl *streamLimit, sc *streamScope, F int64) needs {
	G, W := sl.lim.g, sl.lim.w
	fresh := sl.s.hdr.Fresh
	if sc.admitted {
		w.until = sc.maxHi + G
	}
	w.union(sc, G)
	w.ch.advance(sc, &w.req, G, W, fresh, F, &w.wins)
	w.emit(G, F, fresh)
	until := int64(posInf)
	if F == posInf {
		until = w.until
	}
	w.cl.advance(&w.ph, W, w.phi, until)
	w.ends.step(sl, sc, w, F)
	return w.needs(sl, sc)
}

func (w *firstHitSweep) finish(sl *streamLimit, _ *streamScope) { sl.hide = max(sl.hide, w.ends.hide) }

// union adds the requests taken since the last step to the union of their intervals (the
// three queues merged in Lo order), as fhStarts makes it.
func (w *firstHitSweep) union(sc *streamScope, G int64) {
	qs := [3]*queue[Event]{&sc.adm, &sc.unknown, &sc.rest}
	ps := [3]*int{&w.ra, &w.ru, &w.rr}
	var lo [3]int64 // each queue's next Lo, posInf when it has none
	for k, q := range qs {
		lo[k] = posInf
		if *ps[k] < q.end() {
			lo[k] = q.at(*ps[k]).Lo()
		}
	}
	for {
		k := 0
		if lo[1] < lo[k] {
			k = 1
		}
		if lo[2] < lo[k] {
			k = 2
		}
		if lo[k] == posInf {
			return
		}
		e := qs[k].at(*ps[k])
		x := ival{lo[k] - G, fhHiW(e, G)}
		if *ps[k]++; *ps[k] < qs[k].end() {
			lo[k] = qs[k].at(*ps[k]).Lo()
		} else {
			lo[k] = posInf
		}
		if n := w.req.end(); n > w.req.off {
			if last := w.req.at(n - 1); x.lo-1 <= last.hi {
				last.hi = max(last.hi, x.hi)
				continue
			}
		}
		w.req.push(x)
	}
}

// emit turns the chain's final windows into P̂, as fhStarts does: a window's part of it, the
// requests' union in [u, v] (and, unless the log is fresh, the first window whole), is final
// once no request still to come can lie in it, v < F − G.
func (w *firstHitSweep) emit(G, F int64, fresh bool) {
	add := func(x ival) {
		if !w.ph.empty() {
			if last := w.ph.at(w.ph.end() - 1); x.lo-1 <= last.hi {
				last.hi = max(last.hi, x.hi)
				return
			}
		}
		w.ph.push(x)
	}
	for !w.wins.empty() {
		win := *w.wins.at(w.wins.off)
		if F != posInf && win.v >= F-G {
			return
		}
		if !fresh && !w.emitted {
			add(ival{win.u, win.v})
		}
		w.emitted = true
		for w.reqAt < w.req.end() && w.req.at(w.reqAt).hi < win.u {
			w.reqAt++
		}
		for k := w.reqAt; k < w.req.end() && w.req.at(k).lo <= win.v; k++ {
			r := w.req.at(k)
			add(ival{max(win.u, r.lo), min(win.v, r.hi)})
		}
		w.phi = win.v + 1
		if win.v == posInf {
			w.phi = posInf
		}
		w.wins.dropTo(w.wins.off + 1)
	}
	if F == posInf && w.ch.ended {
		w.phi = posInf
	}
}

// fhChainState makes the chain's windows one at a time, as fhChain does, as far as the
// requests that have come decide them: cur is the window being made, its u known and its v
// being found (needV), or the window whose successor is being found.
type fhChainState struct {
	started, ended, needV bool
	cur                   fhWindow
	// minHiFrom(cur.e): the first admission and denied or failed request of lo ≥ e, the next
	// of each to scan, and the least hi of a sure request so far.
	pa, pr, ja, jr int
	best           int64
	// minLo: the first interval of the requests' union that may hold t or follow it.
	r int
}

// advance makes the windows that F decides (all, when F is posInf) and appends them to out; req
// is the requests' union.
func (c *fhChainState) advance(sc *streamScope, req *queue[ival], G, W int64, fresh bool, F int64, out *queue[fhWindow]) {
	if c.ended {
		return
	}
	if !c.started {
		m := int64(posInf)
		for _, q := range [3]*queue[Event]{&sc.adm, &sc.unknown, &sc.rest} {
			if !q.empty() {
				m = min(m, q.at(q.off).Lo()-G)
			}
		}
		if m == posInf {
			return
		}
		u := m - W + 1
		if fresh {
			u = m
		}
		c.started, c.needV, c.cur, c.best = true, true, fhWindow{u: u, e: negInf}, posInf
	}
	for {
		if c.needV {
			v, ok := c.minHi(sc, G, F)
			if !ok {
				return
			}
			c.cur.v, c.needV = v, false
			out.push(c.cur)
			if v == posInf {
				c.ended = true
				return
			}
		}
		t := c.cur.u + W
		nu, ok := c.minLo(req, G, t, F)
		if !ok {
			return
		}
		if nu == posInf {
			c.ended = true
			return
		}
		ne := c.cur.v + W
		c.cur, c.best, c.needV = fhWindow{u: max(t, nu), e: ne}, posInf, true
	}
}

// minHi continues minHiFrom(cur.e): the least hi of a sure request (admitted or denied) of
// lo ≥ e, scanned in Lo order while lo < the best so far, and whether it is final: no request
// still to come (lo ≥ F − G) can beat it.
func (c *fhChainState) minHi(sc *streamScope, G, F int64) (int64, bool) {
	e := c.cur.e
	for c.pa < sc.adm.end() && sc.adm.at(c.pa).Lo()-G < e {
		c.pa++
	}
	for c.pr < sc.rest.end() && sc.rest.at(c.pr).Lo()-G < e {
		c.pr++
	}
	c.ja, c.jr = max(c.ja, c.pa), max(c.jr, c.pr)
	for {
		var x *Event
		fromAdm := false
		if c.ja < sc.adm.end() && sc.adm.at(c.ja).Lo()-G < c.best {
			x, fromAdm = sc.adm.at(c.ja), true
		}
		if c.jr < sc.rest.end() {
			if y := sc.rest.at(c.jr); y.Lo()-G < c.best && (x == nil || y.Lo() < x.Lo()) {
				x, fromAdm = y, false
			}
		}
		if x == nil {
			break
		}
		if k := x.Kind(); k == Admitted || k == Denied {
			c.best = min(c.best, x.Hi()+G)
		}
		if fromAdm {
			c.ja++
		} else {
			c.jr++
		}
	}
	return c.best, F == posInf || F-G >= c.best
}

// minLo returns what fhChain takes from minLoFrom(t), the least lo of a request of hi ≥ t, when
// it makes the next window's u = max(t, minLoFrom(t)): t itself when some request's interval
// holds t (its lo is then at most t), else the first point of the requests' union after t (a
// request of hi ≥ t and lo > t lies in a later interval of the union, and the first of them
// begins it). So the chain reads the union rather than the requests, which it would otherwise
// keep from u's window on: u lags the windows when requests are dense (a world can open every
// window exactly W after the last). It returns whether the answer is final: no request still
// to come (lo ≥ F − G) can hold t or begin an earlier interval.
func (c *fhChainState) minLo(req *queue[ival], G, t, F int64) (int64, bool) {
	fin := F == posInf
	next := F - G // the least lo of a request still to come
	c.r = max(c.r, req.off)
	// Pass the intervals before t, unless the last may still grow to hold t.
	for c.r < req.end() && req.at(c.r).hi < t && (c.r+1 < req.end() || fin || req.at(c.r).hi < next-1) {
		c.r++
	}
	switch {
	case c.r < req.end() && req.at(c.r).lo <= t && t <= req.at(c.r).hi:
		return t, true
	case c.r < req.end() && req.at(c.r).lo > t:
		return req.at(c.r).lo, true
	case fin:
		return posInf, true
	}
	return 0, false
}

// fhClumps cuts P̂ into clumps as fhWindowsOf does, as P̂ becomes final: a clump is made once
// its whole width lies below phi. Clump i is at absolute index i (see queue).
type fhClumps struct {
	start, last queue[int64]
	have        bool
	g           int64 // the next clump's γ, when have
	i           int   // the interval of P̂ that holds γ
}

// advance makes the clumps of P̂ that lie below phi, those of γ ≤ until. The last interval of
// P̂ may still grow while its hi touches phi (the next part of P̂ merges into it), so a γ past
// it waits.
func (c *fhClumps) advance(ph *queue[ival], W, phi, until int64) {
	for {
		if !c.have {
			if c.i >= ph.end() || ph.at(c.i).lo >= phi || ph.at(c.i).lo > until {
				return
			}
			c.g, c.have = ph.at(c.i).lo, true
		}
		if c.g > ph.at(c.i).hi || c.g > until {
			if c.g <= until && c.i+1 >= ph.end() && phi != posInf && ph.at(c.i).hi >= phi-1 {
				return // the interval may grow to hold γ
			}
			c.have = false
			c.i++
			continue
		}
		end := c.g + W - 1
		if phi != posInf && end >= phi {
			return
		}
		for c.i+1 < ph.end() && ph.at(c.i+1).lo <= end {
			c.i++
		}
		c.start.push(c.g)
		c.last.push(min(ph.at(c.i).hi, end))
		c.g = end + 1
	}
}

// upTo returns the number of clumps that begin at or before b.
func (c *fhClumps) upTo(b int64) int64 {
	v := c.start.live()
	return int64(c.start.off + sort.Search(len(v), func(k int) bool { return v[k] > b }))
}

// before returns the number of clumps that end before a − W + 1.
func (c *fhClumps) before(a, W int64) int64 {
	v := c.last.live()
	return int64(c.last.off + sort.Search(len(v), func(k int) bool { return v[k] >= a-W+1 }))
}

// counted is fhWindows.counted.
func (c *fhClumps) counted(a, from, W int64) bool {
	k := int(c.before(a, W))
	return a >= from || (k < c.start.end() && *c.start.at(k) >= from-W+1)
}
