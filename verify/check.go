package verify

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/limitbench/limitbench/algorithms"
)

// MaxViolations is how many definite violations a LimitReport lists; the rest are counted in
// ViolationsDropped.
const MaxViolations = 1000

// Violation is one definite violation, for plots and logs.
type Violation struct {
	// Subject and Client name the scope; a name that is not part of the scope is empty.
	Subject, Client string
	// At is the instant in µs since the Unix epoch that ends the violating window
	// (sliding-window, token-bucket), or the start kW of the aligned window (fixed-window), or
	// the latest widened Hi of the violating set (first-hit-window).
	At int64
	// Excess is the permits over the limit there.
	Excess int64
}

// Where describes one violating set of admissions. Its JSON form (hunt.json's worst window) has
// the fields subject and client (omitted when empty), lo_us, hi_us, permits, allowed and excess.
type Where struct {
	// Subject and Client name the scope; a name that is not part of the scope is empty.
	Subject string `json:"subject,omitempty"`
	Client  string `json:"client,omitempty"`
	// Lo and Hi are the earliest widened Lo and the latest widened Hi of the set, in µs since
	// the Unix epoch.
	Lo int64 `json:"lo_us"`
	Hi int64 `json:"hi_us"`
	// Permits is the permits of the set, Allowed what the contract allows it (see the package
	// doc), Excess = Permits − Allowed > 0.
	Permits int64 `json:"permits"`
	Allowed int64 `json:"allowed"`
	Excess  int64 `json:"excess"`
}

// LimitReport is the check of one contract (the main one or one of its Also).
type LimitReport struct {
	// Contract is the contract checked, without its Also.
	Contract algorithms.Contract
	// Scopes is the number of scopes with at least one admission.
	Scopes int
	// Definite and Possible count violations as the package doc defines: distinct window ends
	// for sliding-window, token-bucket and first-hit-window (for first-hit-window's possible
	// violations, distinct instants b = max lo), aligned windows for fixed-window.
	Definite, Possible int64
	// Chained counts, for first-hit-window, the definite violations that only condition (c) of
	// the package doc finds: they rest on the log holding every request that reached the
	// limiter, so a dropped outcome or a mismatched decision time can explain them (see
	// JudgeWith). WorstUnchained is the worst of the other definite violations (zero when
	// there is none). Both are zero for the other kinds.
	Chained        int64
	WorstUnchained Where
	// Worst is the definite violation with the largest excess (zero when Definite == 0);
	// WorstPossible the same among possible ones.
	Worst, WorstPossible Where
	// UnknownExcess is the largest excess of a definite violation that the unknown outcomes could
	// make had they been admitted, each at the worst instant from its Lo on (an unknown outcome
	// may have run any time after it was sent, even after the run ended); for first-hit-window,
	// an upper bound that also covers the windows an unknown outcome's instant can move (see the
	// package doc). It is computed only when Definite == 0 and the log has unknown outcomes
	// (else 0).
	UnknownExcess int64
	// UnknownCouldHide is UnknownExcess > 0: no definite violation among the known admissions,
	// but the unknown outcomes could hide one.
	UnknownCouldHide bool
	// Violations lists definite violations by scope, then time: at most MaxViolations, the rest
	// counted in ViolationsDropped.
	Violations        []Violation
	ViolationsDropped int64
}

// Report is the result of Check.
type Report struct {
	// Events counts the log's events; Admitted, Denied, Unknown and Failed count them by kind.
	Events, Admitted, Denied, Unknown, Failed int64
	// AdmittedPermits is the sum of the permits of admitted events, MaxPermits the largest
	// permits of one admitted event.
	AdmittedPermits, MaxPermits int64
	// Limits has one entry per contract: the main one first, then its Also, depth first.
	Limits []LimitReport
}

// Definite returns the number of definite violations over all limits.
func (r *Report) Definite() int64 {
	var n int64
	for _, l := range r.Limits {
		n += l.Definite
	}
	return n
}

// Possible returns the number of possible violations over all limits.
func (r *Report) Possible() int64 {
	var n int64
	for _, l := range r.Limits {
		n += l.Possible
	}
	return n
}

