package verify

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/limitbench/limitbench/algorithms"
)

// MaxBins is the most bins an accuracy series may have.
const MaxBins = 1 << 20

// AccuracyBin is one bin of the accuracy series.
type AccuracyBin struct {
	// Start is the bin's start in µs since the Unix epoch; the bin is [Start, Start+Bin).
	Start int64
	// Offered, Admitted and Ideal count requests with a known decision in the bin: all of them,
	// those the algorithm admitted, and those the ideal limiter admitted.
	Offered, Admitted, Ideal int64
	// MaxRatio is the largest window ratio (see AccuracyReport.MaxWindowRatio) reached in the bin.
	MaxRatio float64
}

// AccuracyReport compares an algorithm's decisions with an exact limiter's.
type AccuracyReport struct {
	// Offered counts the requests with a known decision (admitted or denied); Admitted those the
	// algorithm admitted. Excluded counts unknown and failed requests, which are not replayed.
	Offered, Admitted, Excluded int64
	// IdealAllowed is how many of the offered requests an exact limiter with the same contract
	// admits when given them in time order.
	IdealAllowed int64
	// Efficiency is Admitted / IdealAllowed (0 when IdealAllowed is 0).
	Efficiency float64
	// FalseDenials counts denied requests that would have fitted: admitting them too, on top of
	// the algorithm's own admissions so far, keeps every contract.
	FalseDenials int64
	// MaxWindowRatio is the largest use of a contract by the algorithm's own admissions: permits
	// in the window (t−W, t] or the aligned window over L, or for a token bucket the tokens drawn
	// and not yet refilled over C (refill capped at C). Above 1 means over-admission at the
	// requests' midpoint times.
	MaxWindowRatio float64
	// Bin is the width of the bins of Series.
	Bin time.Duration
	// Series has one bin per Bin from the first to the last request, empty bins included.
	Series []AccuracyBin
}

// Accuracy replays the requests of log with a known decision through an exact limiter for c (all
// of c's limits at once: a request is admitted only if it fits every one) and compares. Requests
// before log.From prime both the exact limiter and the algorithm's own meters but are not counted. Each
// request is taken at the midpoint of its [Lo, Hi], unwidened, in time order (admissions first
// among equal times). bin is the series' bin width (1 s when <= 0). It reorders log.Events.
func Accuracy(c algorithms.Contract, log *Log, bin time.Duration) (AccuracyReport, error) {
	lims, err := flatten(c)
	if err != nil {
		return AccuracyReport{}, fmt.Errorf("accuracy: %w", err)
	}
	lims = slices.DeleteFunc(lims, func(l limit) bool { return l.kind == algorithms.NoContract })
	if err := log.validate(); err != nil {
		return AccuracyReport{}, fmt.Errorf("accuracy: %w", err)
	}
	if bin <= 0 {
		bin = time.Second
	}
	binUs := micros(bin)
	ev := log.Events
	n := partitionFunc(ev, func(e *Event) bool { return e.Kind == Admitted || e.Kind == Denied })
	rep := AccuracyReport{Excluded: int64(len(ev) - n), Bin: bin}
	ev = ev[:n]
	if n == 0 {
		return rep, nil
	}
	sortByMid(ev)
	// The first counted event: the first at or after log.From.
	c0, _ := slices.BinarySearchFunc(ev, log.From, func(e Event, t int64) int { return cmp.Compare(mid(&e), t) })
	if c0 == n {
		return rep, nil
	}
	first := floorDiv(mid(&ev[c0]), binUs) * binUs
	if bins := (mid(&ev[n-1])-first)/binUs + 1; bins > MaxBins {
		return AccuracyReport{}, fmt.Errorf("accuracy: %d bins of %s is more than %d: use a wider bin", bins, bin, MaxBins)
	}

	ideal := make([]map[uint64]*meter, len(lims))
	actual := make([]map[uint64]*meter, len(lims))
	for i := range lims {
		ideal[i], actual[i] = map[uint64]*meter{}, map[uint64]*meter{}
	}
	get := func(ms map[uint64]*meter, lim *limit, e *Event) *meter {
		k := scopeKey(lim.scope)(e)
		m := ms[k]
		if m == nil {
			m = &meter{}
			ms[k] = m
		}
		return m
	}
	var cur *AccuracyBin
	for i := range ev {
		e := &ev[i]
		t, cost := mid(e), int64(e.Permits)
		if i < c0 {
			// Before From: both limiters take the request as it went, and nothing is counted.
			fits := true
			for j := range lims {
				fits = lims[j].fits(get(ideal[j], &lims[j], e), t, cost) && fits
			}
			if fits {
				for j := range lims {
					lims[j].take(get(ideal[j], &lims[j], e), cost)
				}
			}
			if e.Kind == Admitted {
				for j := range lims {
					m := get(actual[j], &lims[j], e)
					lims[j].fits(m, t, cost)
					lims[j].take(m, cost)
				}
			}
			continue
		}
		if b := floorDiv(t, binUs) * binUs; cur == nil || cur.Start != b {
			for s := first + int64(len(rep.Series))*binUs; s <= b; s += binUs {
				rep.Series = append(rep.Series, AccuracyBin{Start: s})
			}
			cur = &rep.Series[len(rep.Series)-1]
		}
		cur.Offered++
		rep.Offered++

		fits := true
		for j := range lims {
			fits = lims[j].fits(get(ideal[j], &lims[j], e), t, cost) && fits
		}
		if fits {
			for j := range lims {
				lims[j].take(get(ideal[j], &lims[j], e), cost)
			}
			rep.IdealAllowed++
			cur.Ideal++
		}

		fits = true
		for j := range lims {
			fits = lims[j].fits(get(actual[j], &lims[j], e), t, cost) && fits
		}
		if e.Kind == Denied {
			if fits {
				rep.FalseDenials++
			}
			continue
		}
		rep.Admitted++
		cur.Admitted++
		for j := range lims {
			m := get(actual[j], &lims[j], e)
			lims[j].take(m, cost)
			r := lims[j].ratio(m)
			cur.MaxRatio = max(cur.MaxRatio, r)
			rep.MaxWindowRatio = max(rep.MaxWindowRatio, r)
		}
	}
	if rep.IdealAllowed > 0 {
		rep.Efficiency = float64(rep.Admitted) / float64(rep.IdealAllowed)
	}
	return rep, nil
}

