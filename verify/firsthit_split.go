package verify

import (
	"cmp"
	"math"
	"slices"
	"sort"
)

// This file holds first-hit-window's condition (d) of the package doc: a set of admissions that
// at most N windows of any world can hold violates definitely when it holds more than N·L
// permits. It decides the case splits that (c) cannot: an admission that is
// window k's (L+1)-th in the worlds where it falls before the window's end, and opens window
// k+1 (which then holds the next L too) in the others.

// fhWindows is one scope's P̂ cut into clumps (package doc, condition (d)): with γ_1 the least
// point of P̂ and γ_{i+1} the least point of P̂ at or after γ_i + W, clump i is the part of P̂
// in [γ_i, γ_i + W − 1], and last[i] its latest point. A clump is narrower than W, so it holds
// the start (as ⌈s⌉) of at most one window of any world: two windows of one world start at
// least W apart. Clumps are made up to until; both start and last increase.
type fhWindows struct {
	start, last []int64
	w           int64
}

// fhWindowsOf returns the clumps of starts (P̂, disjoint intervals in order) up to until.
func (s *sweeper) fhWindowsOf(starts []ival, until int64) fhWindows {
	W := s.lim.w
	c := fhWindows{start: s.fhCoverU[:0], last: s.fhCoverV[:0], w: W}
	i := 0
	for i < len(starts) && starts[i].lo <= until {
		g := starts[i].lo // γ, in starts[i]
		for {
			// The clump's latest point: the last of P̂ at or before g + W − 1.
			end := g + W - 1
			for i+1 < len(starts) && starts[i+1].lo <= end {
				i++
			}
			c.start, c.last = append(c.start, g), append(c.last, min(starts[i].hi, end))
			if g = end + 1; g > until || g > starts[i].hi {
				break // the next γ is the next interval's first point
			}
		}
		i++
	}
	s.fhCoverU, s.fhCoverV = c.start, c.last
	return c
}

// upTo returns the number of clumps that begin at or before b.
func (c *fhWindows) upTo(b int64) int64 {
	return int64(sort.Search(len(c.start), func(k int) bool { return c.start[k] > b }))
}

// before returns the number of clumps that end before a − W + 1: they hold no start of a
// window that can hold an admission of lo ≥ a.
func (c *fhWindows) before(a int64) int64 {
	return int64(sort.Search(len(c.last), func(k int) bool { return c.last[k] >= a-c.w+1 }))
}

// windows returns N(a, b) = upTo(b) − before(a): the clumps that meet [a − W + 1, b], so at
// most that many windows of any world hold admissions of lo ≥ a and hi ≤ b.
func (c *fhWindows) windows(a, b int64) int64 { return c.upTo(b) - c.before(a) }

// counted reports whether the windows that N(a, b) counts can all hold an admission at or after
// from: a ≥ from, or the first clump counted begins at or after from − W + 1 (a window that
// starts in it ends after from). Only then is a violation of condition (d) the measured part's
// (see Log.From).
func (c *fhWindows) counted(a, from int64) bool {
	k := c.before(a)
	return a >= from || (k < int64(len(c.start)) && c.start[k] >= from-c.w+1)
}

// fhNone is the value of a start that condition (d) does not take (see counted): far below any
// value, and far enough from math.MinInt64 that adding permits cannot overflow.
const fhNone = math.MinInt64 / 4

// fhSplits appends to ends the violations of condition (d) of one scope's admissions g (ord
// its Hi order): for each distinct end b, the largest P{lo ≥ a, hi ≤ b} − L·N(a, b) over the
// starts a = lo_j of admissions j ≤ top that count from from (counted), as
// [P + L·before(a)] − L·upTo(b), with maxStarts.
func (s *sweeper) fhSplits(g []Event, ord []uint32, c *fhWindows, from int64, ends []fhEnd) []fhEnd {
	G, L := s.lim.g, s.lim.l
	val := func(j int) int64 {
		if a := g[j].Lo() - G; c.counted(a, from) {
			return L * c.before(a)
		}
		return fhNone
	}
	s.maxStarts(g, ord, val, 1, func(b, m int64) {
		if f := m - L*c.upTo(b); f > 0 {
			ends = append(ends, fhEnd{b: b, excess: f, cond: fhSplit})
		}
	})
	return ends
}

// fhDescribeSplit returns the set of condition (d) that ends at b with the given excess: among
// the sets {lo ≥ a, hi ≤ b} holding an admission that ends at b, the one of largest a whose
// P − L·N(a, b) is the excess.
func (s *sweeper) fhDescribeSplit(g []Event, b, excess, from int64, c *fhWindows) Where {
	G, L := s.lim.g, s.lim.l
	type pt struct{ lo, permits int64 }
	var pts []pt
	top := int64(math.MinInt64) // the largest lo of an admission ending at b
	for i := range g {
		if e := &g[i]; e.Hi()+G <= b {
			pts = append(pts, pt{e.Lo() - G, int64(e.Permits)})
			if e.Hi()+G == b {
				top = max(top, e.Lo()-G)
			}
		}
	}
	slices.SortFunc(pts, func(x, y pt) int { return cmp.Compare(y.lo, x.lo) })
	wh := Where{Hi: b}
	var sum int64
	for i, x := range pts {
		sum += x.permits
		if (i+1 < len(pts) && pts[i+1].lo == x.lo) || x.lo > top || !c.counted(x.lo, from) {
			continue
		}
		if n := c.windows(x.lo, b); sum-L*n == excess {
			wh.Lo, wh.Permits, wh.Allowed = x.lo, sum, L*n
			break
		}
	}
	wh.Subject, wh.Client = s.names(&g[0])
	wh.Lo, wh.Hi = s.base+wh.Lo, s.base+wh.Hi
	wh.Excess = wh.Permits - wh.Allowed
	return wh
}

// maxHi returns the latest Hi of g.
func maxHi(g []Event) int64 {
	hi := int64(negInf)
	for i := range g {
		hi = max(hi, g[i].Hi())
	}
	return hi
}