// Check verifies that the admissions of log keep contract c and its Also contracts, as the
// package doc defines. It reorders log.Events. It returns an error wrapping ErrBadContract,
// ErrBadLog or ErrOverflow when it cannot check.
func Check(c algorithms.Contract, log *Log) (Report, error) {
	lims, err := flatten(c)
	if err != nil {
		return Report{}, fmt.Errorf("check: %w", err)
	}
	if err := log.validate(); err != nil {
		return Report{}, fmt.Errorf("check: %w", err)
	}
	// Times below are relative to log.Base, which only fixed-window's alignment and the times
	// reported add back.
	r := Report{Events: int64(len(log.Events))}
	var lo, hi int64 = math.MaxInt64, math.MinInt64
	var permits int64 // admitted and unknown
	// Count, and move the admissions to the front (then the unknown outcomes after them), once
	// for every limit.
	ev := log.Events
	nA := 0
	for i := range ev {
		e := &ev[i]
		k := e.Kind()
		switch k {
		case Admitted:
			r.Admitted++
			r.AdmittedPermits += int64(e.Permits)
			r.MaxPermits = max(r.MaxPermits, int64(e.Permits))
			permits += int64(e.Permits)
		case Denied:
			r.Denied++
		case Unknown:
			r.Unknown++
			permits += int64(e.Permits)
		case Failed:
			r.Failed++
		}
		lo, hi = min(lo, e.Lo()), max(hi, e.Hi())
		if k == Admitted {
			ev[i], ev[nA] = ev[nA], ev[i]
			nA++
		}
	}
	nU := partition(ev[nA:], Unknown)
	s := sweeper{log: log, base: log.Base}
	r.Limits = make([]LimitReport, len(lims))
	for i, lim := range lims {
		if len(ev) > 0 {
			if err := lim.overflow(hi-lo, permits); err != nil {
				return Report{}, fmt.Errorf("check: %w", err)
			}
		}
		if lim.kind != algorithms.FirstHitWindow {
			r.Limits[i] = s.check(lim, ev[:nA], ev[nA:nA+nU])
		}
	}
	// First-hit windows depend on every request, so their check sorts the unknown outcomes and
	// the denied and failed requests too, after the other limits are done with them.
	for i, lim := range lims {
		if lim.kind == algorithms.FirstHitWindow {
			r.Limits[i] = s.firstHit(lim, ev[:nA], ev[nA:nA+nU], ev[nA+nU:])
		}
	}
	return r, nil
}

// overflow reports whether a token-bucket check of a log spanning span µs with at most permits
// permits could overflow int64, for a token-bucket limit or the token bucket of a
// first-hit-window limit's condition (b); nil for the other kinds.
func (lim *limit) overflow(span, permits int64) error {
	const bound = 1 << 61
	switch lim.kind {
	case algorithms.TokenBucket:
	case algorithms.FirstHitWindow:
		if lim.l > bound {
			return fmt.Errorf("%w: %s: limit over 2^61", ErrOverflow, lim.c)
		}
		b := lim.bucket()
		return b.overflow(span, permits)
	default:
		return nil
	}
	span += 2*lim.g + 2
	if span > bound/lim.p || permits > bound/lim.q || lim.cap > bound/lim.q {
		return fmt.Errorf("%w: %s over a span of %d µs", ErrOverflow, lim.c, span)
	}
	return nil
}

