package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/hunt"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/cpus"
	"github.com/limitbench/limitbench/internal/measure"
	"github.com/limitbench/limitbench/internal/metrics"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/trace"
	"github.com/limitbench/limitbench/scenarios"
	"github.com/limitbench/limitbench/verify"
)

func init() {
	register("hunt", "search for the schedule that breaks each limiter's contract, shrink it, write a reproducer", runHunt)
}

// huntFlags are the flags of `limitbench hunt`.
type huntFlags struct {
	live                 liveFlags
	env                  envFlags
	topology, algorithms string
	budget               time.Duration
	trials, batch        int
	seed                 uint64
	span                 time.Duration
	out, corpus          string
	faults               string
	force, quiet         bool
	procs                int
	ci                   ciFlags
}

func (f *huntFlags) register(fs *flag.FlagSet) {
	f.env.register(fs)
	f.live.register(fs)
	fs.StringVar(&f.topology, "topology", "", "override the scenario's topologies: single, cluster or single,cluster")
	fs.StringVar(&f.algorithms, "algorithms", "", "override the scenario's algorithms: a comma-separated list of names, or all")
	fs.DurationVar(&f.budget, "budget", hunt.DefaultTime, "wall time of the search per algorithm and topology (shrinking a violation takes up to as long again)")
	fs.IntVar(&f.trials, "trials", 0, "most schedules tried per algorithm and topology (0: bounded by --budget only)")
	fs.IntVar(&f.batch, "batch", 4, "schedules run at the same time, each on its own keys")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of every choice of the search: the same seed explores the same schedules")
	fs.DurationVar(&f.span, "span", hunt.DefaultSpan, "longest schedule: one trial lasts about this long")
	fs.StringVar(&f.out, "out", "", "results directory (default a new results/<scenario>-hunt-<UTC time>/); refused when it holds a hunt.json already, unless --force")
	fs.StringVar(&f.corpus, "corpus", "", "corpus directory: replay every reproducer saved there for an algorithm hunted before searching, and save each new reproducer there (created when missing); `limitbench run DIR/*.yaml` fails while one still breaks its contract")
	fs.StringVar(&f.faults, "faults", "", "let the search place faults on the master as it places requests, and shrink them with the schedule: a comma-separated list of "+
		scenarios.NemesisNames()+", "+hunt.ClockJump+" (a client's clock steps to another offset of the scenario's clock_skew, for client-clock algorithms), or all (failover only where the topology has replicas); what a fault's loss of the state lets through is reported apart from the algorithm's flaws")
	fs.BoolVar(&f.force, "force", false, forceUsage)
	fs.BoolVar(&f.quiet, "quiet", false, "print only the summary")
	fs.IntVar(&f.procs, "procs", 0, "GOMAXPROCS of the load generator (as for run)")
	f.ci.register(fs)
}

// problems returns every problem of the flags' values at once.
func (f *huntFlags) problems() []error {
	var problems []error
	switch {
	case f.budget <= 0:
		problems = append(problems, fmt.Errorf("--budget must be > 0, got %s", f.budget))
	case f.span > 0 && f.budget < f.span:
		problems = append(problems, fmt.Errorf("--budget %s is too short for one trial (each lasts about --span, %s): give at least %s", f.budget, f.span, f.span))
	}
	if f.trials < 0 {
		problems = append(problems, fmt.Errorf("--trials must be >= 0, got %d", f.trials))
	}
	if f.batch < 1 || f.batch > 64 {
		problems = append(problems, fmt.Errorf("--batch must be in [1, 64], got %d", f.batch))
	}
	if f.procs < 0 {
		problems = append(problems, fmt.Errorf("--procs must be >= 0, got %d", f.procs))
	}
	if _, err := f.faultKinds(); err != nil {
		problems = append(problems, err)
	}
	if f.span <= 0 {
		problems = append(problems, fmt.Errorf("--span must be > 0, got %s", f.span))
	} else if err := (hunt.Bounds{Span: f.span}).Validate(); err != nil {
		problems = append(problems, fmt.Errorf("--span: %w", err))
	}
	return problems
}

