package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	runtimemetrics "runtime/metrics"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/gate"
	"github.com/limitbench/limitbench/internal/cpus"
	"github.com/limitbench/limitbench/internal/measure"
	"github.com/limitbench/limitbench/internal/metrics"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/runner"
	"github.com/limitbench/limitbench/internal/segment"
	"github.com/limitbench/limitbench/report"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/scenarios"
)

func init() {
	register("run", "run scenarios and write results, plots and a report", runRun)
}

// defaultCheckpointEvery is how often a run rewrites its result.json during a measurement
// (--checkpoint-every): each checkpoint copies the load's histograms under its shards' locks
// (load.Peek) and writes the whole result, so once a minute costs the load nothing measurable
// and loses at most a minute of a killed soak. minCheckpointEvery is the shortest it takes.
const (
	defaultCheckpointEvery = time.Minute
	minCheckpointEvery     = time.Second
)

// runFlags are the flags of `limitbench run` that override or complete a scenario.
type runFlags struct {
	env                  envFlags
	topology, algorithms string
	duration             time.Duration
	rate                 float64
	clients              int
	waitReplicas         int
	waitShort            string
	seed                 int64
	call                 string
	out                  string
	force                bool
	quiet, wide          bool
	repeat               int
	auto                 bool // --repeat auto
	autoF                autoFlags
	autos                []*autoRepeat // per scenario, with --repeat auto
	noReference          bool
	wholeHistory         bool
	strictKeys           bool
	procs                int
	checkpointEvery      time.Duration
	awake, pin           bool
	speedOnly            bool
	redisCPUs            []int // the CPUs cpus.Apply left to Redis (--pin)
	seg                  segmentFlags
	segment              *segment.Segment
	ci                   ciFlags
	outs                 *ciOutputs // what the run writes for CI (--junit, --metrics-report, GitHub)
	live                 liveFlags
	metrics              *metrics.Exporter // the run's live metrics (--metrics-addr ...), nil without
}

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("run", "[flags] SCENARIO.yaml...", stderr)
	var f runFlags
	repeatF := repeatFlag{n: 1}
	f.register(fs, &repeatF)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return badInput(errors.New("no scenario file given"))
	}
	f.repeat, f.auto = repeatF.n, repeatF.auto
	if f.repeat < 1 {
		return badInput(fmt.Errorf("--repeat must be >= 1, got %d", f.repeat))
	}
	if f.procs < 0 {
		return badInput(fmt.Errorf("--procs must be >= 0, got %d", f.procs))
	}
	if f.checkpointEvery < 0 || (f.checkpointEvery > 0 && f.checkpointEvery < minCheckpointEvery) {
		return badInput(fmt.Errorf("--checkpoint-every must be 0 (no checkpoint during a measurement) or at least %s, got %s",
			minCheckpointEvery, f.checkpointEvery))
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if !f.auto && (set["repeat-budget"] || set["baseline"] || set["metric-threshold"]) {
		return badInput(errors.New("--repeat-budget, --baseline and --metric-threshold apply to --repeat auto"))
	}
	if !set["pin"] {
		// Repeats are samples for the gate: pinned, Redis's CPU per decision varied from repeat
		// to repeat about half as much on the 2-CPU VM (BenchmarkGatePower, docs/ci-gate.md).
		f.pin = f.repeat > 1
	}

	loaded, problems := loadScenarios(fs.Args(), overrides(f, set))
	if f.auto && len(problems) == 0 {
		f.autos, problems = autoRepeats(f.autoF, loaded)
	}
	if len(problems) > 0 {
		return badInput(errors.Join(problems...))
	}
	env, err := f.env.config(set)
	if err != nil {
		return badInput(err)
	}
	if err := f.checkInput(loaded, env, set); err != nil {
		return badInput(err)
	}
	if err := runPermissions(ctx, loaded, env, f, stderr); err != nil {
		return err
	}
	dirs, err := runDirs(loaded, f.out, f.force, time.Now(), stderr)
	defer func() {
		for _, d := range dirs {
			d.release()
		}
	}()
	if err != nil {
		return err
	}
	var stopLive func()
	if f.metrics, stopLive, err = f.live.start(ctx, stderr); err != nil {
		return err
	}
	defer stopLive()
	defer f.applyCPUs(loaded, env, stderr)()
	return f.runAll(ctx, loaded, env, dirs, stdout, stderr)
}

