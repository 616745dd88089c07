package faults

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/faults/watch"
	"github.com/limitbench/limitbench/internal/redisenv"
)

// Snapshot is what one poll of one node saw.
type Snapshot struct {
	// Node is the node's host:port.
	Node string
	// Sent is when the poll began; At is when it ended (the reply arrived or the poll failed).
	// The node answered at some instant in [Sent, At].
	Sent, At time.Time
	// Err says why the node did not answer; "" when it did. The fields below are then zero.
	Err string
	// RunID is the server's run_id, new at every start.
	RunID string
	// Uptime is uptime_in_seconds, whole seconds.
	Uptime time.Duration
	// Role is redisenv.RoleMaster or redisenv.RoleReplica.
	Role string
	// ReplOffset is master_repl_offset in bytes.
	ReplOffset int64
	// ConnectedReplicas is connected_slaves.
	ConnectedReplicas int
	// MasterAddr is a replica's master_host:master_port; "" for a master.
	MasterAddr string
	// LinkUp is a replica's master_link_status:up; false for a master.
	LinkUp bool
	// Commands counts, from INFO commandstats, the calls of each command that disrupts what a
	// limiter relies on (see Disruptive), by its commandstats name; nil when INFO commandstats
	// was not read. Redis counts the subcommands of SCRIPT and CLIENT apart from version 7.
	Commands map[string]int64
}

// Disruptive maps each command the watch counts (its INFO commandstats name) to the event kind
// a call of it means: FLUSHALL, FLUSHDB and SWAPDB (of any database: INFO does not say which)
// empty the keys a limiter keeps its state in, SCRIPT FLUSH empties the script cache, and CLIENT
// KILL closes connections.
var Disruptive = map[string]watch.EventKind{
	"flushall":     watch.EventFlushed,
	"flushdb":      watch.EventFlushed,
	"swapdb":       watch.EventFlushed,
	"script|flush": watch.EventScriptsFlushed,
	"client|kill":  watch.EventClientsKilled,
}

// Reachable reports whether the node answered the poll.
func (s Snapshot) Reachable() bool { return s.Err == "" }

// ParseSnapshot reads the text of INFO server and INFO replication (in any order, in one string)
// that node answered at at. It fails when run_id or role is missing or a number is malformed.
func ParseSnapshot(node string, at time.Time, info string) (Snapshot, error) {
	s := Snapshot{Node: node, At: at}
	fields := map[string]string{}
	for line := range strings.SplitSeq(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimRight(line, "\r"), ":")
		if ok && !strings.HasPrefix(k, "#") {
			fields[k] = v
		}
	}
	s.RunID = fields["run_id"]
	if s.RunID == "" {
		return Snapshot{}, fmt.Errorf("%s: INFO has no run_id", node)
	}
	switch fields["role"] {
	case "master":
		s.Role = redisenv.RoleMaster
	case "slave":
		s.Role = redisenv.RoleReplica
		s.MasterAddr = net.JoinHostPort(fields["master_host"], fields["master_port"])
		s.LinkUp = fields["master_link_status"] == "up"
	default:
		return Snapshot{}, fmt.Errorf("%s: INFO role %q", node, fields["role"])
	}
	num := func(name string) int64 {
		v, ok := fields[name]
		if !ok {
			return 0
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			s.Err = fmt.Sprintf("INFO %s %q is not a number", name, v)
		}
		return n
	}
	s.Uptime = time.Duration(num("uptime_in_seconds")) * time.Second
	s.ReplOffset = num("master_repl_offset")
	s.ConnectedReplicas = int(num("connected_slaves"))
	if strings.Contains(info, "# Commandstats") {
		s.Commands = map[string]int64{}
		for name := range Disruptive {
			if v, ok := fields["cmdstat_"+name]; ok {
				s.Commands[name] = commandCalls(v)
			}
		}
	}
	if s.Err != "" {
		return Snapshot{}, fmt.Errorf("%s: %s", node, s.Err)
	}
	return s, nil
}

// commandCalls returns the calls field of a commandstats value such as
// "calls=10,usec=52,usec_per_call=5.20,rejected_calls=0,failed_calls=0"; 0 when absent.
func commandCalls(v string) int64 {
	for kv := range strings.SplitSeq(v, ",") {
		if n, ok := strings.CutPrefix(kv, "calls="); ok {
			c, _ := strconv.ParseInt(n, 10, 64)
			return c
		}
	}
	return 0
}

