package measure

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/clock"
	"github.com/limitbench/limitbench/internal/faults"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// Spec is one measurement: an algorithm on a target under a load, on a key prefix.
type Spec struct {
	// Target is the Redis measured (required); Topology names it in the entry and in messages.
	Target   *redisenv.Target
	Topology string
	// Algorithm is what is measured (required) and Limit its limit.
	Algorithm algorithms.Algorithm
	Limit     algorithms.Limit
	// Prefix goes in front of every key the measurement writes (KeyPrefix); required.
	Prefix string
	// Plan is the load (required). Do sets its Bin, the one load.BinFor gives its Duration and
	// the contract's Windows with Windows below, and its OnOutcome (stages observe outcomes
	// through Stage.Observe).
	Plan load.Plan
	// SpeedOnly says the scenario measures speed only (scenarios.Scenario.SpeedOnly): a
	// measurement that never pressed its contract keeps its verdict.
	SpeedOnly bool
	// Windows are further windows the timeline's bin must be no wider than: a run's other
	// algorithms', so that every measurement of a run has the same bin.
	Windows []time.Duration
	// WholeHistory keeps every admission in memory and verifies them after the load with the
	// whole-history checker, instead of verifying them as they come (see Recording): for a
	// comparison of the two (make bench-soak).
	WholeHistory bool
	// Logf, when set, receives the warnings that have no entry to go into (the measurement
	// ended before it measured anything).
	Logf func(format string, args ...any)
}

// Measurement is one measurement under way and, once Do returns, what it measured. Stages read
// and adjust its fields at their steps (see the package doc for which step sets which).
type Measurement struct {
	// Spec is the measurement as Do was given it.
	Spec Spec
	// Plan is the load as it runs: Spec.Plan with its Bin; a Setup stage may give it a Share,
	// a Meet stage a Start.
	Plan load.Plan
	// Client are the options of the load's client; a Setup stage may give it a Dialer.
	Client redisenv.ClientOptions
	// OneClock, set by a Setup stage, puts every decision time on the server's clock, whatever
	// the algorithm's clock and even when the server shares the harness's: the histories of
	// generators with clocks of their own merge only there (verify.AdmissionLog.OneClock).
	OneClock bool
	// WholeHistory, set by Spec.WholeHistory or a Setup stage that reads the measurement's
	// whole log (hunt trials, a fault schedule's windows, a segment's partial result), makes
	// the Recording keep every admission and verify after the load, with no stream (see
	// Recording). OneClock implies it: the stream reads decision times on the log's clock.
	WholeHistory bool
	// Limiter is the prepared algorithm and Contract its contract (step 4); a Begin stage may
	// wrap the Limiter.
	Limiter  algorithms.Limiter
	Contract algorithms.Contract
	// Clock is the server's clock offset with its error, the drift allowance included (step 5);
	// nil when the server reads the harness's clock. A Begin stage may adjust it.
	Clock *clock.Offset
	// Recording is the aggregators the load feeds and Sinks how it feeds them (step 5); a Begin
	// stage may wrap the Sinks.
	Recording *Recording
	Sinks     load.Sinks
	// Watch is the node watch (step 2).
	Watch *faults.Watcher
	// served, on Sentinel, is when the load last read a reply from each master (step 8).
	served *served
	// Result is what the load did (step 8), Verification what the verifier was given (step 10)
	// and Entry the measurement's result entry (step 11); nil until then.
	Result       *load.Result
	Verification verify.Measurement
	Entry        *result.Entry

	stages []Stage
	guard  *faults.Guard
}

// Do runs one measurement as the package doc specifies, step by step, with stages' actions at
// their steps, and returns it. The Measurement is never nil; its Entry is set when something
// was measured, even with an error. Every error matches one of the package's sentinels (Mark).
func Do(ctx context.Context, spec Spec, stages ...Stage) (m *Measurement, err error) {
	m = &Measurement{Spec: spec, Plan: spec.Plan, stages: stages, Client: redisenv.ClientOptions{PoolSize: spec.Plan.Clients + 2},
		WholeHistory: spec.WholeHistory}
	clean := context.WithoutCancel(ctx) // what must be done even when ctx ends
	defer func() { err = Mark(err) }()
	// 1. Claim the key prefix.
	if err := m.claim(ctx); err != nil {
		return m, err
	}
	// 14. Release, whatever happens from here on.
	defer m.release(clean)
	// 2. Watch every node.
	m.Watch = faults.WatchTarget(ctx, spec.Target, faults.WatchOptions{})
	// 3. Set up; 4. prepare the limiter; 5. measure the clock; 6. begin; 7. meet.
	for _, step := range []func(context.Context) error{m.setup, m.prepare, m.clock, m.begin, m.meet} {
		if err := step(ctx); err != nil {
			return m, err
		}
	}
	// 8. Run the load; 9. end it.
	res, err := m.load(ctx)
	for _, s := range m.stages {
		if s.End != nil {
			s.End(ctx, m, err)
		}
	}
	if err != nil {
		return m, fmt.Errorf("run %s: %w", m.name(), err)
	}
	m.Result = res
	// 10. Verify; 11. report.
	m.verify()
	m.report()
	// 12. Check that Redis was not lost; 13. finish.
	statCtx, cancel := context.WithTimeout(clean, 10*time.Second)
	defer cancel()
	if err := m.check(statCtx); err != nil {
		return m, err
	}
	finishCtx, cancelFinish := context.WithTimeout(clean, FinishTimeout)
	defer cancelFinish()
	if err := m.each(ctx, func(s Stage) error { return callEntry(s.Finish, finishCtx, m) }); err != nil {
		return m, err
	}
	if ctx.Err() != nil {
		return m, fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err())
	}
	return m, nil
}