// register registers the flags of `limitbench run` on fs; --repeat goes into repeat.
func (f *runFlags) register(fs *flag.FlagSet, repeat *repeatFlag) {
	f.env.register(fs)
	f.seg.register(fs)
	f.ci.register(fs)
	f.live.register(fs)
	fs.StringVar(&f.topology, "topology", "", "override the scenario's topologies: single, cluster, sentinel, or a list such as single,cluster")
	fs.StringVar(&f.algorithms, "algorithms", "", "override the scenario's algorithms: a comma-separated list of names, or all")
	fs.DurationVar(&f.duration, "duration", 0, "override the measured duration of each run")
	fs.Float64Var(&f.rate, "rate", 0, "override the arrival with a constant rate: requests per second across ALL clients together (not per client)")
	fs.IntVar(&f.clients, "clients", 0, "override the number of concurrent clients")
	fs.IntVar(&f.waitReplicas, "wait-replicas", 0, "override the scenario's wait_replicas: follow every request with WAIT N (pipelined with it; 0: no WAIT), to measure what waiting for replicas costs and saves")
	fs.StringVar(&f.waitShort, "wait-short", "", "override the scenario's wait_short: admit (take the script's decision, as WAIT alone does) or deny (fail closed: an admission whose WAIT came back short is a denial)")
	fs.Int64Var(&f.seed, "seed", 0, "override the seed (the same seed sends the same sequence)")
	fs.StringVar(&f.call, "call", "", "how built-in algorithms' scripts are called: evalsha (SCRIPT LOAD, EVALSHA) or fcall (each script as a Redis Function of a library named for this run: FUNCTION LOAD, FCALL, FUNCTION DELETE after); default the scenario's call, else evalsha")
	fs.StringVar(&f.out, "out", "", "results directory (default a new results/<scenario>-<UTC time>/; with several scenarios, one subdirectory each); refused when it holds a result already, unless --force")
	fs.BoolVar(&f.force, "force", false, forceUsage)
	fs.BoolVar(&f.quiet, "quiet", false, "print only the summary table and failures")
	fs.BoolVar(&f.wide, "wide", false, "print every column of the summary table (p50, the contract) on one line per entry, however wide (default: 120 columns)")
	fs.Var(repeat, "repeat", "run each algorithm N times, interleaved (A B C A B C); result.json keeps every sample. auto: 6 rounds, then one more at a time until every gated figure can decide at its threshold or --repeat-budget is spent (docs/ci-gate.md)")
	fs.DurationVar(&f.autoF.budget, "repeat-budget", defaultRepeatBudget, "with --repeat auto: the time each topology's rounds may take")
	fs.StringVar(&f.autoF.baseline, "baseline", "", "with --repeat auto: the result.json (or its directory) the run will be gated against, so that each figure's minimum detectable effect is judged against it (default: the run's own spread)")
	fs.StringVar(&f.autoF.policy, "metric-threshold", "", "with --repeat auto: the gate's thresholds, as limitbench gate takes them (default "+gate.DefaultThresholds().String()+")")
	fs.BoolVar(&f.speedOnly, "speed-only", false, "measure speed only (the scenario's speed_only: true): an entry whose load never pressed its contract keeps its verdict and says the contract was not exercised, instead of being inconclusive; --speed-only=false clears the scenario's")
	fs.BoolVar(&f.noReference, "no-reference", false, "do not measure the reference script (INCR + PEXPIRE) used for relative figures")
	fs.BoolVar(&f.strictKeys, "strict-keys", false, "run every script behind a guard that refuses a command on a key not passed in KEYS (as Dragonfly, Kvrocks and Upstash do) and report the first as a portability warning; figures are not comparable (the guard costs a command per command)")
	fs.BoolVar(&f.wholeHistory, "whole-history", false, "keep every decision in memory and verify after the load (about 70 bytes a decision), instead of verifying as the load runs: for comparing the two (make bench-soak)")
	fs.BoolVar(&f.awake, "awake", true, "keep the CPUs out of deep idle states while the scenarios run (a 0 µs limit in /dev/cpu_dma_latency, as cyclictest does; needs root): idle CPUs spin, and neither latency nor Redis CPU per decision pays for waking a halted virtual CPU; --awake=false leaves them alone")
	fs.BoolVar(&f.pin, "pin", false, "on the process backend, pin the redis-servers to the last CPU and the load generator to the others (as capacity does), so that neither migrates between CPUs during a measurement and repeats compare like with like; default on with --repeat 2 or more (the gate's samples), off otherwise; --pin=false turns it off")
	fs.DurationVar(&f.checkpointEvery, "checkpoint-every", defaultCheckpointEvery, "rewrite result.json every DURATION while a measurement runs, with what it has measured so far (an entry marked in_progress, never a pass) beside the measurements finished, all marked cut_short, so that a long run killed outright leaves it behind; 0: only after each measurement (docs/run.md)")
	fs.IntVar(&f.procs, "procs", 0, "GOMAXPROCS of the load generator (0: one CPU left to each redis-server on this machine, at least one for the generator, where an external target on a loopback address or localhost counts as on this machine; Go's default against Redis elsewhere)")
}

