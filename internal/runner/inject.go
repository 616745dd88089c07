package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/faults"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/verify"
	"github.com/limitbench/limitbench/scenarios"
)

// injection is one fault of a scenario's schedule as one measurement carried it out.
type injection struct {
	// Index is the fault's place in the scenario's faults list.
	Index int
	Fault scenarios.Fault
	// Nodes are the addresses the target resolved to when the fault started.
	Nodes []string
	// Start is when the injector began acting (just before the first node was touched, once a
	// network fault's proxies were in place); End when it had finished (every node restarted,
	// resumed, the proxies cleared). Start is zero when the fault never started (the load ended
	// first, its target did not resolve, or a proxy could not be put in place).
	Start, End time.Time
	// Err is what went wrong, nil when the fault was carried out as planned.
	Err error
	// Promoted is the replica a failover promoted.
	Promoted string
}

// injector carries out a fault schedule on a target during one measurement, each fault in its
// own goroutine at its time on the run's clock (origin is the start of the measured part).
type injector struct {
	// down counts the restarts and failovers under way: while one is, Redis is expected to
	// be unreachable (see Busy).
	down   atomic.Int32
	wait   sync.WaitGroup
	cancel context.CancelFunc // cancels the waits for faults not started yet
	mu     sync.Mutex
	out    []injection
}

// startInjector starts carrying out schedule on tgt (network faults on netw, which must be
// non-nil when the schedule has any) from origin on. ctx bounds the faults' actions (a paused
// server is resumed and a proxy cleared even when ctx ends; see Stop).
func startInjector(ctx context.Context, tgt *redisenv.Target, netw *faults.Network, schedule []scenarios.Fault,
	origin time.Time) *injector {
	in := &injector{out: make([]injection, len(schedule))}
	waitCtx, cancel := context.WithCancel(ctx)
	in.cancel = cancel
	for i, f := range schedule {
		in.out[i] = injection{Index: i, Fault: f}
		in.wait.Add(1)
		go func() {
			defer in.wait.Done()
			t := time.NewTimer(time.Until(origin.Add(f.At)))
			defer t.Stop()
			select {
			case <-waitCtx.Done():
				in.set(i, func(j *injection) { j.Err = errors.New("not injected: the load ended first") })
				return
			case <-t.C:
			}
			j := in.inject(ctx, tgt, netw, f)
			j.Index = i
			in.set(i, func(out *injection) { *out = j })
		}()
	}
	return in
}

// Busy reports whether a restart or a failover is under way: the load's unreachable outcomes
// are then the fault's doing, not a lost Redis (the guard ignores them; a container takes
// seconds to restart). A kill is not: Redis killed for good is lost once the kill is done.
func (in *injector) Busy() bool { return in != nil && in.down.Load() > 0 }

func (in *injector) set(i int, fn func(*injection)) {
	in.mu.Lock()
	defer in.mu.Unlock()
	fn(&in.out[i])
}

// Stop abandons the faults that have not started, waits for those under way to finish (their
// durations are within the measured part, so they end with the load) and returns every fault
// of the schedule, in order.
func (in *injector) Stop() []injection {
	in.cancel()
	in.wait.Wait()
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]injection(nil), in.out...)
}

