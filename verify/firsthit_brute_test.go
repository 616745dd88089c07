package verify

import (
	"fmt"
	"math"

	"pgregory.net/rapid"

	"github.com/limitbench/limitbench/algorithms"
)

// This file holds the first-hit-window oracles: a brute force over every world of a small
// history (which requests reached the limiter, where each decision lies in its interval, and
// the window open when the log starts), and the package doc's conditions written out literally
// by enumeration of sets.

// fhEvent is one request of a scope as the oracles see it: widened bounds (hi = +∞ for an
// unknown outcome), permits, and kind.
type fhEvent struct {
	lo, hi, permits int64
	kind            Kind
}

// fhScopesOf groups log's events by the scope of c, widened by G, in the log's relative times.
func fhScopesOf(c algorithms.Contract, log *Log) map[string][]fhEvent {
	g := c.Granularity.Microseconds()
	out := map[string][]fhEvent{}
	for key, evs := range bruteScopes(c, log, Admitted, Denied, Unknown, Failed) {
		for _, e := range evs {
			x := fhEvent{lo: e.Lo() - g, hi: e.Hi() + g, permits: int64(e.Permits), kind: e.Kind()}
			if x.kind == Unknown {
				x.hi = math.MaxInt64
			}
			out[key] = append(out[key], x)
		}
	}
	return out
}

// fhWorldsTruth decides, over every world, whether every world violates first-hit-window c
// (definite) and whether some world does (possible). A world picks which unknown and failed
// requests reached the limiter (admitted and denied ones did; an unknown outcome that reached
// it is not counted as admitted), a real instant in each reached request's widened interval,
// and, unless fresh, the start of the window open when the log starts. Scopes must hold at most
// ~6 requests (and few unknown or failed ones).
func fhWorldsTruth(c algorithms.Contract, log *Log) (definite, possible bool) {
	for _, evs := range fhScopesOf(c, log) {
		good, bad := fhScopeWorlds(evs, c.Window.Microseconds(), c.Limit, log.Fresh)
		if !good {
			definite = true
		}
		if bad {
			possible = true
		}
	}
	return definite, possible
}

// fhScopeWorlds reports whether some world of one scope keeps every window within L (good) and
// whether some world puts more than L admitted permits in a window (bad).
func fhScopeWorlds(evs []fhEvent, w, l int64, fresh bool) (good, bad bool) {
	var maybe []int
	for i, e := range evs {
		if e.kind == Unknown || e.kind == Failed {
			maybe = append(maybe, i)
		}
	}
	for mask := 0; mask < 1<<len(maybe) && !(good && bad); mask++ {
		reached := make([]fhEvent, 0, len(evs))
		skip := map[int]bool{}
		for j, i := range maybe {
			if mask&(1<<j) == 0 {
				skip[i] = true
			}
		}
		for i, e := range evs {
			if !skip[i] {
				reached = append(reached, e)
			}
		}
		g, b := fhStructures(reached, w, l, fresh, !good, !bad)
		good, bad = good || g, bad || b
	}
	return good, bad
}

// fhStructures enumerates the window structures of the reached requests: an ordered partition
// into windows 1..m and, for every window from the second on (from the first when fresh), the
// request that opened it; each structure with no window over L (wantGood) or one over L
// (wantBad) is checked for a placement that realises it, by difference constraints:
//
//	s_k ≤ x_i < s_k + W for i in window k, s_k = x(opener of k), s_k ≥ s_{k−1} + W,
//	lo_i ≤ x_i ≤ hi_i,
//
// which say exactly that the windows are first-hit windows: nothing is placed between a
// window's end and the next opener, since every request is in a window. Strict constraints are
// made integer by scaling (see feasible).
func fhStructures(evs []fhEvent, w, l int64, fresh, wantGood, wantBad bool) (good, bad bool) {
	n := len(evs)
	if n == 0 {
		return true, false
	}
	label := make([]int, n)
	sums := make([]int64, n+1)
	used := make([]bool, n+1)
	var rec func(i int)
	rec = func(i int) {
		if !wantGood && !wantBad {
			return
		}
		if i < n {
			for b := 1; b <= n; b++ {
				label[i] = b
				rec(i + 1)
			}
			return
		}
		m := 0
		clear(used)
		clear(sums)
		for j, b := range label {
			m, used[b] = max(m, b), true
			if evs[j].kind == Admitted {
				sums[b] += evs[j].permits
			}
		}
		for k := 1; k <= m; k++ {
			if !used[k] {
				return // windows 1..m, each holding a request
			}
		}
		over := false
		for _, s := range sums {
			over = over || s > l
		}
		if (over && !wantBad) || (!over && !wantGood) || !fhOpeners(evs, label, m, w, fresh) {
			return
		}
		if over {
			bad, wantBad = true, false
		} else {
			good, wantGood = true, false
		}
	}
	rec(0)
	return good, bad
}