// FinishTimeout bounds the stages' Finish together (step 13): reading the server's cost scans
// the measurement's keys and reads MEMORY USAGE of up to MemorySample of them per master, one
// round trip each, which on a loaded machine takes far longer than the check of step 12.
const FinishTimeout = time.Minute

// setup is step 3: the stages' Setup.
func (m *Measurement) setup(ctx context.Context) error {
	return m.each(ctx, func(s Stage) error { return call(s.Setup, ctx, m) })
}

// begin is step 6: the stages' Begin, then the node watch's first poll of every node (a node
// that does not answer it within 2 s is an event of its own).
func (m *Measurement) begin(ctx context.Context) error {
	if err := m.each(ctx, func(s Stage) error { return call(s.Begin, ctx, m) }); err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_ = m.Watch.WaitPolled(pctx)
	return nil
}

// meet is step 7: the stages' Meet.
func (m *Measurement) meet(ctx context.Context) error {
	return m.each(ctx, func(s Stage) error { return call(s.Meet, ctx, m) })
}

// name is the measured algorithm's name.
func (m *Measurement) name() string { return m.Spec.Algorithm.Describe().Name }

// each runs fn for every stage in order and stops at the first error, which it returns marked
// (lostOr) and prefixed with the algorithm's name.
func (m *Measurement) each(ctx context.Context, fn func(Stage) error) error {
	for _, s := range m.stages {
		if err := fn(s); err != nil {
			return lostOr(ctx, m.Spec.Target, fmt.Errorf("%s: %w", m.name(), err))
		}
	}
	return nil
}

// call runs a stage's action when it has one.
func call(fn func(context.Context, *Measurement) error, ctx context.Context, m *Measurement) error {
	if fn == nil {
		return nil
	}
	return fn(ctx, m)
}

// callEntry runs a stage's Finish when it has one.
func callEntry(fn func(context.Context, *Measurement, *result.Entry) error, ctx context.Context, m *Measurement) error {
	if fn == nil {
		return nil
	}
	return fn(ctx, m, m.Entry)
}

// sharer returns the stage that shares the prefix with other generators, or nil.
func (m *Measurement) sharer() func(context.Context, *Measurement) bool {
	for _, s := range m.stages {
		if s.Leave != nil {
			return s.Leave
		}
	}
	return nil
}

// claim is step 1: the prefix must hold no key, unless a stage shares it.
func (m *Measurement) claim(ctx context.Context) error {
	if m.sharer() != nil {
		return nil
	}
	if err := m.Spec.Target.ClaimPrefix(ctx, m.Spec.Prefix); err != nil {
		return lostOr(ctx, m.Spec.Target, fmt.Errorf("%s: %w", m.name(), err))
	}
	return nil
}

// prepare is step 4: the algorithm is prepared on the prefix, in the context the stages give.
func (m *Measurement) prepare(ctx context.Context) error {
	pctx := ctx
	for _, s := range m.stages {
		if s.PrepareContext != nil {
			pctx = s.PrepareContext(pctx)
		}
	}
	a, name := m.Spec.Algorithm, m.name()
	lim, err := a.Prepare(pctx, m.Spec.Target.Client, m.Spec.Limit, m.Spec.Prefix)
	if err != nil {
		ca, custom := a.(*customAlgorithm)
		var rerr redis.Error
		switch {
		case custom && errors.As(err, &rerr) && !noPermission(err):
			return ca.badScript(err)
		case custom && errors.Is(err, algorithms.ErrBadCustom):
			return fmt.Errorf("%w: %w", ErrBadScript, err)
		}
		return lostOr(ctx, m.Spec.Target, fmt.Errorf("prepare %s: %w", name, err))
	}
	m.Limiter = lim
	if m.Contract, err = a.Contract(m.Spec.Limit); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	// Bins fine enough to show a burst, as fine for every algorithm of a run (see BinFor).
	m.Plan.Bin = load.BinFor(m.Plan.Duration, append(Windows(m.Contract), m.Spec.Windows...)...)
	return nil
}

