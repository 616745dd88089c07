package verify

import (
	"cmp"
	"container/heap"
	"math"
	"slices"

	"github.com/limitbench/limitbench/algorithms"
)

// streamLimit checks one limit of a Stream: a state per scope, and the results gathered as
// the scopes find them, ordered as Check orders them (scope, then time) whatever the order in
// which they were found.
type streamLimit struct {
	s      *Stream
	lim    limit
	bk     limit // first-hit-window: condition (b)'s token bucket, lim.bucket()
	key    scopeKeyer
	sort   sorter
	buf    []Event // take's events of the kinds the limit reads
	sorted []Event // sortScopes' output
	counts []int   // sortScopes' counts per scope key
	scopes map[uint64]*streamScope
	active []*streamScope

	scopesAdmitted int
	definite       int64
	possible       int64
	chained        int64
	worst, worstP  found
	worstFree      found          // first-hit-window: the worst of conditions (a) and (b)
	viol           heapOf[violAt] // a max-heap: the top is dropped when it holds one too many
	violTotal      int64
	hide           int64 // the largest excess the unknown outcomes could hide, over the scopes
}

// found is a violation kept for Worst: its excess, where Check met it (scope, then time: the
// first of equal excesses wins) and its set.
type found struct {
	excess int64
	key    uint64
	b      int64
	where  Where
}

// better reports whether a violation of excess at (key, b) replaces f.
func (f *found) better(excess int64, key uint64, b int64) bool {
	return excess > f.excess || (excess == f.excess && excess > 0 && (key < f.key || (key == f.key && b < f.b)))
}

func newStreamLimit(s *Stream, lim limit) *streamLimit {
	sl := &streamLimit{s: s, lim: lim, key: newScopeKeyer(lim.scope), scopes: map[uint64]*streamScope{},
		viol: heapOf[violAt]{less: func(a, b violAt) bool { return a.cmp(b) > 0 }}}
	if lim.kind == algorithms.FirstHitWindow {
		sl.bk = lim.bucket()
	}
	return sl
}

// streamScope is one scope of one limit: its events not yet dropped, in Lo order, and the
// kind's sweeps over them. Positions are absolute (see queue).
type streamScope struct {
	key              uint64
	subject          uint32 // of its first event, for its names
	client           uint16
	adm              queue[Event]   // admissions
	hiWait           hiHeap         // admissions whose Hi is not final yet
	hiOrd            queue[hiEntry] // admissions of adm whose Hi is final, in Hi order
	done             flags          // positions whose Hi-order entry is dropped
	doneTo           int            // every position before it is done
	unknown          queue[Event]   // unknown outcomes
	rest             queue[Event]   // denied and failed requests (first-hit-window only)
	maxHi            int64          // the largest Hi of an admission, when admitted
	admitted, active bool
	sw               scopeSweeper
}

// scopeSweeper is a kind's sweeps over one scope.
type scopeSweeper interface {
	// step runs the sweeps as far as the frontier F allows: every event of the scope with
	// Lo < F is in its queues and none of smaller Lo will come (F is posInf at the end). It
	// returns the first positions of adm, hiOrd, unknown and rest that it may still read.
	step(sl *streamLimit, sc *streamScope, F int64) needs
	// finish ends what waits for the history's end (after the last step), for every scope.
	finish(sl *streamLimit, sc *streamScope)
}

// nextEnd returns the next end of a sweep over the admissions' ends merged with the unknown
// outcomes': the least of Hi-order entry i's hi + G and unknown outcome u's Lo + G (posInf:
// none), and whether it is an admission's.
func (sc *streamScope) nextEnd(i, u int, G int64) (b int64, known bool) {
	b, bu := int64(posInf), int64(posInf)
	if i < sc.hiOrd.end() {
		b = sc.hiOrd.at(i).hi + G
	}
	if u < sc.unknown.end() {
		bu = sc.unknown.at(u).Lo() + G
	}
	return min(b, bu), b <= bu
}

// needs is what a scope's sweeps may still read.
type needs struct{ adm, hi, unknown, rest int }

// take gives the limit a batch of released events: sorted by its scope, each scope's run is
// appended to its queues.
func (sl *streamLimit) take(all []Event) {
	ev := all
	if sl.lim.kind == algorithms.NoContract {
		return
	}
	if sl.lim.kind != algorithms.FirstHitWindow {
		// Only first-hit windows read denials and failures.
		ev = sl.buf[:0]
		for _, x := range all {
			if k := x.Kind(); k == Admitted || k == Unknown {
				ev = append(ev, x)
			}
		}
		sl.buf = ev
	}
	ev = sl.sortScopes(ev)
	for i := 0; i < len(ev); {
		k := sl.key.key(&ev[i])
		j := i + 1
		for j < len(ev) && sl.key.key(&ev[j]) == k {
			j++
		}
		sl.scope(k, &ev[i]).append(sl, ev[i:j])
		i = j
	}
}

// scopeSortMax is the widest range of scope keys that sortScopes sorts by counting.
const scopeSortMax = 1 << 16

// scopeSortRun is the longest run of one scope that sortScopes sorts by insertion.
const scopeSortRun = 64

// sortScopes returns ev sorted by scope, then the packed times t, as sorter.sort sorts it (ties,
// equal t in one scope, in no particular order). When the scope keys span at most scopeSortMax
// values it sorts by counting into sl.sorted, leaving ev as it was: the scopes' runs keep the
// order of ev, which the reorder releases bin by bin in Lo order, so each run is nearly sorted
// already and is finished by insertion sort on t (a long run by sorter.sort). Else it sorts ev
// in place with sorter.sort.
func (sl *streamLimit) sortScopes(ev []Event) []Event {
	if len(ev) < 2 {
		return ev
	}
	lo, hi := uint64(math.MaxUint64), uint64(0)
	for i := range ev {
		k := sl.key.key(&ev[i])
		lo, hi = min(lo, k), max(hi, k)
	}
	if hi-lo >= scopeSortMax {
		sl.sort.sort(ev, sl.lim.scope)
		return ev
	}
	n := int(hi-lo) + 1
	if cap(sl.counts) < n+1 {
		sl.counts = make([]int, n+1)
	}
	counts := sl.counts[:n+1]
	clear(counts)
	for i := range ev {
		counts[sl.key.key(&ev[i])-lo+1]++
	}
	for k := 1; k <= n; k++ {
		counts[k] += counts[k-1]
	}
	if cap(sl.sorted) < len(ev) {
		sl.sorted = make([]Event, len(ev), 2*len(ev))
	}
	out := sl.sorted[:len(ev)]
	for i := range ev {
		k := sl.key.key(&ev[i]) - lo
		out[counts[k]] = ev[i]
		counts[k]++
	}
	// counts[k] is now where scope lo + k's run ends.
	start := 0
	for _, end := range counts[:n] {
		if run := out[start:end]; len(run) > scopeSortRun {
			sl.sort.sort(run, sl.lim.scope)
		} else {
			insertionByT(run)
		}
		start = end
	}
	return out
}

// insertionByT sorts ev by the packed times t, by insertion: fast when ev is nearly sorted.
func insertionByT(ev []Event) {
	for i := 1; i < len(ev); i++ {
		e := ev[i]
		j := i
		for ; j > 0 && ev[j-1].t > e.t; j-- {
			ev[j] = ev[j-1]
		}
		ev[j] = e
	}
}

// scopeKeyer is scopeKey(scope) without a call through a func value: an event's key is its
// subject and client masked and shifted.
type scopeKeyer struct {
	subMask, cliMask uint64
	subShift         uint
}

func newScopeKeyer(sc algorithms.Scope) scopeKeyer {
	switch sc {
	case algorithms.PerClient:
		return scopeKeyer{subMask: math.MaxUint64, cliMask: math.MaxUint64, subShift: 16}
	case algorithms.PerConsumer:
		return scopeKeyer{cliMask: math.MaxUint64}
	}
	return scopeKeyer{subMask: math.MaxUint64}
}

// key returns e's scope key, as scopeKey's function does.
func (k *scopeKeyer) key(e *Event) uint64 {
	return (uint64(e.Subject)&k.subMask)<<k.subShift | uint64(e.Client)&k.cliMask
}

// scope returns the state of the scope of key k, made from its first event e when new.
func (sl *streamLimit) scope(k uint64, e *Event) *streamScope {
	sc := sl.scopes[k]
	if sc == nil {
		sc = &streamScope{key: k, subject: e.Subject, client: e.Client, sw: newSweeper(sl.lim)}
		sl.scopes[k] = sc
	}
	if !sc.active {
		sc.active = true
		sl.active = append(sl.active, sc)
	}
	return sc
}

// append adds one scope's released events, in Lo order.
func (sc *streamScope) append(sl *streamLimit, ev []Event) {
	firstHit := sl.lim.kind == algorithms.FirstHitWindow
	for i := range ev {
		e := ev[i]
		switch e.Kind() {
		case Admitted:
			if !sc.admitted {
				sc.admitted, sc.maxHi = true, e.Hi()
				sl.scopesAdmitted++
			}
			hi := e.Hi()
			sc.maxHi = max(sc.maxHi, hi)
			sc.hiWait.push(hiEntry{hi: hi, pos: sc.adm.end(), permits: e.Permits})
			sc.adm.push(e)
		case Unknown:
			sc.unknown.push(e)
		default:
			if firstHit {
				sc.rest.push(e)
			}
		}
	}
}