// fhOpeners tries every choice of openers for the partition label (windows 1..m).
func fhOpeners(evs []fhEvent, label []int, m int, w int64, fresh bool) bool {
	members := make([][]int, m+1)
	for i, b := range label {
		members[b] = append(members[b], i)
	}
	opener := make([]int, m+1) // -1: window 1's start is free
	opener[1] = -1
	first := 2
	if fresh {
		first = 1
	}
	var rec func(k int) bool
	rec = func(k int) bool {
		if k > m {
			return fhFeasible(evs, label, opener, m, w)
		}
		for _, i := range members[k] {
			opener[k] = i
			if rec(k + 1) {
				return true
			}
		}
		return false
	}
	return rec(first)
}

// fhFeasible solves the difference constraints of one structure with Bellman-Ford. Nodes: 0 is
// the zero of time, 1..n the placements x_i, n+1 the free start of window 1. Every constant is
// scaled by N = n + 3 and a strict a − b < c becomes a − b ≤ c·N − 1: a cycle has at most n+2
// edges, so a real solution exists exactly when an integer one of the scaled system does.
func fhFeasible(evs []fhEvent, label []int, opener []int, m int, w int64) bool {
	n := len(evs)
	N := int64(n + 3)
	type edge struct {
		from, to int
		c        int64
	}
	var edges []edge
	le := func(a, b int, c int64) { edges = append(edges, edge{b, a, c * N}) } // x_a − x_b ≤ c
	lt := func(a, b int, c int64) { edges = append(edges, edge{b, a, c*N - 1}) }
	start := func(k int) int {
		if opener[k] < 0 {
			return n + 1
		}
		return opener[k] + 1
	}
	for i, e := range evs {
		le(0, i+1, -e.lo) // x_i ≥ lo
		if e.hi != math.MaxInt64 {
			le(i+1, 0, e.hi) // x_i ≤ hi
		}
		k := label[i]
		le(start(k), i+1, 0) // s_k ≤ x_i
		lt(i+1, start(k), w) // x_i < s_k + W
	}
	for k := 2; k <= m; k++ {
		le(start(k-1), start(k), -w) // s_k ≥ s_{k−1} + W
	}
	dist := make([]int64, n+2)
	for range n + 2 {
		changed := false
		for _, e := range edges {
			if d := dist[e.from] + e.c; d < dist[e.to] {
				dist[e.to], changed = d, true
			}
		}
		if !changed {
			return true
		}
	}
	return false
}

// fhLiteralResult is what the package doc defines for one first-hit-window limit.
type fhLiteralResult struct {
	definite, chained, possible    int64
	worstDef, worstFree, worstPoss int64
	unknownExcess                  int64
	ends, chainEnds, possibleEnds  map[int64]bool // keyed by key2(scope, end)
}

// fhLiteralChain is the chain of the package doc computed by scanning every request each time.
func fhLiteralChain(evs []fhEvent, w int64, fresh bool) []fhWindow {
	sure := func(e fhEvent) bool { return e.kind == Admitted || e.kind == Denied }
	m := int64(math.MaxInt64)
	for _, e := range evs {
		m = min(m, e.lo)
	}
	minHi := func(from int64) int64 {
		best := int64(math.MaxInt64)
		for _, e := range evs {
			if sure(e) && e.lo >= from {
				best = min(best, e.hi)
			}
		}
		return best
	}
	minLo := func(t int64) int64 {
		best := int64(math.MaxInt64)
		for _, e := range evs {
			if e.hi >= t {
				best = min(best, e.lo)
			}
		}
		return best
	}
	u := m - w + 1
	if fresh {
		u = m
	}
	win := fhWindow{u: u, v: minHi(math.MinInt64), e: math.MinInt64}
	chain := []fhWindow{win}
	for win.v != math.MaxInt64 {
		t := win.u + w
		lo := minLo(t)
		if lo == math.MaxInt64 {
			break
		}
		e := win.v + w
		win = fhWindow{u: max(t, lo), v: minHi(e), e: e}
		chain = append(chain, win)
	}
	return chain
}

// fhLiteralStarts returns P̂'s membership for one scope, by its definition: a point of some
// chain range that some request's interval holds, or (not fresh) of the first range.
func fhLiteralStarts(evs []fhEvent, chain []fhWindow, fresh bool) func(y int64) bool {
	return func(y int64) bool {
		if !fresh && chain[0].u <= y && y <= chain[0].v {
			return true
		}
		inChain, inReq := false, false
		for _, w := range chain {
			inChain = inChain || (w.u <= y && y <= w.v)
		}
		for _, e := range evs {
			inReq = inReq || (e.lo <= y && y <= e.hi)
		}
		return inChain && inReq
	}
}

