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
)

// ErrBadPlan means a Plan is invalid; Plan.Validate wraps every problem with it.
var ErrBadPlan = errors.New("invalid load plan")

// Mode is how workers send requests.
type Mode string

// Client modes.
const (
	// ModePlain sends one request per round trip.
	ModePlain Mode = "plain"
	// ModePipeline sends up to PipelineDepth requests per round trip: open loop, a worker
	// sends its tick when it is due together with every further tick already due (so at low
	// rates batches are small and at saturation they are full); closed loop, every batch is
	// full. Each request keeps its own intended time.
	ModePipeline Mode = "pipeline"
	// ModeAutoPipeline sends through go-redis's blocking AutoPipeline, which batches the
	// concurrent requests of all workers into pipelines.
	ModeAutoPipeline Mode = "autopipeline"
)

// Defaults of Plan's zero fields.
const (
	DefaultPipelineDepth = 16
	DefaultLateAfter     = 100 * time.Millisecond
	DefaultBin           = time.Second
	DefaultProgressEvery = time.Second
	// BehindLimit is the share of scheduled ticks that may be missed or late before a run is
	// marked behind schedule.
	BehindLimit = 0.01
)

// Plan is one load: when requests are due, how they are sent, to which subjects, from which
// clients. Zero fields take the documented defaults; Validate reports every problem at once.
type Plan struct {
	// Arrival is the schedule: a Pacer (Constant, Ramp, Steps, Spike, NewProfile) whose rate is
	// the total across all clients, or ClosedLoop{}. Required.
	Arrival Pacer
	// Duration is the measured part of the run (> 0).
	Duration time.Duration
	// Warmup runs before the measured part, on the same schedule (the pacer's time 0 is the
	// start of the warmup). Its requests are sent and their outcomes measured, but they are
	// kept out of every figure of the Result (histograms, timeline, admission log, counts
	// other than Counts.Warmup): they only put the limiter into a steady state. The verifier
	// therefore checks the measured part alone; dropping admissions can hide a violation
	// that straddles the boundary but never invent one.
	Warmup time.Duration
	// Clients is the number of logical clients and of worker goroutines (1 to 65535). Open
	// loop, tick n is sent as client n mod Clients by whichever worker is free; closed loop,
	// worker w is client w. The client's connection pool should hold at least Clients
	// connections (PoolSize): then, in plain and pipeline mode on a single server, each worker
	// holds a connection of its own (see ownConns); with fewer, requests queue for a
	// connection inside go-redis.
	Clients int
	// Mode is plain (default), pipeline or autopipeline.
	Mode Mode
	// PipelineDepth is, in pipeline mode, the most requests per round trip (default 16).
	PipelineDepth int
	// Keys chooses the subject of each request.
	Keys Keys
	// Seed makes the sequence of (subject, client) the same on every run of the same plan.
	Seed uint64
	// Skew offsets each client's clock (Request.ClientTime).
	Skew Skew
	// Cost is the permits asked for by each request (default 1, at most 65535).
	Cost int64
	// LateAfter is how far behind its intended time a tick may be sent before it counts as
	// late (default 100 ms: scheduler jitter of a loaded machine, tens of milliseconds, is
	// visible in the latency histograms but does not change the offered load; a stall long
	// enough to bunch a window's worth of requests does).
	LateAfter time.Duration
	// MaxLatency is the largest latency the histograms track; larger values are recorded as
	// MaxLatency and counted in Counts.Clamped (default DefaultMaxLatency).
	MaxLatency time.Duration
	// Bin is the width of a timeline bin (default 1 s).
	Bin time.Duration
	// NoKeeper turns the timekeeper off (see keeper.go): workers' timers then fire with the Go
	// runtime's resolution, up to a millisecond late. For measuring what it does.
	NoKeeper bool
	// Progress, when set, is called every ProgressEvery (default 1 s) from one goroutine, and
	// once more at the end.
	Progress      func(Progress)
	ProgressEvery time.Duration
	// OnOutcome, when set, is called with every outcome, warmup included, from the worker
	// goroutines concurrently. The pointer is valid only during the call.
	OnOutcome func(*Outcome)
}

