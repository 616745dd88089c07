package redisenv

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotStarted is returned by node control for a node limitbench did not start: every node of an
// external target (limitbench never kills, pauses or fails over a server it did not start), or an
// address that is none of the target's servers.
var ErrNotStarted = errors.New("node control needs a server limitbench started")

// controlled is one server or Sentinel a Target started. mu orders the operations on it: a
// restart never overlaps a pause of the same node.
type controlled struct {
	mu     sync.Mutex
	srv    server
	paused bool
}

// adopt records the servers node control may act on.
func (t *Target) adopt(srvs []server) {
	t.servers = make(map[string]*controlled, len(srvs))
	for _, s := range srvs {
		t.servers[s.addr()] = &controlled{srv: s}
	}
}

// asServers converts a backend's servers to the server interface.
func asServers[S server](in []S) []server {
	out := make([]server, len(in))
	for i, s := range in {
		out[i] = s
	}
	return out
}

// Servers returns the addresses of every server and Sentinel that node control can act on,
// sorted; nil for an external target.
func (t *Target) Servers() []string {
	if t.servers == nil {
		return nil
	}
	out := make([]string, 0, len(t.servers))
	for a := range t.servers {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

// node returns the control of the server at addr.
func (t *Target) node(addr string) (*controlled, error) {
	if t.servers == nil {
		return nil, fmt.Errorf("%w: %s belongs to backend %s", ErrNotStarted, addr, t.Info.Backend)
	}
	n, ok := t.servers[addr]
	if !ok {
		return nil, fmt.Errorf("%w: %s is not one of this target's servers (%s)", ErrNotStarted, addr, strings.Join(t.Servers(), ", "))
	}
	return n, nil
}

// Kill ends the server (or Sentinel) at addr with SIGKILL, to its process group or through the
// Docker engine, and returns once it is gone. It is not started again: Restart does that. Killing
// a dead server does nothing; a paused server is killed too.
func (t *Target) Kill(ctx context.Context, addr string) error {
	n, err := t.node(addr)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.srv.kill(ctx); err != nil {
		return err
	}
	n.paused = false
	return nil
}

// Restart kills the server at addr when it runs (SIGKILL, no shutdown: nothing is saved that
// was not already on disk), starts it again on the same port from the same configuration and
// data directory, and returns once it answers an authenticated PING, which for a server with an
// AOF is once the AOF is loaded. Without persistence it comes back empty, its scripts flushed
// and with a new run_id. A cluster node keeps its node ID (nodes.conf) and rejoins; a master
// whose replica was promoted meanwhile comes back as that replica's replica. A replica of a
// sentinel topology resyncs from the master it was configured with (the Sentinels repoint it
// when that changed).
func (t *Target) Restart(ctx context.Context, addr string) error {
	n, err := t.node(addr)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.srv.kill(ctx); err != nil {
		return err
	}
	n.paused = false
	return n.srv.start(ctx)
}

// Pause freezes the server at addr (SIGSTOP to its process group; docker pause for a container):
// its connections stay open and nothing is answered until Resume. Pausing a paused server does
// nothing; a killed one is an error. Stop ends paused servers too.
func (t *Target) Pause(ctx context.Context, addr string) error {
	n, err := t.node(addr)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.srv.exited() {
		return fmt.Errorf("pause %s: the server is not running", addr)
	}
	if err := n.srv.pause(ctx); err != nil {
		return err
	}
	n.paused = true
	return nil
}

// Resume continues the server at addr after Pause (SIGCONT; docker unpause). Resuming a server
// that is not paused does nothing.
func (t *Target) Resume(ctx context.Context, addr string) error {
	n, err := t.node(addr)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.paused {
		return nil
	}
	if err := n.srv.resume(ctx); err != nil {
		return err
	}
	n.paused = false
	return nil
}

// FailoverMode says how Failover promotes a replica.
type FailoverMode string

// Failover modes.
const (
	// FailoverCoordinated is the default (""). Cluster: CLUSTER FAILOVER on the replica: the
	// master stops accepting writes until the replica has caught up, then the replica takes
	// over, so no acknowledged write is lost. Sentinel: SENTINEL FAILOVER: the Sentinels promote
	// the best replica at once, without waiting for it to catch up (writes it had not received
	// are lost).
	FailoverCoordinated FailoverMode = ""
	// FailoverForce is CLUSTER FAILOVER FORCE (cluster only): no handshake with the master,
	// which may be down; writes the replica had not received are lost. The majority of masters
	// still votes.
	FailoverForce FailoverMode = "force"
	// FailoverTakeover is CLUSTER FAILOVER TAKEOVER (cluster only): the replica takes the slots
	// without any vote.
	FailoverTakeover FailoverMode = "takeover"
	// FailoverKill kills the master (SIGKILL, left dead; Restart brings it back) and waits until
	// the cluster or the Sentinels promote a replica on their own: after cluster-node-timeout
	// (5 s) and an election on a cluster, after down-after-milliseconds (2 s) and an election
	// with Sentinels.
	FailoverKill FailoverMode = "kill"
)

// Failover promotes a replica of the master at addr (an address of a server this target started;
// for a cluster the master of one shard now, for sentinel the master now) and returns the
// promoted replica's address once the topology agrees: on a cluster, when the replica reports
// role master and every other reachable node names it the owner of the master's slots; with
// Sentinels, when every Sentinel names it master and it reports role master. The replica is the
// first, by address, whose link is up (FailoverKill: whichever replica the cluster or the
// Sentinels elect). It waits as long as ctx allows: give it a deadline (a coordinated cluster
// failover that the master cannot complete never finishes). A single server has no replica to
// fail over to; an external target refuses (ErrNotStarted).
func (t *Target) Failover(ctx context.Context, addr string, mode FailoverMode) (string, error) {
	if _, err := t.node(addr); err != nil {
		return "", err
	}
	switch mode {
	case FailoverCoordinated, FailoverForce, FailoverTakeover, FailoverKill:
	default:
		return "", fmt.Errorf("%w: unknown failover mode %q (want \"\", force, takeover or kill)", ErrBadConfig, mode)
	}
	switch t.Info.Topology {
	case TopologyCluster:
		return t.clusterFailover(ctx, addr, mode)
	case TopologySentinel:
		if mode == FailoverForce || mode == FailoverTakeover {
			return "", fmt.Errorf("%w: failover mode %s is for a cluster; Sentinels fail over with mode \"\" (SENTINEL FAILOVER) or kill", ErrBadConfig, mode)
		}
		return t.sentinelFailover(ctx, addr, mode)
	default:
		return "", fmt.Errorf("%w: topology %s has no replica to fail over to", ErrBadConfig, t.Info.Topology)
	}
}

// clusterFailover is Failover on a cluster.
func (t *Target) clusterFailover(ctx context.Context, addr string, mode FailoverMode) (string, error) {
	nodes, err := t.LiveNodes(ctx)
	if err != nil {
		return "", err
	}
	i := slices.IndexFunc(nodes, func(n Node) bool { return n.Addr == addr })
	if i < 0 || nodes[i].Role != RoleMaster || len(nodes[i].Slots) == 0 {
		return "", fmt.Errorf("failover: %s is not a master with slots now", addr)
	}
	master := nodes[i]
	var replica Node
	for _, n := range nodes {
		if n.Role == RoleReplica && n.MasterID == master.ID && !n.Down {
			replica = n
			break
		}
	}
	if replica.Addr == "" {
		return "", fmt.Errorf("failover: master %s has no replica up", addr)
	}
	slot := master.Slots[0][0]
	if mode == FailoverKill {
		if err := t.Kill(ctx, addr); err != nil {
			return "", err
		}
	} else {
		args := []any{"CLUSTER", "FAILOVER"}
		if mode != FailoverCoordinated {
			args = append(args, strings.ToUpper(string(mode)))
		}
		c := redis.NewClient(t.probeOptions(replica.Addr))
		err := c.Do(ctx, args...).Err()
		_ = c.Close()
		if err != nil {
			return "", fmt.Errorf("failover: %s on %s: %w", strings.Join(strings.Fields(fmt.Sprint(args...)), " "), replica.Addr, err)
		}
	}
	var last error
	for {
		promoted, err := t.slotOwnerAgreed(ctx, slot, master.ID, addr)
		if err == nil {
			return promoted, nil
		}
		last = err
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return "", fmt.Errorf("failover of %s: no replica took over slot %d: %w (last: %w)", addr, slot, err, last)
		}
	}
}

// slotOwnerAgreed returns the address of the node that owns slot when it is not oldID, it
// reports role master, and every other node that answers (but skip, the old master) agrees.
func (t *Target) slotOwnerAgreed(ctx context.Context, slot int, oldID, skip string) (string, error) {
	var owner, ownerAddr string
	for _, n := range t.Info.Nodes {
		if n.Addr == skip {
			continue
		}
		c := redis.NewClient(t.probeOptions(n.Addr))
		raw, err := c.Do(ctx, "CLUSTER", "NODES").Text()
		_ = c.Close()
		if err != nil {
			continue // a node that is down or paused has no say
		}
		live, err := parseLiveClusterNodes(raw)
		if err != nil {
			return "", fmt.Errorf("%s: %w", n.Addr, err)
		}
		id := ""
		for _, ln := range live {
			if ln.Role == RoleMaster && slotIn(ln.Slots, slot) {
				id = ln.ID
			}
		}
		if id == "" || id == oldID {
			return "", fmt.Errorf("%s: slot %d still belongs to %s", n.Addr, slot, cmp.Or(id, "nobody"))
		}
		if owner == "" {
			owner = id
			ownerAddr = t.addrOfID(id, live)
		} else if id != owner {
			return "", fmt.Errorf("%s names %s owner of slot %d, others %s", n.Addr, id, slot, owner)
		}
	}
	if owner == "" {
		return "", errors.New("no node answered")
	}
	c := redis.NewClient(t.probeOptions(ownerAddr))
	info, err := c.Info(ctx, "replication").Result()
	_ = c.Close()
	if err != nil {
		return "", fmt.Errorf("%s: INFO replication: %w", ownerAddr, err)
	}
	if r := infoField(info, "role"); r != "master" {
		return "", fmt.Errorf("%s: role:%s", ownerAddr, r)
	}
	return ownerAddr, nil
}

// sentinelFailover is Failover on a sentinel topology.
func (t *Target) sentinelFailover(ctx context.Context, addr string, mode FailoverMode) (string, error) {
	current, err := t.sentinelMaster(ctx)
	if err != nil {
		return "", err
	}
	if current != addr {
		return "", fmt.Errorf("failover: %s is not the master now (%s is)", addr, current)
	}
	if mode == FailoverKill {
		if err := t.Kill(ctx, addr); err != nil {
			return "", err
		}
	} else if err := t.askSentinels(ctx, func(ctx context.Context, c *redis.SentinelClient) error {
		return c.Failover(ctx, t.Info.MasterName).Err()
	}); err != nil {
		return "", fmt.Errorf("failover: SENTINEL FAILOVER %s: %w", t.Info.MasterName, err)
	}
	var last error
	for {
		promoted, err := t.sentinelsAgreeOnNew(ctx, addr)
		if err == nil {
			return promoted, nil
		}
		last = err
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return "", fmt.Errorf("failover of %s: the Sentinels promoted no replica: %w (last: %w)", addr, err, last)
		}
	}
}

