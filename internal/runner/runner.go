// Package runner runs a scenario and owns nothing else: for each topology it starts one Redis
// environment (redisenv), resolves the algorithms, and measures every algorithm (interleaved
// with the reference script, repeated as asked), each measurement one measure.Do with the
// stages the scenario asks for: its call mode (measure.Functions), the server's cost
// (measure.Cost), its fault schedule (measure.Faults), its aligned start (measure.Align) and,
// for one generator of a segmented run, its segment (internal/segment). Repeats are merged and
// expectations and thresholds judged by their owners (result.MergeRepeats, judge). Writing the
// files, the exit code and the process's CPU policy are the command's.
//
// Every error Run returns matches one of measure's sentinels (measure.Mark), so that a caller
// tells bad input, an environment that failed and an interrupted run apart with errors.Is.
package runner

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/judge"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/measure"
	"github.com/limitbench/limitbench/internal/metrics"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/segment"
	"github.com/limitbench/limitbench/report"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/scenarios"
)

// Options configure Run. Scenario is required; the zero value of every other field is a
// documented default.
type Options struct {
	// Scenario is what to run; it must be valid (scenarios.Load returns valid scenarios).
	Scenario *scenarios.Scenario
	// Env is the environment to start for each topology; its Topology is set per topology.
	Env redisenv.Config
	// Repeat runs each algorithm this many times (default 1), interleaved: A B C A B C.
	Repeat int
	// More, when set, is asked after every round from the Repeat-th on whether to run another
	// round of the same topology (`run --repeat auto`); nil: Repeat rounds exactly.
	More func(Rounds) bool
	// NoReference skips the reference script (a bare INCR + PEXPIRE) that is otherwise measured
	// under the same load in every round, so that results carry relative figures.
	NoReference bool
	// WholeHistory makes every measurement keep its whole history and verify it after the
	// load (measure.Spec.WholeHistory), for a comparison with verifying as it runs.
	WholeHistory bool
	// StrictKeys runs every script behind the strict-keys guard (measure.StrictKeys).
	StrictKeys bool
	// Progress, when set, receives a live view of the current measurement about once a second.
	Progress func(Progress)
	// Done, when set, is called after each measurement with its entry.
	Done func(e *result.Entry, repeat int)
	// Checkpoint, when set, is called after each measurement with the result so far (a copy:
	// the measurements finished, repeats merged as at the end), marked cut short with a note
	// saying it is a checkpoint; `limitbench run` writes it as result.json, so that a run
	// killed outright leaves what it measured behind. With CheckpointEvery, it is also called
	// during each measurement. Calls never overlap.
	Checkpoint func(r *result.Result)
	// CheckpointEvery, when positive (and Checkpoint set, and not a segment), also calls
	// Checkpoint every CheckpointEvery of each measurement's load, from a goroutine of its
	// own, with the measurements finished so far and the one under way as an entry marked
	// InProgress (measure.Checkpoints: its figures so far, a verdict that is never a pass). The
	// measurement under way is left out when its algorithm already has finished repeats on the
	// topology (an entry per algorithm and topology); the note says so.
	CheckpointEvery time.Duration
	// Logf, when set, receives one line per notable step (environment chosen, started, stopped).
	Logf func(format string, args ...any)
	// ScenarioFile is recorded in the result; defaults to Scenario.File.
	ScenarioFile string
	// Segment, when set, makes the run one segment of a segmented run (see segment.Segment);
	// Repeat must then be 1, and Segment.RunID is the run's id.
	Segment *segment.Segment
	// RedisCPUs, when not empty, are the CPUs the redis-servers of each environment are pinned
	// to once it has started (redisenv.Target.PinServers; the CPUs cpus.Apply left to Redis). A
	// server started later (a restart fault's) is not pinned. When they cannot be pinned, the
	// run goes on and Logf says why.
	RedisCPUs []int
	// Metrics, when set, receives every measurement's live figures (metrics.Exporter.Stage).
	Metrics *metrics.Exporter

	// windows are the windows of every contract of the run (measure.Windows), which Run fills
	// in so that every measurement of a run has the same timeline bin, no wider than the
	// narrowest window (load.BinFor).
	windows []time.Duration
}

// Progress is a live view of one measurement.
type Progress struct {
	Algorithm, Topology string
	Repeat, Repeats     int
	load.Progress
	// Duration is the planned length of this measurement, warmup included.
	Duration time.Duration
}

