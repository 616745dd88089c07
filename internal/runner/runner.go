// Package runner orchestrates a run and owns nothing else: for each topology of a scenario it
// starts one Redis environment (redisenv), resolves the algorithms, and for every algorithm
// (interleaved with the reference script, repeated as asked) prepares it on a fresh key prefix,
// watches every node meanwhile (faults.Watcher: restarts, failovers, flushes), injects the
// scenario's faults on the run's clock (inject.go: node control, a toxiproxy network in front of
// every node for the network faults, and on the replication link of each master a fault on that
// link targets, put in place before the load; each fault's start and end recorded and handed to the
// verifier as verify.InjectedFault, and restarts, kills and failovers as disruptions), feeds load.Run the
// aggregators of one measurement (load's histograms, timeline and errors by class, verify's
// admission logs) with a faults.Guard that stops the load when Redis is gone or refuses a
// permission, reads what the decisions cost Redis (INFO, MEMORY USAGE), removes the keys (and,
// on an external Redis, warns of any it could not), and assembles the entry from what each owner
// gives: result.NewEntry (load's figures), verify.Measurement.Sections (verdict, accuracy, the
// history verified in epochs where the watch saw the state lost) and its per-bin limits, the
// watch's Summary. Repeats are merged and expectations and thresholds
// judged by their owners (result.MergeRepeats, judge). Writing the files, the exit code and the
// process's CPU policy are the command's.
//
// Every error Run returns matches one of its sentinels (MarkRedis), so that a caller tells bad
// input, an environment that failed and an interrupted run apart with errors.Is. The capacity
// sweep runs its steps through Measure, and `limitbench hunt` its trials through HuntTrial.
package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/judge"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/report"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/scenarios"
)

// Errors of Run; compare with errors.Is. Every error Run returns matches one of them, of
// redisenv's ErrUnavailable (an environment that could not be set up) and ErrBadConfig (a bad
// environment configuration), or algorithms.ErrUnknownAlgorithm.
var (
	// ErrLost means Redis stopped answering during the run. The Conclusion still holds what was
	// measured before.
	ErrLost = errors.New("redis was lost during the run")
	// ErrInterrupted means ctx was cancelled (Ctrl-C, SIGTERM) before the run finished; the
	// Conclusion holds what was measured, with Result.CutShort set.
	ErrInterrupted = errors.New("run cut short")
	// ErrBadScript means a custom script does not load in Redis (its Lua does not compile, or its
	// keys do not fit the topology).
	ErrBadScript = errors.New("bad custom script")
	// ErrPermission means Redis refused the run's user a command or a key the run needs (a
	// NOPERM reply: an ACL). It is the environment's problem, not a verdict: the message names the
	// permission, and the Conclusion holds what was measured before.
	ErrPermission = errors.New("the Redis user lacks a permission the run needs")
	// ErrRedis means Redis answered a step of the run other than as the run needs: a key prefix
	// already in use, an error reply to loading a script or to reading its figures, a load it
	// refused. Run marks with it every error that matches no other sentinel (see MarkRedis).
	ErrRedis = errors.New("redis failed a step of the run")
)

// MarkRedis returns err as it is when it is nil or matches one of the errors Run documents, else
// err marked as ErrRedis, with err's message. Run and the capacity sweep return their errors
// through it, so that a caller can tell every error apart by its sentinel.
func MarkRedis(err error) error {
	if noPermission(err) && !errors.Is(err, ErrPermission) {
		return fmt.Errorf("%w: %w (%s)", ErrPermission, err, permissionHint)
	}
	for _, known := range []error{ErrLost, ErrInterrupted, ErrBadScript, ErrPermission, ErrRedis, redisenv.ErrUnavailable,
		redisenv.ErrBadConfig, algorithms.ErrUnknownAlgorithm} {
		if err == nil || errors.Is(err, known) {
			return err
		}
	}
	return &redisError{err}
}

// redisError is an error marked as ErrRedis; its message is the error's own.
type redisError struct{ err error }

func (e *redisError) Error() string   { return e.err.Error() }
func (e *redisError) Unwrap() []error { return []error{ErrRedis, e.err} }

