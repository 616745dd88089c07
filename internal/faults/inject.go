package faults

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/scenarios"
)

// Injection is one fault of a scenario's schedule as one measurement carried it out.
type Injection struct {
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

// Injector carries out a fault schedule on a target during one measurement, each fault in its
// own goroutine at its time on the run's clock (origin is the start of the measured part). Its
// methods are safe for concurrent use.
type Injector struct {
	// down counts the restarts and failovers under way: while one is, Redis is expected to
	// be unreachable (see Busy).
	down   atomic.Int32
	wait   sync.WaitGroup
	cancel context.CancelFunc // cancels the waits for faults not started yet
	mu     sync.Mutex
	out    []Injection
}

// Inject starts carrying out schedule on tgt (network faults on netw, which must be non-nil when
// the schedule has any; see NeedsNetwork) from origin on. ctx bounds the faults' actions (a
// paused server is resumed and a proxy cleared even when ctx ends; see Stop).
func Inject(ctx context.Context, tgt *redisenv.Target, netw *Network, schedule []scenarios.Fault,
	origin time.Time) *Injector {
	in := &Injector{out: make([]Injection, len(schedule))}
	waitCtx, cancel := context.WithCancel(ctx)
	in.cancel = cancel
	for i, f := range schedule {
		in.out[i] = Injection{Index: i, Fault: f}
		in.wait.Add(1)
		go func() {
			defer in.wait.Done()
			t := time.NewTimer(time.Until(origin.Add(f.At)))
			defer t.Stop()
			select {
			case <-waitCtx.Done():
				in.set(i, func(j *Injection) { j.Err = errors.New("not injected: the load ended first") })
				return
			case <-t.C:
			}
			j := in.inject(ctx, tgt, netw, f)
			j.Index = i
			in.set(i, func(out *Injection) { *out = j })
		}()
	}
	return in
}

// Busy reports whether a restart or a failover is under way: the load's unreachable outcomes
// are then the fault's doing, not a lost Redis (the guard ignores them; a container takes
// seconds to restart). A kill is not: Redis killed for good is lost once the kill is done.
func (in *Injector) Busy() bool { return in != nil && in.down.Load() > 0 }

func (in *Injector) set(i int, fn func(*Injection)) {
	in.mu.Lock()
	defer in.mu.Unlock()
	fn(&in.out[i])
}

// Injections returns what the injector did so far, one Injection per fault of the schedule, in
// order: a fault under way has its Start and no End yet.
func (in *Injector) Injections() []Injection {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]Injection(nil), in.out...)
}

// Stop abandons the faults that have not started, waits for those under way to finish (their
// durations are within the measured part, so they end with the load) and returns every fault
// of the schedule, in order.
func (in *Injector) Stop() []Injection {
	in.cancel()
	in.wait.Wait()
	return in.Injections()
}

// inject carries out f on tgt and returns what it did.
func (in *Injector) inject(ctx context.Context, tgt *redisenv.Target, netw *Network, f scenarios.Fault) (j Injection) {
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
	var proxies map[string]*Proxy
	if f.Kind.Network() {
		if proxies, j.Err = linkProxies(ctx, tgt, netw, f.Link, nodes); j.Err != nil {
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
	act(context.WithoutCancel(ctx), tgt, f, proxies, &j)
	return j
}

// linkProxies returns the proxy a network fault on link acts on for each of nodes (linkProxy),
// put in place at once; an error names every node that has none.
func linkProxies(ctx context.Context, tgt *redisenv.Target, netw *Network, link scenarios.FaultLink, nodes []string) (map[string]*Proxy, error) {
	proxies := map[string]*Proxy{}
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, a := range nodes {
		wg.Go(func() {
			p, err := linkProxy(context.WithoutCancel(ctx), tgt, netw, link, a)
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
	return proxies, errors.Join(errs...)
}

// act carries out f on every node of j at once (a network fault on its proxy in proxies) and
// records in j what went wrong and, for a failover, the replica it promoted.
func act(ctx context.Context, tgt *redisenv.Target, f scenarios.Fault, proxies map[string]*Proxy, j *Injection) {
	each := func(fn func(addr string) error) error {
		errs := make([]error, len(j.Nodes))
		var wg sync.WaitGroup
		for k, a := range j.Nodes {
			wg.Go(func() {
				if err := fn(a); err != nil {
					errs[k] = fmt.Errorf("%s: %w", a, err)
				}
			})
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
		j.Err = each(func(a string) error { return tgt.Kill(ctx, a) })
	case scenarios.FaultRestart:
		j.Err = each(func(a string) error {
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			return tgt.Restart(rctx, a)
		})
	case scenarios.FaultPause:
		j.Err = each(func(a string) error {
			if err := tgt.Pause(ctx, a); err != nil {
				return err
			}
			time.Sleep(f.Duration)
			return tgt.Resume(ctx, a)
		})
	case scenarios.FaultFailover:
		var promoted sync.Mutex
		j.Err = each(func(a string) error {
			fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			p, err := tgt.Failover(fctx, a, f.Mode)
			promoted.Lock()
			defer promoted.Unlock()
			j.Promoted = p
			return err
		})
	case scenarios.FaultFlushScripts:
		j.Err = each(func(a string) error {
			return onNode(a, func(c *redis.Client) error { return c.ScriptFlush(ctx).Err() })
		})
	case scenarios.FaultEvict:
		j.Err = each(func(a string) error { return onNode(a, func(c *redis.Client) error { return evictAll(ctx, c) }) })
	case scenarios.FaultClientKill:
		j.Err = each(func(a string) error {
			return onNode(a, func(c *redis.Client) error { return c.Do(ctx, "CLIENT", "KILL", "TYPE", "normal").Err() })
		})
	case scenarios.FaultLatency, scenarios.FaultReset, scenarios.FaultBlackhole:
		lf := LinkFault{Kind: LinkFaultKind(f.Kind), Latency: f.Latency, Jitter: f.Jitter, Drop: f.Drop}
		j.Err = each(func(a string) error {
			_, _, err := proxies[a].InjectFor(ctx, lf, f.Duration)
			return err
		})
	default:
		j.Err = fmt.Errorf("unknown fault kind %q", f.Kind)
	}
}

// linkProxy returns the proxy a network fault on link acts on for the node at addr: the proxy
// in front of it (LinkClient), or the proxy on the link from it to its replicas
// (LinkReplication), which RouteReplication put in place before the load; a master that was not
// a master then (an earlier failover promoted it) gets one now, so the fault starts late by the
// time its replicas take to reconnect (its recorded window starts when it acts).
func linkProxy(ctx context.Context, tgt *redisenv.Target, netw *Network, link scenarios.FaultLink, addr string) (*Proxy, error) {
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
func routeReplication(ctx context.Context, tgt *redisenv.Target, netw *Network, addr string) (*Proxy, error) {
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
// schedule on the replication link targets now (Network.ProxyReplication), before the
// load starts, so that the fault acts at its time: its replicas take up to a few seconds to
// reconnect through it. The masters are set up at the same time (each waits for its own
// replicas). A master that cannot be routed is an error: the schedule cannot be carried out.
func RouteReplication(ctx context.Context, tgt *redisenv.Target, netw *Network, schedule []scenarios.Fault) error {
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

// NeedsNetwork reports whether schedule has a network fault, which needs the load's client to
// go through a proxy in front of every node (a fault on the replication link too: the Network's
// Dialer keeps the load's clients off the replication proxy, whose address a cluster master
// announces).
func NeedsNetwork(schedule []scenarios.Fault) bool {
	for _, f := range schedule {
		if f.Kind.Network() {
			return true
		}
	}
	return false
}

// evictTimeout bounds how long evictAll waits for the server to hold no key.
const evictTimeout = 2 * time.Second

// evictAll forces every key out of the server c talks to through maxmemory: it sets
// maxmemory-policy allkeys-random and maxmemory 1 byte, sends PING until DBSIZE is 0 (the server
// evicts before each command it runs while over maxmemory) or evictTimeout has passed, and puts
// both settings back, also when it fails or the context ends.
func evictAll(ctx context.Context, c *redis.Client) error {
	was, err := c.ConfigGet(ctx, "maxmemory*").Result()
	if err != nil {
		return fmt.Errorf("evict: CONFIG GET maxmemory: %w", err)
	}
	limit, policy := was["maxmemory"], was["maxmemory-policy"]
	if limit == "" || policy == "" {
		return fmt.Errorf("evict: CONFIG GET maxmemory* gave %v", was)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = c.ConfigSet(rctx, "maxmemory", limit).Err() // reported below if the state stays wrong
		_ = c.ConfigSet(rctx, "maxmemory-policy", policy).Err()
	}()
	if err := c.ConfigSet(ctx, "maxmemory-policy", "allkeys-random").Err(); err != nil {
		return fmt.Errorf("evict: CONFIG SET maxmemory-policy: %w", err)
	}
	if err := c.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		return fmt.Errorf("evict: CONFIG SET maxmemory: %w", err)
	}
	deadline := time.Now().Add(evictTimeout)
	for {
		n, err := c.DBSize(ctx).Result()
		switch {
		case err != nil:
			return fmt.Errorf("evict: DBSIZE: %w", err)
		case n == 0:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("evict: %d keys still held after %s", n, evictTimeout)
		}
		_ = c.Ping(ctx).Err() // each command lets the server evict again
	}
}