func (p Plan) withDefaults() Plan {
	if p.Mode == "" {
		p.Mode = ModePlain
	}
	if p.PipelineDepth == 0 {
		p.PipelineDepth = DefaultPipelineDepth
	}
	if p.Mode != ModePipeline {
		p.PipelineDepth = 1
	}
	if p.Cost == 0 {
		p.Cost = 1
	}
	if p.LateAfter == 0 {
		p.LateAfter = DefaultLateAfter
	}
	if p.MaxLatency == 0 {
		p.MaxLatency = DefaultMaxLatency
	}
	if p.Bin == 0 {
		p.Bin = DefaultBin
	}
	if p.ProgressEvery == 0 {
		p.ProgressEvery = DefaultProgressEvery
	}
	p.Keys = p.Keys.withDefaults()
	return p
}

// Validate reports every problem with p at once, each wrapped with ErrBadPlan.
func (p Plan) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrBadPlan}, args...)...))
	}
	if p.Arrival == nil {
		bad("arrival is required (a pacer, or ClosedLoop{})")
	} else if v, ok := p.Arrival.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%w: arrival: %w", ErrBadPlan, err))
		}
	}
	if p.Duration <= 0 {
		bad("duration must be > 0, got %s", p.Duration)
	}
	if p.Warmup < 0 {
		bad("warmup must be >= 0, got %s", p.Warmup)
	}
	if p.Clients < 1 || p.Clients > 65535 {
		bad("clients must be in [1, 65535], got %d", p.Clients)
	}
	switch p.Mode {
	case "", ModePlain, ModePipeline, ModeAutoPipeline:
	default:
		bad("mode %q (want plain, pipeline or autopipeline)", p.Mode)
	}
	if p.PipelineDepth < 0 || p.PipelineDepth > 100_000 {
		bad("pipeline depth must be in [1, 100000], got %d", p.PipelineDepth)
	}
	errs = p.Keys.validate(errs)
	if p.Cost < 0 || p.Cost > 65535 {
		bad("cost must be in [1, 65535], got %d", p.Cost)
	}
	if p.LateAfter < 0 {
		bad("late_after must be >= 0, got %s", p.LateAfter)
	}
	if p.MaxLatency < 0 {
		bad("max latency must be >= 0, got %s", p.MaxLatency)
	}
	if p.Bin < 0 {
		bad("bin must be >= 0, got %s", p.Bin)
	}
	if p.ProgressEvery < 0 {
		bad("progress interval must be >= 0, got %s", p.ProgressEvery)
	}
	return errors.Join(errs...)
}

