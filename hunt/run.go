package hunt

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/trace"
	"github.com/limitbench/limitbench/report"
	"github.com/limitbench/limitbench/scenarios"
	"github.com/limitbench/limitbench/verify"
)

// The policy Run hunts with, beyond the budget its caller gives (Budget's other fields).
const (
	// ShrinkReplays is how many times each shrink candidate is replayed; it must break the
	// contract definitely in every one, by however little, to be kept (Budget.Replays).
	ShrinkReplays = 2
	// ConfirmReplays is how many replays more, at the end, the reproducer must break the
	// contract in, or an earlier, larger shrink step is the reproducer (Budget.Confirm).
	ConfirmReplays = 5
)

// Lab is the harness code a hunt measures with: it resolves the scenario's algorithms, checks
// custom scripts on a started environment, and runs trials. Every function is required. The
// caller supplies it so that hunt does not depend on how one measurement is made
// (cmd/limitbench passes internal/measure's functions).
// Run passes their errors through as they are: their sentinels are their owner's.
type Lab struct {
	// Resolve returns the algorithm an entry of s names (a built-in, or a custom script of s).
	Resolve func(s *scenarios.Scenario, e scenarios.AlgorithmEntry) (algorithms.Algorithm, error)
	// Check loads every custom script among algs on tgt before anything runs, so a script Redis
	// refuses stops the hunt with the script's file and line.
	Check func(ctx context.Context, tgt *redisenv.Target, algs []algorithms.Algorithm) error
	// Trial runs each trace of batch as a short real trial of a under l on tgt, every one on
	// keys of its own and with its time zero at the same instant of frame, carrying out each
	// trace's faults and clock jumps, and returns what the verifier was given of each (its
	// admission log, disruptions and injected faults) in batch order (the contract of Trial,
	// for one target).
	Trial func(ctx context.Context, tgt *redisenv.Target, a algorithms.Algorithm, l algorithms.Limit, frame arrival.Align,
		batch []*trace.Trace) ([]verify.Measurement, error)
	// Workers returns how many clients a trial of t sends with: a reproducer scenario of t gives
	// it as clients, so that `limitbench run` sends t as the trial did.
	Workers func(t *trace.Trace) int
}

// Options is one `limitbench hunt` of a scenario: what to hunt, where, how long, and the Lab
// its trials run in. The search's budget is per algorithm and topology; shrinking and
// confirming a violation follow the policy above.
type Options struct {
	// Scenario is loaded and has the command's overrides applied: its topologies, algorithms,
	// limit, clock_skew and expect decide what is hunted and how it is judged.
	Scenario *scenarios.Scenario
	// Env is the environment each topology of the scenario is started in (Topology and Logf
	// are set by Run).
	Env redisenv.Config
	// Bounds bound the schedules; Span must be set.
	Bounds Bounds
	// Time is the search's wall time (Budget.Time), Trials the most schedules it runs (0: no
	// bound but Time), Batch how many run at the same time.
	Time          time.Duration
	Trials, Batch int
	// Seed seeds every choice of the search.
	Seed uint64
	// Corpus, when set, is a corpus directory (see LoadCorpus): the entries of each algorithm
	// hunted, saved with the scenario's limit at the hunt's frame, are replayed before the
	// search (Config.Corpus), and each new reproducer is saved there (Outcome.Corpus).
	Corpus string
	Lab    Lab
	// Logf, when set, is given a line for every step worth a line: each environment's start
	// and stop, each algorithm's contract, what its hunt found.
	Logf func(format string, args ...any)
	// Progress, when set, is called with the search's and the shrinker's progress.
	Progress func(algorithm, topology string, p Progress)
}

// ErrBadOptions means Options cannot run: a Lab function missing, a budget out of range,
// nothing with a contract to hunt. Errors of Lab.Resolve and of scenarios are returned as
// they are.
var ErrBadOptions = errors.New("invalid hunt options")

