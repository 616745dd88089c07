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
	// MaxWindowRatio is the largest use of a contract by the algorithm's own admissions, at the
	// requests' midpoint times, the largest over c's limits. For sliding-window(L, W) and
	// fixed-window(L, W) alike it is the most permits admitted in any sliding window (t−W, t],
	// over L: above 1 is over-admission for sliding-window, while fixed-window allows up to 2
	// (L at the end of one aligned window and L at the start of the next), so the figure shows
	// how far a fixed-window algorithm (or sliding-counter, which keeps fixed-window exactly and
	// sliding-window only approximately) exceeds its limit over a sliding window. For
	// token-bucket(C, r) it is the tokens drawn and not yet refilled over C (refill capped at C):
	// above 1 is over-admission. For first-hit-window(L, W) it is the most permits admitted in
	// one first-hit window, the windows opened by the algorithm's own requests (admitted or
	// denied, at their midpoints), over L: above 1 is over-admission.
	MaxWindowRatio float64
	// Pressure is how hard the algorithm's own decisions pressed the contract (see Pressure).
	Pressure Pressure
	// Bin is the width of the bins of Series.
	Bin time.Duration
	// Series has one bin per Bin from the first to the last request, empty bins included.
	Series []AccuracyBin
}

// AccuracySummary is the accuracy section of a result entry (result.json's "accuracy"): an
// AccuracyReport's figures, ratios rounded to three decimals. The zero value means not computed.
type AccuracySummary struct {
	// IdealAllowed is what the exact limiter admitted.
	IdealAllowed int64 `json:"ideal_allowed"`
	// Efficiency is admitted / IdealAllowed (1 is exact; above 1 over-admits).
	Efficiency float64 `json:"efficiency"`
	// FalseDenials are denials the exact limiter would have admitted.
	FalseDenials int64 `json:"false_denials"`
	// MaxWindowRatio is, for window contracts, the most permits admitted in any sliding window
	// (t−W, t] divided by the limit L (fixed-window allows up to 2 across a window boundary); for
	// token-bucket, the most tokens drawn and not yet refilled over the capacity C. See
	// AccuracyReport.MaxWindowRatio.
	MaxWindowRatio float64 `json:"max_window_ratio"`
}

// Summary returns r's figures as a result entry holds them.
func (r AccuracyReport) Summary() AccuracySummary {
	return AccuracySummary{IdealAllowed: r.IdealAllowed, Efficiency: round3(r.Efficiency), FalseDenials: r.FalseDenials,
		MaxWindowRatio: round3(r.MaxWindowRatio)}
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
	ev := log.Events
	n := partitionFunc(ev, func(e *Event) bool { return e.Kind() == Admitted || e.Kind() == Denied })
	ev = ev[:n]
	sortByMid(ev)
	r := newAccuracyRun(lims, log.Base, log.From, bin)
	r.rep.Excluded = int64(len(log.Events) - n)
	for i := range ev {
		r.take(&ev[i])
	}
	return r.report()
}

// accuracyRun is Accuracy's replay of the decided requests, taken one at a time in the order of
// sortByMid: the ideal limiter's and the algorithm's own meters per limit and scope, and the
// report so far. Accuracy runs it over a sorted log, the streaming checker as the requests
// come. Times are absolute (Base added): fixed-window's windows, the bins and From are
// aligned on the Unix epoch.
type accuracyRun struct {
	lims          []limit
	base, from    int64 // from: the first counted instant, 0 for all
	bin           time.Duration
	binUs         int64
	ideal, actual []map[uint64]*meter
	rep           AccuracyReport
	counting      bool  // a request at or after from was taken
	first, last   int64 // the first bin's start; the last request's midpoint
	fit           []bool
}

func newAccuracyRun(lims []limit, base, from int64, bin time.Duration) *accuracyRun {
	if bin <= 0 {
		bin = time.Second
	}
	r := &accuracyRun{lims: lims, base: base, from: from, bin: bin, binUs: micros(bin), fit: make([]bool, len(lims)),
		ideal: make([]map[uint64]*meter, len(lims)), actual: make([]map[uint64]*meter, len(lims))}
	for i := range lims {
		r.ideal[i], r.actual[i] = map[uint64]*meter{}, map[uint64]*meter{}
	}
	r.rep.Bin = bin
	return r
}