// endGrace is how long after the end a tick due before it may still be sent.
const endGrace = 10 * time.Millisecond

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
	r := &runner{
		p:        p,
		c:        c,
		cmd:      c,
		lim:      lim,
		warm:     p.Warmup,
		end:      p.Warmup + p.Duration,
		pick:     NewPicker(p.Keys, p.Seed),
		subjects: p.Keys.Names(),
		reqCtx:   context.WithoutCancel(ctx),
		done:     ctx.Done(),
	}
	_, r.closed = p.Arrival.(ClosedLoop)
	r.clients = make([]string, p.Clients)
	r.skew = make([]time.Duration, p.Clients)
	for i := range r.clients {
		r.clients[i] = "c" + strconv.Itoa(i)
		r.skew[i] = p.Skew.Offset(i, p.Clients)
	}
	r.own = ownConns(c, p)
	if r.own != nil {
		// The workers' go-redis Conns share their client's Options but each guards them with a
		// lock of its own, and setting up a connection writes to them once (when the server
		// refuses maintenance notifications, go-redis turns them off in the Options): set up
		// one connection here first, so that the workers' Conns only read them. Its error, if
		// any, is the first request's to report.
		_ = r.own.Ping(r.reqCtx).Err()
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
	workers := make([]*worker, p.Clients)
	for i := range workers {
		workers[i] = newWorker(r, i)
	}
	r.start = time.Now()
	for _, sh := range r.shards {
		sh.sinks.start(r.start)
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

	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(w.run)
	}
	wg.Wait()
	close(finished)
	bg.Wait()

	stop := r.end
	res := &Result{Plan: p, Start: r.start, ClosedLoop: r.closed, Subjects: r.subjects, Clients: r.clients}
	if at := time.Duration(cancelAt.Load()); at >= 0 && at < stop {
		stop, res.Canceled = at, true
	}
	res.Duration = max(0, stop-r.warm)
	for _, w := range workers {
		res.Counts.add(w.counts)
	}
	if r.closed {
		res.Scheduled = res.Counts.Requests
	} else if stop > r.warm {
		res.Scheduled = Scheduled(p.Arrival, stop) - Scheduled(p.Arrival, r.warm)
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

// runner is the state shared by the workers of one Run.
type runner struct {
	p      Plan
	c      redis.UniversalClient
	cmd    redis.Cmdable // c, or the autopipeliner
	lim    algorithms.Limiter
	closed bool
	// own is c when every worker holds a connection of its own (see ownConns); else nil.
	own *redis.Client

	start     time.Time
	warm, end time.Duration // offsets from start
	next      atomic.Uint64 // next tick to claim (open loop)

	pick     *Picker
	subjects []string
	clients  []string
	skew     []time.Duration

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

// worker sends requests for one client (closed loop) or for whichever client the next tick
// names (open loop). Its counts are its own; its aggregators are its shard's.
type worker struct {
	r      *runner
	id     int
	sh     *shard
	depth  int
	counts Counts
	timer  *time.Timer
	outs   []Outcome
	pends  []algorithms.Pending

	// cmd takes the worker's plain requests: the runner's cmd, or conn. pipe, in pipeline mode,
	// is a pipeline on c or on conn; nil otherwise.
	cmd  redis.Cmdable
	pipe redis.Pipeliner
	// conn is the worker's own connection when the runner's own is set, taken at run offset
	// connAt; nil otherwise.
	conn   *redis.Conn
	connAt time.Duration
}

func newWorker(r *runner, id int) *worker {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &worker{
		r:     r,
		id:    id,
		sh:    r.shards[id%len(r.shards)],
		depth: r.p.PipelineDepth,
		timer: t,
		outs:  make([]Outcome, r.p.PipelineDepth),
		pends: make([]algorithms.Pending, r.p.PipelineDepth),
	}
}

func (w *worker) run() {
	w.cmd = w.r.cmd
	switch {
	case w.r.own != nil:
		w.takeConn(time.Since(w.r.start))
		// Closing a go-redis Conn only gives its connection back to the pool (or, when it
		// failed, removes it from the pool); it has no error worth reporting.
		defer func() { _ = w.conn.Close() }()
	case w.r.p.Mode == ModePipeline:
		w.pipe = w.r.c.Pipeline()
	}
	if w.r.closed {
		w.closedLoop()
	} else {
		w.openLoop()
	}
}

// ownConns returns c as a *redis.Client when each worker of p should hold one connection of c's
// pool for the run, and nil when workers should take a connection from the pool for every
// request (or batch) as go-redis does by default.
//
// A connection of its own spares each request go-redis's pool work: a health check on every
// Get (a recvfrom system call with MSG_PEEK, and a deadline reset), the pool's turn semaphore
// and its bookkeeping. In BenchmarkLoadgen's closed loop of 32 clients at pipeline depth 1,
// where the generator's CPU time per request is what separates its throughput from
// redis-benchmark's, that took the generator from 4.1 to 3.2 system calls per request
// (counted with perf) and about a tenth off its CPU time per request. Outcomes are unchanged:
// each request is still sent, timed, decoded and recorded as before.
//
// It applies to plain and pipeline mode against a single server (a *redis.Client; a cluster
// client has one pool per node, and autopipeline batches the requests of all workers), when
// the pool holds a connection for every worker (PoolSize and MaxActiveConns at least
// p.Clients): with fewer, held connections would starve the other workers, where the pool
// lets them queue.
func ownConns(c redis.UniversalClient, p Plan) *redis.Client {
	if p.Mode != "" && p.Mode != ModePlain && p.Mode != ModePipeline {
		return nil
	}
	rc, ok := c.(*redis.Client)
	if !ok || rc == nil {
		return nil
	}
	o := rc.Options()
	if o.PoolSize < p.Clients || (o.MaxActiveConns > 0 && o.MaxActiveConns < p.Clients) {
		return nil
	}
	return rc
}

// connRenew is how long a worker uses its own connection before it gives it back to the pool
// and takes one again. go-redis peeks at the socket for push notifications before every
// command on a connection that has not been back in its pool for 5 s (a system call, like the
// pool's health check); renewing every second keeps that peek away, and costs one health
// check per worker per second. Renewing also lets the pool's health check find a connection
// the server closed while it sat idle (an open loop at a low rate), before a request is lost
// on it.
const connRenew = time.Second

// takeConn gives the worker a connection of its own from the runner's own client (the pool
// lends it at the first request), and a pipeline on it in pipeline mode. at is the run offset
// now.
func (w *worker) takeConn(at time.Duration) {
	w.conn = w.r.own.Conn()
	w.connAt = at
	w.cmd = w.conn
	if w.r.p.Mode == ModePipeline {
		w.pipe = w.conn.Pipeline()
	}
}

// renewConn gives the worker's own connection back to the pool and takes one again. at is the
// run offset now.
func (w *worker) renewConn(at time.Duration) {
	_ = w.conn.Close() // see run
	w.takeConn(at)
}

// waitUntil sleeps until offset at; false when the run was canceled meanwhile.
func (w *worker) waitUntil(at time.Duration) bool {
	d := at - time.Since(w.r.start)
	if d <= 0 {
		return !w.r.stopped()
	}
	w.timer.Reset(d)
	select {
	case <-w.timer.C:
		return true
	case <-w.r.done:
		w.timer.Stop()
		return false
	}
}

// prepare fills the scheduling fields of o for tick n.
func (w *worker) prepare(o *Outcome, n uint64, intended time.Duration) {
	r := w.r
	*o = Outcome{
		Tick:     n,
		Subject:  r.pick.Pick(n),
		Client:   uint16(n % uint64(len(r.clients))),
		Cost:     uint16(r.p.Cost),
		Intended: intended,
	}
}

// request builds the Request of o, sent at now.
func (w *worker) request(o *Outcome, now time.Time) algorithms.Request {
	r := w.r
	return algorithms.Request{
		Subject:    r.subjects[o.Subject],
		Client:     r.clients[o.Client],
		Cost:       r.p.Cost,
		ClientTime: now.Add(r.skew[o.Client]),
	}
}

// send sends the prepared outcomes outs on the worker's cmd (one request) or pipe (a batch), and
// records them. now, read just before, is their send time.
//
// A worker with its own connection renews it (renewConn) before sending when it has held it
// for connRenew, and after a request that failed: go-redis marks a held connection bad after
// a network error or a timeout and then fails every later command on it, where the pool would
// have replaced it.
func (w *worker) send(outs []Outcome, closed bool, now time.Time) {
	r := w.r
	sent := now.Sub(r.start)
	if w.conn != nil && sent-w.connAt >= connRenew {
		w.renewConn(sent)
	}
	pipe := w.pipe
	if pipe == nil {
		o := &outs[0]
		o.Sent = sent
		if closed {
			o.Intended = sent
		}
		d, err := r.lim.Do(r.reqCtx, w.cmd, w.request(o, now))()
		o.Received = time.Since(r.start)
		o.Decision, o.Err, o.Class = d, err, Classify(err)
	} else {
		for i := range outs {
			o := &outs[i]
			o.Sent = sent
			if closed {
				o.Intended = sent
			}
			w.pends[i] = r.lim.Do(r.reqCtx, pipe, w.request(o, now))
		}
		_, _ = pipe.Exec(r.reqCtx) // every command carries its own error
		recv := time.Since(r.start)
		for i := range outs {
			o := &outs[i]
			d, err := w.pends[i]()
			w.pends[i] = nil
			o.Received = recv
			o.Decision, o.Err, o.Class = d, err, Classify(err)
		}
	}
	w.record(outs)
	if w.conn != nil {
		for i := range outs {
			if outs[i].Err != nil {
				w.renewConn(outs[i].Received)
				break
			}
		}
	}
}

// record counts outs and hands the measured ones to the aggregators.
func (w *worker) record(outs []Outcome) {
	r := w.r
	var admitted, errs uint64
	measured := 0
	for i := range outs {
		o := &outs[i]
		if r.p.OnOutcome != nil {
			r.p.OnOutcome(o)
		}
		switch o.Class {
		case ClassOK:
			if o.Decision.Allowed {
				admitted++
			}
		default:
			errs++
		}
		if o.Intended < r.warm {
			w.counts.Warmup++
			continue
		}
		measured++
		c := &w.counts
		c.Requests++
		switch o.Class {
		case ClassOK:
			if o.Decision.Allowed {
				c.Allowed++
				c.AllowedPermits += uint64(o.Cost)
			} else {
				c.Denied++
			}
		case ClassFailed:
			c.Failed++
		default:
			c.Unknown++
		}
		if o.Sent-o.Intended > r.p.LateAfter {
			c.Late++
		}
	}
	r.requests.Add(uint64(len(outs)))
	if admitted > 0 {
		r.admitted.Add(admitted)
	}
	if errs > 0 {
		r.errs.Add(errs)
	}
	sh := w.sh
	if sh.sinks.empty() {
		return
	}
	sh.mu.Lock()
	for i := range outs {
		o := &outs[i]
		aggs := sh.sinks.Measured
		if o.Intended < r.warm {
			aggs = sh.sinks.Warmup
		}
		for _, a := range aggs {
			a.Add(o)
		}
	}
	sh.mu.Unlock()
}

// openLoop claims ticks from the global schedule until the schedule ends, the run's end
// passes, or the run is canceled. A tick is claimed only by a free worker, so in-flight
// requests never exceed Clients × depth.
func (w *worker) openLoop() {
	r := w.r
	for {
		n := r.next.Add(1) - 1
		at, ok := r.p.Arrival.At(n)
		if !ok || at >= r.end || !w.waitUntil(at) {
			return
		}
		now := time.Now()
		elapsed := now.Sub(r.start)
		if elapsed >= r.end+min(r.p.LateAfter, endGrace) {
			// So far behind that the run is over: this tick is missed, not sent. (A tick due
			// before the end is still sent up to endGrace after it.)
			return
		}
		w.prepare(&w.outs[0], n, at)
		k := 1
		if w.pipe != nil {
			// Take every further tick that is already due, up to the depth.
			for k < w.depth {
				m := r.next.Load()
				at2, ok := r.p.Arrival.At(m)
				if !ok || at2 > elapsed || at2 >= r.end {
					break
				}
				if r.next.CompareAndSwap(m, m+1) {
					w.prepare(&w.outs[k], m, at2)
					k++
				}
			}
		}
		w.send(w.outs[:k], false, now)
	}
}

// closedLoop sends as client w.id: the next request (or batch) as soon as the previous one
// returned. Request k of the worker is tick k·Clients + id, so subjects are seeded like the
// open loop's.
func (w *worker) closedLoop() {
	r := w.r
	clients := uint64(len(r.clients))
	n := 1
	if w.pipe != nil {
		n = w.depth
	}
	var k uint64
	for !r.stopped() {
		now := time.Now()
		if now.Sub(r.start) >= r.end {
			return
		}
		for j := range n {
			tick := (k+uint64(j))*clients + uint64(w.id)
			w.prepare(&w.outs[j], tick, 0)
		}
		k += uint64(n)
		w.send(w.outs[:n], true, now)
	}
}