// Rounds is what Options.More sees after a round: the topology, the rounds done, the time since
// its first round began, how long the last round took, and the run so far, with this topology's
// entries merged over its rounds (their repeats as samples) and related to the reference.
type Rounds struct {
	Topology      string
	Done          int
	Elapsed, Last time.Duration
	Result        *result.Result
}

// Conclusion is what Run concluded.
type Conclusion struct {
	// Result holds every measurement made, even when Run returned an error.
	Result *result.Result
	// Failures lists, one sentence each, what makes the run fail: a failed verdict the scenario
	// did not expect, an expected violation that was not found, an inconclusive verdict, a broken
	// threshold. Empty means the run passed.
	Failures []string
}

// Passed reports whether every verdict passed and every expectation and threshold held.
func (o *Conclusion) Passed() bool { return len(o.Failures) == 0 }

// Run runs o.Scenario and returns its conclusion, the expectations and thresholds judged. The
// error is non-nil when the run could not start or finish: an environment that could not be set
// up (wrapping redisenv.ErrUnavailable or ErrBadConfig), a fault target that names no node of
// it (scenarios.ErrInvalid, Scenario.CheckTargets), Redis lost mid-run (measure.ErrLost), a
// bad custom script (measure.ErrBadScript), cancellation (measure.ErrInterrupted), or Redis
// failing a step otherwise (measure.ErrRedis). The Conclusion is never nil and holds what was
// measured.
func Run(ctx context.Context, o Options) (*Conclusion, error) {
	s := o.Scenario
	if o.Repeat <= 0 {
		o.Repeat = 1
	}
	if o.ScenarioFile == "" {
		o.ScenarioFile = s.File
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	res := &result.Result{
		Schema:      result.SchemaVersion,
		Scenario:    s.Describe(o.ScenarioFile),
		Environment: report.HarnessEnvironment(),
		StartedAt:   time.Now().UTC(),
	}
	out := &Conclusion{Result: res}
	finish := func(err error) (*Conclusion, error) {
		res.FinishedAt = time.Now().UTC()
		if err != nil && res.CutShortNote == "" && len(res.Entries) > 0 {
			res.CutShort = true
			res.CutShortNote = err.Error()
		}
		out.Failures = append(out.Failures, judge.Run(s, res)...)
		return out, measure.Mark(err)
	}

	algs, err := resolve(&o, res)
	if err != nil {
		return finish(err)
	}
	runID := measure.NewRunID()
	if o.Segment != nil {
		if o.Repeat != 1 {
			return finish(fmt.Errorf("%w: a segmented run measures each algorithm once (repeat 1)", redisenv.ErrBadConfig))
		}
		runID = o.Segment.RunID
		res.Segment = o.Segment.Info(result.ScenarioHash(res.Scenario))
	}
	var topologies []string
	for _, topo := range s.Topologies {
		topologies = append(topologies, string(topo))
	}
	res.Environment.Topology = strings.Join(topologies, ",")

	for _, topo := range s.Topologies {
		if err := runEnvironment(ctx, o, topo, algs, runID, res); err != nil {
			return finish(err)
		}
	}
	return finish(nil)
}

// checkpoint returns a copy of res with the entries of the measurements of runs so far (per
// algorithm, its repeats; first is the index of this topology's first entry in res), marked cut
// short as a checkpoint of a run still going. cur, when not nil, is the measurement under way.
func checkpoint(res *result.Result, runs [][]result.Entry, first int, s *scenarios.Scenario, cur *underWay) *result.Result {
	c := *res
	c.Entries = slices.Clone(res.Entries)
	c.CutShortNote = "checkpoint: the run was still going; this covers the measurements it had finished"
	for i, es := range runs {
		if len(es) > 0 {
			e := result.MergeRepeats(es)
			judge.Expectations(&e, s)
			c.Entries = append(c.Entries, e)
		}
		if cur == nil || cur.index != i {
			continue
		}
		e := cur.entry
		if len(es) > 0 {
			c.CutShortNote += fmt.Sprintf("; repeat %d of %s on %s was under way and is left out (its finished repeats are in)",
				cur.repeat, e.Algorithm, e.Topology)
			continue
		}
		judge.Expectations(&e, s)
		c.Entries = append(c.Entries, e)
		c.CutShortNote += fmt.Sprintf(" and, marked in_progress, the one under way (%s on %s: %s of %s measured)",
			e.Algorithm, e.Topology, time.Duration(e.DurationS*float64(time.Second)).Round(100*time.Millisecond), s.Duration)
	}
	c.Relate(first)
	c.FinishedAt = time.Now().UTC()
	c.CutShort = true
	return &c
}

// underWay is the measurement under way of a checkpoint: its algorithm's index among a
// topology's, its repeat and its entry so far.
type underWay struct {
	index, repeat int
	entry         result.Entry
}

// resolve returns the algorithms of o's run, the reference script first unless o.NoReference,
// and records in o the windows of their contracts.
func resolve(o *Options, res *result.Result) ([]algorithms.Algorithm, error) {
	s := o.Scenario
	entries := s.ResolveAlgorithms()
	algs := make([]algorithms.Algorithm, 0, len(entries)+1)
	if !o.NoReference {
		algs = append(algs, algorithms.Reference())
		res.Reference = algorithms.ReferenceName
	}
	for _, e := range entries {
		a, err := measure.Resolve(s, e)
		if err != nil {
			return nil, err
		}
		algs = append(algs, a)
	}
	for _, a := range algs {
		if c, err := a.Contract(s.Limit); err == nil { // the measurement reports the error
			o.windows = append(o.windows, measure.Windows(c)...)
		}
	}
	return algs, nil
}

// runEnvironment starts the environment of topology topo, runs every algorithm on it
// (runTopology) and stops it.
func runEnvironment(ctx context.Context, o Options, topo redisenv.Topology, algs []algorithms.Algorithm, runID string,
	res *result.Result) error {
	s, logf := o.Scenario, o.Logf
	cfg := o.Env
	cfg.Topology = topo
	if cfg.Replicas == 0 && s.Replicas > 0 && cfg.Backend != redisenv.BackendExternal && cfg.Topology != redisenv.TopologySingle {
		cfg.Replicas = s.Replicas // the scenario's, unless --replicas was given
	}
	if s.Persistence != "" && s.Persistence != redisenv.PersistenceNone {
		cfg.Persistence = s.Persistence // refused on an external Redis (redisenv.ErrBadConfig)
	}
	cfg.Logf = logf
	tgt, err := redisenv.Start(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %w", measure.ErrInterrupted, ctx.Err())
		}
		return fmt.Errorf("start %s environment: %w", topo, err)
	}
	report.AddTarget(&res.Environment, tgt.Info)
	if res.Segment != nil {
		servers, err := segment.Servers(ctx, tgt)
		if err != nil {
			_ = tgt.Stop(context.WithoutCancel(ctx))
			return fmt.Errorf("%w: identify the Redis the segment measures: %w", redisenv.ErrUnavailable, err)
		}
		res.Segment.Servers = servers
	}
	if len(o.RedisCPUs) > 0 {
		if err := tgt.PinServers(ctx, o.RedisCPUs); err != nil {
			logf("%s: redis-servers not pinned: %v", topo, err)
		} else {
			logf("%s: redis-servers pinned to CPU(s) %v", topo, o.RedisCPUs)
		}
	}
	logf("%s %s: %s, Redis %s, %d node(s) (%s)", tgt.Info.Backend, topo, strings.Join(tgt.Masters(), " "),
		tgt.Info.Version, len(tgt.Info.Nodes), tgt.Info.Chosen)
	err = runTopology(ctx, o, tgt, string(topo), algs, runID, res)
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if serr := tgt.Stop(stopCtx); serr != nil {
		logf("stop %s environment: %v", topo, serr)
	}
	return err
}