// step runs every active scope's sweeps up to F and drops what they no longer need; a scope
// left with nothing queued leaves the active list.
func (sl *streamLimit) step(F int64) {
	kept := sl.active[:0]
	for _, sc := range sl.active {
		for len(sc.hiWait) > 0 && sc.hiWait[0].hi < F {
			sc.hiOrd.push(sc.hiWait.pop())
		}
		sc.drop(sc.sw.step(sl, sc, F))
		if sc.adm.empty() && sc.unknown.empty() && sc.rest.empty() && len(sc.hiWait) == 0 {
			sc.active = false
			continue
		}
		kept = append(kept, sc)
	}
	clear(sl.active[len(kept):])
	sl.active = kept
}

// drop drops what n says the sweeps no longer read: Hi-order entries before n.hi (their
// positions are then done), and positions before both n.adm and the first not done.
func (sc *streamScope) drop(n needs) {
	for i := sc.hiOrd.off; i < n.hi; i++ {
		sc.done.set(sc.hiOrd.at(i).pos)
	}
	sc.hiOrd.dropTo(n.hi)
	for sc.doneTo < sc.adm.end() && sc.done.get(sc.doneTo) {
		sc.doneTo++
	}
	sc.done.dropTo(sc.doneTo)
	sc.adm.dropTo(min(n.adm, sc.doneTo))
	sc.unknown.dropTo(n.unknown)
	sc.rest.dropTo(n.rest)
}

// names returns the scope's names, as sweeper.names does.
func (sl *streamLimit) names(sc *streamScope) (subject, client string) {
	e := Event{Subject: sc.subject, Client: sc.client}
	sw := sweeper{lim: sl.lim, log: &sl.s.hdr}
	return sw.names(&e)
}

// definiteAt records a definite violation of scope sc ending at b (relative), as
// sweeper.definiteAt does; where describes its set, called only when it is the worst so far.
func (sl *streamLimit) definiteAt(sc *streamScope, b, excess int64, where func() Where) {
	sl.definite++
	if sl.worst.better(excess, sc.key, b) {
		sl.worst = found{excess: excess, key: sc.key, b: b, where: where()}
	}
	sl.violTotal++
	v := violAt{key: sc.key, b: b, excess: excess, subject: sc.subject, client: sc.client}
	if sl.viol.Len() == MaxViolations && v.cmp(sl.viol.s[0]) > 0 {
		return // after the MaxViolations first
	}
	heap.Push(&sl.viol, v)
	if sl.viol.Len() > MaxViolations {
		heap.Pop(&sl.viol)
	}
}

// possibleAt records n possible violations of scope sc at b with the given excess.
func (sl *streamLimit) possibleAt(sc *streamScope, b, excess, n int64, where func() Where) {
	sl.possible += n
	if sl.worstP.better(excess, sc.key, b) {
		sl.worstP = found{excess: excess, key: sc.key, b: b, where: where()}
	}
}

// finish runs every scope to the end and returns the limit's report, as Check's.
func (sl *streamLimit) finish() LimitReport {
	rep := LimitReport{Contract: sl.lim.c}
	if sl.lim.kind == algorithms.NoContract {
		return rep
	}
	for _, sc := range sl.scopes {
		sc.sw.finish(sl, sc)
	}
	rep.Scopes = sl.scopesAdmitted
	rep.Definite, rep.Possible, rep.Chained = sl.definite, sl.possible, sl.chained
	rep.Worst, rep.WorstPossible, rep.WorstUnchained = sl.worst.where, sl.worstP.where, sl.worstFree.where
	if rep.Definite == 0 && sl.s.rep.Unknown > 0 {
		rep.UnknownExcess = sl.hide
		rep.UnknownCouldHide = rep.UnknownExcess > 0
	}
	v := slices.Clone(sl.viol.s)
	slices.SortFunc(v, func(a, b violAt) int { return a.cmp(b) })
	for _, x := range v {
		sc := streamScope{subject: x.subject, client: x.client}
		sub, cli := sl.names(&sc)
		rep.Violations = append(rep.Violations, Violation{Subject: sub, Client: cli, At: sl.s.hdr.Base + x.b, Excess: x.excess})
	}
	rep.ViolationsDropped = sl.violTotal - int64(len(v))
	return rep
}

// violAt is a definite violation in violHeap.
type violAt struct {
	key       uint64
	b, excess int64
	subject   uint32
	client    uint16
}

func (a violAt) cmp(b violAt) int {
	if c := cmp.Compare(a.key, b.key); c != 0 {
		return c
	}
	return cmp.Compare(a.b, b.b)
}

// heapOf is a binary heap of T ordered by less, for container/heap.
type heapOf[T any] struct {
	s    []T
	less func(a, b T) bool
}

func (h *heapOf[T]) Len() int           { return len(h.s) }
func (h *heapOf[T]) Less(i, j int) bool { return h.less(h.s[i], h.s[j]) }
func (h *heapOf[T]) Swap(i, j int)      { h.s[i], h.s[j] = h.s[j], h.s[i] }
func (h *heapOf[T]) Push(x any)         { h.s = append(h.s, x.(T)) }
func (h *heapOf[T]) Pop() any {
	x := h.s[len(h.s)-1]
	h.s = h.s[:len(h.s)-1]
	return x
}
