package hunt

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/trace"
	"github.com/limitbench/limitbench/verify"
)

// Trial runs each schedule of batch as a short trial of the target, each on a fresh key prefix
// (no state shared with any other trial) and with its time zero at the hunt's frame
// (Result.Frame), with the faults each places (trace.Trace.Faults), and returns what the verifier
// is given of each, in batch order: its admission log (Log) and, when something may have lost
// the limiter's state, the Disruptions (the history is judged between them) and the Faults as
// injected; Start is where the log's measured part begins. The schedules of one batch may run
// at the same time (a schedule with faults alone). An error ends the hunt (the environment was
// lost); a failed request is data in the log. The real Trial runs the target's algorithm
// against Redis through the runner; tests give a pure-Go model and a Measurement with its Log
// only.
type Trial func(ctx context.Context, batch []*trace.Trace) ([]verify.Measurement, error)

// Budget bounds a hunt. Zero fields take the defaults.
type Budget struct {
	// Time is the wall time the search may take (default 60 s), measured with Config.Now; the
	// shrinking after it has ShrinkTime of its own.
	Time time.Duration
	// Trials is the most schedules the search runs; 0 bounds them by Time only.
	Trials int
	// Batch is the number of schedules given to one Trial call, and of shrink candidates
	// replayed together, each Replays times (so Batch·Replays trials at once) (default 1).
	// Batches let trials share one wait for the frame.
	Batch int
	// Keep is the number of best candidates kept for mutation (default 8).
	Keep int
	// Shrink is the most schedules the shrinker replays (default 200); negative: no
	// shrinking.
	Shrink int
	// ShrinkTime is the wall time shrinking may take (default Time).
	ShrinkTime time.Duration
	// Replays is how many times each shrink candidate is replayed (default 1); shrinking keeps
	// a candidate only when every replay breaks the contract definitely, however small the
	// excess (an off-by-one is one permit over), and counts a row deletion towards minimality
	// only when no replay of it does (Answer). More replays keep a reproducer that violates only
	// by luck out.
	Replays int
	// Confirm is how many times the shrunk reproducer is replayed, in one batch, once shrinking
	// ends (0: not confirmed). It is kept only when every replay breaks the contract (scores
	// above 1: what a `limitbench run` of it judges a fail); otherwise the schedules shrinking
	// kept before it are tried the same way, back towards the violation as found, and the first
	// that breaks the contract in every replay is the reproducer. A shrink step kept on
	// Replays lucky replays can make a reproducer that fails only sometimes; this finds the
	// smallest one that held in Confirm more. When none holds, the violation as found is the
	// reproducer, and Confirmation says how often it broke the contract.
	Confirm int
}

// Defaults of Budget.
const (
	DefaultTime   = 60 * time.Second
	DefaultKeep   = 8
	DefaultShrink = 200
)

func (b Budget) withDefaults() Budget {
	if b.Time == 0 {
		b.Time = DefaultTime
	}
	if b.Batch == 0 {
		b.Batch = 1
	}
	if b.Keep == 0 {
		b.Keep = DefaultKeep
	}
	if b.Shrink == 0 {
		b.Shrink = DefaultShrink
	}
	if b.ShrinkTime == 0 {
		b.ShrinkTime = b.Time
	}
	if b.Replays == 0 {
		b.Replays = 1
	}
	return b
}

// Config is one hunt: what to attack, how big its schedules may be, how long to search, the seed
// and the trial.
type Config struct {
	Target Target
	Bounds Bounds
	Budget Budget
	// Families, when not empty, names the families to draw from (of those that apply to the
	// target); default every family that applies.
	Families []string
	// Seed seeds every choice the search and the families make.
	Seed uint64
	// Corpus are schedules saved by earlier hunts, run first, in order, in batches of their
	// own, before any family's (each is a candidate of family "corpus:NAME"). They are all run
	// whatever the budget (but not after ctx is canceled), and they count as trials. After
	// them the families make the schedules they make without a corpus, and the corpus's
	// schedules are kept for mutation like any other.
	Corpus []Known
	// Trial runs schedules (required).
	Trial Trial
	// Now reads the clock that measures the budget (default time.Now).
	Now func() time.Time
	// Progress, when set, is called after every batch of trials and every shrink step.
	Progress func(Progress)
}