// sweeper checks one limit at a time; its buffers are reused across scopes and limits.
type sweeper struct {
	lim  limit
	log  *Log
	base int64 // log.Base: times are relative to it, fixed-window's windows aligned on the epoch
	// sorted is the scope the admissions are sorted by (then Lo, then Hi), when sortedOK.
	sorted   algorithms.Scope
	sortedOK bool
	sort     sorter
	buf      []Event // byClient
	count    []int   // byClient
	// max is the size of the largest scope of the current pass: ord and added are allocated
	// once at that size, so a pass holds no garbage from growing them. tree and vals grow as
	// needed, to bucketDefinite's widest window (to the largest scope in bucketHide).
	max    int
	ord    []uint32 // hi order of the current scope, when it differs from lo order
	tree   prefixTree
	vals   []int64
	starts startMax // maxStarts
	endAt  []int    // maxStarts: the positions of one end

	// results of the current pass
	rep           *LimitReport
	definite      int64
	worst, worstP worstAt
	group         []Event // the scope being swept

	// first-hit-window (see firstHit): while collecting, definiteAt appends to ends instead of
	// recording; the buffers are reused across scopes.
	collecting bool
	ends       []fhEnd
	fhChainBuf []fhWindow
	fhEndBuf   []fhEnd
	fhReqBuf   []ival
	fhStartBuf []ival
	fhBits     []uint64
	fhCoverU   []int64
	fhCoverV   []int64
}

// worstAt remembers where the largest excess was found, to describe it afterwards.
type worstAt struct {
	excess int64
	group  []Event
	at     int64
	// single: sliding-window's condition (ii), one admission of more than L permits, ending at
	// at (see slidingDefinite).
	single bool
}

// check checks one limit on the admissions, as Check leaves them, and the unknown outcomes.
func (s *sweeper) check(lim limit, adm, unknown []Event) LimitReport {
	rep := LimitReport{Contract: lim.c}
	if lim.kind == algorithms.NoContract {
		return rep
	}
	s.lim, s.rep = lim, &rep
	rep.Scopes = s.pass(adm)
	rep.Definite = s.definite
	if s.worst.excess > 0 {
		rep.Worst = s.describe(s.worst, false)
	}
	if s.worstP.excess > 0 {
		rep.WorstPossible = s.describe(s.worstP, true)
	}
	if rep.Definite == 0 && len(unknown) > 0 {
		rep.UnknownExcess = s.hide(adm, unknown)
		rep.UnknownCouldHide = rep.UnknownExcess > 0
	}
	s.rep = nil
	return rep
}

// partition moves the events of kind k to the front of ev and returns how many there are.
func partition(ev []Event, k Kind) int {
	n := 0
	for i := range ev {
		if ev[i].Kind() == k {
			ev[i], ev[n] = ev[n], ev[i]
			n++
		}
	}
	return n
}

// pass sorts ev by scope, then Lo, then Hi, and sweeps every scope. It returns the number of
// scopes.
func (s *sweeper) pass(ev []Event) int {
	s.definite = 0
	s.worst, s.worstP = worstAt{}, worstAt{}
	switch {
	case s.sortedOK && s.sorted == s.lim.scope:
		// Already in order: an earlier limit had the same scope.
	case s.sortedOK && s.sorted == algorithms.PerSubject && s.lim.scope == algorithms.PerClient:
		// In subject order already: each subject's run needs only ordering by client, Lo and
		// Hi, small sorts that fit in cache unless one subject takes most admissions.
		for i := 0; i < len(ev); {
			j := i + 1
			for j < len(ev) && ev[j].Subject == ev[i].Subject {
				j++
			}
			s.byClient(ev[i:j])
			i = j
		}
	default:
		s.sort.sort(ev, s.lim.scope)
	}
	s.sorted, s.sortedOK = s.lim.scope, true
	// A scope whose admissions hold at most the allowance in all (L, or C for token-bucket)
	// cannot violate the contract, definitely or possibly: every set of them has at most that
	// many permits, and the allowance of a set is never less. It is counted, not swept.
	allow := s.lim.l
	if s.lim.kind == algorithms.TokenBucket {
		allow = s.lim.cap
	}
	key := scopeKey(s.lim.scope)
	// next returns the end of the scope that starts at i, and its permits.
	next := func(i int) (int, int64) {
		k, j, permits := key(&ev[i]), i+1, int64(ev[i].Permits)
		for j < len(ev) && key(&ev[j]) == k {
			permits += int64(ev[j].Permits)
			j++
		}
		return j, permits
	}
	s.max = 0
	for i := 0; i < len(ev); {
		j, permits := next(i)
		if permits > allow {
			s.max = max(s.max, j-i)
		}
		i = j
	}
	scopes := 0
	for i := 0; i < len(ev); {
		j, permits := next(i)
		if permits > allow {
			s.sweep(ev[i:j])
		}
		scopes++
		i = j
	}
	return scopes
}