// faultKinds returns the kinds --faults names: its list, or for all every kind a schedule may
// place (scenarios.NemesisKinds and hunt.ClockJump; NewPlan refuses failover where a topology
// has no replica, so all leaves it out there).
func (f *huntFlags) faultKinds() ([]string, error) {
	if f.faults == "" {
		return nil, nil
	}
	if f.faults == "all" {
		var out []string
		for _, k := range scenarios.NemesisKinds {
			out = append(out, string(k))
		}
		return append(out, hunt.ClockJump), nil
	}
	var out []string
	for _, k := range strings.Split(f.faults, ",") {
		k = strings.TrimSpace(k)
		if k != hunt.ClockJump && !slices.Contains(scenarios.NemesisKinds, scenarios.FaultKind(k)) {
			return nil, fmt.Errorf("--faults: %q is not a fault a hunt places; use a comma-separated list of %s, %s, or all",
				k, scenarios.NemesisNames(), hunt.ClockJump)
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

// outDir returns the results directory: --out, or a new results/<scenario>-hunt-<UTC time>/.
func (f *huntFlags) outDir(scenario string, stderr io.Writer) (*outDir, error) {
	if f.out == "" {
		return newOutDir("results", scenario+"-hunt-"+timeStamp(time.Now()))
	}
	return explicitOutDir("--out", f.out, hunt.FileName, f.force, stderr)
}

// huntLab is internal/measure's side of a hunt: resolving algorithms, checking custom scripts
// and running trials (measure.Trials, called as the scenario calls its scripts, warnings to
// logf), its errors marked with measure's sentinels for main's exit codes.
// Each trial feeds live, when set, under the scenario's name and the hunt's run id.
func huntLab(call algorithms.CallMode, logf func(string, ...any), live *metrics.Exporter, scenario string) hunt.Lab {
	runID := measure.NewRunID()
	return hunt.Lab{
		Resolve: measure.Resolve,
		Check: func(ctx context.Context, tgt *redisenv.Target, algs []algorithms.Algorithm) error {
			return measure.Mark(measure.CheckScripts(ctx, tgt, algs))
		},
		Trial: func(ctx context.Context, tgt *redisenv.Target, a algorithms.Algorithm, l algorithms.Limit, frame arrival.Align,
			batch []*trace.Trace) ([]verify.Measurement, error) {
			topo := string(tgt.Info.Topology)
			stage := func() measure.Stage {
				return live.Stage(metrics.Labels{RunID: runID, Scenario: scenario, Algorithm: a.Describe().Name, Topology: topo}, nil)
			}
			return measure.Trials(ctx, measure.Trial{Target: tgt, Topology: topo, Algorithm: a, Limit: l,
				Call: call, Frame: frame, Logf: logf, Stage: stage}, batch)
		},
		Workers: measure.TrialWorkers,
	}
}

func runHunt(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("hunt", "[flags] SCENARIO.yaml", stderr)
	var f huntFlags
	f.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return badInput(errors.New("give exactly one scenario file"))
	}
	problems := f.problems()
	if err := f.live.o.Validate(); err != nil {
		problems = append(problems, err)
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	s, err := scenarios.Load(fs.Arg(0))
	if err == nil {
		err = s.Apply(overrides(runFlags{topology: f.topology, algorithms: f.algorithms}, set))
	}
	if err == nil {
		err = hunt.CheckScenario(s)
	}
	if err != nil {
		problems = append(problems, err)
	}
	if len(problems) > 0 {
		return badInput(errors.Join(problems...))
	}
	env, err := f.env.config(set)
	if err != nil {
		return badInput(err)
	}
	kinds, _ := f.faultKinds() // checked with the other flags
	if f.faults == "all" {
		kinds = slices.DeleteFunc(kinds, func(k string) bool {
			return k == string(scenarios.FaultFailover) && slices.ContainsFunc(s.Topologies, func(t redisenv.Topology) bool { return !hunt.Replicated(s, env, t) })
		})
	}
	o := hunt.Options{Scenario: s, Env: env, Bounds: hunt.Bounds{Span: f.span, Faults: kinds}, Time: f.budget, Trials: f.trials, Batch: f.batch,
		Seed: f.seed, Corpus: f.corpus}
	o.Logf, o.Progress = huntOutput(stderr, f.quiet)
	live, stopLive, err := f.live.start(ctx, stderr)
	if err != nil {
		return err
	}
	defer stopLive()
	o.Lab = huntLab(s.Call, o.Logf, live, s.Name)
	plan, err := hunt.NewPlan(o)
	if err != nil {
		return badInput(err)
	}
	dir, err := f.outDir(s.Name, stderr)
	defer dir.release()
	if err != nil {
		return err
	}
	st, undo := cpus.Apply(cpus.Policy{Env: env, Topologies: s.Topologies, Procs: f.procs})
	defer undo()
	if st.ProcsNote != "" && !f.quiet {
		fmt.Fprintln(stderr, st.ProcsNote)
	}
	for _, n := range plan.Skipped() {
		if !f.quiet {
			fmt.Fprintf(stderr, "%s: no contract to break; not hunted\n", n)
		}
	}
	out, runErr := plan.Run(ctx, dir.path)
	interrupted := ctx.Err() != nil || errors.Is(runErr, measure.ErrInterrupted)
	if err := writeHunt(stdout, out, dir.path); err != nil {
		return err
	}
	if err := huntCIOutputs(ctx, f.ci, s, out.File, dir.path, stdout); err != nil {
		return fmt.Errorf("write CI outputs: %w", err)
	}
	switch {
	case interrupted:
		return failed(fmt.Errorf("%w; what was found so far is in %s", measure.ErrInterrupted, dir.path))
	case errors.Is(runErr, redisenv.ErrUnavailable):
		// A start refused for a permission names it, as run says it.
		return fmt.Errorf("%w; what was found so far is in %s", measure.Mark(runErr), dir.path)
	case runErr != nil:
		return fmt.Errorf("%w; what was found so far is in %s", runErr, dir.path)
	}
	if err := hunt.Verdict(out.File, s.Expect); err != nil {
		return failed(err)
	}
	return nil
}

// writeHunt writes out into the results directory dir and its new reproducers into the corpus,
// then the summary, where the results are, and each reproducer saved to the corpus.
func writeHunt(stdout io.Writer, out *hunt.Outcome, dir string) error {
	if err := out.Write(dir); err != nil {
		return fmt.Errorf("write results to %s: %w", dir, err)
	}
	if c := out.Corpus; c != nil {
		if err := c.Write(); err != nil {
			return fmt.Errorf("save reproducers to the corpus %s: %w", c.Dir, err)
		}
	}
	hunt.WriteSummary(stdout, out.File, dir)
	fmt.Fprintf(stdout, "results: %s\n", dir)
	if c := out.Corpus; c != nil {
		for _, saved := range c.Saved() {
			fmt.Fprintf(stdout, "saved to the corpus: %s\n", saved)
		}
	}
	return nil
}

// huntOutput returns where a hunt's lines and progress go: stderr, the progress as one line
// rewritten in place on a terminal and none elsewhere; nothing when quiet. A line clears the
// progress line first.
func huntOutput(stderr io.Writer, quiet bool) (logf func(string, ...any), progress func(string, string, hunt.Progress)) {
	if quiet {
		return nil, nil
	}
	var mu sync.Mutex
	live := isTerminal(stderr)
	logf = func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if live {
			fmt.Fprint(stderr, "\r\033[K")
		}
		fmt.Fprintf(stderr, format+"\n", args...)
	}
	if live {
		progress = func(alg, topo string, p hunt.Progress) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprint(stderr, "\r\033[K"+huntProgressLine(alg, topo, p))
		}
	}
	return logf, progress
}

// huntProgressLine is the live line of a hunt's progress: the phase, its trials, time, best score
// and rows, and the time spent waiting for the clock's phase (a minute boundary for minute
// windows), or the wait the next batch is starting.
func huntProgressLine(alg, topo string, p hunt.Progress) string {
	line := fmt.Sprintf("hunt %s %s: %s", alg, topo, p.Phase)
	if p.Waiting > 0 {
		return line + fmt.Sprintf(", waiting %s for the clock's phase (%s waited so far)", p.Waiting.Round(time.Second), p.Waited.Round(time.Second))
	}
	line += fmt.Sprintf(", %d trials, %s, best %.3f, %d rows", p.Trials, p.Elapsed.Truncate(100*time.Millisecond), p.Best, p.Rows)
	if p.Waited >= time.Second {
		line += fmt.Sprintf(", %s waiting for the clock's phase", p.Waited.Round(time.Second))
	}
	return line
}