// Progress is what a hunt reports as it goes.
type Progress struct {
	// Phase is "search" or "shrink".
	Phase string
	// Trials counts the schedules run so far (search) or replayed (shrink).
	Trials int
	// Elapsed is the time since the phase started.
	Elapsed time.Duration
	// Best is the best score so far.
	Best float64
	// Rows is the size of the best schedule (search) or the current shrunk one.
	Rows int
	// Waiting, when not zero, says that the next batch waits that long for the hunt's frame
	// (the clock's phase its schedules start at: a minute boundary for minute windows) before
	// it runs; Waited is the time all batches so far waited for it, in every phase.
	Waiting, Waited time.Duration
}

// Stop says why a search ended.
type Stop string

// Reasons a search ends.
const (
	StopViolation Stop = "violation" // a definite violation was found
	StopTrials    Stop = "trials"    // Budget.Trials schedules were run
	StopTime      Stop = "time"      // Budget.Time passed
	StopCanceled  Stop = "canceled"  // the context was canceled
	StopExhausted Stop = "exhausted" // every new candidate was one already tried
)

// Candidate is one schedule that was run, with its score.
type Candidate struct {
	Trace *trace.Trace
	// Family made it (or the schedule it was mutated from); Mutations counts the mutations
	// since.
	Family    string
	Mutations int
	// Trial is its 1-based number among the hunt's trials.
	Trial int
	// Approach is its trial's score (Score() is Approach.Score).
	Approach verify.Approach
	// Log is its trial's admission log (events in any order), for plots of the best
	// schedule; kept for the best candidates only (nil for the others).
	Log *verify.Log
	// Faults are what the faults its schedule placed did, and Cost the permits they cost (the
	// sum of their Excess): what a loss of the state allowed, which is not the algorithm's
	// doing. Nil and 0 without faults.
	Faults []verify.FaultReport
	Cost   int64
}

// Score returns the candidate's score: above 1 for a definite violation.
func (c *Candidate) Score() float64 { return c.Approach.Score }

// Violation is a schedule that broke the contract.
type Violation struct {
	// Candidate is the schedule as the search found it.
	Candidate
	// Report is verify.Check of its trial.
	Report verify.Report
	// Shrunk is the result of shrinking it; nil when shrinking was off.
	Shrunk *ShrinkResult
	// Confirmation is the confirmation of the reproducer (Budget.Confirm); nil when it was not
	// confirmed.
	Confirmation *Confirmation
}

// Confirmation is how the reproducer fared when replayed Budget.Confirm times at the end; as
// hunt.json's confirm, {replays, broke, back}.
type Confirmation struct {
	// Replays is Budget.Confirm; Broke counts the replays of the reproducer that broke the
	// contract (Broke == Replays: confirmed).
	Replays int `json:"replays"`
	Broke   int `json:"broke"`
	// Back is how many schedules along ShrinkResult.Path the reproducer lies before the
	// shrinker's last (0: the last held; Steps: the violation as found), which broke the
	// contract in fewer replays.
	Back int `json:"back"`
}

// Confirmed reports whether every replay of the reproducer broke the contract.
func (c *Confirmation) Confirmed() bool { return c != nil && c.Broke == c.Replays }

// Result is what a hunt found: everything so far when it was canceled.
type Result struct {
	Target Target
	// Frame is where every schedule's time zero lies on the Unix clock (FrameOf).
	Frame arrival.Align
	// Families are the names of the families that applied.
	Families []string
	// Corpus counts the schedules of Config.Corpus that were run (one already run is not run
	// again).
	Corpus int
	// Trials counts the schedules the search ran; Elapsed is the time it took. Waited is the
	// part of the hunt's time (search, shrink and confirmation) that its trials spent waiting
	// for the frame, as the frame puts it (Frame.Start); it is no measure of the limiter.
	Trials  int
	Elapsed time.Duration
	Waited  time.Duration
	Stop    Stop
	// Best is the candidate with the highest score (the violation, when there is one); nil
	// when no trial ran.
	Best *Candidate
	// Violation is the first schedule that broke the contract, or nil.
	Violation *Violation
	// Costliest is the schedule whose faults cost the most permits (Candidate.Cost above 0),
	// or nil: where the search placed the nemesis worst for the limiter. It is no violation
	// of the algorithm's: a correct limiter that keeps its state in Redis loses it too.
	Costliest *Candidate
}