// refineMax is the most events byClient sorts with a counting sort through a buffer.
const refineMax = 4096

// byClient sorts the events of one subject, in Lo then Hi order, by client, then Lo, then Hi: a
// stable counting sort by client through a buffer of at most refineMax events, or the radix sort
// for longer runs and runs with fewer events than clients.
func (s *sweeper) byClient(run []Event) {
	if len(run) < 2 {
		return
	}
	var top uint16
	for i := range run {
		top = max(top, run[i].Client)
	}
	if len(run) > refineMax || int(top) >= len(run) {
		s.sort.sort(run, algorithms.PerClient)
		return
	}
	count := slices.Grow(s.count[:0], int(top)+1)[:int(top)+1]
	clear(count)
	for i := range run {
		count[run[i].Client]++
	}
	at := 0
	for c, n := range count {
		count[c] = at
		at += n
	}
	buf := slices.Grow(s.buf[:0], refineMax)[:len(run)]
	for i := range run {
		c := run[i].Client
		buf[count[c]] = run[i]
		count[c]++
	}
	copy(run, buf)
	s.count, s.buf = count, buf
}

func scopeKey(sc algorithms.Scope) func(e *Event) uint64 {
	switch sc {
	case algorithms.PerClient:
		return func(e *Event) uint64 { return uint64(e.Subject)<<16 | uint64(e.Client) }
	case algorithms.PerConsumer:
		return func(e *Event) uint64 { return uint64(e.Client) }
	}
	return func(e *Event) uint64 { return uint64(e.Subject) }
}

// cmpTime orders events by Lo, then Hi, then Kind.
func cmpTime(a, b *Event) int { return cmp.Compare(a.t, b.t) }

// sortByScope sorts ev by scope key, then Lo, then Hi, then Kind.
func sortByScope(ev []Event, sc algorithms.Scope) {
	switch sc {
	case algorithms.PerClient:
		slices.SortFunc(ev, func(a, b Event) int {
			if a.Subject != b.Subject {
				return cmp.Compare(a.Subject, b.Subject)
			}
			if a.Client != b.Client {
				return cmp.Compare(a.Client, b.Client)
			}
			return cmpTime(&a, &b)
		})
	case algorithms.PerConsumer:
		slices.SortFunc(ev, func(a, b Event) int {
			if a.Client != b.Client {
				return cmp.Compare(a.Client, b.Client)
			}
			return cmpTime(&a, &b)
		})
	default:
		slices.SortFunc(ev, func(a, b Event) int {
			if a.Subject != b.Subject {
				return cmp.Compare(a.Subject, b.Subject)
			}
			return cmpTime(&a, &b)
		})
	}
}

// sweep checks one scope g, sorted by Lo then Hi.
func (s *sweeper) sweep(g []Event) {
	s.group = g
	// ord is nil when Hi is non-decreasing in g: then Hi order is g's order.
	var ord []uint32
	for i, prev := 1, g[0].Hi(); i < len(g); i++ {
		hi := g[i].Hi()
		if hi < prev {
			ord = s.hiOrder(g)
			break
		}
		prev = hi
	}
	switch s.lim.kind {
	case algorithms.SlidingWindow:
		s.slidingDefinite(g, ord)
		s.slidingPossible(g, ord)
	case algorithms.FixedWindow:
		s.fixedDefinite(g)
		s.fixedPossible(g, ord)
	case algorithms.TokenBucket:
		s.bucketDefinite(g, ord)
		s.bucketPossible(g, ord)
	}
}