// fhLiteralWindows returns N(a, b) of condition (d) for one scope, by its definition: P̂ (its
// points among the instants lo..hi) cut into clumps from the left, γ_1 = the least point,
// γ_{i+1} = the least point ≥ γ_i + W, clump i = P̂ ∩ [γ_i, γ_i + W − 1]; N counts the clumps
// with a point in [a − W + 1, b]. And whether a set of least lo a counts from from: a ≥ from,
// or the first clump counted has γ ≥ from − W + 1.
func fhLiteralWindows(starts func(int64) bool, lo, hi, w int64) (windows func(a, b int64) int64, counted func(a, from int64) bool) {
	type clump struct{ first, last int64 }
	var clumps []clump
	for y := lo; y <= hi; y++ {
		if !starts(y) {
			continue
		}
		if n := len(clumps); n > 0 && y <= clumps[n-1].first+w-1 {
			clumps[n-1].last = y
			continue
		}
		clumps = append(clumps, clump{y, y})
	}
	windows = func(a, b int64) int64 {
		var n int64
		for _, c := range clumps {
			if c.first <= b && c.last >= a-w+1 {
				n++
			}
		}
		return n
	}
	counted = func(a, from int64) bool {
		if a >= from {
			return true
		}
		for _, c := range clumps {
			if c.last >= a-w+1 {
				return c.first >= from-w+1
			}
		}
		return false
	}
	return windows, counted
}

// fhLiteral computes the package doc's definitions for first-hit-window c by enumerating the
// sets of each scope's admissions and scanning every instant. Scopes must hold at most ~12
// admissions over a few hundred µs.
func fhLiteral(c algorithms.Contract, log *Log) fhLiteralResult {
	W, L, G := c.Window.Microseconds(), c.Limit, c.Granularity.Microseconds()
	from := int64(math.MinInt64)
	if log.From != 0 {
		from = log.From - log.Base
	}
	r := fhLiteralResult{ends: map[int64]bool{}, chainEnds: map[int64]bool{}, possibleEnds: map[int64]bool{}}
	type scope struct {
		evs    []fhEvent
		starts func(int64) bool
		lo, hi int64 // the range of instants worth scanning
	}
	var scopes []scope
	for key, evs := range fhScopesOf(c, log) {
		var adm []fhEvent
		sc := scope{evs: evs, lo: math.MaxInt64, hi: math.MinInt64}
		for _, e := range evs {
			if e.kind == Admitted {
				adm = append(adm, e)
			}
			sc.lo = min(sc.lo, e.lo)
			sc.hi = max(sc.hi, e.lo, min(e.hi, e.lo+1000))
		}
		sc.lo, sc.hi = sc.lo-2*W-2, sc.hi+2*W+2
		chain := fhLiteralChain(evs, W, log.Fresh)
		sc.starts = fhLiteralStarts(evs, chain, log.Fresh)
		windows, counted := fhLiteralWindows(sc.starts, sc.lo, sc.hi, W)
		scopes = append(scopes, sc)
		// latest returns the latest point of P̂ at or before t, or MinInt64.
		latest := func(t int64) int64 {
			for y := t; y >= sc.lo; y-- {
				if sc.starts(y) {
					return y
				}
			}
			return math.MinInt64
		}
		free, chained := map[int64]int64{}, map[int64]int64{} // end → largest excess
		for mask := 1; mask < 1<<len(adm); mask++ {
			var sum int64
			minLo, maxLo, minHi, maxHi := int64(math.MaxInt64), int64(math.MinInt64), int64(math.MaxInt64), int64(math.MinInt64)
			points := true
			for i, e := range adm {
				if mask&(1<<i) == 0 {
					continue
				}
				sum += e.permits
				minLo, maxLo = min(minLo, e.lo), max(maxLo, e.lo)
				minHi, maxHi = min(minHi, e.hi), max(maxHi, e.hi)
				points = points && e.lo == e.hi
			}
			// (a)
			if single := mask&(mask-1) == 0; (single || (G == 0 && points && minLo == maxHi)) && sum > L {
				free[maxHi] = max(free[maxHi], sum-L)
			}
			// (b): W·P > 2LW + L·span
			if span := maxHi - minLo; W*sum > 2*L*W+L*span {
				free[maxHi] = max(free[maxHi], sum-2*L-L*span/W)
			}
			// (c): no point of P̂ in (min lo − W, max hi − W].
			if y := latest(maxHi - W); sum > L && (y == math.MinInt64 || minLo >= y+W) {
				chained[maxHi] = max(chained[maxHi], sum-L)
			}
			// (d): more than N·L in at most N windows.
			if n := windows(minLo, maxHi); sum > L*n && counted(minLo, from) {
				chained[maxHi] = max(chained[maxHi], sum-L*n)
			}
			// possible: a point of P̂ in [max lo − W + 1, min hi].
			if sum > L && maxLo >= from {
				for y := maxLo - W + 1; y <= minHi && y <= sc.hi; y++ {
					if sc.starts(y) {
						r.possibleEnds[key2(key, maxLo)] = true
						r.worstPoss = max(r.worstPoss, sum-L)
						break
					}
				}
			}
		}
		for b, x := range free {
			if b >= from {
				r.ends[key2(key, b)] = true
				r.worstDef = max(r.worstDef, x)
				r.worstFree = max(r.worstFree, x)
			}
		}
		for b, x := range chained {
			if b >= from {
				r.ends[key2(key, b)] = true
				r.worstDef = max(r.worstDef, x)
				if _, ok := free[b]; !ok {
					r.chainEnds[key2(key, b)] = true
				}
			}
		}
	}
	r.definite, r.chained, r.possible = int64(len(r.ends)), int64(len(r.chainEnds)), int64(len(r.possibleEnds))
	if r.definite > 0 {
		return r
	}
	// UnknownExcess: the token-bucket hide of (b), and every start of P̂ with what can lie in
	// its window, unknown outcomes counted as admissions.
	bucket := algorithms.Contract{Kind: algorithms.TokenBucket, Capacity: 2 * L, RefillPermits: L, RefillPer: c.Window,
		Granularity: c.Granularity, Scope: c.Scope}
	for _, evs := range bruteScopes(c, log, Admitted, Unknown) {
		for _, e := range evs {
			if e.Kind() == Unknown {
				one := &Log{Subjects: log.Subjects, Clients: log.Clients, Base: log.Base, Events: evs}
				r.unknownExcess = max(r.unknownExcess, bruteHide(bucket, one))
				break
			}
		}
	}
	for _, sc := range scopes {
		for y := sc.lo; y <= sc.hi; y++ {
			if !sc.starts(y) {
				continue
			}
			var sum, uSum int64
			for _, e := range sc.evs {
				switch {
				case e.kind == Unknown && e.lo <= y+W-1:
					uSum += e.permits
				case e.kind == Admitted && e.lo <= y+W-1 && e.hi >= y:
					sum += e.permits
				}
			}
			if uSum > 0 {
				r.unknownExcess = max(r.unknownExcess, sum+uSum-L)
			}
		}
	}
	return r
}

// key2 makes a scope's end unique across scopes (ends are small in these tests).
func key2(scope string, b int64) int64 {
	var h int64
	for _, c := range scope {
		h = h*131 + int64(c)
	}
	return h<<24 ^ b
}

// genFirstHit draws a small first-hit-window contract with times of a few µs.
func genFirstHit(t *rapid.T, label string) algorithms.Contract {
	return algorithms.Contract{
		Kind:        algorithms.FirstHitWindow,
		Limit:       rapid.Int64Range(1, 3).Draw(t, label+"limit"),
		Window:      us(rapid.Int64Range(1, 12).Draw(t, label+"window")),
		Granularity: us(rapid.Int64Range(0, 1).Draw(t, label+"granularity")),
		Scope:       algorithms.Scope(rapid.IntRange(0, 2).Draw(t, label+"scope")),
	}
}

// genFirstHitLog draws a small log for the worlds brute force: 3 to n events (fewer when n < 3)
// over about 40 µs, mostly of one subject and client, at most two of them unknown or failed.
func genFirstHitLog(t *rapid.T, n int) *Log {
	log := &Log{Subjects: []string{"a", "b"}, Clients: []string{"x", "y"}, Base: genBase(t), Fresh: rapid.Bool().Draw(t, "fresh")}
	count := rapid.IntRange(min(n, 3), n).Draw(t, "events")
	maybe := 0
	for i := range count {
		lo := rapid.Int64Range(0, 40).Draw(t, fmt.Sprintf("lo%d", i))
		width := rapid.SampledFrom([]int64{0, 0, 0, 1, 2, 4, 9}).Draw(t, fmt.Sprintf("width%d", i))
		k := rapid.SampledFrom([]Kind{Admitted, Admitted, Admitted, Denied, Denied, Unknown, Failed}).Draw(t, fmt.Sprintf("kind%d", i))
		if k == Unknown || k == Failed {
			if maybe == 2 {
				k = Denied
			}
			maybe++
		}
		log.Events = append(log.Events, mustEvent(lo, lo+width,
			uint32(rapid.SampledFrom([]int{0, 0, 0, 1}).Draw(t, fmt.Sprintf("subject%d", i))),
			uint16(rapid.SampledFrom([]int{0, 0, 0, 1}).Draw(t, fmt.Sprintf("client%d", i))),
			uint16(rapid.IntRange(1, 2).Draw(t, fmt.Sprintf("permits%d", i))), k))
	}
	return log
}
