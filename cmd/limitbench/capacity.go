package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/capacity"
	"github.com/limitbench/limitbench/internal/cpus"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/measure"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/scenarios"
)

func init() {
	register("capacity", "find the decisions per second one Redis shard sustains, and the memory per subject", runCapacity)
}

// capacityUsage is the help of `limitbench capacity`, before its flags.
const capacityUsage = `usage: limitbench capacity --algorithm NAME [flags] [SCENARIO.yaml]

Sweeps the open-loop rate on one Redis environment: a closed-loop probe finds the saturation
throughput S, steps double the rate from S/4 until one breaks the objective, achieves under 95%
of the offered rate, falls behind schedule or fails over 0.1% of its requests, then bisection
narrows the last good and first bad rates to within 5%. A step that breaks only a latency
objective is measured once more and its rate judged on both steps' latencies together, so that
one stall of the machine does not decide the sweep. Each step uses a fresh key prefix. A memory
step then puts fresh subjects at their limit and reads used_memory and MEMORY USAGE.

Without SCENARIO, each step runs the saturation scenario's load open loop: 32 plain clients over
1,000 uniform subjects, limit 1,000 per second each, seed 1. A SCENARIO gives its clients, mode,
keys, limit, cost, seed and skew; its arrival, duration and algorithms are ignored.

On the process backend with more than one CPU, Redis is pinned to the last CPU and the load
generator to the others (--no-pin turns it off); the report says which. During the sweep the
CPUs are kept out of deep idle states (--awake=false leaves them alone): waking a sleeping CPU on
every round trip, costly on virtual machines, would otherwise count as Redis's latency.

It reads how busy the machine was over the sweep (CPU steal and other processes' CPU time from
/proc/stat, the probe's round trip against Redis's time per call, steps repeated at one rate) and
leads its output with a warning when the figure measures a busy machine rather than Redis.

Writes capacity.json, capacity.md, capacity.png and capacity.svg into --out and prints the table.

flags:
`

// capacityFlags are the flags of `limitbench capacity`.
type capacityFlags struct {
	live                liveFlags
	env                 envFlags
	algorithm, slo, out string
	step, warmup        time.Duration
	subjects, clients   int
	call                string
	procs               int
	noPin, quiet, force bool
	awake               bool
}

func runCapacity(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("capacity", "--algorithm NAME [flags] [SCENARIO.yaml]", stderr)
	var f capacityFlags
	fs.StringVar(&f.algorithm, "algorithm", "", "the algorithm to size (required): a built-in name or a custom entry of SCENARIO")
	fs.StringVar(&f.slo, "slo", capacity.DefaultSLO, `objective every sustainable step must meet, as a threshold ("p99 < 2ms", "p999 <= 5ms"); "none" for throughput alone`)
	f.env.register(fs)
	f.live.register(fs)
	fs.StringVar(&f.env.topology, "topology", "", "single, cluster or sentinel (default: the scenario's first topology, else single)")
	fs.DurationVar(&f.step, "step", capacity.DefaultStep, "measured length of each step of the sweep")
	fs.DurationVar(&f.warmup, "warmup", 0, "warmup before each step (default a quarter of --step, at most 1s)")
	fs.IntVar(&f.subjects, "subjects", capacity.DefaultMemorySubjects, "subjects the memory step touches (fewer when each needs many requests to reach its limit); 0 skips it")
	fs.IntVar(&f.clients, "clients", 0, "override the number of concurrent clients of every step")
	fs.StringVar(&f.call, "call", "", "how built-in algorithms' scripts are called: evalsha (SCRIPT LOAD, EVALSHA) or fcall (each script as a Redis Function of a library named for this run: FUNCTION LOAD, FCALL, FUNCTION DELETE after); default the scenario's call, else evalsha")
	fs.StringVar(&f.out, "out", "", "results directory (default a new results/capacity-<algorithm>-<UTC time>/); refused when it holds a capacity result already, unless --force")
	fs.BoolVar(&f.force, "force", false, forceUsage)
	fs.IntVar(&f.procs, "procs", 0, "GOMAXPROCS of the load generator (0: the CPUs it is pinned to, else one CPU left to each redis-server on this machine, where an external target on a loopback address or localhost counts as on this machine; Go's default against Redis elsewhere)")
	fs.BoolVar(&f.noPin, "no-pin", false, "do not pin Redis and the load generator to separate CPUs")
	fs.BoolVar(&f.awake, "awake", true, "keep the CPUs out of deep idle states during the sweep (a 0 µs limit in /dev/cpu_dma_latency, as cyclictest does; needs root): idle CPUs spin, and round trips no longer pay to wake them; --awake=false leaves them alone")
	fs.BoolVar(&f.quiet, "quiet", false, "print only the table")
	fs.Usage = func() {
		fmt.Fprint(stderr, capacityUsage)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	s, opts, err := capacityOptions(fs, f, set)
	if err != nil {
		return badInput(err)
	}
	if err := f.live.o.Validate(); err != nil {
		return badInput(err)
	}
	var out *outDir
	if f.out == "" {
		out, err = newOutDir("results", "capacity-"+keyName(f.algorithm)+"-"+timeStamp(time.Now()))
	} else {
		out, err = explicitOutDir("--out", f.out, capacity.File, f.force, stderr)
	}
	if err != nil {
		return err
	}
	defer out.release()
	dir := out.path
	var stopLive func()
	if opts.Metrics, stopLive, err = f.live.start(ctx, stderr); err != nil {
		return err
	}
	defer stopLive()
	if !f.quiet {
		opts.Logf = func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }
		fmt.Fprintf(stderr, "capacity of %s: %s\n", f.algorithm, oneLine(s.Description))
	}
	st, undo := cpus.Apply(cpus.Policy{Env: opts.Env, Topologies: []redisenv.Topology{opts.Env.Topology}, Procs: f.procs,
		Pin: !f.noPin, NotPinned: "--no-pin", Awake: f.awake, AwakeNote: "--awake=false"})
	defer undo()
	if st.ProcsNote != "" && opts.Logf != nil {
		opts.Logf("%s", st.ProcsNote)
	}
	opts.CPUs = st

	c, runErr := capacity.Run(ctx, opts)
	var writeErr error
	if c.Probe != nil || len(c.Steps) > 0 {
		if errors.Is(runErr, measure.ErrInterrupted) {
			c.Notes = append(c.Notes, "interrupted: the figures cover what was measured before the signal")
		}
		writeErr = capacity.Write(dir, c)
		if err := c.WriteText(stdout); err != nil {
			return fmt.Errorf("print the table: %w", err)
		}
		if writeErr == nil {
			fmt.Fprintf(stdout, "results: %s\n", dir)
		} else {
			fmt.Fprintf(stderr, "limitbench capacity: write results to %s: %v\n", dir, writeErr)
		}
	}
	switch {
	case runErr != nil:
		return runErr
	case writeErr != nil:
		return fmt.Errorf("write results: %w", writeErr)
	case c.SustainableRPS == 0:
		return failed(fmt.Errorf("no rate met the objective: %s", c.Bound))
	}
	return nil
}

