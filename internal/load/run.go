package load

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/wire"
)

// Progress is a live view of a running Run, for a progress line.
type Progress struct {
	// Elapsed since the start, warmup included.
	Elapsed time.Duration
	// Warmup is true while the warmup runs.
	Warmup bool
	// Requests, Admitted and Errors (failed + unknown) so far, warmup included.
	Requests, Admitted, Errors uint64
	// Rate is requests per second since the previous report.
	Rate float64
}

// Counts are the measured part's request counts. Requests = Allowed + Denied + Failed +
// Unknown.
type Counts struct {
	Requests uint64
	Allowed  uint64
	Denied   uint64
	Failed   uint64 // errors known not to have run
	Unknown  uint64 // errors that may have run
	// AllowedPermits sums the cost of the allowed requests.
	AllowedPermits uint64
	// Late counts requests sent more than Plan.LateAfter after their intended time.
	Late uint64
	// Missed counts ticks scheduled in the measured part that were never sent (the generator
	// could not keep up, or was stopped). Open loop only.
	Missed uint64
	// Warmup counts outcomes of the warmup, kept out of everything else.
	Warmup uint64
	// Clamped counts histogram values above Plan.MaxLatency, recorded as the maximum.
	Clamped uint64
	// Dropped counts anything an aggregator discarded (zero unless something is wrong).
	Dropped uint64
	// Narrowed counts admission-log events narrowed to the server's decision time.
	Narrowed uint64
	// ClockMismatch counts server decision times inconsistent with the harness clock (see
	// verify.AdmissionLog).
	ClockMismatch uint64
	// WaitShort counts, in a run whose plan has a Wait, the measured requests whose WAIT came
	// back with fewer replicas than asked (its timeout passed) or with no answer (Outcome.WaitShort).
	WaitShort uint64
}

// Errors returns Failed + Unknown.
func (c Counts) Errors() uint64 { return c.Failed + c.Unknown }

func (c *Counts) add(o Counts) {
	c.Requests += o.Requests
	c.Allowed += o.Allowed
	c.Denied += o.Denied
	c.Failed += o.Failed
	c.Unknown += o.Unknown
	c.AllowedPermits += o.AllowedPermits
	c.Late += o.Late
	c.Missed += o.Missed
	c.Warmup += o.Warmup
	c.Clamped += o.Clamped
	c.Dropped += o.Dropped
	c.Narrowed += o.Narrowed
	c.ClockMismatch += o.ClockMismatch
	c.WaitShort += o.WaitShort
}

// Result is what one Run measured. Figures cover the measured part only (see Plan.Warmup).
type Result struct {
	// Plan is the plan with defaults filled in.
	Plan Plan
	// Start is the wall time of the run's offset 0 (the start of the warmup).
	Start time.Time
	// Duration is the measured part's length: Plan.Duration, or less when the context was
	// canceled first.
	Duration time.Duration
	// Canceled says the context ended the run early; what was measured stays valid.
	Canceled bool
	// ClosedLoop says the run had no schedule.
	ClosedLoop bool
	Counts     Counts
	// Scheduled is the number of ticks the pacer scheduled in the measured part (open loop);
	// in a closed loop it equals Counts.Requests.
	Scheduled uint64
	// Behind says the generator fell behind its schedule: more than BehindLimit (1 %) of the
	// scheduled ticks were missed (never sent) or late (sent more than Plan.LateAfter after
	// their intended time). A behind run's verdict is inconclusive.
	Behind bool
	// OfferedRate is Scheduled / Duration; AchievedRate is Counts.Requests / Duration;
	// Throughput is decisions (allowed + denied) / Duration; all per second.
	OfferedRate, AchievedRate, Throughput float64
	// Subjects and Clients name the indices in outcomes (and in the events of an admission
	// log).
	Subjects, Clients []string
}

// Behind reports whether missed + late ticks exceed BehindLimit of scheduled.
func behind(scheduled, missed, late uint64) bool {
	if scheduled == 0 {
		return missed+late > 0
	}
	return float64(missed+late) > BehindLimit*float64(scheduled)
}