// loadScenarios loads every scenario of paths with the overrides o applied, and returns every
// problem of every file at once, so that bad input is reported before anything starts.
func loadScenarios(paths []string, o scenarios.Overrides) ([]*scenarios.Scenario, []error) {
	var loaded []*scenarios.Scenario
	var problems []error
	for _, path := range paths {
		s, err := scenarios.Load(path)
		if err == nil {
			err = s.Apply(o)
		}
		if err != nil {
			problems = append(problems, err)
			continue
		}
		loaded = append(loaded, s)
	}
	return loaded, problems
}

// checkInput checks what the scenarios loaded and the flags set ask of the environment env
// before anything starts: every problem is bad input.
func (f *runFlags) checkInput(loaded []*scenarios.Scenario, env redisenv.Config, set map[string]bool) error {
	if err := checkEnvironments(loaded, env); err != nil {
		return err
	}
	var err error
	if f.segment, err = f.seg.config(set, loaded, f.repeat); err != nil {
		return err
	}
	if err := f.live.o.Validate(); err != nil {
		return err
	}
	if f.strictKeys {
		if err := guardable(loaded); err != nil {
			return err
		}
	}
	if f.segment != nil && set["checkpoint-every"] && f.checkpointEvery > 0 {
		return errors.New("--checkpoint-every does not apply to a segment: its result.json goes with admission logs that only its end writes, so it writes no checkpoint")
	}
	if f.segment != nil && (f.ci.junit != "" || f.ci.metrics != "") {
		return errors.New("--junit and --metrics-report report verdicts, and a segment's are not the run's: give them to limitbench merge")
	}
	if f.segment != nil && env.Backend != redisenv.BackendExternal {
		return fmt.Errorf("--segment needs one Redis that every segment shares: give it with --redis URL "+
			"(--backend %s starts a private Redis for each generator, and segments that never shared one cannot be merged)", env.Backend)
	}
	return nil
}

// guardable refuses, before anything starts, what --strict-keys cannot guard: a scenario whose
// built-in scripts are called as Redis Functions (call: fcall) or a custom algorithm that is a
// function library. The error names each file, line and field.
func guardable(loaded []*scenarios.Scenario) error {
	var lines []string
	for _, s := range loaded {
		if s.Call == algorithms.CallFCall {
			lines = append(lines, s.ProblemAt("call", "--strict-keys guards scripts called with EVALSHA, and this scenario calls the built-in algorithms as Redis Functions (fcall): give --call evalsha").String())
		}
		for i, e := range s.Algorithms {
			if e.Custom != nil && e.Custom.Function != "" {
				lines = append(lines, s.ProblemAt(fmt.Sprintf("algorithms[%d]", i), fmt.Sprintf(
					"%s is a function library (function: %s), which --strict-keys does not guard: leave it out with --algorithms", e.Name, e.Custom.Function)).String())
			}
		}
	}
	if len(lines) > 0 {
		return errors.New(strings.Join(lines, "\n"))
	}
	return nil
}