// ideal returns the ideal limiter's meter of limit j for e's scope.
func (r *accuracyRun) idealOf(j int, e *Event) *meter {
	k := scopeKey(r.lims[j].scope)(e)
	m := r.ideal[j][k]
	if m == nil {
		m = &meter{}
		r.ideal[j][k] = m
	}
	return m
}

// own returns the algorithm's own meter of limit j for e's scope; for fixed-window it also
// measures a sliding window, for MaxWindowRatio.
func (r *accuracyRun) own(j int, e *Event) *meter {
	k := scopeKey(r.lims[j].scope)(e)
	m := r.actual[j][k]
	if m == nil {
		m = &meter{slide: r.lims[j].kind == algorithms.FixedWindow}
		r.actual[j][k] = m
	}
	return m
}

// take replays the decided request e, the next in mid order.
func (r *accuracyRun) take(e *Event) {
	lims := r.lims
	t, cost := r.base+mid(e), int64(e.Permits)
	r.last = t
	if !r.counting && (r.from == 0 || t >= r.from) {
		r.counting, r.first = true, floorDiv(t, r.binUs)*r.binUs
	}
	if !r.counting {
		r.prime(e, t, cost)
		return
	}
	b := floorDiv(t, r.binUs) * r.binUs
	if (b-r.first)/r.binUs >= MaxBins {
		return // too many bins: report says so
	}
	for s := r.first + int64(len(r.rep.Series))*r.binUs; s <= b; s += r.binUs {
		r.rep.Series = append(r.rep.Series, AccuracyBin{Start: s})
	}
	cur := &r.rep.Series[len(r.rep.Series)-1]
	cur.Offered++
	r.rep.Offered++
	if r.idealFits(e, t, cost) {
		r.rep.IdealAllowed++
		cur.Ideal++
	}
	fits := true
	for j := range lims {
		r.fit[j] = lims[j].fits(r.own(j, e), t, cost)
		fits = r.fit[j] && fits
	}
	admitted := e.Kind() == Admitted
	switch {
	case !admitted && fits:
		r.rep.FalseDenials++
	case !admitted:
	default:
		r.rep.Admitted++
		cur.Admitted++
	}
	for j := range lims {
		m := r.own(j, e)
		if admitted {
			lims[j].take(m, cost)
		}
		ratio := lims[j].ratio(m)
		lims[j].press(&r.rep.Pressure, &m.press, m, t, r.fit[j], ratio)
		if admitted {
			cur.MaxRatio = max(cur.MaxRatio, ratio)
			r.rep.MaxWindowRatio = max(r.rep.MaxWindowRatio, ratio)
		}
	}
}

// idealFits gives e to the ideal limiter: it admits e when e fits every limit.
func (r *accuracyRun) idealFits(e *Event, t, cost int64) bool {
	fits := true
	for j := range r.lims {
		fits = r.lims[j].fits(r.idealOf(j, e), t, cost) && fits
	}
	if fits {
		for j := range r.lims {
			r.lims[j].take(r.idealOf(j, e), cost)
		}
	}
	return fits
}

// prime gives a request before From to both limiters as it went, counting nothing. The
// algorithm's own meters see every request too (a denied request opens a first-hit window;
// for the other kinds fits only advances time).
func (r *accuracyRun) prime(e *Event, t, cost int64) {
	r.idealFits(e, t, cost)
	for j := range r.lims {
		m := r.own(j, e)
		r.lims[j].fits(m, t, cost)
		if e.Kind() == Admitted {
			r.lims[j].take(m, cost)
		}
	}
}

// report returns the report of what was taken, or the error of too many bins.
func (r *accuracyRun) report() (AccuracyReport, error) {
	if !r.counting {
		return r.rep, nil
	}
	if bins := (r.last-r.first)/r.binUs + 1; bins > MaxBins {
		return AccuracyReport{}, fmt.Errorf("accuracy: %d bins of %s is more than %d: use a wider bin", bins, r.bin, MaxBins)
	}
	rep := r.rep
	rep.Series = slices.Clone(rep.Series)
	if rep.IdealAllowed > 0 {
		rep.Efficiency = float64(rep.Admitted) / float64(rep.IdealAllowed)
	}
	rep.Pressure.Denials = rep.Offered - rep.Admitted
	rep.Pressure.finish()
	return rep, nil
}

