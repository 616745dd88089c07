package hunt

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/limitbench/limitbench/internal/trace"
)

// Predicate replays each trace of batch and answers, in batch order, how it fared: how many of
// its replays broke the contract. The traces of one batch may be replayed at the same time. An
// error ends shrinking.
type Predicate func(ctx context.Context, batch []*trace.Trace) ([]Answer, error)

// Answer is what replaying one trace showed: of Replays replays, Broke broke the contract
// definitely, and Score is the lowest score among them (verify.Approach's score: above 1 is a
// definite violation).
type Answer struct {
	Replays, Broke int
	Score          float64
}

// Holds reports whether every replay broke the contract: the trace still violates, and
// shrinking may keep it.
func (a Answer) Holds() bool { return a.Replays > 0 && a.Broke == a.Replays }

// Lost reports whether no replay broke the contract: the trace lost the violation. An answer
// that neither holds nor is lost (some replays broke it, some did not) is timing-dependent: the
// trace is not kept, and does not count towards minimality either.
func (a Answer) Lost() bool { return a.Replays > 0 && a.Broke == 0 }

// AnswerOf returns the Answer of a deterministic predicate about a trace: one replay that broke
// the contract (scored 2) when holds, else one that did not (scored 0).
func AnswerOf(holds bool) Answer {
	if holds {
		return Answer{Replays: 1, Broke: 1, Score: 2}
	}
	return Answer{Replays: 1}
}

// ShrinkOptions bound Shrink. Zero fields take the defaults.
type ShrinkOptions struct {
	// Calls is the most traces the predicate is asked about (default 200).
	Calls int
	// Batch is the number of traces asked about in one predicate call (default 1). It changes
	// the number of traces asked about, never the result: candidates are tried in a fixed
	// order and the first that still breaks the contract is taken.
	Batch int
	// Deadline, when not zero, ends shrinking at that time, read with Now (default time.Now).
	Deadline time.Time
	Now      func() time.Time
	// Progress, when set, is called after each batch the predicate was asked about, with the
	// lowest replay score of the trace kept so far as Best (Score until a step is kept).
	Progress func(Progress)
	// Score is the input's score (the violation as found), reported as Best until shrinking
	// keeps a smaller trace.
	Score float64
	// Skews are the clock offsets a client may be moved to (a hunt's Target.Skews); 0 is
	// always allowed. Shrinking moves a client's offset only to an allowed one of smaller
	// magnitude, so a reproducer never needs a clock offset the scenario did not allow.
	Skews []time.Duration
}

// Size measures a trace for shrinking. Sizes are ordered lexicographically, field by field in
// the order below: a trace is smaller when it has fewer rows; with as many, fewer clients; then
// fewer subjects, fewer permits, less clock offset, a shorter extent, and rounder offsets.
type Size struct {
	Rows int
	// Faults counts the faults the schedule places and the jumps of its clients' clocks.
	Faults            int
	Clients, Subjects int
	// Permits is the sum of the rows' costs.
	Permits int64
	// Skew is the sum of the clients' clock offsets' magnitudes, their jumps' included.
	Skew time.Duration
	// Extent is the time from the first row to the last.
	Extent time.Duration
	// Roughness is the number of significant decimal digits of the offsets in nanoseconds,
	// summed over rows: 1.5ms counts 2, 1.234567ms 7.
	Roughness int
}

// SizeOf returns the size of a canonical trace t.
func SizeOf(t *trace.Trace) Size {
	s := Size{Rows: len(t.Rows), Faults: len(t.Faults) + len(t.Jumps), Clients: len(t.Clients), Subjects: len(t.Subjects)}
	for _, r := range t.Rows {
		s.Permits += int64(r.Cost)
		s.Roughness += digits(r.At)
	}
	for _, f := range t.Faults {
		s.Roughness += digits(f.At) + digits(f.Duration)
	}
	for _, k := range t.Skew {
		s.Skew += k.Abs()
	}
	for _, j := range t.Jumps {
		s.Skew += j.Skew.Abs()
		s.Roughness += digits(j.At)
	}
	if len(t.Rows) > 0 {
		s.Extent = t.Rows[len(t.Rows)-1].At - t.Rows[0].At
	}
	return s
}