// Run drives lim with the load p describes, on c, and returns what it measured. It returns an
// error (wrapping ErrBadPlan for an invalid plan) only when the run cannot start; a failed
// request is data, counted in the Result.
//
// Canceling ctx stops the run cleanly: no new request is sent, requests in flight finish (they
// run on a context without cancellation, bounded by c's timeouts), and the Result covers what
// was measured, with Canceled set.
//
// Run feeds the outcomes to the aggregators of sinks: each worker shard gets a fresh set (see
// Aggregator), and when the run is over the shards' sets are merged into sinks' own, which then
// hold the whole run, and finished; what they Finish with is added to Result.Counts.
//
// c's retries should be off (MaxRetries -1): a retried request is invisible to the harness.
func Run(ctx context.Context, c redis.UniversalClient, lim algorithms.Limiter, p Plan, sinks Sinks) (*Result, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	p = p.withDefaults()
	r := newRunner(ctx, c, lim, p)
	if _, cluster := c.(*redis.ClusterClient); cluster && p.Wait.Enabled() && p.Mode == ModePipeline {
		return nil, fmt.Errorf("%w: wait: WAIT cannot follow each request in pipeline mode on a cluster (the cluster's pipelines send a WAIT, which has no key, to any master); use plain", ErrBadPlan)
	}
	r.own = ownConns(c, p)
	// A closed client keeps its requests from being sent (redis.ErrClosed): a run on one goes
	// through it, so that its requests fail as they should.
	r.wire = r.own != nil && wire.Supports(r.own) && !errors.Is(r.own.Ping(r.reqCtx).Err(), redis.ErrClosed)
	if r.own != nil && !r.wire {
		openConns(r.reqCtx, r.own, p.Clients)
	}
	if p.Mode == ModeAutoPipeline {
		ap, err := c.AutoPipeline()
		if err != nil {
			return nil, fmt.Errorf("load: autopipeline: %w", err)
		}
		defer ap.Close()
		r.cmd = ap
	}
	// Allocate everything before the clock starts, so the first ticks are not late.
	nShards := min(p.Clients, 4*runtime.GOMAXPROCS(0))
	r.shards = []*shard{{sinks: sinks}}
	for range nShards - 1 {
		r.shards = append(r.shards, &shard{sinks: sinks.fresh()})
	}
	workers := make([]*worker, 0, p.Clients)
	for i := range p.Clients {
		if !r.closed || p.runs(i) {
			workers = append(workers, newWorker(r, i))
		}
	}
	if r.wire {
		openWires(r.reqCtx, workers)
	}
	r.start = waitStart(ctx, p.Start)
	for _, sh := range r.shards {
		sh.sinks.start(r.start)
	}
	p.Peek.attach(r)
	if p.OnStart != nil {
		p.OnStart(r.start)
	}

	finished := make(chan struct{})
	var cancelAt atomic.Int64
	cancelAt.Store(-1)
	var bg sync.WaitGroup
	bg.Go(func() {
		select {
		case <-ctx.Done():
			cancelAt.Store(int64(time.Since(r.start)))
		case <-finished:
		}
	})
	if p.Progress != nil {
		bg.Go(func() { r.progress(finished) })
	}
	if !r.closed && !p.NoKeeper {
		bg.Go(func() { r.keepTime(finished) })
	}
	if p.Settled != nil {
		bg.Go(func() { r.settle(workers, finished) })
	}

	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(w.run)
	}
	wg.Wait()
	p.Peek.detach() // before result merges the shards
	close(finished)
	bg.Wait()

	return r.result(workers, sinks, time.Duration(cancelAt.Load()))
}

// settleEvery is how often Run calls Plan.Settled.
const settleEvery = 100 * time.Millisecond

// settle calls Plan.Settled every settleEvery until finished: with the oldest send among the
// workers' requests in flight, or the time it read first when none is. It reads the clock
// before it reads the workers, and a worker says it is sending (worker.busy) before it reads the
// clock for the send, so a request sent after the call is never sent before the offset given.
func (r *runner) settle(workers []*worker, finished <-chan struct{}) {
	t := time.NewTicker(settleEvery)
	defer t.Stop()
	for {
		select {
		case <-finished:
			return
		case <-t.C:
			before := time.Since(r.start)
			for _, w := range workers {
				before = min(before, time.Duration(w.busy.Load()))
			}
			r.p.Settled(before)
		}
	}
}

