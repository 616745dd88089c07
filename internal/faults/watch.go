package faults

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/redisenv"
)

// Snapshot is what one poll of one node saw.
type Snapshot struct {
	// Node is the node's host:port.
	Node string
	// At is when the poll ended (the reply arrived or the poll failed).
	At time.Time
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
	if s.Err != "" {
		return Snapshot{}, fmt.Errorf("%s: %s", node, s.Err)
	}
	return s, nil
}

// EventKind names what changed on a node.
type EventKind string

// Event kinds.
const (
	// EventUnreachable: the node stopped answering (killed, paused, cut off, or too slow for
	// the poll timeout). To holds the error.
	EventUnreachable EventKind = "unreachable"
	// EventReachable: the node answers again.
	EventReachable EventKind = "reachable"
	// EventRestarted: the server started again: its run_id changed (From, To: the run ids), or
	// its uptime went back under the same run_id (From, To: the uptimes).
	EventRestarted EventKind = "restarted"
	// EventPromoted: a replica became a master. From is the master it followed.
	EventPromoted EventKind = "promoted"
	// EventDemoted: a master became a replica. To is the master it follows now.
	EventDemoted EventKind = "demoted"
	// EventMasterChanged: a replica follows another master (From, To: the masters).
	EventMasterChanged EventKind = "master-changed"
	// EventLinkDown: a replica's link to its master went down.
	EventLinkDown EventKind = "link-down"
	// EventLinkUp: a replica's link to its master is up again.
	EventLinkUp EventKind = "link-up"
	// EventOffsetBack: master_repl_offset went back without a restart: the node dropped what it
	// had and took a shorter history from a new master (From, To: the offsets). Writes only it
	// had are lost.
	EventOffsetBack EventKind = "offset-back"
)