// applyCPUs places the process's CPUs for the scenarios loaded on env (cpus.Apply), keeps the
// CPUs left to Redis in f, says what it did unless --quiet, and returns the undo.
func (f *runFlags) applyCPUs(loaded []*scenarios.Scenario, env redisenv.Config, stderr io.Writer) (undo func()) {
	var topologies []redisenv.Topology
	for _, s := range loaded {
		topologies = append(topologies, s.Topologies...)
	}
	st, undo := cpus.Apply(cpus.Policy{Env: env, Topologies: topologies, Procs: f.procs, Awake: f.awake, AwakeNote: "--awake=false",
		Pin: f.pin, NotPinned: "--pin=false, or a single repeat"})
	f.redisCPUs = st.RedisCPUs
	if !f.quiet {
		if st.ProcsNote != "" {
			fmt.Fprintln(stderr, st.ProcsNote)
		}
		fmt.Fprintln(stderr, "CPU idle states: "+st.AwakeNote)
		if f.pin && st.RedisCPUs == nil {
			fmt.Fprintln(stderr, "not pinned: "+st.NotPinned)
		}
	}
	return undo
}

// runAll runs each scenario of loaded into its directory of dirs, and reports to CI what was
// measured, also when the run could not finish. It returns the first error that stopped it, or
// the scenarios' failures as a failed run (a segment's are said, not judged: merge judges).
func (f *runFlags) runAll(ctx context.Context, loaded []*scenarios.Scenario, env redisenv.Config, dirs []*outDir,
	stdout, stderr io.Writer) error {
	var failures []string
	var firstErr error
	f.outs = newCIOutputs(ctx, f.ci)
	for i, s := range loaded {
		var auto *autoRepeat
		if f.auto {
			auto = f.autos[i]
		}
		fails, err := runOne(ctx, s, env, *f, auto, dirs[i].path, stdout, stderr)
		failures = append(failures, fails...)
		if err != nil {
			firstErr = err
			break
		}
	}
	if err := f.outs.finish(stdout); err != nil && firstErr == nil {
		firstErr = fmt.Errorf("write CI outputs: %w", err)
	}
	if firstErr != nil {
		return firstErr
	}
	if len(failures) > 0 && f.segment != nil {
		// A segment's own verdicts cover a part of the history: limitbench merge judges the run.
		fmt.Fprintf(stderr, "segment %s: not judged alone (limitbench merge judges the merged run): %s\n", f.segment,
			strings.Join(failures, "; "))
		return nil
	}
	if len(failures) > 0 {
		return failed(fmt.Errorf("%d problem(s):\n  %s", len(failures), strings.Join(failures, "\n  ")))
	}
	return nil
}

// runDirs reserves the results directory of each scenario (see outdir.go): out, or out/<name>
// of each with several scenarios, or by default a new results/<name>-<UTC time of now>; notes
// hears of a dead command's lock taken over. The directories it reserved come back even with an
// error, to be released.
func runDirs(loaded []*scenarios.Scenario, out string, force bool, now time.Time, notes io.Writer) ([]*outDir, error) {
	var dirs []*outDir
	if out != "" && len(loaded) > 1 {
		seen := map[string]string{}
		for _, s := range loaded {
			if other, dup := seen[s.Name]; dup {
				return nil, badInput(fmt.Errorf("%s and %s are both named %s and would write to %s; give them different names",
					other, s.File, s.Name, filepath.Join(out, s.Name)))
			}
			seen[s.Name] = s.File
		}
	}
	for _, s := range loaded {
		var d *outDir
		var err error
		switch {
		case out == "":
			d, err = newOutDir("results", s.Name+"-"+timeStamp(now))
		case len(loaded) > 1:
			d, err = explicitOutDir("--out", filepath.Join(out, s.Name), result.FileName, force, notes)
		default:
			d, err = explicitOutDir("--out", out, result.FileName, force, notes)
		}
		if err != nil {
			return dirs, err
		}
		dirs = append(dirs, d)
	}
	return dirs, nil
}