// sentinelsAgreeOnNew returns the master every answering Sentinel names when it is not old and
// it reports role master.
func (t *Target) sentinelsAgreeOnNew(ctx context.Context, old string) (string, error) {
	named := ""
	for _, a := range t.Info.Sentinels {
		c := redis.NewSentinelClient(t.probeOptions(a))
		got, err := c.GetMasterAddrByName(ctx, t.Info.MasterName).Result()
		_ = c.Close()
		if err != nil {
			continue // a Sentinel that is down has no say
		}
		if len(got) != 2 {
			return "", fmt.Errorf("%s: SENTINEL GET-MASTER-ADDR-BY-NAME = %v", a, got)
		}
		m := t.RealAddr(net.JoinHostPort(got[0], got[1]))
		if m == old {
			return "", fmt.Errorf("%s still names %s", a, old)
		}
		if named == "" {
			named = m
		} else if m != named {
			return "", fmt.Errorf("%s names %s, another Sentinel %s", a, m, named)
		}
	}
	if named == "" {
		return "", errors.New("no Sentinel answered")
	}
	c := redis.NewClient(t.probeOptions(named))
	info, err := c.Info(ctx, "replication").Result()
	_ = c.Close()
	if err != nil {
		return "", fmt.Errorf("%s: INFO replication: %w", named, err)
	}
	if r := infoField(info, "role"); r != "master" {
		return "", fmt.Errorf("%s: role:%s", named, r)
	}
	return named, nil
}