// ErrBadConfig means a Config cannot run.
var ErrBadConfig = errors.New("invalid hunt")

// Hunt searches for a schedule that breaks cfg.Target's contract, as the package doc describes,
// and shrinks the first it finds. It returns what it found when its budget runs out or ctx is
// canceled (Stop says which) with a nil error; an error from the trial, or a log the verifier
// cannot score, ends it with that error and the result so far.
func Hunt(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Trial == nil {
		return nil, fmt.Errorf("%w: no trial function", ErrBadConfig)
	}
	if err := errors.Join(cfg.Target.Validate(), cfg.Bounds.Validate()); err != nil {
		return nil, err
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	budget := cfg.Budget.withDefaults()
	bounds := cfg.Bounds.withDefaults()
	fams := FamiliesFor(cfg.Target)
	if len(cfg.Families) > 0 {
		var names []string
		for _, f := range Families {
			names = append(names, f.Name)
		}
		for _, n := range cfg.Families {
			if !slices.Contains(names, n) {
				return nil, fmt.Errorf("%w: unknown family %q (known: %s)", ErrBadConfig, n, strings.Join(names, ", "))
			}
		}
		fams = slices.DeleteFunc(fams, func(f Family) bool { return !slices.Contains(cfg.Families, f.Name) })
		if len(fams) == 0 {
			return nil, fmt.Errorf("%w: none of the families %s applies to %s", ErrBadConfig, strings.Join(cfg.Families, ", "), cfg.Target.Algorithm)
		}
	}
	s := &search{
		cfg:    cfg,
		budget: budget,
		bounds: bounds,
		fams:   fams,
		rng:    rand.New(rand.NewPCG(cfg.Seed, 0x68756e74)),
		seen:   map[uint64]bool{},
		now:    now,
		res: &Result{
			Target: cfg.Target,
			Frame:  FrameOf(cfg.Target, bounds),
		},
	}
	for _, f := range fams {
		s.res.Families = append(s.res.Families, f.Name)
	}
	start := now()
	err := s.run(ctx, start, now)
	s.res.Elapsed = now().Sub(start)
	if err != nil {
		return s.res, err
	}
	if v := s.res.Violation; v != nil && budget.Shrink > 0 && ctx.Err() == nil {
		sr, err := Shrink(ctx, v.Trace, s.predicate(), ShrinkOptions{
			Calls:    budget.Shrink,
			Batch:    budget.Batch,
			Deadline: now().Add(budget.ShrinkTime),
			Now:      now,
			Progress: s.progress,
			Skews:    cfg.Target.Skews,
			Score:    v.Score(),
		})
		v.Shrunk = sr
		if err != nil {
			return s.res, err
		}
		if budget.Confirm > 0 && ctx.Err() == nil {
			if err := s.confirm(ctx, v, now, now().Add(budget.Time)); err != nil {
				return s.res, err
			}
		}
	}
	return s.res, nil
}

// search is the state of one hunt's search.
type search struct {
	cfg    Config
	budget Budget
	bounds Bounds
	fams   []Family
	rng    *rand.Rand
	kept   []*Candidate // best first
	seen   map[uint64]bool
	made   int // family and mutated candidates proposed so far
	known  int // schedules of Config.Corpus proposed so far
	res    *Result
	now    func() time.Time
}

// run runs batches until a violation, the budget or ctx ends the search.
func (s *search) run(ctx context.Context, start time.Time, now func() time.Time) error {
	for {
		known := len(s.cfg.Corpus) - s.known // the corpus is run whatever the budget
		switch {
		case ctx.Err() != nil:
			s.res.Stop = StopCanceled
			return nil
		case known == 0 && s.budget.Trials > 0 && s.res.Trials >= s.budget.Trials:
			s.res.Stop = StopTrials
			return nil
		case known == 0 && now().Sub(start) >= s.budget.Time:
			s.res.Stop = StopTime
			return nil
		}
		n := s.budget.Batch
		switch {
		case known > 0:
			n = min(n, known)
		case s.budget.Trials > 0:
			n = min(n, s.budget.Trials-s.res.Trials)
		}
		batch := s.propose(n)
		if len(batch) == 0 {
			s.res.Stop = StopExhausted
			return nil
		}
		traces := make([]*trace.Trace, len(batch))
		for i, c := range batch {
			traces[i] = c.Trace
		}
		ms, err := s.trial(ctx, s.searchProgress(start), traces)
		if err != nil {
			if ctx.Err() != nil {
				s.res.Stop = StopCanceled
				return nil
			}
			return fmt.Errorf("hunt %s: trial %d: %w", s.cfg.Target.Algorithm, s.res.Trials+1, err)
		}
		if len(ms) != len(batch) {
			return fmt.Errorf("hunt %s: trial returned %d logs for %d schedules", s.cfg.Target.Algorithm, len(ms), len(batch))
		}
		for i, c := range batch {
			s.res.Trials++
			c.Trial = s.res.Trials
			j, err := judge(s.cfg.Target.Contract, ms[i], s.res.Violation == nil)
			if err != nil {
				return fmt.Errorf("hunt %s: trial %d: %w", s.cfg.Target.Algorithm, c.Trial, err)
			}
			c.Approach, c.Log, c.Faults, c.Cost = j.Approach, ms[i].Log, j.Faults, j.Cost
			s.keep(c)
			if c.Cost > 0 && (s.res.Costliest == nil || costOrder(c, s.res.Costliest) < 0) {
				s.res.Costliest = c
			}
			if j.Approach.Score > 1 && s.res.Violation == nil {
				s.res.Violation = &Violation{Candidate: *c, Report: j.Report}
			}
		}
		s.progress(s.searchProgress(start))
		if s.res.Violation != nil {
			s.res.Best = &s.res.Violation.Candidate
			s.res.Stop = StopViolation
			return nil
		}
	}
}

// searchProgress is the search's state since start, for Progress.
func (s *search) searchProgress(start time.Time) Progress {
	p := Progress{Phase: "search", Trials: s.res.Trials, Elapsed: s.now().Sub(start)}
	if b := s.res.Best; b != nil {
		p.Best, p.Rows = b.Score(), len(b.Trace.Rows)
	}
	return p
}

// progress gives p, with the time waited so far, to Config.Progress.
func (s *search) progress(p Progress) {
	if f := s.cfg.Progress; f != nil {
		p.Waited = s.res.Waited
		f(p)
	}
}

// trial runs batch with the hunt's trial. When the batch will wait a second or more for the
// frame, it first says so on Progress (p, with Waiting set); the wait, as the frame puts it, is
// added to Result.Waited.
func (s *search) trial(ctx context.Context, p Progress, batch []*trace.Trace) ([]verify.Measurement, error) {
	at := s.now()
	wait := s.res.Frame.Start(at).Sub(at)
	if wait >= time.Second {
		p.Waiting = wait
		s.progress(p)
	}
	s.res.Waited += wait
	return s.cfg.Trial(ctx, batch)
}

// better orders candidates: higher score first, then the higher cost of their faults (so that
// among schedules that press the contract as hard, the search mutates those whose faults let
// the most through), then fewer rows, then earlier trial.
func better(a, b *Candidate) int {
	if c := cmp.Compare(b.Score(), a.Score()); c != 0 {
		return c
	}
	if c := cmp.Compare(b.Cost, a.Cost); c != 0 {
		return c
	}
	if c := cmp.Compare(len(a.Trace.Rows), len(b.Trace.Rows)); c != 0 {
		return c
	}
	return cmp.Compare(a.Trial, b.Trial)
}

// keep records c as the best when it is, and among the kept candidates when it beats the worst.
func (s *search) keep(c *Candidate) {
	best := s.res.Best == nil || better(c, s.res.Best) < 0
	if best {
		s.res.Best = c
	}
	i, _ := slices.BinarySearchFunc(s.kept, c, better)
	if i >= s.budget.Keep {
		if !best && c.Approach.Score <= 1 {
			c.Log = nil
		}
		return
	}
	s.kept = slices.Insert(s.kept, i, c)
	if len(s.kept) > s.budget.Keep {
		if out := s.kept[s.budget.Keep]; out != s.res.Best {
			out.Log = nil
		}
		s.kept = s.kept[:s.budget.Keep]
	}
}

// propose returns up to n new candidates, none tried before: first two of each family, then
// mutations of kept candidates, with a fresh family schedule one time in five.
func (s *search) propose(n int) []*Candidate {
	var out []*Candidate
	for misses := 0; len(out) < n && misses < 50; {
		c := s.next()
		h := traceHash(c.Trace)
		if s.seen[h] {
			misses++
			continue
		}
		s.seen[h] = true
		if c.Mutations == 0 && strings.HasPrefix(c.Family, corpusFamily) {
			s.res.Corpus++
		}
		out = append(out, c)
	}
	return out
}

// next makes the next candidate: the corpus's first, then the families' and mutations.
func (s *search) next() *Candidate {
	if k := s.known; k < len(s.cfg.Corpus) {
		s.known++
		return &Candidate{Trace: s.cfg.Corpus[k].Trace, Family: corpusFamily + s.cfg.Corpus[k].Name}
	}
	k := s.made
	s.made++
	if k < 2*len(s.fams) {
		f := s.fams[k%len(s.fams)]
		return &Candidate{Trace: f.Make(s.cfg.Target, s.bounds, s.rng.Uint64()), Family: f.Name}
	}
	if len(s.kept) == 0 || s.rng.IntN(5) == 0 {
		f := s.fams[s.rng.IntN(len(s.fams))]
		return &Candidate{Trace: f.Make(s.cfg.Target, s.bounds, s.rng.Uint64()), Family: f.Name}
	}
	i, j := s.rng.IntN(len(s.kept)), s.rng.IntN(len(s.kept))
	p := s.kept[min(i, j)]
	return &Candidate{Trace: mutate(s.cfg.Target, s.bounds, s.rng, p.Trace), Family: p.Family, Mutations: p.Mutations + 1}
}

// predicate replays each trace Budget.Replays times with the hunt's trial and answers how many
// replays broke the contract definitely (scored above 1), and the lowest score.
func (s *search) predicate() Predicate {
	trial := func(ctx context.Context, batch []*trace.Trace) ([]verify.Measurement, error) {
		return s.trial(ctx, Progress{Phase: "shrink", Trials: len(batch)}, batch)
	}
	return func(ctx context.Context, batch []*trace.Trace) ([]Answer, error) {
		return replay(ctx, trial, s.cfg.Target.Contract, s.cfg.Target.Algorithm, batch, s.budget.Replays)
	}
}

// traceHash identifies a canonical trace by its rows, clock offsets and jumps, and faults (not
// its names).
func traceHash(t *trace.Trace) uint64 {
	h := fnv.New64a()
	var buf [16]byte
	put := func(v uint64, at int) {
		for i := range 8 {
			buf[at+i] = byte(v >> (8 * i))
		}
	}
	for _, r := range t.Rows {
		put(uint64(r.At), 0)
		put(uint64(r.Client)|uint64(r.Subject)<<16|uint64(r.Cost)<<48, 8)
		_, _ = h.Write(buf[:]) // never fails
	}
	for _, s := range t.Skew {
		put(uint64(s), 0)
		_, _ = h.Write(buf[:8])
	}
	for _, j := range t.Jumps {
		put(uint64(j.At), 0)
		put(uint64(j.Skew)^uint64(j.Client)<<48, 8)
		_, _ = h.Write(buf[:])
	}
	for _, f := range t.Faults {
		put(uint64(f.At), 0)
		put(uint64(f.Duration), 8)
		_, _ = h.Write(buf[:])
		_, _ = h.Write([]byte(f.Kind))
	}
	return h.Sum64()
}