// capacityOptions checks the flags and the scenario and builds the sweep's options; every
// error is bad input.
func capacityOptions(fs *flag.FlagSet, f capacityFlags, set map[string]bool) (*scenarios.Scenario, capacity.Options, error) {
	var o capacity.Options
	var problems []error
	bad := func(format string, args ...any) { problems = append(problems, fmt.Errorf(format, args...)) }
	if fs.NArg() > 1 {
		bad("one scenario at most, got %d: %s", fs.NArg(), strings.Join(fs.Args(), " "))
	}
	s := capacity.Scenario()
	if fs.NArg() == 1 {
		loaded, err := scenarios.Load(fs.Arg(0))
		if err != nil {
			return nil, o, err
		}
		s = loaded
		if s.Wait.Enabled() {
			// The sweep has loads of its own; a WAIT it did not send must not be taken for measured.
			bad("%s: wait_replicas applies to limitbench run; a capacity sweep does not send WAIT (remove it, or sweep a copy without it)", s.File)
		}
	}
	// Apply the overrides so the scenario is validated as the sweep will run it: a custom
	// script whose keys do not share a hash tag is refused before a cluster sweep starts.
	if ov, ok := f.overrides(set); ok {
		if err := s.Apply(ov); err != nil {
			problems = append(problems, err)
		}
	}
	if f.algorithm == "" {
		bad("--algorithm is required (limitbench list shows the names)")
	} else if _, err := capacity.Algorithm(s, f.algorithm); err != nil {
		problems = append(problems, fmt.Errorf("--algorithm: %w", err))
	}
	if slo, err := capacity.ParseSLO(f.slo, f.algorithm); err != nil {
		problems = append(problems, fmt.Errorf("--slo: %w", err))
	} else {
		o.SLO = slo
	}
	if f.procs < 0 {
		bad("--procs must be >= 0, got %d", f.procs)
	}
	// A step is a run's measured part, and its warmup a run's: the load's bounds.
	if err := load.CheckDuration(f.step); err != nil {
		bad("--step %v", err)
	}
	if err := load.CheckWarmup(f.warmup); err != nil {
		bad("--warmup %v", err)
	}
	if f.subjects < 0 || f.subjects > load.MaxKeys {
		bad("--subjects must be in [0, %d], got %d", load.MaxKeys, f.subjects)
	}
	// The sweep runs on one topology: the flag's, else the scenario's first.
	envf := f.env
	if envf.topology == "" {
		envf.topology = string(redisenv.TopologySingle)
		if len(s.Topologies) > 0 {
			envf.topology = string(s.Topologies[0])
		}
	}
	env, err := envf.config(set)
	if err != nil {
		problems = append(problems, err)
	}
	if len(problems) > 0 {
		return nil, o, errors.Join(problems...)
	}
	o.Scenario, o.Algorithm, o.Env = s, f.algorithm, env
	o.Step, o.Warmup = f.step, f.warmup
	o.MemorySubjects = f.subjects
	if f.subjects == 0 {
		o.MemorySubjects = -1
	}
	return s, o, nil
}

// overrides returns the scenario overrides the flags set gives, and whether there are any.
func (f capacityFlags) overrides(set map[string]bool) (ov scenarios.Overrides, ok bool) {
	if set["clients"] {
		ov.Clients = &f.clients
	}
	if f.env.topology != "" {
		ov.Topologies = []redisenv.Topology{redisenv.Topology(f.env.topology)}
	}
	if set["call"] {
		mode := algorithms.CallMode(f.call)
		ov.Call = &mode
	}
	return ov, ov.Clients != nil || ov.Topologies != nil || ov.Call != nil
}

// keyName keeps an algorithm name usable in a directory name.
func keyName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ' ' || r == ':' {
			return '_'
		}
		return r
	}, s)
}
