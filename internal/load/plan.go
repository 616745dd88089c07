package load

import (
	"errors"
	"fmt"
	"time"

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
	// the total across all clients, or ClosedLoop{}, or a *TracePacer (a trace replayed: see
	// Replay). Required.
	//
	// With a *TracePacer, every row is sent at its own offset (open loop) as its own client,
	// for its own subject and cost, with its client's clock offset: the trace names them, so
	// Keys, Seed, Skew and Cost must be left zero, and Clients is only the number of workers
	// (rows are handed to whichever worker is free, in order); Result.Subjects and
	// Result.Clients are the trace's names, and Outcome.Tick the row's index in the whole
	// trace. Rows due at or after Warmup + Duration are not sent.
	Arrival Pacer
	// Duration is the measured part of the run: at least MinDuration, and Warmup + Duration at
	// most MaxSpan.
	Duration time.Duration
	// Warmup runs before the measured part, on the same schedule (the pacer's time 0 is the
	// start of the warmup). Its requests are sent and their outcomes measured, but they are
	// kept out of every figure of the Result (histograms, timeline, admission log, counts
	// other than Counts.Warmup): they only put the limiter into a steady state. The verifier
	// therefore checks the measured part alone; dropping admissions can hide a violation
	// that straddles the boundary but never invent one.
	Warmup time.Duration
	// Clients is the number of logical clients and of worker goroutines (1 to MaxClients). Open
	// loop, tick n is sent as client n mod Clients by whichever worker is free; closed loop,
	// worker w is client w. The client's connection pool should hold at least Clients
	// connections (PoolSize): then, in plain and pipeline mode on a single server, each worker
	// holds a connection of its own (see ownConns and package wire); with fewer, requests queue for
	// a connection inside go-redis.
	Clients int
	// Mode is plain (default), pipeline or autopipeline.
	Mode Mode
	// PipelineDepth is, in pipeline mode, the most requests per round trip (default 16, at
	// most MaxPipelineDepth, and Clients × PipelineDepth at most MaxInFlight).
	PipelineDepth int
	// Keys chooses the subject of each request.
	Keys Keys
	// Seed makes the sequence of (subject, client) the same on every run of the same plan.
	Seed uint64
	// Skew offsets each client's clock (Request.ClientTime).
	Skew Skew
	// Cost is the permits asked for by each request (default 1, at most MaxCost).
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
	// Share is this generator's segment of the load (see Share); nil is the whole load. Closed
	// loop, at least one of the Clients must be the segment's (Share.Runs).
	Share Share
	// Wait, when enabled (Replicas > 0), follows every request with WAIT Replicas Timeout, in
	// the same round trip and on the same connection (algorithms.WaitCall): each request's
	// latency includes its WAIT, and Counts.WaitShort counts the WAITs that came back with
	// fewer replicas than asked (or with no answer). Plain and pipeline mode (in a pipeline each
	// request is followed by its own WAIT); autopipeline cannot send a WAIT on the connection
	// of its request and is refused, and so is pipeline mode on a cluster client (see Run). With
	// Wait.DenyShort, an admission whose WAIT came back short is recorded as a denial
	// (Wait.Apply), as a caller that fails closed would take it.
	Wait algorithms.Wait
	// Start, when set, is the wall time of the run's offset 0: Run waits until then (or until
	// its context ends) before the first tick. A Start already past starts the schedule in
	// the past: the ticks already due are sent at once and count as late when they are more
	// than LateAfter behind. Zero starts the run once Run has opened its connections.
	Start time.Time
	// OnStart, when set, is called with the run's offset 0 (Start, or when Run started its clock)
	// just before the first tick, on Run's goroutine: what must keep time with the load (a fault
	// schedule) starts there. It must return at once.
	OnStart func(start time.Time)
	// Peek, when set, lets its holder copy the measured aggregators while the run goes (a
	// checkpoint of a long run): Run attaches it just before OnStart and detaches it once the
	// workers are done, before it merges the shards.
	Peek *Peek
	// Settled, when set, is called about every settleEvery while the run goes, on a goroutine
	// of Run's, with a run offset at or before which every request was sent whose outcome the
	// sinks have not yet been given: the send of the oldest request in flight, or, with none,
	// the time of the call. A streaming verifier advances on it instead of waiting out the
	// longest a request may take (verify.StreamLog.Advance). It must return quickly.
	Settled func(before time.Duration)
}

// validateTrace appends to errs, each wrapped with ErrBadPlan, the problems of p's trace tp and
// of the fields a trace leaves no room for: it names every row's subject, client, clock offset
// and cost.
func (p Plan) validateTrace(tp *TracePacer, errs []error) []error {
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrBadPlan}, args...)...))
	}
	if tp == nil || tp.Trace() == nil {
		bad("arrival: a nil trace")
	} else if err := tp.Trace().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: arrival: %w", ErrBadPlan, err))
	}
	if p.Keys != (Keys{}) {
		bad("keys cannot be combined with a trace (its rows name their subjects)")
	}
	if !p.Skew.IsZero() {
		bad("skew cannot be combined with a trace (it names its clients' clock offsets)")
	}
	if p.Cost != 0 {
		bad("cost cannot be combined with a trace (its rows name their costs)")
	}
	if p.Seed != 0 {
		bad("seed cannot be combined with a trace (it chooses nothing)")
	}
	return errs
}

// runsAny reports whether p's share runs at least one of its closed-loop clients.
func (p *Plan) runsAny() bool {
	for c := range p.Clients {
		if p.runs(c) {
			return true
		}
	}
	return false
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
	field := func(name string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: %s: %w", ErrBadPlan, name, err))
		}
	}
	field("duration", CheckDuration(p.Duration))
	field("warmup", CheckWarmup(p.Warmup))
	if CheckDuration(p.Duration) == nil && CheckWarmup(p.Warmup) == nil {
		field("duration", CheckSpan(p.Warmup, p.Duration))
	}
	field("clients", CheckClients(p.Clients))
	switch p.Mode {
	case "", ModePlain, ModePipeline, ModeAutoPipeline:
	default:
		bad("mode %q (want plain, pipeline or autopipeline)", p.Mode)
	}
	if p.Mode == ModePipeline {
		depth := p.PipelineDepth
		if depth == 0 {
			depth = DefaultPipelineDepth
		}
		field("pipeline depth", CheckPipelineDepth(depth, p.Clients))
	}
	if tp, ok := p.Arrival.(*TracePacer); ok {
		errs = p.validateTrace(tp, errs)
	} else {
		errs = p.Keys.validate(errs)
	}
	if _, closed := p.Arrival.(ClosedLoop); closed && p.Share != nil && p.Clients > 0 && !p.runsAny() {
		bad("a closed loop of %d clients gives this segment none (each segment runs clients of its own)", p.Clients)
	}
	if p.Cost != 0 {
		field("cost", CheckCost(p.Cost))
	}
	if err := p.Wait.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: wait: %w", ErrBadPlan, err))
	} else if p.Wait.Enabled() && p.Mode == ModeAutoPipeline {
		bad("wait: WAIT cannot follow a request in autopipeline mode (its pipelines mix the requests of every client on any connection, and WAIT waits for its own connection's writes); use plain or pipeline")
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