// hiOrder returns the indices of g sorted by Hi, then Lo. g is in Lo order, and Hi order differs
// from it only where intervals nest, mostly by a few places, so it starts with an insertion sort,
// O(n + moves); past n·log2(n) moves (intervals that nest deeply) it finishes with a comparison
// sort. As g is in Lo order, a smaller index never has a larger Lo: ties in Hi are ordered by
// index, and only Hi is decoded.
func (s *sweeper) hiOrder(g []Event) []uint32 {
	n := len(g)
	ord := slices.Grow(s.ord[:0], s.max)
	for i := range g {
		ord = append(ord, uint32(i))
	}
	s.ord = ord
	budget := n * bits.Len(uint(n))
	// Widths below 2^20 µs (unit 0, nearly always) decode without a shift.
	var units uint64
	for i := range g {
		units |= g[i].t
	}
	narrow := units&unitMask == 0
	for i := 1; i < n; i++ {
		var moved int
		if narrow {
			moved = insertByHiNarrow(g, ord[:i+1])
		} else {
			moved = insertByHi(g, ord[:i+1])
		}
		if budget -= moved; budget < 0 {
			slices.SortFunc(ord, func(a, b uint32) int {
				if c := cmp.Compare(g[a].Hi(), g[b].Hi()); c != 0 {
					return c
				}
				return cmp.Compare(a, b)
			})
			break
		}
	}
	return ord
}

// insertByHi moves the last position of ord, x = len(ord) − 1, back past the positions before
// it (all < x, in Hi order) whose Hi is larger, and returns how far it moved it.
func insertByHi(g []Event, ord []uint32) int {
	i := len(ord) - 1
	x := ord[i]
	hi := g[x].Hi()
	j := i
	for ; j > 0; j-- {
		y := ord[j-1]
		if g[y].Hi() <= hi {
			break
		}
		ord[j] = y
	}
	ord[j] = x
	return i - j
}

// insertByHiNarrow is insertByHi for events whose widths are all below 2^20 µs (unit 0).
func insertByHiNarrow(g []Event, ord []uint32) int {
	i := len(ord) - 1
	x := ord[i]
	hi := g[x].hiNarrow()
	j := i
	for ; j > 0; j-- {
		y := ord[j-1]
		if g[y].hiNarrow() <= hi {
			break
		}
		ord[j] = y
	}
	ord[j] = x
	return i - j
}

// at returns the i-th index in Hi order.
func at(ord []uint32, i int) int {
	if ord == nil {
		return i
	}
	return int(ord[i])
}

// definiteAt records a definite violation of the current scope ending at instant b (or in the
// aligned window starting at b), relative to the log's Base, with the given excess. It reports
// whether the violation is the new s.worst.
func (s *sweeper) definiteAt(b, excess int64) (worst bool) {
	if s.collecting {
		s.ends = append(s.ends, fhEnd{b: b, excess: excess, cond: fhCount})
		return false
	}
	s.definite++
	if excess > s.worst.excess {
		s.worst = worstAt{excess: excess, group: s.group, at: b}
		worst = true
	}
	if len(s.rep.Violations) >= MaxViolations {
		s.rep.ViolationsDropped++
		return
	}
	sub, cli := s.names(&s.group[0])
	s.rep.Violations = append(s.rep.Violations, Violation{Subject: sub, Client: cli, At: s.base + b, Excess: excess})
	return worst
}

// possibleAt records n possible violations of the current scope at b (relative, as in
// definiteAt) with the given excess.
func (s *sweeper) possibleAt(b, excess, n int64) {
	s.rep.Possible += n
	if excess > s.worstP.excess {
		s.worstP = worstAt{excess: excess, group: s.group, at: b}
	}
}

// names returns the scope names of e's scope.
func (s *sweeper) names(e *Event) (subject, client string) {
	switch s.lim.scope {
	case algorithms.PerClient:
		return s.log.Subjects[e.Subject], s.log.Clients[e.Client]
	case algorithms.PerConsumer:
		return "", s.log.Clients[e.Client]
	}
	return s.log.Subjects[e.Subject], ""
}

// floorDiv returns ⌊a/b⌋ for b > 0.
func floorDiv(a, b int64) int64 {
	d := a / b
	if a%b != 0 && a < 0 {
		d--
	}
	return d
}

// ceilDiv returns ⌈a/b⌉ for a >= 0, b > 0.
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }
