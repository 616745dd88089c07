package load

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/wire"
)

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
	// calls send the worker's requests, one per request of a batch: built once, so that a
	// request allocates nothing of its own (see algorithms.Call).
	calls []algorithms.Call
	// waits are calls as WaitCalls when the plan has a Wait (the same objects); nil otherwise.
	waits []*algorithms.WaitCall

	// cmd takes the worker's plain requests: the runner's cmd, or conn. pipe, in pipeline mode,
	// is a pipeline on c or on conn; nil otherwise.
	cmd  redis.Cmdable
	pipe redis.Pipeliner
	// conn is the worker's own connection when the runner's own is set, taken at run offset
	// connAt; nil otherwise.
	conn   *redis.Conn
	connAt time.Duration
	// wc is the worker's wire connection when the runner's wire is set (see package wire); nil
	// otherwise.
	wc *wire.Conn
	// busy is the run offset, in ns, from which the worker is sending a request whose outcome
	// it has not yet given to the sinks (math.MaxInt64: none): stored before it reads the clock
	// for the send, cleared once it recorded the outcomes (see runner.settle).
	busy atomic.Int64
}

// sending says that the worker is about to send (worker.busy, only when the plan has Settled
// to read it) and returns the send's time.
func (w *worker) sending() time.Time {
	if w.r.p.Settled != nil {
		w.busy.Store(int64(time.Since(w.r.start)))
	}
	return time.Now()
}

// idle says that the worker holds no outcome the sinks have not been given (worker.busy).
func (w *worker) idle() {
	if w.r.p.Settled != nil {
		w.busy.Store(math.MaxInt64)
	}
}

func newWorker(r *runner, id int) *worker {
	t := time.NewTimer(time.Hour)
	t.Stop()
	w := &worker{
		r:     r,
		id:    id,
		sh:    r.shards[id%len(r.shards)],
		depth: r.p.PipelineDepth,
		timer: t,
		outs:  make([]Outcome, r.p.PipelineDepth),
		calls: make([]algorithms.Call, r.p.PipelineDepth),
	}
	w.busy.Store(math.MaxInt64)
	if r.wire {
		w.wc = wire.NewConn(r.own.Options())
	}
	if r.p.Wait.Enabled() {
		w.waits = make([]*algorithms.WaitCall, len(w.calls))
	}
	for i := range w.calls {
		if w.waits != nil {
			w.waits[i] = algorithms.NewWaitCall(r.lim, r.p.Wait)
			w.calls[i] = w.waits[i]
			continue
		}
		w.calls[i] = r.lim.NewCall()
	}
	return w
}

func (w *worker) run() {
	w.cmd = w.r.cmd
	switch {
	case w.r.own != nil:
		w.takeConn(time.Since(w.r.start))
		// Closing a go-redis Conn only gives its connection back to the pool (or, when it
		// failed, removes it from the pool); it has no error worth reporting.
		defer func() { _ = w.conn.Close() }()
		if w.wc != nil {
			defer w.wc.Close()
		}
	case w.r.p.Mode == ModePipeline:
		w.pipe = w.r.c.Pipeline()
	}
	if w.r.closed {
		w.closedLoop()
	} else {
		w.openLoop()
	}
}

// ownConns returns c as a *redis.Client when each worker of p should hold one connection of its
// own for the run, and nil when workers should take a connection from the pool for every
// request (or batch) as go-redis does by default. The connection is a wire connection when c
// allows one (wire.Supports), else one of c's pool, held through a go-redis Conn.
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
	if w.wc != nil {
		w.conn.AddHook(w.wc)
	}
	w.connAt = at
	w.cmd = w.conn
	if w.r.p.Mode == ModePipeline {
		w.pipe = w.conn.Pipeline()
		if w.wc != nil {
			w.pipe = wire.NewPipe(w.pipe, w.wc)
		}
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
	if r.trace != nil {
		row, _ := r.trace.Row(n) // n was claimed from the pacer, so the row exists
		*o = Outcome{Tick: n, Subject: row.Subject, Client: row.Client, Cost: row.Cost, Intended: intended}
		return
	}
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
	skew := r.skew[o.Client]
	if r.rowSkew != nil {
		skew = r.rowSkew[o.Tick] // a trace's row: its tick is its index
	}
	return algorithms.Request{
		Subject:    r.subjects[o.Subject],
		Client:     r.clients[o.Client],
		Cost:       int64(o.Cost),
		ClientTime: now.Add(skew),
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
	if w.wc != nil {
		w.wc.SetSent(now)
	}
	pipe := w.pipe
	if pipe == nil {
		o, call := &outs[0], w.calls[0]
		o.Sent = sent
		if closed {
			o.Intended = sent
		}
		call.Send(r.reqCtx, w.cmd, w.request(o, now))
		d, err := call.Result()
		o.Received = time.Since(r.start)
		o.Decision, o.Err, o.Class = d, err, Classify(err)
		if w.waits != nil {
			o.WaitShort = w.waits[0].Short()
			o.Decision = r.p.Wait.Apply(o.Decision, o.WaitShort)
		}
	} else {
		for i := range outs {
			o := &outs[i]
			o.Sent = sent
			if closed {
				o.Intended = sent
			}
			w.calls[i].Send(r.reqCtx, pipe, w.request(o, now))
		}
		_, _ = pipe.Exec(r.reqCtx) // every command carries its own error
		recv := time.Since(r.start)
		for i := range outs {
			o := &outs[i]
			d, err := w.calls[i].Result()
			o.Received = recv
			o.Decision, o.Err, o.Class = d, err, Classify(err)
			if w.waits != nil {
				o.WaitShort = w.waits[i].Short()
				o.Decision = r.p.Wait.Apply(o.Decision, o.WaitShort)
			}
		}
	}
	w.record(outs)
	w.idle()
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
		if o.WaitShort {
			c.WaitShort++
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
		n := r.p.tick(r.next.Add(1) - 1)
		at, ok := r.p.Arrival.At(n)
		if !ok || at >= r.end || !w.waitUntil(at) {
			return
		}
		now := w.sending()
		elapsed := now.Sub(r.start)
		if elapsed >= r.end && elapsed-at > r.p.LateAfter {
			// The run is over and this tick would be late: it is missed, not sent. A tick due
			// before the end that is not yet late is still sent after it, so that a stall of
			// the machine near the end costs no more than one anywhere else (where ticks up
			// to LateAfter behind are sent and are not late).
			w.idle()
			return
		}
		w.prepare(&w.outs[0], n, at)
		k := 1
		if w.pipe != nil {
			// Take every further tick that is already due, up to the depth.
			for k < w.depth {
				m := r.next.Load()
				at2, ok := r.p.Arrival.At(r.p.tick(m))
				if !ok || at2 > elapsed || at2 >= r.end {
					break
				}
				if r.next.CompareAndSwap(m, m+1) {
					w.prepare(&w.outs[k], r.p.tick(m), at2)
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
		now := w.sending()
		if now.Sub(r.start) >= r.end {
			w.idle()
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

// openWires dials the wire connections of ws before the run's clock starts, so that no request
// of the run waits for a connection to be set up. Errors are left to the requests to report.
func openWires(ctx context.Context, ws []*worker) {
	const dialers = 16
	var wg sync.WaitGroup
	for d := range min(dialers, len(ws)) {
		wg.Go(func() {
			for i := d; i < len(ws); i += dialers {
				_ = ws[i].wc.Dial(ctx)
			}
		})
	}
	wg.Wait()
}
