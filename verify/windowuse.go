package verify

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/limitbench/limitbench/algorithms"
)

// WindowUse is how full one limit of a contract was over time, measured the way the limit
// counts, beside the allowance a correct limiter keeps that measure within: result.json's
// timeline "use", one per limit, drawn by the accuracy plot. Held[i] is the most the measure
// reached at an instant of timeline bin i over every scope of the limit.
//
// The measure counts only what is certain: an admission counts in a window when its whole
// decision interval, widened by the contract's granularity G to [Lo − G, Hi + G], lies inside
// it, so the admissions counted were in that window in every placement of their decision times,
// and a limiter that kept its contract never holds more than Allowance:
//
//   - sliding-window(L, W): the permits decided within (t − K·W, t], K = ⌊2G/W⌋ + 1 (1 when 2G <
//     W, as the checker takes it), against K·L.
//   - fixed-window(L, W): the permits decided so far in the aligned window [kW, (k+1)W) that
//     holds t, against L.
//   - first-hit-window(L, W): the permits decided within (t − W, t], against 2L: a span shorter
//     than W meets at most two first-hit windows.
//   - token-bucket(C, r): the tokens drawn and not refilled, D = max over t1 of P[t1, t] −
//     r·(t − t1), with each admission taken at its widened Hi, against C + r·w, where w is the
//     widest widened decision interval of an admission (0 for exact decision times): a set
//     taken at its Hi spans at most w less than it truly does.
//
// So a crossing of the allowance is an over-admission whatever the placement, and a correct
// limiter's line stays at or below it. With exact decision times the measure is exact; wide
// intervals only make it smaller. The warmup's admissions decided before the measured part
// starts are counted too (a window or bucket the measured part begins with holds them); those
// a skewed client clock dates after its start are not, as the checker, which verifies the
// measured part, does not see them either.
type WindowUse struct {
	// Contract is the limit (without its Also).
	Contract string `json:"contract"`
	// Measure says in words what Held counts, Allowance what a correct limiter keeps it within
	// (permits; rounded up to three decimals), and Held the most per bin (rounded down).
	Measure   string    `json:"measure"`
	Allowance float64   `json:"allowance"`
	Held      []float64 `json:"held"`
}

// NewWindowUse returns the use of each of c's limits over bins bins of width bin from start (µs
// since the Unix epoch, on the log's clock), from the admissions of log and those of warmup (nil
// for none) decided before start. It returns nil without a log, a contract or bins, or for a
// contract the checker refuses. Neither log is changed.
func NewWindowUse(c algorithms.Contract, log, warmup *Log, start int64, bin time.Duration, bins int) []WindowUse {
	if log == nil || c.Kind == algorithms.NoContract || bins <= 0 || bin <= 0 {
		return nil
	}
	lims, err := flatten(c)
	if err != nil {
		return nil
	}
	var adm []Event
	if warmup != nil {
		for _, e := range warmup.Events {
			if e.Kind() != Admitted || warmup.Base+e.Hi() >= start {
				continue
			}
			if moved, err := e.Shift(warmup.Base - log.Base); err == nil {
				adm = append(adm, moved)
			}
		}
	}
	for _, e := range log.Events {
		if e.Kind() == Admitted {
			adm = append(adm, e)
		}
	}
	g := grid{start: start - log.Base, bin: micros(bin), n: int64(bins)}
	var out []WindowUse
	for _, lim := range lims {
		if lim.kind == algorithms.NoContract {
			continue
		}
		u := WindowUse{Contract: lim.c.String(), Held: make([]float64, bins)}
		byScope := groupByScope(adm, lim.scope)
		switch lim.kind {
		case algorithms.TokenBucket:
			u.Allowance, u.Measure = lim.bucketUse(byScope, g, u.Held)
		default:
			u.Allowance, u.Measure = lim.windowUse(byScope, g, u.Held, log.Base)
		}
		out = append(out, u)
	}
	return out
}

// grid is the timeline's bins on the log's relative clock: n bins of bin µs from start.
type grid struct{ start, bin, n int64 }

// at returns the bin of the relative time t, or -1 outside the grid.
func (g grid) at(t int64) int {
	i := floorDiv(t-g.start, g.bin)
	if i < 0 || i >= g.n {
		return -1
	}
	return int(i)
}

// starts calls f with each bin start in [from, to] (relative times) and its bin.
func (g grid) starts(from, to int64, f func(t int64, i int)) {
	i := max(0, ceilDiv(max(from-g.start, 0), g.bin))
	for ; i < g.n && g.start+i*g.bin <= to; i++ {
		f(g.start+i*g.bin, int(i))
	}
}

// groupByScope returns the admissions of each scope of sc, in their log order.
func groupByScope(adm []Event, sc algorithms.Scope) [][]Event {
	key := scopeKey(sc)
	idx := map[uint64]int{}
	var out [][]Event
	for _, e := range adm {
		k := key(&e)
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], e)
	}
	return out
}

// widened is an admission's decision interval widened by the granularity, [a, b] in relative
// µs, and its permits.
type widened struct{ a, b, p int64 }

// widen returns ev's widened intervals by b.
func (lim *limit) widen(ev []Event) []widened {
	out := make([]widened, len(ev))
	for i, e := range ev {
		out[i] = widened{e.Lo() - lim.g, e.Hi() + lim.g, int64(e.Permits)}
	}
	slices.SortFunc(out, func(x, y widened) int { return cmp.Compare(x.b, y.b) })
	return out
}

// scopeWords names one scope of sc.
func scopeWords(sc algorithms.Scope) string {
	switch sc {
	case algorithms.PerClient:
		return "one subject and client"
	case algorithms.PerConsumer:
		return "one consumer"
	}
	return "one subject"
}

// windowUse fills held for a window limit (see WindowUse) and returns its allowance and measure.
// base is the log's Base, which fixed windows are aligned from.
func (lim *limit) windowUse(byScope [][]Event, g grid, held []float64, base int64) (float64, string) {
	span, allowance := lim.w, lim.l
	var measure string
	switch lim.kind {
	case algorithms.SlidingWindow:
		k, kw, kl := lim.windows()
		span, allowance = kw, kl
		measure = fmt.Sprintf("the most permits of %s decided within %s", scopeWords(lim.scope), time.Duration(kw)*time.Microsecond)
		if k > 1 {
			measure += fmt.Sprintf(" (%d windows: with a clock granularity of %s, the shortest span the contract bounds)", k, time.Duration(lim.g)*time.Microsecond)
		}
	case algorithms.FixedWindow:
		measure = fmt.Sprintf("the most permits of %s decided so far in one aligned window of %s", scopeWords(lim.scope), time.Duration(lim.w)*time.Microsecond)
	case algorithms.FirstHitWindow:
		allowance = 2 * lim.l
		measure = fmt.Sprintf("the most permits of %s decided within %s (a span that meets at most two first-hit windows)", scopeWords(lim.scope), time.Duration(lim.w)*time.Microsecond)
	}
	for _, ev := range byScope {
		ws := lim.widen(ev)
		ws = slices.DeleteFunc(ws, func(x widened) bool { return x.b-x.a >= span })
		if lim.kind == algorithms.FixedWindow {
			lim.alignedUse(ws, g, held, base)
			continue
		}
		slidingUse(ws, span, g, held)
	}
	return float64(allowance), measure
}

// record raises held[i] to v.
func record(held []float64, i int, v int64) {
	if i >= 0 && float64(v) > held[i] {
		held[i] = float64(v)
	}
}

// slidingUse raises held to the permits of ws (sorted by b) contained in (t − span, t], at each
// b and each bin start up to the last b + span.
func slidingUse(ws []widened, span int64, g grid, held []float64) {
	if len(ws) == 0 {
		return
	}
	byA := slices.Clone(ws)
	slices.SortFunc(byA, func(x, y widened) int { return cmp.Compare(x.a, y.a) })
	var in, out int64 // permits with b <= t, and of those with a <= t − span
	ib, ia := 0, 0
	at := func(t int64) int64 {
		for ; ib < len(ws) && ws[ib].b <= t; ib++ {
			in += ws[ib].p
		}
		for ; ia < len(byA) && byA[ia].a <= t-span; ia++ {
			out += byA[ia].p
		}
		return in - out
	}
	times := make([]int64, 0, len(ws))
	for _, x := range ws {
		times = append(times, x.b)
	}
	g.starts(ws[0].b, ws[len(ws)-1].b+span, func(t int64, _ int) { times = append(times, t) })
	slices.Sort(times)
	for _, t := range times {
		record(held, g.at(t), at(t))
	}
}

// alignedUse raises held to the running count of ws (sorted by b) in the aligned window of each
// b and bin start: the permits of the window [kW, (k+1)W) of t with a >= kW and b <= t.
func (lim *limit) alignedUse(ws []widened, g grid, held []float64, base int64) {
	if len(ws) == 0 {
		return
	}
	window := func(t int64) int64 { return floorDiv(base+t, lim.w) }
	var sum, k int64 = 0, window(ws[0].b)
	next := 0
	step := func(t int64) {
		if kt := window(t); kt != k {
			k, sum = kt, 0
		}
		for ; next < len(ws) && ws[next].b <= t; next++ {
			if window(ws[next].b) == k && base+ws[next].a >= k*lim.w {
				sum += ws[next].p
			}
		}
		record(held, g.at(t), sum)
	}
	times := make([]int64, 0, len(ws))
	for _, x := range ws {
		times = append(times, x.b)
	}
	last := ws[len(ws)-1].b
	g.starts(ws[0].b, (window(last)+1)*lim.w-base-1, func(t int64, _ int) { times = append(times, t) })
	slices.Sort(times)
	for _, t := range times {
		step(t)
	}
}

// bucketUse fills held for a token-bucket limit (see WindowUse) and returns its allowance and
// measure. Tokens are counted exactly, in units of 1/q permit (the rate is p/q per µs).
func (lim *limit) bucketUse(byScope [][]Event, g grid, held []float64) (float64, string) {
	var widest int64
	for _, ev := range byScope {
		for _, x := range lim.widen(ev) {
			widest = max(widest, x.b-x.a)
		}
	}
	for _, ev := range byScope {
		lim.bucketScope(lim.widen(ev), g, held)
	}
	allowance := float64(lim.cap) + float64(lim.p)*float64(widest)/float64(lim.q)
	measure := fmt.Sprintf("the most tokens the bucket of %s had drawn and not yet refilled", scopeWords(lim.scope))
	if widest > 0 {
		measure += fmt.Sprintf(", each admission taken at the end of its decision interval; allowed the capacity plus the refill over the widest interval (%s)",
			time.Duration(widest)*time.Microsecond)
	}
	return math.Ceil(allowance*1000) / 1000, measure
}

// bucketScope raises held to the tokens drawn from one scope's bucket (see WindowUse) at each
// admission of ws (sorted by b) and each bin start until the bucket is full again.
func (lim *limit) bucketScope(ws []widened, g grid, held []float64) {
	var d, last int64 // q·tokens drawn, at time last
	drain := func(t int64) {
		if dt := t - last; dt > 0 {
			if dt >= d/lim.p+1 {
				d = 0
			} else {
				d -= lim.p * dt
			}
		}
		last = t
	}
	put := func(i int) {
		if v := math.Floor(float64(d)/float64(lim.q)*1000) / 1000; i >= 0 && v > held[i] {
			held[i] = v
		}
	}
	j := 0
	takeBefore := func(t int64) {
		for ; j < len(ws) && ws[j].b < t; j++ {
			drain(ws[j].b)
			d += lim.q * ws[j].p
			put(g.at(ws[j].b))
		}
	}
	g.starts(ws[0].b, ws[len(ws)-1].b+d0(ws, lim)/lim.p+1, func(t int64, i int) {
		takeBefore(t)
		drain(t)
		put(i)
	})
	takeBefore(math.MaxInt64)
}

// d0 bounds, in units of 1/q permit, what the bucket of ws can have drawn: every permit of ws.
func d0(ws []widened, lim *limit) int64 {
	var p int64
	for _, x := range ws {
		p += x.p
	}
	return min(p*lim.q, math.MaxInt64/2)
}