// Event is one change seen on one node. It happened after After (the last poll that did not
// show it; zero when there was none) and at or before At (the first poll that did).
type Event struct {
	Node  string
	Kind  EventKind
	After time.Time
	At    time.Time
	// From and To say what changed, as the kind describes; either may be empty.
	From, To string
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
// offset-back. prev is the poll before cur and up the last poll before cur in which the node
// answered (equal to prev when prev answered); either is the zero Snapshot when there was none.
// Reachability compares cur with prev; everything else compares cur with up, so a restart across
// an outage is seen, and dated after up.At. It is a pure function.
func Changes(prev, up, cur Snapshot) []Event {
	var out []Event
	ev := func(kind EventKind, after time.Time, from, to string) {
		out = append(out, Event{Node: cur.Node, Kind: kind, After: after, At: cur.At, From: from, To: to})
	}
	if !cur.Reachable() {
		if prev.At.IsZero() || prev.Reachable() {
			ev(EventUnreachable, prev.At, "", cur.Err)
		}
		return out
	}
	if !prev.At.IsZero() && !prev.Reachable() {
		ev(EventReachable, prev.At, prev.Err, "")
	}
	if up.At.IsZero() || !up.Reachable() {
		return out
	}
	restarted := false
	switch {
	case up.RunID != cur.RunID:
		restarted = true
		ev(EventRestarted, up.At, up.RunID, cur.RunID)
	case cur.Uptime < up.Uptime:
		restarted = true
		ev(EventRestarted, up.At, up.Uptime.String(), cur.Uptime.String())
	}
	switch {
	case up.Role == redisenv.RoleReplica && cur.Role == redisenv.RoleMaster:
		ev(EventPromoted, up.At, up.MasterAddr, "")
	case up.Role == redisenv.RoleMaster && cur.Role == redisenv.RoleReplica:
		ev(EventDemoted, up.At, "", cur.MasterAddr)
	case cur.Role == redisenv.RoleReplica:
		if up.MasterAddr != cur.MasterAddr {
			ev(EventMasterChanged, up.At, up.MasterAddr, cur.MasterAddr)
		}
		if up.LinkUp && !cur.LinkUp {
			ev(EventLinkDown, up.At, "", "")
		} else if !up.LinkUp && cur.LinkUp {
			ev(EventLinkUp, up.At, "", "")
		}
	}
	if !restarted && cur.ReplOffset < up.ReplOffset {
		ev(EventOffsetBack, up.At, strconv.FormatInt(up.ReplOffset, 10), strconv.FormatInt(cur.ReplOffset, 10))
	}
	return out
}

// WatchOptions configures a Watcher. Zero values take the defaults.
type WatchOptions struct {
	// Interval is the time between the starts of two polls of one node; default 100 ms.
	Interval time.Duration
	// Timeout bounds one poll (dial, INFO server, INFO replication); default 500 ms. A node
	// that does not answer within it is unreachable: a paused node is seen after Timeout.
	Timeout time.Duration
	// Username and Password authenticate to every node.
	Username, Password string
	// NodeOptions, when set, gives the client options of one node (TLS, database) instead of
	// a plain client with Username and Password; Watcher sets the pool and timeouts itself.
	NodeOptions func(addr string) *redis.Options
	// OnEvent, when set, is called with each event as it is found, from the goroutine that
	// polls its node: one node's events arrive in order. It must not block for long.
	OnEvent func(Event)
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Watcher polls a fixed set of nodes until Stop. Its methods are safe for concurrent use.
type Watcher struct {
	opts   WatchOptions
	nodes  []string
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	events []Event
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
	w := &Watcher{opts: o, nodes: slices.Clone(nodes), cancel: cancel, last: map[string]Snapshot{}}
	for _, n := range w.nodes {
		w.wg.Go(func() { w.watch(ctx, n) })
	}
	return w
}

// WatchTarget watches every node of Info.Nodes of t (not the Sentinels) with t's credentials and
// TLS settings.
func WatchTarget(ctx context.Context, t *redisenv.Target, o WatchOptions) *Watcher {
	var nodes []string
	for _, n := range t.Info.Nodes {
		nodes = append(nodes, n.Addr)
	}
	if o.NodeOptions == nil {
		o.NodeOptions = t.NodeOptions
	}
	return Watch(ctx, nodes, o)
}

// watch polls one node until ctx ends.
func (w *Watcher) watch(ctx context.Context, node string) {
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
	o.DisableIdentity = true
	c := redis.NewClient(o)
	defer c.Close()
	var prev, up Snapshot
	ticker := time.NewTicker(w.opts.Interval)
	defer ticker.Stop()
	for {
		cur := w.poll(ctx, c, node)
		if ctx.Err() != nil {
			return // a poll cut short by Stop says nothing about the node
		}
		events := Changes(prev, up, cur)
		w.mu.Lock()
		w.events = append(w.events, events...)
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
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// poll asks node for INFO server and INFO replication, pipelined (Redis before 7 takes one
// section per INFO).
func (w *Watcher) poll(ctx context.Context, c *redis.Client, node string) Snapshot {
	ctx, cancel := context.WithTimeout(ctx, w.opts.Timeout)
	defer cancel()
	pipe := c.Pipeline()
	server := pipe.Info(ctx, "server")
	repl := pipe.Info(ctx, "replication")
	_, err := pipe.Exec(ctx)
	at := w.opts.Now()
	if err != nil {
		return Snapshot{Node: node, At: at, Err: pollError(err)}
	}
	s, err := ParseSnapshot(node, at, server.Val()+"\n"+repl.Val())
	if err != nil {
		return Snapshot{Node: node, At: at, Err: err.Error()}
	}
	return s
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

// Polls returns the number of polls completed, all nodes together.
func (w *Watcher) Polls() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.polls
}

// Stop ends the polling, waits for the pollers to return, closes their connections and
// returns every event found (Events). It is idempotent.
func (w *Watcher) Stop() []Event {
	w.cancel()
	w.wg.Wait()
	return w.Events()
}