// Event is one change seen on one node. It happened after After (when the last poll that did
// not show it began; zero when there was none, or, for a node that answers for the first time,
// any time since the watch began) and at or before At (when the first poll that did ended): the
// node answered each poll somewhere within it, so (After, At] holds the change whatever the
// polls' round trips.
type Event struct {
	Node  string
	Kind  watch.EventKind
	After time.Time
	At    time.Time
	// From and To say what changed, as the kind describes; either may be empty.
	From, To string
	// Role is the node's role before the change (redisenv.RoleMaster or RoleReplica); "" when
	// unknown (the node never answered before).
	Role string
}

// Describe says what e is in words, for reasons and reports: "127.0.0.1:7000 restarted (run id
// 4f2a1b2c → 9c1e0d3f)", "127.0.0.1:7001 was promoted to master (it followed 127.0.0.1:7000)".
func (e Event) Describe() string {
	short := func(id string) string {
		if len(id) > 8 {
			return id[:8]
		}
		return id
	}
	n := e.Node
	switch e.Kind {
	case watch.EventUnreachable:
		return n + " stopped answering (" + e.To + ")"
	case watch.EventReachable:
		if e.Role == "" {
			return n + " answers for the first time"
		}
		return n + " answers again"
	case watch.EventRestarted:
		if _, err := time.ParseDuration(e.From); err == nil {
			return n + " restarted (uptime " + e.From + " → " + e.To + ")"
		}
		return n + " restarted (run id " + short(e.From) + " → " + short(e.To) + ")"
	case watch.EventPromoted:
		return n + " was promoted to master (it followed " + e.From + ")"
	case watch.EventDemoted:
		return n + " became a replica of " + e.To
	case watch.EventMasterChanged:
		return n + " follows " + e.To + " instead of " + e.From
	case watch.EventLinkDown:
		return n + " lost its link to its master"
	case watch.EventLinkUp:
		return n + " has its link to its master again"
	case watch.EventOffsetBack:
		return n + " dropped replicated writes (offset " + e.From + " → " + e.To + ")"
	case watch.EventFlushed:
		return n + " was flushed (" + e.From + ")"
	case watch.EventScriptsFlushed:
		return n + " had its scripts flushed (" + e.From + ")"
	case watch.EventClientsKilled:
		return n + " had clients killed (" + e.From + ")"
	}
	return e.String()
}

// Deposes reports whether e shows its node no longer serving as a master with the state it had:
// demoted, or gone (unreachable with its connections refused: the process that held the state
// has ended; one started again is a restart, with no clients of the old one left). A paused or
// cut-off node is not deposed: once it answers again it may admit on its old state until it
// learns that it was replaced.
func (e Event) Deposes() bool {
	switch e.Kind {
	case watch.EventDemoted:
		return true
	case watch.EventUnreachable:
		return e.To == "connection refused"
	}
	return false
}

// StateLost reports whether e may have taken the state of the limiters the node holds away from
// the clients, so that admissions after it cannot be checked against those before it: a master
// restarted (without persistence it comes back empty; with an AOF it may miss the last writes),
// flushed, or a replica promoted (it has only the writes that reached it before); and a node
// that answers for the first time after the watch began (Role ""), since a restart before its
// first answer could not be seen. Nothing else changes the state clients see: a pause, an outage
// that ends with the same run id, a script flush, killed clients, a replica's restart or link.
func (e Event) StateLost() bool {
	switch e.Kind {
	case watch.EventRestarted, watch.EventFlushed:
		return e.Role == redisenv.RoleMaster
	case watch.EventPromoted:
		return true
	case watch.EventReachable:
		// The node answers for the first time: what happened to it before is unknown.
		return e.Role == ""
	}
	return false
}

// String returns "node kind (from -> to)".
func (e Event) String() string {
	s := e.Node + " " + string(e.Kind)
	if e.From != "" || e.To != "" {
		s += " (" + e.From + " -> " + e.To + ")"
	}
	return s
}

// Changes returns the events between two polls of one node, in this order: reachable or
// unreachable, restarted, promoted or demoted, master-changed, link-down or link-up,
// offset-back, then flushed, scripts-flushed and clients-killed. prev is the poll before cur and
// up the last poll before cur in which the node answered (equal to prev when prev answered);
// either is the zero Snapshot when there was none. Reachability compares cur with prev;
// everything else compares cur with up, so a restart across an outage is seen, and dated after
// up.Sent. A command counter that went down (CONFIG RESETSTAT, or a restart) only starts a new
// count. It is a pure function.
func Changes(prev, up, cur Snapshot) []Event {
	var out []Event
	ev := func(kind watch.EventKind, after time.Time, from, to, role string) {
		out = append(out, Event{Node: cur.Node, Kind: kind, After: after, At: cur.At, From: from, To: to, Role: role})
	}
	if !cur.Reachable() {
		if prev.At.IsZero() || prev.Reachable() {
			ev(watch.EventUnreachable, prev.Sent, "", cur.Err, prev.Role)
		}
		return out
	}
	if !prev.At.IsZero() && !prev.Reachable() {
		after := prev.Sent
		if up.At.IsZero() {
			after = time.Time{} // it never answered before: it may have changed any time since the watch began
		}
		ev(watch.EventReachable, after, prev.Err, "", up.Role)
	}
	if up.At.IsZero() || !up.Reachable() {
		return out
	}
	role := up.Role
	restarted := false
	switch {
	case up.RunID != cur.RunID:
		restarted = true
		ev(watch.EventRestarted, up.Sent, up.RunID, cur.RunID, role)
	case cur.Uptime < up.Uptime:
		restarted = true
		ev(watch.EventRestarted, up.Sent, up.Uptime.String(), cur.Uptime.String(), role)
	}
	switch {
	case up.Role == redisenv.RoleReplica && cur.Role == redisenv.RoleMaster:
		ev(watch.EventPromoted, up.Sent, up.MasterAddr, "", role)
	case up.Role == redisenv.RoleMaster && cur.Role == redisenv.RoleReplica:
		ev(watch.EventDemoted, up.Sent, "", cur.MasterAddr, role)
	case cur.Role == redisenv.RoleReplica:
		if up.MasterAddr != cur.MasterAddr {
			ev(watch.EventMasterChanged, up.Sent, up.MasterAddr, cur.MasterAddr, role)
		}
		if up.LinkUp && !cur.LinkUp {
			ev(watch.EventLinkDown, up.Sent, "", "", role)
		} else if !up.LinkUp && cur.LinkUp {
			ev(watch.EventLinkUp, up.Sent, "", "", role)
		}
	}
	if !restarted && cur.ReplOffset < up.ReplOffset {
		ev(watch.EventOffsetBack, up.Sent, strconv.FormatInt(up.ReplOffset, 10), strconv.FormatInt(cur.ReplOffset, 10), role)
	}
	if !restarted && up.Commands != nil && cur.Commands != nil {
		names := slices.Sorted(maps.Keys(cur.Commands))
		for _, kind := range []watch.EventKind{watch.EventFlushed, watch.EventScriptsFlushed, watch.EventClientsKilled} {
			for _, name := range names {
				if Disruptive[name] != kind {
					continue
				}
				if was := up.Commands[name]; cur.Commands[name] > was {
					ev(kind, up.Sent, strings.ToUpper(strings.ReplaceAll(name, "|", " ")),
						strconv.FormatInt(cur.Commands[name]-was, 10), role)
				}
			}
		}
	}
	return out
}

// WatchOptions configures a Watcher. Zero values take the defaults.
type WatchOptions struct {
	// Interval is the time between the starts of two polls of one node; default 100 ms. After a
	// poll the node did not answer, the next comes after a tenth of it (at least 5 ms, at most
	// Interval), so that the end of an outage is dated closely.
	Interval time.Duration
	// Timeout bounds one poll (dial, INFO server, INFO replication); default 500 ms. A node
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

// poll asks node for INFO server, INFO replication and INFO commandstats, pipelined (Redis
// before 7 takes one section per INFO), within the poll timeout. A connection that breaks (the
// server closed it: CLIENT KILL, or a restart since the last poll) is tried once more on a fresh
// one, so that a killed connection is not taken for an unreachable node; a timeout is not.
func (w *Watcher) poll(ctx context.Context, c *redis.Client, node string) Snapshot {
	ctx, cancel := context.WithTimeout(ctx, w.opts.Timeout)
	defer cancel()
	sent := w.opts.Now()
	var server, repl, cmds *redis.StringCmd
	var err error
	for try := 0; try < 2; try++ {
		pipe := c.Pipeline()
		server = pipe.Info(ctx, "server")
		repl = pipe.Info(ctx, "replication")
		cmds = pipe.Info(ctx, "commandstats")
		if _, err = pipe.Exec(ctx); err == nil || !brokenConn(err) {
			break
		}
	}
	at := w.opts.Now()
	if err != nil {
		return Snapshot{Node: node, Sent: sent, At: at, Err: pollError(err)}
	}
	s, err := ParseSnapshot(node, at, server.Val()+"\n"+repl.Val()+"\n"+cmds.Val())
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