// Options configure Run. Scenario is required; the zero value of every other field is a
// documented default.
type Options struct {
	// Scenario is what to run; it must be valid (scenarios.Load returns valid scenarios).
	Scenario *scenarios.Scenario
	// Env is the environment to start for each topology; its Topology is set per topology.
	Env redisenv.Config
	// Repeat runs each algorithm this many times (default 1), interleaved: A B C A B C.
	Repeat int
	// NoReference skips the reference script (a bare INCR + PEXPIRE) that is otherwise measured
	// under the same load in every round, so that results carry relative figures.
	NoReference bool
	// Progress, when set, receives a live view of the current measurement about once a second.
	Progress func(Progress)
	// Done, when set, is called after each measurement with its entry.
	Done func(e *result.Entry, repeat int)
	// Logf, when set, receives one line per notable step (environment chosen, started, stopped).
	Logf func(format string, args ...any)
	// ScenarioFile is recorded in the result; defaults to Scenario.File.
	ScenarioFile string
	// Segment, when set, makes the run one segment of a segmented run (see Segment); Repeat
	// must then be 1.
	Segment *Segment
	// RedisCPUs, when not empty, are the CPUs the redis-servers of each environment are pinned
	// to once it has started (redisenv.Target.PinServers; the CPUs cpus.Apply left to Redis). A
	// server started later (a restart fault's) is not pinned. When they cannot be pinned, the
	// run goes on and Logf says why.
	RedisCPUs []int

	// windows are the windows of every contract of the run (see contractWindows), which Run
	// fills in so that every measurement of a run has the same timeline bin, no wider than the
	// narrowest window (load.BinFor). Measure adds the measured algorithm's own.
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
// up (wrapping redisenv.ErrUnavailable or ErrBadConfig), Redis lost mid-run (ErrLost), a bad
// custom script (ErrBadScript), cancellation (ErrInterrupted), or Redis failing a step otherwise
// (ErrRedis). The Conclusion is never nil and holds what was measured.
func Run(ctx context.Context, o Options) (*Conclusion, error) {
	s := o.Scenario
	if o.Repeat <= 0 {
		o.Repeat = 1
	}
	if o.ScenarioFile == "" {
		o.ScenarioFile = s.File
	}
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
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
		return out, MarkRedis(err)
	}

	entries := s.ResolveAlgorithms()
	algs := make([]algorithms.Algorithm, 0, len(entries)+1)
	if !o.NoReference {
		algs = append(algs, algorithms.Reference())
		res.Reference = algorithms.ReferenceName
	}
	for _, e := range entries {
		a, err := Resolve(s, e)
		if err != nil {
			return finish(err)
		}
		algs = append(algs, a)
	}
	for _, a := range algs {
		if c, err := a.Contract(s.Limit); err == nil { // Measure reports the error
			o.windows = append(o.windows, contractWindows(c)...)
		}
	}

	runID := NewRunID()
	if o.Segment != nil {
		if o.Repeat != 1 {
			return finish(fmt.Errorf("%w: a segmented run measures each algorithm once (repeat 1)", redisenv.ErrBadConfig))
		}
		runID = o.Segment.RunID
		res.Segment = o.Segment.segmentInfo(result.ScenarioHash(res.Scenario))
	}
	var topologies []string
	for _, topo := range s.Topologies {
		topologies = append(topologies, string(topo))
	}
	res.Environment.Topology = strings.Join(topologies, ",")

	for _, topo := range s.Topologies {
		cfg := o.Env
		cfg.Topology = redisenv.Topology(topo)
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
				return finish(fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err()))
			}
			return finish(fmt.Errorf("start %s environment: %w", topo, err))
		}
		report.AddTarget(&res.Environment, tgt.Info)
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
		if serr := tgt.Stop(stopCtx); serr != nil {
			logf("stop %s environment: %v", topo, serr)
		}
		cancel()
		if err != nil {
			return finish(err)
		}
	}
	return finish(nil)
}

// contractWindows returns the windows of c and of the contracts it holds at the same time (Also):
// a window's length, a token bucket's refill period (the time its Limit permits refill in); none
// for NoContract. The timeline's bin is no wider than the narrowest (load.BinFor).
func contractWindows(c algorithms.Contract) []time.Duration {
	var out []time.Duration
	switch c.Kind {
	case algorithms.SlidingWindow, algorithms.FixedWindow, algorithms.FirstHitWindow:
		out = append(out, c.Window)
	case algorithms.TokenBucket:
		out = append(out, c.RefillPer)
	}
	for _, a := range c.Also {
		out = append(out, contractWindows(a)...)
	}
	return out
}

// Resolve returns the algorithm an entry of s names; s, when not nil, locates a custom entry in
// its file for messages.
func Resolve(s *scenarios.Scenario, e scenarios.AlgorithmEntry) (algorithms.Algorithm, error) {
	if e.Custom != nil {
		return customAlgorithmOf(s, e.Custom)
	}
	return algorithms.Lookup(e.Name)
}

// runTopology runs every algorithm on tgt, o.Repeat rounds, and appends one entry per algorithm
// to res (repeats become its Samples).
func runTopology(ctx context.Context, o Options, tgt *redisenv.Target, topo string, algs []algorithms.Algorithm,
	runID string, res *result.Result) error {
	if err := checkCustomScripts(ctx, tgt.Client, algs); err != nil {
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
	for rep := 1; rep <= o.Repeat; rep++ {
		for i, a := range algs {
			e, err := Measure(ctx, o, tgt, topo, a, rep, runID)
			if e != nil {
				// Mark expected and tolerated violations now, so that Done sees the final label.
				judge.Expectations(e, o.Scenario)
				runs[i] = append(runs[i], *e)
				if o.Done != nil {
					done := *e
					o.Done(&done, rep)
				}
			}
			if err != nil {
				return err
			}
			if ctx.Err() != nil {
				return fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err())
			}
		}
	}
	return nil
}

// NewRunID returns a short random id for a run's key prefixes.
func NewRunID() string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Sprintf("%x", time.Now().UnixNano()&0xffffffff)
	}
	return hex.EncodeToString(b[:])
}