// optionsError is a problem with Options: its message alone, matching ErrBadOptions.
type optionsError struct{ msg string }

func (e *optionsError) Error() string        { return e.msg }
func (e *optionsError) Is(target error) bool { return target == ErrBadOptions }

func badOptions(format string, args ...any) error {
	return &optionsError{fmt.Sprintf(format, args...)}
}

// CheckScenario reports what in s a hunt cannot honour, each as "file:line: field: message": a
// WAIT after each request (wait_replicas), which trials do not send, and a fault schedule
// (faults), which the search cannot place yet: a hunt without them would report what held
// without the faults the scenario asks for. NewPlan checks it too; a caller that collects every
// problem of its input at once calls it first.
func CheckScenario(s *scenarios.Scenario) error {
	var errs []error
	if s.Wait.Enabled() {
		// Trials have loads of their own; a WAIT they did not send must not be taken for measured.
		errs = append(errs, errors.New(s.ProblemAt("wait_replicas",
			"applies to limitbench run; a hunt's trials do not send WAIT (remove it, or hunt a copy without it)").String()))
	}
	if len(s.Faults) > 0 {
		errs = append(errs, errors.New(s.ProblemAt("faults",
			"a hunt places faults of its own choosing (limitbench hunt --faults KINDS) and does not replay a fixed schedule of them; hunt a copy without faults, or measure these faults with limitbench run").String()))
	}
	return errors.Join(errs...)
}

// Plan is a hunt ready to run: its options checked and the scenario's algorithms resolved into
// the targets to hunt. Build it with NewPlan before anything is started or written, so that bad
// input is reported first.
type Plan struct {
	o       Options
	quarry  []quarry
	skipped []string
	corpus  []CorpusEntry
}

// quarry is one algorithm to hunt.
type quarry struct {
	alg    algorithms.Algorithm
	target Target
	custom bool // a custom script: its reproducer copies the scenario's definition
}

// NewPlan checks o and resolves the scenario's algorithms: those with a contract to break are
// hunted, in the scenario's order; those without one are skipped (Skipped). It is an error when
// none has a contract.
func NewPlan(o Options) (*Plan, error) {
	l := o.Lab
	switch {
	case o.Scenario == nil:
		return nil, badOptions("hunt: no scenario")
	case l.Resolve == nil || l.Check == nil || l.Trial == nil || l.Workers == nil:
		return nil, badOptions("hunt: the lab lacks a function")
	case o.Time <= 0 || o.Trials < 0 || o.Batch < 1 || o.Bounds.Span <= 0:
		return nil, badOptions("hunt: time %s, trials %d, batch %d, span %s: want time, batch and span above 0, trials at least 0",
			o.Time, o.Trials, o.Batch, o.Bounds.Span)
	}
	s := o.Scenario
	if err := errors.Join(CheckScenario(s), o.Bounds.Validate()); err != nil {
		return nil, err
	}
	if err := checkNemesis(o); err != nil {
		return nil, err
	}
	if o.Time < o.Bounds.Span {
		return nil, badOptions("hunt: time %s is shorter than one trial (a schedule of up to %s): give at least the span", o.Time, o.Bounds.Span)
	}
	p := &Plan{o: o}
	if o.Corpus != "" {
		var err error
		if p.corpus, err = LoadCorpus(o.Corpus); err != nil {
			return nil, err
		}
	}
	skews := skewsOf(s.ClockSkew)
	for _, e := range s.ResolveAlgorithms() {
		a, err := l.Resolve(s, e)
		if err != nil {
			return nil, err
		}
		c, err := a.Contract(s.Limit)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name, err)
		}
		if c.Kind == algorithms.NoContract {
			p.skipped = append(p.skipped, e.Name)
			continue
		}
		t, err := TargetOf(a, s.Limit, skews)
		if err != nil {
			return nil, err
		}
		p.quarry = append(p.quarry, quarry{alg: a, target: t, custom: e.Custom != nil})
	}
	if len(p.quarry) == 0 {
		return nil, badOptions("%s: no algorithm of the scenario has a contract to break", s.File)
	}
	return p, nil
}