// clockDrift bounds how fast an external server's clock and the harness's drift apart: 100 ppm,
// more than an undisciplined crystal oscillator's typical 20 to 50 ppm, and far more than NTP
// leaves.
const clockDrift = 100e-6

// Drift returns the allowance for the server's clock and the harness's drifting apart after the
// offset was measured, over a measurement whose load spans span: 100 ppm of span plus a minute.
// Every measurement adds it to its measured offset's error; it is the one rule for it.
func Drift(span time.Duration) time.Duration {
	return time.Duration(float64(span+time.Minute) * clockDrift)
}

// clock is step 5: the server's clock offset is measured unless the server reads the harness's
// clock, and the aggregators are made on the clock the decision times will be on.
func (m *Measurement) clock(ctx context.Context) error {
	tgt := m.Spec.Target
	shared := tgt.Info.SharedClock && !m.OneClock
	if !shared {
		off, err := clock.Measure(ctx, tgt.Client, 16)
		if err != nil {
			return lostOr(ctx, tgt, fmt.Errorf("measure the server's clock offset: %w", err))
		}
		// The offset is measured once; allow for the clocks drifting apart until the load ends.
		off.Err += Drift(m.Plan.Warmup + m.Plan.Duration)
		m.Clock = &off
	}
	m.Recording = newRecording(m.Plan, shared, m.Clock, m.Spec.Algorithm.Describe().Clock == algorithms.ClockClient, m.streamSettings())
	if m.OneClock {
		m.Recording.oneClock()
	}
	m.Sinks = m.Recording.Sinks()
	return nil
}

// streamSettings returns what the Recording's stream verifies (nil when the measurement keeps
// its whole history): the contract, the reference model, whether the prefix is fresh (a custom
// script's empty key could hold state from before), the bin widths of the timeline's limit, and
// the load's timeouts as the longest a request may be in flight.
func (m *Measurement) streamSettings() *verify.StreamLogSettings {
	if m.WholeHistory || m.OneClock {
		return nil
	}
	a := m.Spec.Algorithm
	ca, custom := a.(*customAlgorithm)
	subjects, clients := m.Plan.Names()
	return &verify.StreamLogSettings{
		Measurement: verify.Measurement{Contract: m.Contract, Model: a.Model(m.Spec.Limit),
			Fresh: !custom || !ca.HasEmptyKey(), SpeedOnly: m.Spec.SpeedOnly},
		Warmup: m.Plan.Warmup, Subjects: subjects, Clients: clients,
		Stream:  verify.StreamSettings{BinWidths: []time.Duration{time.Duration(binSpan(m.Contract, m.Plan.Bin)) * m.Plan.Bin}},
		Horizon: inFlight(m.Client),
	}
}

// inFlight returns the longest a request of a client with options o may take from its send to
// its outcome: a wait for a free connection, a dial, a write and a read, each at most its
// timeout (go-redis's defaults where o leaves them zero: 5 s to dial, 3 s to write and to read,
// a read timeout and a second for a connection). Retries are off (redisenv.Target).
func inFlight(o redisenv.ClientOptions) time.Duration {
	or := func(d, def time.Duration) time.Duration {
		if d > 0 {
			return d
		}
		return def
	}
	read := or(o.ReadTimeout, 3*time.Second)
	return or(o.PoolTimeout, read+time.Second) + or(o.DialTimeout, 5*time.Second) + or(o.WriteTimeout, 3*time.Second) + read
}

// load is step 8: the load runs with a guard that stops it when Redis is lost or refuses a
// permission, the stages seeing every outcome first.
func (m *Measurement) load(ctx context.Context) (*load.Result, error) {
	loadCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	m.guard = faults.NewGuard(faults.GuardOptions{}, stop)
	observers := slices.DeleteFunc(slices.Clone(m.stages), func(s Stage) bool { return s.Observe == nil })
	p := m.Plan
	p.OnOutcome = func(o *load.Outcome) {
		excused := false
		for _, s := range observers {
			excused = s.Observe(o) || excused
		}
		if !excused {
			m.guard.Observe(o)
		}
		if o.Err != nil && load.Unreachable(load.ErrorKindOf(o.Err)) {
			m.Watch.Poke() // date a restart closely
		}
	}
	client := m.Spec.Target.NewClient(m.Client)
	if m.Spec.Target.Info.Topology == redisenv.TopologySentinel {
		// Which master answered the load, and until when: what ends a promotion's cut (served).
		// The hook sees every connection: the client dials none before its first command
		// (m.Client.MinIdleConns is 0), and none is sent before this.
		m.served = newServed(m.Spec.Target.RealAddr)
		client.AddHook(m.served)
	}
	// Closed as soon as the load ends, so that its connections are not counted in what the
	// measurement costs the server.
	defer client.Close()
	// The stages start with the load's own clock, once its connections are open: a fault
	// scheduled at 1s acts 1 s into the measured part however long they took to open.
	p.OnStart = func(start time.Time) {
		for _, s := range m.stages {
			if s.Start != nil {
				s.Start(ctx, m, start.Add(p.Warmup))
			}
		}
	}
	if st := m.Recording.Stream; st != nil {
		// The stream verifies up to the oldest request in flight, not the longest one may take.
		p.Settled = st.Advance
	}
	return load.Run(loadCtx, client, m.Limiter, p, m.Sinks)
}