// inject carries out f on tgt and returns what it did.
func (in *injector) inject(ctx context.Context, tgt *redisenv.Target, netw *faults.Network, f scenarios.Fault) (j injection) {
	j.Fault = f
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	nodes, err := tgt.Select(sctx, f.Target)
	cancel()
	if err != nil {
		j.Err = fmt.Errorf("resolve %s: %w", f.Target, err)
		return j
	}
	j.Nodes = nodes
	// A network fault's proxies first: one on a replication link may have to be put in place
	// now (linkProxy), and the fault starts when it can act.
	proxies := map[string]*faults.Proxy{}
	if f.Kind.Network() {
		var mu sync.Mutex
		var errs []error
		var wg sync.WaitGroup
		for _, a := range nodes {
			wg.Go(func() {
				p, err := linkProxy(context.WithoutCancel(ctx), tgt, netw, f.Link, a)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", a, err))
					return
				}
				proxies[a] = p
			})
		}
		wg.Wait()
		if len(errs) > 0 {
			j.Err = errors.Join(errs...)
			return j
		}
	}
	if f.Kind == scenarios.FaultRestart || f.Kind == scenarios.FaultFailover {
		in.down.Add(1)
		defer in.down.Add(-1)
	}
	j.Start = time.Now()
	defer func() { j.End = time.Now() }()
	// A fault's actions finish even when the run is interrupted: a server must not stay paused
	// nor a proxy faulty.
	actCtx := context.WithoutCancel(ctx)
	each := func(fn func(addr string) error) error {
		errs := make([]error, len(nodes))
		var wg sync.WaitGroup
		for k, a := range nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := fn(a); err != nil {
					errs[k] = fmt.Errorf("%s: %w", a, err)
				}
			}()
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	onNode := func(addr string, fn func(c *redis.Client) error) error {
		c := redis.NewClient(tgt.NodeOptions(addr))
		defer c.Close()
		return fn(c)
	}
	switch f.Kind {
	case scenarios.FaultKill:
		j.Err = each(func(a string) error { return tgt.Kill(actCtx, a) })
	case scenarios.FaultRestart:
		j.Err = each(func(a string) error {
			rctx, cancel := context.WithTimeout(actCtx, 30*time.Second)
			defer cancel()
			return tgt.Restart(rctx, a)
		})
	case scenarios.FaultPause:
		j.Err = each(func(a string) error {
			if err := tgt.Pause(actCtx, a); err != nil {
				return err
			}
			time.Sleep(f.Duration)
			return tgt.Resume(actCtx, a)
		})
	case scenarios.FaultFailover:
		var promoted sync.Mutex
		j.Err = each(func(a string) error {
			fctx, cancel := context.WithTimeout(actCtx, 30*time.Second)
			defer cancel()
			p, err := tgt.Failover(fctx, a, f.Mode)
			promoted.Lock()
			defer promoted.Unlock()
			j.Promoted = p
			return err
		})
	case scenarios.FaultFlushScripts:
		j.Err = each(func(a string) error {
			return onNode(a, func(c *redis.Client) error { return c.ScriptFlush(actCtx).Err() })
		})
	case scenarios.FaultClientKill:
		j.Err = each(func(a string) error {
			return onNode(a, func(c *redis.Client) error { return c.Do(actCtx, "CLIENT", "KILL", "TYPE", "normal").Err() })
		})
	case scenarios.FaultLatency, scenarios.FaultReset, scenarios.FaultBlackhole:
		lf := faults.LinkFault{Kind: faults.LinkFaultKind(f.Kind), Latency: f.Latency, Jitter: f.Jitter, Drop: f.Drop}
		j.Err = each(func(a string) error {
			_, _, err := proxies[a].InjectFor(actCtx, lf, f.Duration)
			return err
		})
	default:
		j.Err = fmt.Errorf("unknown fault kind %q", f.Kind)
	}
	return j
}

// linkProxy returns the proxy a network fault on link acts on for the node at addr: the proxy
// in front of it (LinkClient), or the proxy on the link from it to its replicas
// (LinkReplication), which proxyReplication put in place before the load; a master that was not
// a master then (an earlier failover promoted it) gets one now, so the fault starts late by the
// time its replicas take to reconnect (its recorded window starts when it acts).
func linkProxy(ctx context.Context, tgt *redisenv.Target, netw *faults.Network, link scenarios.FaultLink, addr string) (*faults.Proxy, error) {
	if netw == nil {
		return nil, errors.New("no fault proxies: the load does not go through proxies")
	}
	if link != scenarios.LinkReplication {
		p, ok := netw.Proxy(addr)
		if !ok {
			return nil, fmt.Errorf("no proxy in front of %s", addr)
		}
		return p, nil
	}
	if p, ok := netw.ReplicationProxy(addr); ok {
		return p, nil
	}
	return routeReplication(ctx, tgt, netw, addr)
}