// checkNemesis reports why the faults o.Bounds.Faults allows cannot be placed where o hunts: a
// fault acts on a server limitbench started, so not on an external Redis (a clock jump, on the
// clients, may); a failover needs a replica on every topology hunted (sentinel, or replicas).
func checkNemesis(o Options) error {
	fs := o.Bounds.Faults
	if len(fs) == 0 {
		return nil
	}
	if o.Env.Backend == redisenv.BackendExternal && slices.ContainsFunc(fs, func(k string) bool { return k != ClockJump }) {
		return badOptions("--faults %s: faults act on servers limitbench starts, not on an external Redis (--redis); only %s acts on the clients alone",
			strings.Join(fs, ","), ClockJump)
	}
	if slices.Contains(fs, string(scenarios.FaultFailover)) {
		for _, topo := range o.Scenario.Topologies {
			if !Replicated(o.Scenario, o.Env, topo) {
				return badOptions("--faults failover needs a replica: topology sentinel, or replicas (topology %s here)", topo)
			}
		}
	}
	return nil
}

// Replicated reports whether topo, as s and env start it, has a replica a failover can promote:
// topology sentinel, or replicas set by the scenario or the environment.
func Replicated(s *scenarios.Scenario, env redisenv.Config, topo redisenv.Topology) bool {
	return topo == redisenv.TopologySentinel || env.Replicas > 0 || s.Replicas > 0
}

// skewsOf returns the clock offsets a scenario's clients may have: its list, or for a spread
// its two ends and 0.
func skewsOf(k load.Skew) []time.Duration {
	if len(k.Offsets) > 0 {
		return slices.Clone(k.Offsets)
	}
	if k.Spread != 0 {
		return []time.Duration{-k.Spread, 0, k.Spread}
	}
	return nil
}

// Skipped names the scenario's algorithms that have no contract to break, so are not hunted.
func (p *Plan) Skipped() []string { return slices.Clone(p.skipped) }

// Outcome is what Run found: hunt.json's File, and the files its entries name by their names
// relative to the results directory (Write writes them all).
type Outcome struct {
	File *File
	// Traces are the schedules: each entry's best, its violation as found and its reproducer.
	Traces map[string]*trace.Trace
	// Scenarios are the reproducer scenarios, YAML that `limitbench run` replays.
	Scenarios map[string][]byte
	// Corpus is what Run saves into Options.Corpus (WriteCorpus writes it): each new
	// reproducer as a corpus entry, a scenario and its trace, by file name; nil without a
	// corpus.
	Corpus *CorpusFiles
}

// Run hunts every target on every topology of the scenario, one environment started and
// stopped per topology, and returns what it found. dir is the results directory the Outcome
// will be written to: reproducer scenarios name a custom script relative to it, and the lines
// given to Logf name reproducers in it. Run returns what it found so far with an error when an
// environment cannot be started (the error wraps redisenv's sentinels), when a Lab function
// fails (its error as it is), or when ctx is canceled (the error matches ctx.Err()); the File
// is then marked CutShort.
func (p *Plan) Run(ctx context.Context, dir string) (*Outcome, error) {
	o := p.o
	out := &Outcome{
		File: &File{Schema: Schema, Scenario: o.Scenario.File, Seed: o.Seed, BudgetS: o.Time.Seconds(), Trials: o.Trials,
			SpanS: o.Bounds.Span.Seconds(), Faults: slices.Clone(o.Bounds.Faults), Entries: []Entry{}},
		Traces:    map[string]*trace.Trace{},
		Scenarios: map[string][]byte{},
	}
	if o.Corpus != "" {
		out.Corpus = &CorpusFiles{Dir: o.Corpus, Traces: map[string]*trace.Trace{}, Scenarios: map[string][]byte{}}
	}
	err := p.run(ctx, dir, out)
	if cerr := ctx.Err(); err != nil && cerr != nil && !errors.Is(err, cerr) {
		err = fmt.Errorf("%w: %w", cerr, err)
	}
	out.File.CutShort = ctx.Err() != nil || err != nil
	return out, err
}