// mid returns the midpoint of e's interval.
func mid(e *Event) int64 { return e.Lo + (e.Hi-e.Lo)/2 }

// sortByMid sorts ev by midpoint, admissions first among equal times, then subject and client.
func sortByMid(ev []Event) {
	slices.SortFunc(ev, func(a, b Event) int {
		if c := cmp.Compare(mid(&a), mid(&b)); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Kind, b.Kind); c != 0 { // Admitted < Denied
			return c
		}
		if c := cmp.Compare(a.Subject, b.Subject); c != 0 {
			return c
		}
		return cmp.Compare(a.Client, b.Client)
	})
}

// partitionFunc moves the events for which keep is true to the front of ev and returns how many
// there are.
func partitionFunc(ev []Event, keep func(e *Event) bool) int {
	n := 0
	for i := range ev {
		if keep(&ev[i]) {
			ev[i], ev[n] = ev[n], ev[i]
			n++
		}
	}
	return n
}

// meter is an exact limiter's state for one scope of one limit. Times must not decrease.
type meter struct {
	// sliding-window: the admissions in the window, oldest first, from head.
	times, permits []int64
	head           int
	// sum is the permits counted: in the sliding window, or in window k (fixed-window).
	sum, k int64
	// token-bucket: q·tokens, at most q·C (below zero when over-admitted), at time last.
	level, last int64
	started     bool
}

// fits advances m to t and reports whether cost more permits keep the limit.
func (lim *limit) fits(m *meter, t, cost int64) bool {
	switch lim.kind {
	case algorithms.SlidingWindow:
		for m.head < len(m.times) && m.times[m.head] <= t-lim.w {
			m.sum -= m.permits[m.head]
			m.head++
		}
		if m.head > 64 && 2*m.head > len(m.times) {
			m.times = append(m.times[:0], m.times[m.head:]...)
			m.permits = append(m.permits[:0], m.permits[m.head:]...)
			m.head = 0
		}
		m.last = t
		return m.sum+cost <= lim.l
	case algorithms.FixedWindow:
		if k := floorDiv(t, lim.w); !m.started || k != m.k {
			m.k, m.sum, m.started = k, 0, true
		}
		return m.sum+cost <= lim.l
	case algorithms.TokenBucket:
		full := lim.q * lim.cap
		switch {
		case !m.started:
			m.level, m.started = full, true
		case t > m.last:
			if d := t - m.last; d >= (full-m.level)/lim.p+1 {
				m.level = full
			} else {
				m.level = min(full, m.level+lim.p*d)
			}
		}
		m.last = t
		return m.level >= lim.q*cost
	}
	return true
}

// take records an admission of cost permits at the time of the last fits.
func (lim *limit) take(m *meter, cost int64) {
	switch lim.kind {
	case algorithms.SlidingWindow:
		m.times = append(m.times, m.last)
		m.permits = append(m.permits, cost)
		m.sum += cost
	case algorithms.FixedWindow:
		m.sum += cost
	case algorithms.TokenBucket:
		m.level -= lim.q * cost
	}
}

// ratio is the use of the limit: permits counted over L, or tokens drawn over C.
func (lim *limit) ratio(m *meter) float64 {
	switch lim.kind {
	case algorithms.SlidingWindow, algorithms.FixedWindow:
		return float64(m.sum) / float64(lim.l)
	case algorithms.TokenBucket:
		full := lim.q * lim.cap
		return float64(full-m.level) / float64(full)
	}
	return 0
}