// mid returns the midpoint of e's interval, relative to the log's Base.
func mid(e *Event) int64 { return e.Lo() + e.width()/2 }

// sortByMid sorts ev by midpoint, admissions first among equal times, then subject, client,
// permits and times: a total order, so that the ideal limiter and the reference model see
// requests of one instant in one order, however they were logged.
func sortByMid(ev []Event) {
	slices.SortFunc(ev, func(a, b Event) int { return cmpMid(&a, &b) })
}

// cmpMid is sortByMid's order.
func cmpMid(a, b *Event) int {
	if c := cmp.Compare(mid(a), mid(b)); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Kind(), b.Kind()); c != 0 { // Admitted < Denied
		return c
	}
	if c := cmp.Compare(a.Subject, b.Subject); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Client, b.Client); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Permits, b.Permits); c != 0 {
		return c
	}
	return cmp.Compare(a.t, b.t)
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
	// win holds the admissions of the sliding window (t−W, t]: the state of a sliding-window
	// limit, and for fixed-window with slide set the measure of MaxWindowRatio.
	win   window
	slide bool
	// sum is the permits counted in aligned window k (fixed-window), or in the first-hit window
	// that started at k (first-hit-window).
	sum, k int64
	// token-bucket: q·tokens, at most q·C (below zero when over-admitted), at time last.
	// last is also the time of the last fits for every kind.
	level, last int64
	started     bool
	// press follows the algorithm's own meter's windows for Pressure.
	press pressing
}

// window is the admissions of a sliding window, oldest first from head, and their permits.
type window struct {
	times, permits []int64
	head           int
	sum            int64
}

// advance drops the admissions at or before t − w.
func (s *window) advance(t, w int64) {
	for s.head < len(s.times) && s.times[s.head] <= t-w {
		s.sum -= s.permits[s.head]
		s.head++
	}
	if s.head > 64 && 2*s.head > len(s.times) {
		s.times = append(s.times[:0], s.times[s.head:]...)
		s.permits = append(s.permits[:0], s.permits[s.head:]...)
		s.head = 0
	}
}

// add records an admission of cost permits at t.
func (s *window) add(t, cost int64) {
	s.times = append(s.times, t)
	s.permits = append(s.permits, cost)
	s.sum += cost
}

// fits advances m to t and reports whether cost more permits keep the limit.
func (lim *limit) fits(m *meter, t, cost int64) bool {
	switch lim.kind {
	case algorithms.SlidingWindow:
		m.win.advance(t, lim.w)
		m.last = t
		return m.win.sum+cost <= lim.l
	case algorithms.FixedWindow:
		if m.slide {
			m.win.advance(t, lim.w)
		}
		m.last = t
		if k := floorDiv(t, lim.w); !m.started || k != m.k {
			m.k, m.sum, m.started = k, 0, true
		}
		return m.sum+cost <= lim.l
	case algorithms.FirstHitWindow:
		// Every request opens a window when none is open: at the first, or at or after the
		// current one's end.
		if !m.started || t >= m.k+lim.w {
			m.k, m.sum, m.started = t, 0, true
		}
		m.last = t
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
		m.win.add(m.last, cost)
	case algorithms.FixedWindow:
		m.sum += cost
		if m.slide {
			m.win.add(m.last, cost)
		}
	case algorithms.FirstHitWindow:
		m.sum += cost
	case algorithms.TokenBucket:
		m.level -= lim.q * cost
	}
}

// ratio is the use of the limit for MaxWindowRatio: permits in the sliding window over L
// (fixed-window: in the aligned window, without slide), or tokens drawn over C.
func (lim *limit) ratio(m *meter) float64 {
	switch lim.kind {
	case algorithms.SlidingWindow:
		return float64(m.win.sum) / float64(lim.l)
	case algorithms.FixedWindow:
		if m.slide {
			return float64(m.win.sum) / float64(lim.l)
		}
		return float64(m.sum) / float64(lim.l)
	case algorithms.FirstHitWindow:
		return float64(m.sum) / float64(lim.l)
	case algorithms.TokenBucket:
		full := lim.q * lim.cap
		return float64(full-m.level) / float64(full)
	}
	return 0
}