// runTopology checks that the scenario's fault targets and custom scripts fit tgt, then runs
// every algorithm on tgt, o.Repeat rounds, and appends one entry per algorithm to res (repeats
// become its Samples).
func runTopology(ctx context.Context, o Options, tgt *redisenv.Target, topo string, algs []algorithms.Algorithm,
	runID string, res *result.Result) error {
	if err := o.Scenario.CheckTargets(tgt); err != nil {
		return err
	}
	if err := measure.CheckScripts(ctx, tgt, algs); err != nil {
		return err
	}
	first := len(res.Entries)
	runs := make([][]result.Entry, len(algs)) // per algorithm, its repeats in order
	defer func() {
		// Whatever happened, record what was measured, in algorithm order.
		for _, es := range runs {
			if len(es) > 0 {
				e := result.MergeRepeats(es)
				judge.Expectations(&e, o.Scenario)
				res.Entries = append(res.Entries, e)
			}
		}
		res.Relate(first)
	}()
	start, roundStart := time.Now(), time.Now()
	more := func(done int) bool {
		if done < o.Repeat {
			return true
		}
		if o.More == nil || done == 0 {
			return false
		}
		now := time.Now()
		r := Rounds{Topology: topo, Done: done, Elapsed: now.Sub(start), Last: now.Sub(roundStart), Result: sofar(res, runs, first, o.Scenario)}
		return o.More(r)
	}
	for rep := 1; more(rep - 1); rep++ {
		roundStart = time.Now()
		for i, a := range algs {
			var soFar func(e *result.Entry)
			if o.Checkpoint != nil && o.CheckpointEvery > 0 && o.Segment == nil {
				// Called by the measurement's Checkpoints stage while measureOne runs, never
				// after it returns: runs and res do not change meanwhile.
				soFar = func(e *result.Entry) {
					o.Checkpoint(checkpoint(res, runs, first, o.Scenario, &underWay{index: i, repeat: rep, entry: *e}))
				}
			}
			e, err := measureOne(ctx, o, tgt, topo, a, rep, runID, soFar)
			if e != nil {
				// Mark expected and tolerated violations now, so that Done sees the final label.
				judge.Expectations(e, o.Scenario)
				runs[i] = append(runs[i], *e)
				if o.Done != nil {
					done := *e
					o.Done(&done, rep)
				}
				if o.Checkpoint != nil {
					o.Checkpoint(checkpoint(res, runs, first, o.Scenario, nil))
				}
			}
			if err != nil {
				return err
			}
			if ctx.Err() != nil {
				return fmt.Errorf("%w: %w", measure.ErrInterrupted, ctx.Err())
			}
		}
	}
	return nil
}