func (p *Plan) logf(format string, args ...any) {
	if p.o.Logf != nil {
		p.o.Logf(format, args...)
	}
}

// run hunts on each topology in its own environment.
func (p *Plan) run(ctx context.Context, dir string, out *Outcome) error {
	for _, topo := range p.o.Scenario.Topologies {
		cfg := p.o.Env
		cfg.Topology = topo
		cfg.Logf = p.logf
		tgt, err := redisenv.Start(ctx, cfg)
		if err != nil {
			return fmt.Errorf("start %s environment: %w", topo, err)
		}
		err = p.topology(ctx, tgt, string(topo), dir, out)
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		if serr := tgt.Stop(stopCtx); serr != nil {
			p.logf("stop %s environment: %v", topo, serr)
		}
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

// topology hunts every target on tgt, in order, and adds what each hunt found to out.
func (p *Plan) topology(ctx context.Context, tgt *redisenv.Target, topo, dir string, out *Outcome) error {
	algs := make([]algorithms.Algorithm, len(p.quarry))
	for i, q := range p.quarry {
		algs[i] = q.alg
	}
	if err := p.o.Lab.Check(ctx, tgt, algs); err != nil {
		return err
	}
	for _, q := range p.quarry {
		if err := ctx.Err(); err != nil {
			return err
		}
		p.logf("hunt %s on %s: %s", q.target.Algorithm, topo, q.target.Contract)
		res, err := Hunt(ctx, p.config(tgt, topo, q))
		if res != nil {
			p.add(out, res, topo, dir, q)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// config is the search of q on tgt: the options' budget with Run's shrink policy, trials
// through the Lab, and the corpus's entries of q (which it names on Logf).
func (p *Plan) config(tgt *redisenv.Target, topo string, q quarry) Config {
	o := p.o
	frame := FrameOf(q.target, o.Bounds)
	cfg := Config{
		Target: q.target,
		Bounds: o.Bounds,
		Budget: Budget{Time: o.Time, Trials: o.Trials, Batch: o.Batch, Replays: ShrinkReplays, Confirm: ConfirmReplays},
		Seed:   o.Seed,
		Trial: func(ctx context.Context, batch []*trace.Trace) ([]verify.Measurement, error) {
			return o.Lab.Trial(ctx, tgt, q.alg, o.Scenario.Limit, frame, batch)
		},
	}
	if o.Progress != nil {
		cfg.Progress = func(pr Progress) { o.Progress(q.target.Algorithm, topo, pr) }
	}
	if o.Corpus != "" {
		var other int
		cfg.Corpus, other = corpusFor(p.corpus, q.target.Algorithm, o.Scenario.Limit, frame)
		p.logf("hunt %s on %s: %d %s of the corpus %s to replay first (%d saved with another limit or frame left out)", q.target.Algorithm, topo,
			len(cfg.Corpus), report.Plural(int64(len(cfg.Corpus)), "reproducer", "reproducers"), o.Corpus, other)
	}
	return cfg
}

// add records res, the hunt of q on topo: its entry, the files it names, and a line saying what
// it found.
func (p *Plan) add(out *Outcome, res *Result, topo, dir string, q quarry) {
	s := p.o.Scenario
	base := fileSafe(q.target.Algorithm) + "-" + topo
	var files Files
	if res.Best != nil {
		files.Best = base + "-best.csv"
		out.Traces[files.Best] = res.Best.Trace
	}
	if v := res.Violation; v != nil {
		files.Found = base + "-found.csv"
		out.Traces[files.Found] = v.Trace
		if sr := v.Shrunk; sr != nil {
			files.Shrunk = base + "-repro.csv"
			out.Traces[files.Shrunk] = sr.Trace
			algs, err := p.algorithmsYAML(q, dir)
			if err != nil {
				// The trace alone still replays the schedule; say why there is no scenario.
				p.logf("hunt %s on %s: no reproducer scenario: %v", q.target.Algorithm, topo, err)
			} else {
				files.Scenario = base + "-repro.yaml"
				out.Scenarios[files.Scenario] = reproScenario(s, q.target.Algorithm, topo, files.Shrunk, res.Frame, sr.Trace,
					algs, p.o.Lab.Workers(sr.Trace), filepath.Join(dir, files.Scenario))
			}
			if err := p.save(out.Corpus, q, topo, res.Frame, sr.Trace); err != nil {
				p.logf("hunt %s on %s: reproducer not saved to the corpus: %v", q.target.Algorithm, topo, err)
			}
		}
	}
	if c := res.Costliest; c != nil {
		files.Costliest = base + "-fault-cost.csv"
		out.Traces[files.Costliest] = c.Trace
	}
	e := NewEntry(res, topo, files)
	e.ExpectedViolation = slices.Contains(s.Expect.MayViolate, e.Algorithm) || slices.Contains(s.Expect.Violations, e.Algorithm)
	out.File.Entries = append(out.File.Entries, e)
	switch v := res.Violation; {
	case v != nil && v.Shrunk != nil:
		minimal := ""
		if v.Shrunk.Minimal {
			minimal = " (1-minimal)"
		}
		p.logf("hunt %s on %s: violation at trial %d%s (score %.3f), shrunk from %s to %s%s%s; replay: %s", e.Algorithm, topo, v.Trial,
			fromCorpus(&v.Candidate), v.Score(), requestsText(v.Shrunk.From), requestsText(v.Shrunk.To), minimal, confirmText(v.Confirmation),
			ReplayCommand(dir, &e))
	case v != nil:
		p.logf("hunt %s on %s: violation at trial %d%s (score %.3f)", e.Algorithm, topo, v.Trial, fromCorpus(&v.Candidate), v.Score())
	default:
		p.logf("hunt %s on %s: no violation in %d trials (%s); closest approach %.3f", e.Algorithm, topo, res.Trials, res.Stop, e.BestScore)
	}
	if c := e.FaultCost; c != nil {
		p.logf("hunt %s on %s: the faults cost %d %s beyond the contract at most (trial %d: %s): a loss of the limiter's state let them through, not a flaw of the algorithm; schedule: %s",
			e.Algorithm, topo, c.Permits, report.Plural(c.Permits, "permit", "permits"), c.Schedule.Trial,
			strings.Join(c.Schedule.Faults, ", "), filepath.Join(dir, c.Schedule.Trace))
	}
}

// ReplayCommand returns what replays e's violation from the directory the hunt ran in, dir being
// its results directory as the hunt was given it: `limitbench run DIR/REPRO.yaml` for a
// reproducer scenario, else the path of the trace that holds the schedule. e must have a
// Violation.
func ReplayCommand(dir string, e *Entry) string {
	path := filepath.Join(dir, e.Reproducer())
	if strings.HasSuffix(path, ".yaml") {
		return "limitbench run " + path
	}
	return path
}

// confirmText says in a few words how the reproducer fared in its confirmation replays.
func confirmText(c *Confirmation) string {
	switch {
	case c == nil:
		return ""
	case c.Confirmed():
		return fmt.Sprintf(", broke it again in %d of %d replays", c.Broke, c.Replays)
	default:
		return fmt.Sprintf(", and the violation as found broke it again in only %d of %d replays (timing-dependent)", c.Broke, c.Replays)
	}
}