// overrides turns the flags the user set into scenario overrides.
func overrides(f runFlags, set map[string]bool) scenarios.Overrides {
	var o scenarios.Overrides
	if set["duration"] {
		o.Duration = &f.duration
	}
	if set["rate"] {
		o.Rate = &f.rate
	}
	if set["clients"] {
		o.Clients = &f.clients
	}
	if set["seed"] {
		o.Seed = &f.seed
	}
	if set["wait-replicas"] {
		o.WaitReplicas = &f.waitReplicas
	}
	if set["wait-short"] {
		o.WaitShort = &f.waitShort
	}
	if set["speed-only"] {
		o.SpeedOnly = &f.speedOnly
	}
	if set["call"] {
		mode := algorithms.CallMode(f.call)
		o.Call = &mode
	}
	if set["topology"] {
		for _, t := range strings.Split(f.topology, ",") {
			o.Topologies = append(o.Topologies, redisenv.Topology(strings.TrimSpace(t)))
		}
	}
	if set["algorithms"] {
		for _, a := range strings.Split(f.algorithms, ",") {
			o.Algorithms = append(o.Algorithms, strings.TrimSpace(a))
		}
	}
	return o
}

// runOne runs one scenario, writes its results into dir and prints its summary. It returns the
// scenario's failures, and an error (already marked with its exit code) when the run could not
// finish.
//
// auto, when not nil, adds rounds to the run until its figures can decide (--repeat auto) and
// records how in result.json.
func runOne(ctx context.Context, s *scenarios.Scenario, env redisenv.Config, f runFlags, auto *autoRepeat, dir string,
	stdout, stderr io.Writer) ([]string, error) {
	// The console keeps the live progress line apart from every message (console.Write).
	con := newConsole(stderr)
	stderr = con
	opts := runner.Options{Scenario: s, Env: env, Repeat: f.repeat, NoReference: f.noReference, WholeHistory: f.wholeHistory, StrictKeys: f.strictKeys, Segment: f.segment,
		RedisCPUs: f.redisCPUs, Metrics: f.metrics, CheckpointEvery: f.checkpointEvery}
	if !f.quiet {
		opts.Logf = func(format string, args ...any) {
			fmt.Fprintf(stderr, format+"\n", args...)
		}
		fmt.Fprintf(stderr, "scenario %s: %s\n", s.Name, oneLine(s.Description))
	}
	if con.term && !f.quiet {
		opts.Progress = func(p runner.Progress) { con.Live(progressLine(p)) }
	}
	if f.segment == nil { // a segment's result.json goes with logs that only its end writes
		opts.Checkpoint = func(r *result.Result) {
			if err := r.Write(dir); err != nil {
				fmt.Fprintf(stderr, "limitbench run: write a checkpoint to %s: %v\n", dir, err)
			}
		}
	}
	if !f.quiet {
		opts.Done = func(e *result.Entry, repeat int) {
			con.Live("") // this measurement's progress is over
			rep := ""
			if f.repeat > 1 || f.auto {
				rep = fmt.Sprintf(" #%d", repeat)
			}
			// The label is the measurement's own verdict, with expected and tolerated violations
			// already marked; thresholds are judged once every measurement is in.
			label := e.Label()
			if !f.noReference && e.Algorithm == algorithms.ReferenceName {
				label = result.LabelReference
			}
			fmt.Fprintf(stderr, "done %s %s%s: %d requests, %.0f/s, p99 %s, %s\n", e.Algorithm, e.Topology, rep,
				e.Requests, e.ThroughputRPS, report.Micros(e.LatencyUS.P99), label)
		}
	}
	if auto != nil {
		auto.logf = func(format string, args ...any) {
			if !f.quiet {
				fmt.Fprintf(stderr, format+"\n", args...)
			}
		}
		opts.More = auto.more
	}
	out, runErr := runner.Run(ctx, opts)
	con.ClearLive() // the summary goes to stdout, on the same terminal: not onto the live line
	res := out.Result
	if auto != nil {
		res.Sequential = auto.sequential()
		if runErr == nil && auto.err != nil {
			runErr = auto.err
		}
	}
	interrupted := runErr != nil && errors.Is(runErr, measure.ErrInterrupted)
	// Redis lost or refusing a permission during the run: what was measured is written too.
	envLost := runErr != nil && (errors.Is(runErr, measure.ErrLost) || errors.Is(runErr, measure.ErrPermission))
	var writeErr error
	written := false
	// An interrupted run always leaves a result.json, even with nothing measured, so that a script
	// waiting for one finds it marked cut short; so does a run whose Redis was lost.
	if len(res.Entries) > 0 || interrupted || envLost {
		switch {
		case interrupted:
			res.CutShort = true
			res.CutShortNote = "interrupted: the results cover what was measured before the signal"
			if len(res.Entries) == 0 {
				res.CutShortNote = "interrupted before anything was measured"
			}
		case envLost && len(res.Entries) == 0:
			res.CutShort = true
			res.CutShortNote = "stopped before anything was measured: " + runErr.Error()
		}
		writeErr = report.WriteAll(dir, res)
		if writeErr == nil {
			writeErr = result.WritePartialLogs(dir, res)
		}
		written = writeErr == nil
	}
	writeSummary := report.WriteSummary
	if f.wide {
		writeSummary = report.WriteWideSummary
	}
	_ = writeSummary(stdout, res) // stdout: a failed write has nowhere to be reported
	if auto != nil {
		auto.summary(stdout)
	}
	if written {
		fmt.Fprintf(stdout, "results: %s\n", dir)
	}
	if written && f.segment == nil { // limitbench merge judges a segmented run
		if err := f.outs.addResult(res, dir, f.outs.places(s)); err != nil && writeErr == nil {
			writeErr = fmt.Errorf("CI outputs: %w", err)
		}
	}
	if writeErr != nil {
		fmt.Fprintf(stderr, "limitbench run: write results to %s: %v\n", dir, writeErr)
	}
	switch {
	case runErr == nil && writeErr != nil:
		return out.Failures, fmt.Errorf("write results: %w", writeErr)
	case runErr == nil:
		return out.Failures, nil
	case interrupted && len(res.Entries) == 0 && written:
		return out.Failures, failed(fmt.Errorf("%w; nothing was measured (%s records the empty, cut-short run)",
			runErr, filepath.Join(dir, result.FileName)))
	case interrupted && written:
		return out.Failures, failed(fmt.Errorf("%w; results so far are in %s", runErr, dir))
	case interrupted:
		return out.Failures, failed(fmt.Errorf("%w; no results were written", runErr))
	case envLost && written:
		return out.Failures, fmt.Errorf("%w; results so far are in %s", runErr, dir)
	}
	return out.Failures, runErr // main's exitCodes: a bad script or configuration, or Redis
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// progressLine is the live line of a measurement in progress.
func progressLine(p runner.Progress) string {
	phase := ""
	if p.Warmup {
		phase = " warmup"
	}
	rep := ""
	if p.Repeats > 1 {
		rep = fmt.Sprintf(" #%d/%d", p.Repeat, p.Repeats)
	}
	return fmt.Sprintf("%s %s%s%s  %s/%s  %d requests  %d admitted  %d errors  %.0f/s  %d MB in use",
		p.Algorithm, p.Topology, rep, phase, p.Elapsed.Truncate(100*time.Millisecond), p.Duration,
		p.Requests, p.Admitted, p.Errors, p.Rate, memoryInUse()>>20)
}

// memoryInUse returns the memory the Go runtime holds from the system and has not released:
// heap, stacks and the runtime's own (runtime/metrics, read without stopping the world). It
// follows the process's RSS closely, and is what a soak's live line shows.
func memoryInUse() uint64 {
	m := []runtimemetrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	runtimemetrics.Read(m)
	if m[0].Value.Kind() != runtimemetrics.KindUint64 || m[1].Value.Kind() != runtimemetrics.KindUint64 {
		return 0
	}
	return m[0].Value.Uint64() - m[1].Value.Uint64()
}

// isTerminal reports whether w is a terminal (a console on one counts).
func isTerminal(w io.Writer) bool {
	if c, ok := w.(*console); ok {
		return c.term
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