// newRunner returns the state of a run of p (with its defaults) on c: its subjects, clients and
// their clock offsets.
func newRunner(ctx context.Context, c redis.UniversalClient, lim algorithms.Limiter, p Plan) *runner {
	r := &runner{
		p:      p,
		c:      c,
		cmd:    c,
		lim:    lim,
		warm:   p.Warmup,
		end:    p.Warmup + p.Duration,
		pick:   NewPicker(p.Keys, p.Seed),
		reqCtx: context.WithoutCancel(ctx),
		done:   ctx.Done(),
	}
	r.subjects, r.clients = p.Names()
	_, r.closed = p.Arrival.(ClosedLoop)
	if tp, ok := p.Arrival.(*TracePacer); ok {
		r.useTrace(tp)
	} else {
		r.skew = make([]time.Duration, p.Clients)
		for i := range r.skew {
			r.skew[i] = p.Skew.Offset(i, p.Clients)
		}
	}
	return r
}

// Names returns the names a run of p gives its subjects and clients, those Result.Subjects and
// Result.Clients will hold (and an Outcome's indices refer to): a trace's own, or the plan's
// keys and "c0", "c1", … for its Clients. An aggregator that names them during the run (a
// streaming verifier) takes them from here.
func (p Plan) Names() (subjects, clients []string) {
	if tp, ok := p.Arrival.(*TracePacer); ok {
		t := tp.Trace()
		return t.Subjects, t.Clients
	}
	clients = make([]string, p.Clients)
	for i := range clients {
		clients[i] = "c" + strconv.Itoa(i)
	}
	return p.Keys.Names(), clients
}

// result sums up the run once its workers are done: canceledAt is the offset the run was
// canceled at (negative when it was not). The shards' aggregators are merged into sinks' own.
func (r *runner) result(workers []*worker, sinks Sinks, canceledAt time.Duration) (*Result, error) {
	p := r.p
	stop := r.end
	res := &Result{Plan: p, Start: r.start, ClosedLoop: r.closed, Subjects: r.subjects, Clients: r.clients}
	if at := canceledAt; at >= 0 && at < stop {
		stop, res.Canceled = at, true
	}
	res.Duration = max(0, stop-r.warm)
	for _, w := range workers {
		res.Counts.add(w.counts)
	}
	if r.closed {
		res.Scheduled = res.Counts.Requests
	} else if stop > r.warm {
		res.Scheduled = p.of(Scheduled(p.Arrival, stop)) - p.of(Scheduled(p.Arrival, r.warm))
		if res.Scheduled > res.Counts.Requests {
			res.Counts.Missed = res.Scheduled - res.Counts.Requests
		}
		res.Behind = behind(res.Scheduled, res.Counts.Missed, res.Counts.Late)
	}
	if s := res.Duration.Seconds(); s > 0 {
		res.OfferedRate = float64(res.Scheduled) / s
		res.AchievedRate = float64(res.Counts.Requests) / s
		res.Throughput = float64(res.Counts.Allowed+res.Counts.Denied) / s
	}
	for _, sh := range r.shards[1:] {
		if err := sinks.merge(sh.sinks); err != nil {
			return nil, fmt.Errorf("load: merge the shards' aggregators: %w", err)
		}
	}
	// What the aggregators dropped (log events that did not fit a run of over six days, say)
	// are dropped outcomes too.
	res.Counts.add(sinks.finish())
	if p.Progress != nil {
		p.Progress(r.snapshot(time.Since(r.start), 0, 0))
	}
	return res, nil
}