// askSentinels runs fn on the Sentinels in turn until one succeeds; it returns the errors
// joined when none does.
func (t *Target) askSentinels(ctx context.Context, fn func(ctx context.Context, c *redis.SentinelClient) error) error {
	var errs []error
	for _, a := range t.Info.Sentinels {
		c := redis.NewSentinelClient(t.probeOptions(a))
		err := fn(ctx, c)
		_ = c.Close()
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", a, err))
	}
	return errors.Join(errs...)
}

// sentinelMaster returns the master the first answering Sentinel names.
func (t *Target) sentinelMaster(ctx context.Context) (string, error) {
	var m string
	err := t.askSentinels(ctx, func(ctx context.Context, c *redis.SentinelClient) error {
		got, err := c.GetMasterAddrByName(ctx, t.Info.MasterName).Result()
		if err != nil {
			return err
		}
		if len(got) != 2 {
			return fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME = %v", got)
		}
		m = t.RealAddr(net.JoinHostPort(got[0], got[1]))
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("ask the Sentinels for the master: %w", err)
	}
	return m, nil
}

// probeOptions returns the options of a short-lived client of one node or Sentinel for the
// harness's own checks: the target's credentials, one connection, retries off, 2 s timeouts.
func (t *Target) probeOptions(addr string) *redis.Options {
	o := t.nodeOptions(addr)
	o.PoolSize = 1
	o.DialTimeout = 2 * time.Second
	o.ReadTimeout = 2 * time.Second
	o.WriteTimeout = 2 * time.Second
	if slices.Contains(t.Info.Sentinels, addr) {
		o.DB = 0
	}
	return o
}

// LiveNodes returns the topology as it is now, ordered as Info.Nodes (masters by first slot,
// then replicas by address). A cluster is read from the CLUSTER NODES of the first node that
// answers (in the order of Info.Nodes); nodes its peers flag fail or fail? are marked Down, and
// a node is named by the address it was started on even when it announces another (a
// replication proxy's). A sentinel topology is read from the first Sentinel that answers: its
// master and replicas, Down when the Sentinel flags them down or disconnected, each named by its
// own address even when the Sentinels know it by a replication proxy's (RouteReplication). A
// single server is Info.Nodes.
func (t *Target) LiveNodes(ctx context.Context) ([]Node, error) {
	switch t.Info.Topology {
	case TopologyCluster:
		var errs []error
		for _, n := range t.Info.Nodes {
			c := redis.NewClient(t.probeOptions(n.Addr))
			raw, err := c.Do(ctx, "CLUSTER", "NODES").Text()
			_ = c.Close()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: CLUSTER NODES: %w", n.Addr, err))
				continue
			}
			live, err := parseLiveClusterNodes(raw)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", n.Addr, err)
			}
			for i := range live {
				live[i].Addr = t.addrOfID(live[i].ID, live)
			}
			sortNodes(live)
			return live, nil
		}
		return nil, fmt.Errorf("no cluster node answers: %w", errors.Join(errs...))
	case TopologySentinel:
		var out []Node
		err := t.askSentinels(ctx, func(ctx context.Context, c *redis.SentinelClient) error {
			m, err := c.Master(ctx, t.Info.MasterName).Result()
			if err != nil {
				return err
			}
			reps, err := c.Replicas(ctx, t.Info.MasterName).Result()
			if err != nil {
				return err
			}
			out = []Node{{Addr: t.RealAddr(net.JoinHostPort(m["ip"], m["port"])), Role: RoleMaster, Down: sentinelDown(m["flags"])}}
			for _, r := range reps {
				out = append(out, Node{Addr: t.RealAddr(net.JoinHostPort(r["ip"], r["port"])), Role: RoleReplica,
					Down: sentinelDown(r["flags"]) || r["master-link-status"] != "ok"})
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("ask the Sentinels for the topology: %w", err)
		}
		sortNodes(out)
		return out, nil
	default:
		return slices.Clone(t.Info.Nodes), nil
	}
}

// sentinelDown reports whether a Sentinel's flags for an instance say it is down.
func sentinelDown(flags string) bool {
	for f := range strings.SplitSeq(flags, ",") {
		switch f {
		case "s_down", "o_down", "disconnected":
			return true
		}
	}
	return false
}

// addrOfID returns the address node id was started on (Info.Nodes), else the address live gives.
func (t *Target) addrOfID(id string, live []Node) string {
	for _, n := range t.Info.Nodes {
		if n.ID == id {
			return n.Addr
		}
	}
	for _, n := range live {
		if n.ID == id {
			return n.Addr
		}
	}
	return ""
}

// parseLiveClusterNodes parses CLUSTER NODES output as it is during faults: nodes flagged fail or
// fail? are marked Down, nodes in handshake or without an address are left out, and slots being
// migrated are ignored. Unlike parseClusterNodes it does not order the nodes.
func parseLiveClusterNodes(raw string) ([]Node, error) {
	var nodes []Node
	for line := range strings.SplitSeq(strings.TrimSpace(raw), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("CLUSTER NODES: short line %q", line)
		}
		addr := f[1]
		if i := strings.IndexAny(addr, "@,"); i >= 0 {
			addr = addr[:i]
		}
		n := Node{ID: f[0], Addr: addr}
		skip := false
		for fl := range strings.SplitSeq(f[2], ",") {
			switch fl {
			case "master":
				n.Role = RoleMaster
			case "slave":
				n.Role = RoleReplica
			case "fail", "fail?":
				n.Down = true
			case "handshake", "noaddr":
				skip = true
			}
		}
		if skip {
			continue
		}
		if f[3] != "-" {
			n.MasterID = f[3]
		}
		if f[7] != "connected" {
			n.Down = true
		}
		slots, err := parseSlots(f[8:])
		if err != nil {
			return nil, err
		}
		n.Slots = slots
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// slotIn reports whether slot is in one of the inclusive ranges.
func slotIn(ranges [][2]int, slot int) bool {
	for _, r := range ranges {
		if slot >= r[0] && slot <= r[1] {
			return true
		}
	}
	return false
}

// NodeOptions returns the options of a plain client of the node (or Sentinel) at addr with the
// target's credentials, database and TLS settings, retries off (MaxRetries -1) and a quiet
// handshake; callers set pool sizes and timeouts. Each call returns a new value.
func (t *Target) NodeOptions(addr string) *redis.Options {
	o := t.nodeOptions(addr)
	if slices.Contains(t.Info.Sentinels, addr) {
		o.DB = 0
	}
	return o
}
