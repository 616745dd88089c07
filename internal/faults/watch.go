package faults

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/redisenv"
)

// WatchOptions configures a Watcher. Zero values take the defaults.
type WatchOptions struct {
	// Interval is the time between the starts of two polls of one node; default 100 ms. After a
	// poll the node did not answer, the next comes after a tenth of it (at least 5 ms, at most
	// Interval), so that the end of an outage is dated closely.
	Interval time.Duration
	// Timeout bounds one poll (dial and the INFO sections it reads); default 500 ms. A node
	// that does not answer within it is unreachable: a paused node is seen after Timeout.
	Timeout time.Duration
	// Username and Password authenticate to every node.
	Username, Password string
	// NodeOptions, when set, gives the client options of one node (TLS, database) instead of
	// a plain client with Username and Password; Watcher sets the pool and timeouts itself.
	NodeOptions func(addr string) *redis.Options
	// MasterOf, when set, gives the node a replica's master address stands for: a replica
	// that follows its master through a replication proxy (Network.ProxyReplication) names the
	// proxy's address in INFO replication, and the events should name the master. nil keeps
	// the address as the replica gives it.
	MasterOf func(addr string) string
	// OnEvent, when set, is called with each event as it is found, from the goroutine that
	// polls its node: one node's events arrive in order. It must not block for long.
	OnEvent func(Event)
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Watcher polls a fixed set of nodes until Stop. Its methods are safe for concurrent use.
type Watcher struct {
	opts     WatchOptions
	nodes    []string
	cancel   context.CancelFunc
	pokes    []chan struct{} // per node: poll now
	stopping chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup

	mu     sync.Mutex
	events []Event
	first  map[string]Snapshot // the first poll of each node that answered
	last   map[string]Snapshot
	polls  int
}

// Watch starts polling every node of nodes (host:port) at once and then every o.Interval, each
// node on its own connection in its own goroutine, until ctx ends or Stop is called.
func Watch(ctx context.Context, nodes []string, o WatchOptions) *Watcher {
	if o.Interval <= 0 {
		o.Interval = 100 * time.Millisecond
	}
	if o.Timeout <= 0 {
		o.Timeout = 500 * time.Millisecond
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &Watcher{opts: o, nodes: slices.Clone(nodes), cancel: cancel, stopping: make(chan struct{}),
		pokes: make([]chan struct{}, len(nodes)),
		first: map[string]Snapshot{}, last: map[string]Snapshot{}}
	for i, n := range w.nodes {
		w.pokes[i] = make(chan struct{}, 1)
		w.wg.Go(func() { w.watch(ctx, n, w.pokes[i]) })
	}
	return w
}

// WatchTarget watches every node of Info.Nodes of t (not the Sentinels) with t's credentials and
// TLS settings; a replica that follows its master through a replication proxy is taken to follow
// the master (redisenv's Target.RealAddr), so that a promotion names the master it deposes.
func WatchTarget(ctx context.Context, t *redisenv.Target, o WatchOptions) *Watcher {
	var nodes []string
	for _, n := range t.Info.Nodes {
		nodes = append(nodes, n.Addr)
	}
	if o.NodeOptions == nil {
		o.NodeOptions = t.NodeOptions
	}
	if o.MasterOf == nil {
		o.MasterOf = t.RealAddr
	}
	return Watch(ctx, nodes, o)
}

// watch polls one node until ctx ends or Stop, and at once when poked.
func (w *Watcher) watch(ctx context.Context, node string, poke <-chan struct{}) {
	var o *redis.Options
	if w.opts.NodeOptions != nil {
		o = w.opts.NodeOptions(node)
	} else {
		o = &redis.Options{Addr: node, Username: w.opts.Username, Password: w.opts.Password}
	}
	o.MaxRetries = -1
	o.PoolSize = 1
	o.MinIdleConns = 0
	o.DialTimeout = w.opts.Timeout
	o.ReadTimeout = w.opts.Timeout
	o.WriteTimeout = w.opts.Timeout
	o.PoolTimeout = w.opts.Timeout
	// One dial per attempt: go-redis otherwise retries a refused dial for up to 0.5 s, which
	// hides an outage from the poll and dates a restart late.
	o.DialerRetries = 1
	o.DisableIdentity = true
	// A client's pool, once a dial has failed, answers with that error without dialing until a
	// background dial, tried once a second, succeeds: a node back within that second would still
	// look down, and a run ending then would miss its restart. So each poll after a failed one
	// gets a new client (see fresh below).
	c := redis.NewClient(o)
	defer func() { c.Close() }()
	fresh := func() {
		c.Close()
		c = redis.NewClient(o)
	}
	var prev, up Snapshot
	timer := time.NewTimer(w.opts.Interval)
	defer timer.Stop()
	record := func(cur Snapshot) {
		events := Changes(prev, up, cur)
		w.mu.Lock()
		w.events = append(w.events, events...)
		if _, ok := w.first[node]; !ok && cur.Reachable() {
			w.first[node] = cur
		}
		w.last[node] = cur
		w.polls++
		w.mu.Unlock()
		if w.opts.OnEvent != nil {
			for _, e := range events {
				w.opts.OnEvent(e)
			}
		}
		prev = cur
		if cur.Reachable() {
			up = cur
		}
	}
	for {
		began := time.Now()
		cur := w.poll(ctx, c, node)
		if ctx.Err() != nil {
			return // a poll cut short by the context says nothing about the node
		}
		record(cur)
		next := w.opts.Interval
		if !cur.Reachable() {
			next = max(w.opts.Interval/10, min(5*time.Millisecond, w.opts.Interval))
			fresh()
		}
		timer.Reset(max(0, next-time.Since(began)))
		select {
		case <-ctx.Done():
			return
		case <-w.stopping:
			// One more poll, begun after Stop was called: what happened until then is seen.
			if cur := w.poll(ctx, c, node); ctx.Err() == nil {
				record(cur)
			}
			return
		case <-poke:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// Poke asks for a poll of every node now, without waiting for the interval: a load that meets
// connection errors pokes the watch, so that a restart is dated closely. Pokes while a poll is
// due anyway are merged; it never blocks.
func (w *Watcher) Poke() {
	for _, p := range w.pokes {
		select {
		case p <- struct{}{}:
		default:
		}
	}
}

// poll asks node for INFO server, replication, stats (evictions), memory (the eviction policy)
// and commandstats, pipelined (Redis
// before 7 takes one section per INFO), within the poll timeout. A connection that breaks (the
// server closed it: CLIENT KILL, or a restart since the last poll) is tried once more on a fresh
// one, so that a killed connection is not taken for an unreachable node; a timeout is not.
func (w *Watcher) poll(ctx context.Context, c *redis.Client, node string) Snapshot {
	ctx, cancel := context.WithTimeout(ctx, w.opts.Timeout)
	defer cancel()
	sent := w.opts.Now()
	var server, repl, stats, mem, cmds *redis.StringCmd
	var err error
	for try := 0; try < 2; try++ {
		pipe := c.Pipeline()
		server = pipe.Info(ctx, "server")
		repl = pipe.Info(ctx, "replication")
		stats = pipe.Info(ctx, "stats")
		mem = pipe.Info(ctx, "memory")
		cmds = pipe.Info(ctx, "commandstats")
		if _, err = pipe.Exec(ctx); err == nil || !brokenConn(err) {
			break
		}
	}
	at := w.opts.Now()
	if err != nil {
		return Snapshot{Node: node, Sent: sent, At: at, Err: pollError(err)}
	}
	s, err := ParseSnapshot(node, at, strings.Join([]string{server.Val(), repl.Val(), stats.Val(), mem.Val(), cmds.Val()}, "\n"))
	if err != nil {
		return Snapshot{Node: node, Sent: sent, At: at, Err: err.Error()}
	}
	s.Sent = sent
	if s.MasterAddr != "" && w.opts.MasterOf != nil {
		s.MasterAddr = w.opts.MasterOf(s.MasterAddr)
	}
	return s
}

// brokenConn reports whether err is a connection the server closed or reset (not a timeout, not
// a refused dial, not an error reply).
func brokenConn(err error) bool {
	var ne net.Error
	var re redis.Error
	switch {
	case errors.As(err, &re), errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return false
	case strings.Contains(err.Error(), "connection refused"):
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed)
}

// pollError shortens the error of a failed poll to what happened.
func pollError(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return "timeout"
	case strings.Contains(err.Error(), "connection refused"):
		return "connection refused"
	default:
		return err.Error()
	}
}

// Events returns the events found so far, ordered by At (ties in the order of the nodes given
// to Watch).
func (w *Watcher) Events() []Event {
	w.mu.Lock()
	out := slices.Clone(w.events)
	w.mu.Unlock()
	order := map[string]int{}
	for i, n := range w.nodes {
		order[n] = i
	}
	slices.SortStableFunc(out, func(a, b Event) int {
		return cmp.Or(a.At.Compare(b.At), cmp.Compare(order[a.Node], order[b.Node]))
	})
	return out
}

// Last returns the last poll of node (the zero Snapshot before the first).
func (w *Watcher) Last(node string) Snapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last[node]
}

// First returns the first poll of node that it answered (the zero Snapshot before it answered
// one).
func (w *Watcher) First(node string) Snapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.first[node]
}

// Nodes returns the nodes watched, in the order given to Watch.
func (w *Watcher) Nodes() []string { return slices.Clone(w.nodes) }

// Polls returns the number of polls completed, all nodes together.
func (w *Watcher) Polls() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.polls
}

// WaitPolled waits until every node has been polled once (answered or not), so that a change
// after it is measured against a first poll; it returns ctx's error when ctx ends first.
func (w *Watcher) WaitPolled(ctx context.Context) error {
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		done := true
		w.mu.Lock()
		for _, n := range w.nodes {
			if _, ok := w.last[n]; !ok {
				done = false
			}
		}
		w.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Stop ends the polling: each node is polled once more, the poll begun after Stop was called
// (unless the context given to Watch has ended), so that every change until Stop is seen. It
// waits for the pollers to return (at most a poll in progress and the last one, each bounded by
// the timeout), closes their connections and returns every event found (Events). It is
// idempotent.
func (w *Watcher) Stop() []Event {
	w.stopOnce.Do(func() { close(w.stopping) })
	w.wg.Wait()
	w.cancel()
	return w.Events()
}

// settled reports whether the last polls of the nodes, each begun at or after since, show
// replication at rest: at most masters of the nodes that answered are masters, and every one
// that is a replica has its link to its master up, that master being one of the masters that
// answered. A node that did not answer (a killed one) is left out; a node not polled since
// since makes it false. When false, the string says what is not at rest.
func (w *Watcher) settled(since time.Time, masters int) (bool, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	up := map[string]bool{}
	var replicas []Snapshot
	for _, n := range w.nodes {
		s, ok := w.last[n]
		if !ok || s.Sent.Before(since) {
			return false, n + " not polled yet"
		}
		switch {
		case !s.Reachable():
		case s.Role == redisenv.RoleMaster:
			up[n] = true
		default:
			replicas = append(replicas, s)
		}
	}
	if len(up) > masters {
		return false, fmt.Sprintf("%d nodes act as masters where the topology has %d", len(up), masters)
	}
	for _, s := range replicas {
		if !s.LinkUp || !up[s.MasterAddr] {
			return false, fmt.Sprintf("replica %s is not in sync with a master (its master %s, link up %v)", s.Node, s.MasterAddr, s.LinkUp)
		}
	}
	return true, ""
}

// WaitSettled waits until the nodes' replication is at rest again after a fault: no more
// masters than masters among the nodes that answer, and every replica's link to one of them up
// (a former master that the Sentinels have not yet turned into a replica of the promoted one
// keeps it waiting, as does a replica still resyncing). It polls every node at once and then at
// the watch's interval, so the events of what happened meanwhile are recorded as usual. It
// returns nil when settled, and when ctx ends first an error saying what was not.
func (w *Watcher) WaitSettled(ctx context.Context, masters int) error {
	since := time.Now()
	w.Poke()
	t := time.NewTicker(max(w.opts.Interval/4, time.Millisecond))
	defer t.Stop()
	for {
		ok, why := w.settled(since, masters)
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("replication not at rest after the faults: %s", why)
		case <-t.C:
		}
	}
}