// verify is step 10: what the verifier is given, the node watch's events among it.
func (m *Measurement) verify() {
	events := m.Watch.Stop()
	a := m.Spec.Algorithm
	vm := m.Recording.Verification(m.Result, m.Contract, a.Model(m.Spec.Limit))
	vm.SpeedOnly = m.Spec.SpeedOnly
	// The prefix was claimed empty before the warmup, and every key of the algorithm is under
	// it, except a custom script's empty key, which could hold state from before.
	ca, custom := a.(*customAlgorithm)
	vm.Fresh = !custom || !ca.HasEmptyKey()
	vm.Disruptions = m.Recording.disruptions(events, m.Result, m.served)
	for _, s := range m.stages {
		if s.Verify != nil {
			s.Verify(m, &vm)
		}
	}
	if gerr := m.guard.Err(); gerr != nil {
		vm.Warnings.StopReason = "Redis was lost"
		if errors.Is(gerr, faults.ErrNoPermission) {
			vm.Warnings.StopReason = "Redis refused a permission the run needs"
		}
	}
	m.Verification = vm
}

// report is step 11: the entry, with what the stages add to it.
func (m *Measurement) report() {
	_, custom := m.Spec.Algorithm.(*customAlgorithm)
	e := m.Recording.Entry(m.name(), m.Spec.Topology, m.Result, m.Verification, custom, nil)
	e = withCustomNotes(e, m.Limiter, m.Contract, m.Spec.Limit)
	e.Call = string(algorithms.CallEvalSha)
	w := m.Watch.Summary(m.Result.Start.Add(m.Plan.Warmup))
	e.Watch = &w
	m.Entry = &e
	for _, s := range m.stages {
		if s.Report != nil {
			s.Report(m, m.Entry)
		}
	}
}

// check is step 12: a load the guard stopped, or a Redis that no longer answers, ends the
// measurement with ErrPermission or ErrLost.
func (m *Measurement) check(ctx context.Context) error {
	name, topo := m.name(), m.Spec.Topology
	gerr := m.guard.Err()
	switch {
	case gerr != nil && errors.Is(gerr, faults.ErrNoPermission):
		return fmt.Errorf("%w: %s on %s: %w (%s)", ErrPermission, name, topo, gerr, permissionHint)
	case gerr != nil:
		// The load was stopped: even if Redis answers again by now, the measurement is cut short.
		return fmt.Errorf("%w: during %s on %s: %w", ErrLost, name, topo, gerr)
	}
	if err := alive(ctx, m.Spec.Target); err != nil {
		return fmt.Errorf("%w: after %s on %s: %w", ErrLost, name, topo, err)
	}
	return nil
}

// release is step 14: the stages undo what they did, last first, and the keys under the prefix
// are removed when they are this measurement's (claimed, or shared and this generator is the
// last to leave); a key that could not be removed from an external Redis is a warning.
func (m *Measurement) release(ctx context.Context) {
	if m.Watch != nil {
		m.Watch.Stop()
	}
	if m.Recording != nil {
		_ = m.Recording.Close() // temporary files only
	}
	for _, s := range slices.Backward(m.stages) {
		if s.Release != nil {
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			s.Release(rctx, m)
			cancel()
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if leave := m.sharer(); leave != nil && !leave(cctx, m) {
		return
	}
	if w := cleanup(cctx, m.Spec.Target, m.Spec.Prefix); w != nil {
		m.Warn(*w)
	}
}

// Warn records w in the entry, or, when nothing was measured, says it through Spec.Logf.
func (m *Measurement) Warn(w result.Warning) {
	if m.Entry != nil {
		m.Entry.Warnings = append(m.Entry.Warnings, w)
		return
	}
	if m.Spec.Logf != nil {
		m.Spec.Logf("warning: %s on %s: %s", m.name(), m.Spec.Topology, w.Message)
	}
}