// openConns puts n connections of c in its pool, each set up and used once, before a run whose
// workers hold one each (see ownConns), so that no request of the run waits for a connection to
// be dialed and set up. It also spares every request go-redis's check for push notifications
// (RESP3) on a connection that has not been in its pool in the last 5 s, which a new connection
// never has: two recvfrom system calls per request until the worker's first renewal (connRenew)
// without it. Errors are left to the requests to report.
//
// The workers' go-redis Conns share their client's Options but each guards them with a lock of
// its own, and setting up a connection writes to them once (when the server refuses maintenance
// notifications, go-redis turns them off in the Options): the first connection is set up alone,
// so that the others, and the workers' Conns, only read them.
func openConns(ctx context.Context, c *redis.Client, n int) {
	conns := make([]*redis.Conn, n)
	for i := range conns {
		conns[i] = c.Conn()
	}
	_ = conns[0].Ping(ctx).Err()
	const dialers = 16
	var wg sync.WaitGroup
	for d := range min(dialers, n-1) {
		wg.Go(func() {
			for i := 1 + d; i < n; i += dialers {
				_ = conns[i].Ping(ctx).Err()
			}
		})
	}
	wg.Wait()
	for _, cn := range conns {
		_ = cn.Close() // gives the connection back to the pool
	}
}

// runner is the state shared by the workers of one Run.
type runner struct {
	p      Plan
	c      redis.UniversalClient
	cmd    redis.Cmdable // c, or the autopipeliner
	lim    algorithms.Limiter
	closed bool
	// own is c when every worker holds a connection of its own (see ownConns); else nil.
	own *redis.Client
	// wire says the workers send on wire connections of their own (package wire), to own's server.
	wire bool

	start     time.Time
	warm, end time.Duration // offsets from start
	next      atomic.Uint64 // next tick to claim (open loop)

	pick     *Picker
	trace    *TracePacer // the trace replayed, or nil
	subjects []string
	clients  []string
	skew     []time.Duration
	// rowSkew, when the trace's clients' clocks jump, is the offset each row is sent with
	// (trace.Trace.RowSkews); nil otherwise.
	rowSkew []time.Duration

	reqCtx context.Context // requests outlive cancellation of the run
	done   <-chan struct{}
	shards []*shard

	// live counters for Progress, warmup included.
	requests, admitted, errs atomic.Uint64
}

// shard is one set of aggregators shared by a few workers: per-worker HDR histograms would cost
// about 0.5 MB per worker, so workers w, w+S, w+2S, ... share shard w mod S, S = min(Clients,
// 4·GOMAXPROCS), under a mutex that is held for a few hundred nanoseconds per batch. Shard 0
// holds the aggregators Run was given.
type shard struct {
	mu    sync.Mutex
	sinks Sinks
}

func (r *runner) stopped() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

func (r *runner) snapshot(elapsed time.Duration, prevReq uint64, prevAt time.Duration) Progress {
	p := Progress{
		Elapsed:  elapsed,
		Warmup:   elapsed < r.warm,
		Requests: r.requests.Load(),
		Admitted: r.admitted.Load(),
		Errors:   r.errs.Load(),
	}
	if d := (elapsed - prevAt).Seconds(); d > 0 {
		p.Rate = float64(p.Requests-prevReq) / d
	}
	return p
}

func (r *runner) progress(finished <-chan struct{}) {
	t := time.NewTicker(r.p.ProgressEvery)
	defer t.Stop()
	var prevReq uint64
	var prevAt time.Duration
	for {
		select {
		case <-finished:
			return
		case <-t.C:
			s := r.snapshot(time.Since(r.start), prevReq, prevAt)
			prevReq, prevAt = s.Requests, s.Elapsed
			r.p.Progress(s)
		}
	}
}

// waitStart waits until start, or until ctx ends, and returns the run's start: start, or now
// when start is zero.
func waitStart(ctx context.Context, start time.Time) time.Time {
	if start.IsZero() {
		return time.Now()
	}
	if d := time.Until(start); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
	return start
}

// useTrace makes the run replay tp: its subjects, clients and clock offsets (with their jumps)
// are the trace's.
func (r *runner) useTrace(tp *TracePacer) {
	t := tp.Trace()
	r.trace = tp
	r.subjects = t.Subjects
	r.clients = t.Clients
	r.skew = make([]time.Duration, len(t.Clients))
	for i := range r.skew {
		r.skew[i] = t.SkewOf(uint16(i))
	}
	r.rowSkew = t.RowSkews()
}