// sofar returns a copy of res with the entries of runs (one per algorithm, its repeats so far)
// merged and appended after the first earlier ones, and related to the reference.
func sofar(res *result.Result, runs [][]result.Entry, first int, s *scenarios.Scenario) *result.Result {
	out := *res
	out.Entries = append([]result.Entry(nil), res.Entries[:first]...)
	for _, es := range runs {
		if len(es) > 0 {
			e := result.MergeRepeats(es)
			judge.Expectations(&e, s)
			out.Entries = append(out.Entries, e)
		}
	}
	out.Relate(first)
	return &out
}

// measureOne measures algorithm a once on tgt (whose topology is topo) under o.Scenario's load,
// on a fresh key prefix of run runID numbered rep (the run's shared prefix for a segment), with
// the stages the scenario asks for, and returns its entry (nil when nothing was measured).
// o.Progress, when set, sees the measurement live; soFar, when set, gets its entry so far every
// o.CheckpointEvery of its load (measure.Checkpoints).
func measureOne(ctx context.Context, o Options, tgt *redisenv.Target, topo string, a algorithms.Algorithm, rep int,
	runID string, soFar func(e *result.Entry)) (*result.Entry, error) {
	s := o.Scenario
	name := a.Describe().Name
	spec := measure.Spec{Target: tgt, Topology: topo, Algorithm: a, Limit: s.Limit, Plan: s.Plan(), Windows: o.windows, SpeedOnly: s.SpeedOnly.Covers(name),
		Prefix: measure.KeyPrefix(runID, name, strconv.Itoa(rep)), Logf: o.Logf, WholeHistory: o.WholeHistory}
	if o.Progress != nil {
		total := s.TotalDuration()
		spec.Plan.Progress = func(lp load.Progress) {
			o.Progress(Progress{Algorithm: name, Topology: topo, Repeat: rep, Repeats: max(o.Repeat, rep), Progress: lp, Duration: total})
		}
	}
	stages := []measure.Stage{measure.Functions(s.Call), new(measure.Cost).Stage()}
	if o.StrictKeys {
		stages = append(stages, measure.StrictKeys())
	}
	if len(s.Faults) > 0 {
		stages = append(stages, measure.Faults(s.Faults))
	}
	switch {
	case o.Segment != nil:
		stages = append(stages, o.Segment.Stage())
	case s.Arrival != nil && s.Arrival.Align.Every > 0:
		stages = append(stages, measure.Align(s.Arrival.Align))
	}
	live := metrics.Labels{RunID: runID, Scenario: s.Name, Algorithm: name, Topology: topo}
	if o.Segment != nil {
		live.Segment = fmt.Sprintf("%d/%d", o.Segment.Index, o.Segment.Count)
	}
	stages = append(stages, o.Metrics.Stage(live, s.Faults), measure.Checkpoints(o.CheckpointEvery, soFar))
	m, err := measure.Do(ctx, spec, stages...)
	return m.Entry, err
}