// digits returns the significant decimal digits of d in ns (0 for 0).
func digits(d time.Duration) int {
	d = d.Abs()
	for d > 0 && d%10 == 0 {
		d /= 10
	}
	n := 0
	for ; d > 0; d /= 10 {
		n++
	}
	return n
}

// Less reports whether s is smaller than o.
func (s Size) Less(o Size) bool {
	switch {
	case s.Rows != o.Rows:
		return s.Rows < o.Rows
	case s.Faults != o.Faults:
		return s.Faults < o.Faults
	case s.Clients != o.Clients:
		return s.Clients < o.Clients
	case s.Subjects != o.Subjects:
		return s.Subjects < o.Subjects
	case s.Permits != o.Permits:
		return s.Permits < o.Permits
	case s.Skew != o.Skew:
		return s.Skew < o.Skew
	case s.Extent != o.Extent:
		return s.Extent < o.Extent
	}
	return s.Roughness < o.Roughness
}

// String renders s as "12 rows, 2 clients, 1 subject, 14 permits, 4s skew, over 1.5ms" (with
// ", 1 faults" after the rows when it places any).
func (s Size) String() string {
	faults := ""
	if s.Faults > 0 {
		faults = fmt.Sprintf(", %d faults", s.Faults)
	}
	return fmt.Sprintf("%d rows%s, %d clients, %d subjects, %d permits, %s skew, over %s", s.Rows, faults, s.Clients, s.Subjects, s.Permits, s.Skew, s.Extent)
}

// ShrinkResult is what Shrink found.
type ShrinkResult struct {
	// Trace is the smallest trace found that still breaks the contract (the input itself when
	// nothing smaller did).
	Trace *trace.Trace
	// From and To are the sizes of the input and of Trace.
	From, To Size
	// Calls counts the traces the predicate was asked about; Steps the smaller traces kept.
	Calls, Steps int
	// Minimal reports that deleting any one row of Trace loses the violation: every such
	// deletion was asked about, and no replay of any of them broke the contract (Answer.Lost).
	// False when the budget, the deadline or a cancellation ended shrinking first, and when a
	// deletion broke the contract in some of its replays but not all (timing-dependent: neither
	// kept nor ruled out).
	Minimal bool
	// Score is the lowest score among the replays of Trace when shrinking kept it (Answer.Score);
	// ShrinkOptions.Score when nothing smaller than the input was kept.
	Score float64
	// Path is every trace shrinking kept, in order: the input first, Trace last (so
	// len(Path) == Steps + 1). A confirmation that rejects Trace walks back along it.
	Path []*trace.Trace
}

// Shrink returns a smaller trace than t (canonical and valid) for which pred still holds, with the
// passes the package doc lists, repeated until none makes progress or opt's bounds are reached.
// t must hold pred (it is not asked again). Shrink is deterministic: the same t and the same
// answers give the same result. It returns the result so far with a predicate's error, and with
// a nil error when ctx is canceled.
func Shrink(ctx context.Context, t *trace.Trace, pred Predicate, opt ShrinkOptions) (*ShrinkResult, error) {
	if opt.Calls == 0 {
		opt.Calls = DefaultShrink
	}
	if opt.Batch <= 0 {
		opt.Batch = 1
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	cur := t.Canonical()
	skews := append([]time.Duration{0}, opt.Skews...)
	slices.SortStableFunc(skews, func(a, b time.Duration) int { return cmp.Compare(a.Abs(), b.Abs()) })
	skews = slices.Compact(skews)
	s := &shrinker{
		skews:   skews,
		ctx:     ctx,
		pred:    pred,
		opt:     opt,
		cur:     cur,
		size:    SizeOf(cur),
		answers: map[uint64]Answer{},
		start:   opt.Now(),
		path:    []*trace.Trace{cur},
		score:   opt.Score,
	}
	res := &ShrinkResult{From: s.size}
	var err error
	for {
		progress := false
		for _, p := range s.passes() {
			var ok bool
			ok, err = s.run(p)
			progress = progress || ok
			if err != nil || s.exhausted() {
				break
			}
		}
		if err != nil || s.exhausted() {
			break
		}
		if !progress {
			res.Minimal = s.minimal()
			break
		}
	}
	res.Trace, res.To, res.Calls, res.Steps, res.Path, res.Score = s.cur, s.size, s.calls, s.steps, s.path, s.score
	return res, err
}

// minimal reports whether every deletion of one row of the current trace was asked about and
// lost the violation in all of its replays.
func (s *shrinker) minimal() bool {
	del := chunks(1)
	for pos := range del.n(s.cur) {
		c := del.make(s.cur, pos)
		if c == nil {
			continue // the trace's only row
		}
		if a, asked := s.answers[traceHash(c.Canonical())]; !asked || !a.Lost() {
			return false
		}
	}
	return true
}

type shrinker struct {
	skews   []time.Duration // allowed offsets, smallest magnitude first, 0 first
	ctx     context.Context
	pred    Predicate
	opt     ShrinkOptions
	cur     *trace.Trace
	size    Size
	answers map[uint64]Answer // the predicate's answer for each trace asked about
	calls   int
	steps   int
	start   time.Time
	path    []*trace.Trace // the traces kept, input first
	score   float64        // the lowest replay score of cur (opt.Score for the input)
}

// exhausted reports whether the budget, the deadline or the context ends shrinking.
func (s *shrinker) exhausted() bool {
	return s.calls >= s.opt.Calls || s.ctx.Err() != nil ||
		(!s.opt.Deadline.IsZero() && !s.opt.Now().Before(s.opt.Deadline))
}

// pass enumerates candidates from the current trace: n returns how many positions there are, and
// make the candidate at a position (nil when there is none there).
type pass struct {
	name string
	n    func(t *trace.Trace) int
	make func(t *trace.Trace, pos int) *trace.Trace
}

// run tries the pass's candidates in order, batch by batch, keeping the first that still holds
// and trying again from its position on the smaller trace. It reports whether it kept any.
//
// Every answer is remembered: a candidate already asked about is not asked again, and one found
// to hold in a batch behind an earlier one that also held is taken, without asking, when the
// pass reaches it. So a batch changes how many traces are asked about, never which are kept.
func (s *shrinker) run(p pass) (bool, error) {
	progress := false
	for pos := 0; pos < p.n(s.cur) && !s.exhausted(); {
		var cands []*trace.Trace
		var at []int
		var known *trace.Trace // a candidate known to hold, after cands
		q := pos
		for ; len(cands) < s.opt.Batch && len(cands) < s.opt.Calls-s.calls && q < p.n(s.cur); q++ {
			c := p.make(s.cur, q)
			if c == nil {
				continue
			}
			c = c.Canonical()
			if !SizeOf(c).Less(s.size) {
				continue
			}
			h := traceHash(c)
			if a, asked := s.answers[h]; asked {
				if a.Holds() {
					known = c
					break
				}
				continue
			}
			cands = append(cands, c)
			at = append(at, q)
		}
		if len(cands) > 0 {
			s.calls += len(cands)
			answers, err := s.pred(s.ctx, cands)
			if err != nil {
				if s.ctx.Err() != nil {
					return progress, nil
				}
				return progress, fmt.Errorf("shrink: %w", err)
			}
			if len(answers) != len(cands) {
				return progress, fmt.Errorf("shrink: the predicate answered %d of %d traces", len(answers), len(cands))
			}
			for i, c := range cands {
				s.answers[traceHash(c)] = answers[i]
			}
			if i := slices.IndexFunc(answers, Answer.Holds); i >= 0 {
				s.keep(cands[i])
				progress = true
				pos = at[i]
				s.report()
				continue
			}
			s.report()
		}
		if known == nil {
			if len(cands) == 0 {
				break
			}
			pos = q
			continue
		}
		s.keep(known)
		progress = true
		pos = q
	}
	return progress, nil
}

// keep makes c, which holds, the current trace.
func (s *shrinker) keep(c *trace.Trace) {
	s.cur, s.size = c, SizeOf(c)
	s.score = s.answers[traceHash(c)].Score
	s.path = append(s.path, c)
	s.steps++
}

// report gives Progress the shrinker's state.
func (s *shrinker) report() {
	if f := s.opt.Progress; f != nil {
		f(Progress{Phase: "shrink", Trials: s.calls, Elapsed: s.opt.Now().Sub(s.start), Best: s.score, Rows: len(s.cur.Rows)})
	}
}

// passes returns the passes of one round, for the current trace.
func (s *shrinker) passes() []pass {
	// Faults first: a fault the violation does not need costs one replay to be rid of.
	out := []pass{{"drop-fault", func(t *trace.Trace) int { return len(t.Faults) }, dropFaultAt},
		{"drop-jump", func(t *trace.Trace) int { return len(t.Jumps) }, dropJumpAt}}
	for k := len(s.cur.Rows) / 2; k >= 2; k /= 2 {
		out = append(out, chunks(k))
	}
	out = append(out,
		pass{"drop-client", func(t *trace.Trace) int { return len(t.Clients) }, dropClient},
		pass{"drop-subject", func(t *trace.Trace) int { return len(t.Subjects) }, dropSubject},
		pass{"merge-client", func(t *trace.Trace) int { return 2 * len(t.Clients) }, mergeClient},
		pass{"merge-subject", func(t *trace.Trace) int { return len(t.Subjects) }, mergeSubject},
		pass{"lower-cost", func(t *trace.Trace) int { return len(t.Rows) + 1 }, lowerCost},
		pass{"lower-skew", func(t *trace.Trace) int { return len(t.Clients) * len(s.skews) }, s.lowerSkew},
		pass{"pull-together", func(t *trace.Trace) int { return 4 * gaps(t) }, pullTogether},
		pass{"fault-to-row", func(t *trace.Trace) int { return 2 * len(t.Faults) }, earlierFault},
		pass{"round-times", func(*trace.Trace) int { return len(grids) }, roundTimes},
		chunks(1),
	)
	return out
}

// chunks deletes rows [pos·k, (pos+1)·k).
func chunks(k int) pass {
	return pass{
		name: fmt.Sprintf("delete-%d", k),
		n:    func(t *trace.Trace) int { return (len(t.Rows) + k - 1) / k },
		make: func(t *trace.Trace, pos int) *trace.Trace {
			i, j := pos*k, min(len(t.Rows), (pos+1)*k)
			if j-i >= len(t.Rows) {
				return nil
			}
			c := t.Clone()
			c.Rows = slices.Delete(c.Rows, i, j)
			return c
		},
	}
}

// keepRows returns a copy of t with the rows keep accepts.
func keepRows(t *trace.Trace, keep func(r trace.Row) bool) *trace.Trace {
	c := t.Clone()
	c.Rows = slices.DeleteFunc(c.Rows, func(r trace.Row) bool { return !keep(r) })
	if len(c.Rows) == 0 {
		return nil
	}
	return c
}

func dropClient(t *trace.Trace, pos int) *trace.Trace {
	return keepRows(t, func(r trace.Row) bool { return int(r.Client) != pos })
}

func dropSubject(t *trace.Trace, pos int) *trace.Trace {
	return keepRows(t, func(r trace.Row) bool { return int(r.Subject) != pos })
}

// mergeClient gives the rows of client c = pos/2 + 1 to an earlier client: the first with the
// same clock offset (even positions) or client 0 (odd positions).
func mergeClient(t *trace.Trace, pos int) *trace.Trace {
	c := uint16(pos/2 + 1)
	if int(c) >= len(t.Clients) {
		return nil
	}
	to := uint16(0)
	if pos%2 == 0 {
		found := false
		for i := range c {
			if t.SkewOf(i) == t.SkewOf(c) {
				to, found = i, true
				break
			}
		}
		if !found {
			return nil
		}
	}
	m := t.Clone()
	for i := range m.Rows {
		if m.Rows[i].Client == c {
			m.Rows[i].Client = to
		}
	}
	return m
}

// mergeSubject gives the rows of subject pos (>= 1) to subject 0.
func mergeSubject(t *trace.Trace, pos int) *trace.Trace {
	if pos == 0 {
		return nil
	}
	m := t.Clone()
	for i := range m.Rows {
		if int(m.Rows[i].Subject) == pos {
			m.Rows[i].Subject = 0
		}
	}
	return m
}

// lowerCost sets every cost to 1 (position 0), or row pos−1's cost one lower.
func lowerCost(t *trace.Trace, pos int) *trace.Trace {
	m := t.Clone()
	if pos == 0 {
		for i := range m.Rows {
			m.Rows[i].Cost = 1
		}
		return m
	}
	if m.Rows[pos-1].Cost <= 1 {
		return nil
	}
	m.Rows[pos-1].Cost--
	return m
}

// lowerSkew moves client pos/k's clock offset to the allowed offset s.skews[pos%k] (k of them,
// smallest magnitude first) when that is smaller in magnitude.
func (s *shrinker) lowerSkew(t *trace.Trace, pos int) *trace.Trace {
	k := len(s.skews)
	c, to := pos/k, s.skews[pos%k]
	if t.Skew == nil || to.Abs() >= t.Skew[c].Abs() {
		return nil
	}
	m := t.Clone()
	m.Skew[c] = to
	return m
}

// gaps returns the number of gaps between distinct offsets of t.
func gaps(t *trace.Trace) int {
	n := 0
	for i := 1; i < len(t.Rows); i++ {
		if t.Rows[i].At != t.Rows[i-1].At {
			n++
		}
	}
	return n
}

// pullTogether closes the gap after distinct time pos/4: the rows before it move later by the
// gap or half of it, or the rows after it earlier by the gap or half of it.
func pullTogether(t *trace.Trace, pos int) *trace.Trace {
	// The pos/4-th gap between distinct offsets.
	k := pos / 4
	i := 0 // last row at the time before the gap
	for g := -1; ; i++ {
		if i+1 >= len(t.Rows) {
			return nil
		}
		if t.Rows[i+1].At != t.Rows[i].At {
			g++
			if g == k {
				break
			}
		}
	}
	gap := t.Rows[i+1].At - t.Rows[i].At
	d := gap
	if pos%2 == 1 {
		d = gap / 2
	}
	if d <= 0 {
		return nil
	}
	m := t.Clone()
	if pos%4 < 2 {
		for j := 0; j <= i; j++ {
			m.Rows[j].At += d
		}
	} else {
		for j := i + 1; j < len(m.Rows); j++ {
			m.Rows[j].At -= d
		}
	}
	return m
}

// grids are the grids roundTimes tries, coarsest first.
var grids = []time.Duration{time.Second, 100 * time.Millisecond, 10 * time.Millisecond, time.Millisecond,
	100 * time.Microsecond, 10 * time.Microsecond, time.Microsecond}

// roundTimes rounds every offset to the nearest multiple of grids[pos], keeping every row
// between the first offset rounded up and the last rounded down, so the extent never grows and
// the order is kept.
func roundTimes(t *trace.Trace, pos int) *trace.Trace {
	g := grids[pos]
	first, last := t.Rows[0].At, t.Rows[len(t.Rows)-1].At
	lo := (first + g - 1) / g * g
	hi := last / g * g
	if lo > hi {
		return nil
	}
	m := t.Clone()
	for i := range m.Rows {
		at := (m.Rows[i].At + g/2) / g * g
		m.Rows[i].At = min(max(at, lo), hi)
	}
	for i := range m.Jumps {
		m.Jumps[i].At = (m.Jumps[i].At + g/2) / g * g
	}
	for i := range m.Faults {
		m.Faults[i].At = (m.Faults[i].At + g/2) / g * g
		if d := m.Faults[i].Duration; d > 0 {
			m.Faults[i].Duration = max(g, (d+g/2)/g*g)
		}
	}
	return m
}