// routeReplication puts a proxy on the replication link of the master at addr, trying again
// every 100 ms for up to replicationSetup while it fails: after a failover in the previous
// measurement, the former master is still resyncing as a replica (its link down, or the
// cluster still marking it failed) for a second or two.
func routeReplication(ctx context.Context, tgt *redisenv.Target, netw *faults.Network, addr string) (*faults.Proxy, error) {
	rctx, cancel := context.WithTimeout(ctx, replicationSetup)
	defer cancel()
	for {
		p, err := netw.ProxyReplication(rctx, tgt, addr)
		if err == nil {
			return p, nil
		}
		select {
		case <-rctx.Done():
			return nil, fmt.Errorf("put a proxy on the replication link of %s: %w", addr, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// replicationSetup bounds putting a proxy on one master's replication link: the replicas of a
// cluster master reconnect through it within cluster-node-timeout/2 (2.5 s), a Sentinel group's
// replicas resync and the Sentinels agree within a few seconds.
const replicationSetup = 30 * time.Second

// proxyReplication puts a proxy on the replication link of every master that a fault of
// schedule on the replication link targets now (faults.Network.ProxyReplication), before the
// load starts, so that the fault acts at its time: its replicas take up to a few seconds to
// reconnect through it. The masters are set up at the same time (each waits for its own
// replicas). A master that cannot be routed is an error: the schedule cannot be carried out.
func proxyReplication(ctx context.Context, tgt *redisenv.Target, netw *faults.Network, schedule []scenarios.Fault) error {
	seen := map[string]bool{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	defer wg.Wait()
	for i, f := range schedule {
		if !f.Kind.Network() || f.Link != scenarios.LinkReplication {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		nodes, err := tgt.Select(sctx, f.Target)
		cancel()
		if err != nil {
			return fmt.Errorf("faults[%d]: resolve %s: %w", i, f.Target, err)
		}
		for _, a := range nodes {
			if seen[a] {
				continue
			}
			seen[a] = true
			wg.Go(func() {
				if _, err := routeReplication(ctx, tgt, netw, a); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("faults[%d]: %w", i, err))
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// needsNetwork reports whether schedule has a network fault, which needs the load's client to
// go through a proxy in front of every node (a fault on the replication link too: the Network's
// Dialer keeps the load's clients off the replication proxy, whose address a cluster master
// announces).
func needsNetwork(schedule []scenarios.Fault) bool {
	for _, f := range schedule {
		if f.Kind.Network() {
			return true
		}
	}
	return false
}

// noScripts records when requests met a NOSCRIPT error (their send offsets from the run's
// start), for the faults' reports; at most maxNoScripts are kept.
type noScripts struct {
	mu   sync.Mutex
	sent []time.Duration
}

const maxNoScripts = 1 << 20

// observe notes o when it met NOSCRIPT.
func (n *noScripts) observe(o *load.Outcome) {
	if o.Err == nil || !strings.Contains(o.Err.Error(), "NOSCRIPT") {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.sent) < maxNoScripts {
		n.sent = append(n.sent, o.Sent)
	}
}

// count returns how many NOSCRIPT errors met requests sent in [from, to] (offsets from the run's
// start).
func (n *noScripts) count(from, to time.Duration) int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	var c int64
	for _, s := range n.sent {
		if s >= from && s <= to {
			c++
		}
	}
	return c
}

// injectedFaults returns the injections as the verifier takes them: on the admission log's
// clock (rec's), each window from when the injector began acting to when it finished plus the
// fault's recovery.
func (r *recording) injectedFaults(js []injection, res *load.Result) []verify.InjectedFault {
	out := make([]verify.InjectedFault, len(js))
	for i, j := range js {
		f := verify.InjectedFault{Name: j.Fault.Name(), Kind: string(j.Fault.Kind), Target: j.Fault.Target.String(), Nodes: j.Nodes}
		if j.Err != nil {
			f.Err = j.Err.Error()
		}
		if j.Promoted != "" {
			f.Name += " (promoted " + j.Promoted + ")"
		}
		if !j.Start.IsZero() {
			f.Lo, f.Hi = r.log.Span(j.Start.Sub(res.Start), j.End.Sub(res.Start))
			_, f.Until = r.log.Span(0, j.End.Sub(res.Start)+j.Fault.Recovery)
		}
		out[i] = f
	}
	return out
}

// addNoScripts fills in each fault report's NOSCRIPT count from ns.
func addNoScripts(reps []verify.FaultReport, js []injection, ns *noScripts, res *load.Result) {
	for i := range reps {
		if i < len(js) && !js[i].Start.IsZero() {
			reps[i].NoScript = ns.count(js[i].Start.Sub(res.Start), js[i].End.Sub(res.Start)+js[i].Fault.Recovery)
		}
	}
}

// injectedDisruptions returns the injections that may have lost the limiter's state (a restart,
// a kill, a failover) as disruptions on the admission log's clock, so that the history is cut
// there even if the node watch did not see the change (it polls). Cutting only removes
// violations from the algorithm's account; the watch's own events, when it saw them, merge
// with these into one cut.
func (r *recording) injectedDisruptions(js []injection, res *load.Result) []verify.Disruption {
	var out []verify.Disruption
	for _, j := range js {
		switch j.Fault.Kind {
		case scenarios.FaultRestart, scenarios.FaultKill, scenarios.FaultFailover:
		default:
			continue
		}
		if j.Start.IsZero() {
			continue
		}
		lo, hi := r.log.Span(j.Start.Sub(res.Start), j.End.Sub(res.Start))
		measured := res.Start.Add(res.Plan.Warmup)
		out = append(out, verify.Disruption{Lo: lo, Hi: hi, Node: strings.Join(j.Nodes, ","), Kind: "injected " + string(j.Fault.Kind),
			StateLost: true, What: fmt.Sprintf("the injected %s (%.3fs to %.3fs)", j.Fault.Name(),
				j.Start.Sub(measured).Seconds(), j.End.Sub(measured).Seconds())})
	}
	return out
}
