package redisenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// RouteReplication makes the replicas of the master at addr (a server this target started, a
// master now) reach it through via, a proxy on 127.0.0.1 that forwards to addr, and returns once
// every replica of it follows via with its link up. undo restores the direct links the same way.
//
// A replica dials the address its master is known by, so this changes what the master is known
// by:
//   - cluster: the master announces via's port (CONFIG SET cluster-announce-port; its bus port
//     is unchanged), so every node, every replica and every client that reads CLUSTER SLOTS,
//     CLUSTER NODES or a MOVED reply names via for it from now on; its replicas reconnect through
//     via when its next ping reaches them (within cluster-node-timeout/2, 2.5 s), resuming with a
//     partial resync.
//   - sentinel: the Sentinels monitor via as the master (SENTINEL REMOVE, MONITOR and SET with
//     the topology's settings) and every replica is pointed at via (REPLICAOF), so the Sentinels'
//     own link to the master crosses via too: a fault on it longer than down-after-milliseconds
//     (2 s) makes them fail the master over, while clients that reach the master another way
//     still can (a partition of the master from its replicas and Sentinels). The failover client
//     then dials via for the master (LiveNodes and Select still name the master by addr).
//
// Clients that should not cross via (the load generator's) must map via to another path, as
// faults.Network's Dialer does. A single server has no replica (ErrBadConfig); an external target
// refuses (ErrNotStarted). RealAddr names addr for via until undo. undo returns on a cluster
// once every node that answers names the master by its own port again (a client made after it
// never reads via). After a failover undo restores what still applies: a cluster master
// announces its own port again; Sentinels that name another master monitor it afresh, and every
// other server that answers (the former master among them, which the Sentinels knew by via only)
// follows it.
func (t *Target) RouteReplication(ctx context.Context, addr, via string) (undo func(context.Context) error, err error) {
	if _, err := t.node(addr); err != nil {
		return nil, err
	}
	if _, _, err := net.SplitHostPort(via); err != nil {
		return nil, fmt.Errorf("%w: route replication of %s through %q: %w", ErrBadConfig, addr, via, err)
	}
	switch t.Info.Topology {
	case TopologyCluster:
		return t.routeClusterReplication(ctx, addr, via)
	case TopologySentinel:
		return t.routeSentinelReplication(ctx, addr, via)
	default:
		return nil, fmt.Errorf("%w: topology %s has no replication link", ErrBadConfig, t.Info.Topology)
	}
}

// routeClusterReplication is RouteReplication on a cluster.
func (t *Target) routeClusterReplication(ctx context.Context, addr, via string) (func(context.Context) error, error) {
	live, err := t.LiveNodes(ctx)
	if err != nil {
		return nil, err
	}
	var master Node
	var replicas []string
	for _, n := range live {
		if n.Addr == addr {
			master = n
		}
	}
	if master.Role != RoleMaster || len(master.Slots) == 0 {
		return nil, fmt.Errorf("route replication: %s is not a master with slots now", addr)
	}
	for _, n := range live {
		if n.Role == RoleReplica && n.MasterID == master.ID && !n.Down {
			replicas = append(replicas, n.Addr)
		}
	}
	if len(replicas) == 0 {
		return nil, fmt.Errorf("route replication: master %s has no replica up", addr)
	}
	_, viaPort, _ := net.SplitHostPort(via)
	_, port, _ := net.SplitHostPort(addr)
	announce := func(ctx context.Context, p string) error {
		c := redis.NewClient(t.probeOptions(addr))
		defer c.Close()
		if err := c.ConfigSet(ctx, "cluster-announce-port", p).Err(); err != nil {
			return fmt.Errorf("%s: CONFIG SET cluster-announce-port %s: %w", addr, p, err)
		}
		return nil
	}
	t.setAlias(via, addr)
	if err := announce(ctx, viaPort); err != nil {
		t.setAlias(via, "")
		return nil, err
	}
	if err := t.waitReplicasFollow(ctx, replicas, via); err != nil {
		_ = announce(context.Background(), "0")
		t.setAlias(via, "")
		return nil, fmt.Errorf("route replication of %s through %s: %w", addr, via, err)
	}
	return func(ctx context.Context) error {
		if err := announce(ctx, "0"); err != nil {
			return err
		}
		defer t.setAlias(via, "")
		// Every node learns the master's own port again from its next ping; until then a new
		// client may read the proxy's (closed by then) in CLUSTER SLOTS.
		if err := t.waitAnnounced(ctx, master.ID, addr); err != nil {
			return err
		}
		// Wait for the replicas that still follow this master.
		var still []string
		for _, r := range replicas {
			c := redis.NewClient(t.probeOptions(r))
			info, err := c.Info(ctx, "replication").Result()
			_ = c.Close()
			if err == nil && infoField(info, "role") == "slave" && infoField(info, "master_port") == viaPort {
				still = append(still, r)
			}
		}
		return t.waitReplicasFollow(ctx, still, net.JoinHostPort("127.0.0.1", port))
	}, nil
}

// routeSentinelReplication is RouteReplication on a sentinel topology.
func (t *Target) routeSentinelReplication(ctx context.Context, addr, via string) (func(context.Context) error, error) {
	current, err := t.sentinelMaster(ctx)
	if err != nil {
		return nil, err
	}
	if current != addr {
		return nil, fmt.Errorf("route replication: %s is not the master now (%s is)", addr, current)
	}
	live, err := t.LiveNodes(ctx)
	if err != nil {
		return nil, err
	}
	var replicas []string
	for _, n := range live {
		if n.Role == RoleReplica && !n.Down {
			replicas = append(replicas, n.Addr)
		}
	}
	if len(replicas) == 0 {
		return nil, fmt.Errorf("route replication: master %s has no replica up", addr)
	}
	t.setAlias(via, addr)
	if err := t.remonitor(ctx, via, replicas); err != nil {
		return nil, fmt.Errorf("route replication of %s through %s: %w", addr, via, err)
	}
	return func(ctx context.Context) error {
		now, err := t.sentinelMaster(ctx)
		if err != nil {
			return err
		}
		if now != addr {
			// Failed over meanwhile: the Sentinels follow another master, and know the former
			// one by via, which is about to close, so they could never reconfigure it. Do what
			// they would have: every other server that answers follows the new master, and the
			// Sentinels monitor it afresh (forgetting via).
			defer t.setAlias(via, "")
			var others []string
			for _, n := range t.Info.Nodes {
				if n.Addr == now {
					continue
				}
				c := redis.NewClient(t.probeOptions(n.Addr))
				err := c.Ping(ctx).Err()
				_ = c.Close()
				if err == nil {
					others = append(others, n.Addr)
				}
			}
			return t.remonitor(ctx, now, others)
		}
		live, err := t.LiveNodes(ctx)
		if err != nil {
			return err
		}
		var replicas []string
		for _, n := range live {
			if n.Role == RoleReplica && !n.Down {
				replicas = append(replicas, n.Addr)
			}
		}
		if err := t.remonitor(ctx, addr, replicas); err != nil {
			return err
		}
		t.setAlias(via, "")
		return nil
	}, nil
}

// setAlias records that via stands for addr ("" forgets via).
func (t *Target) setAlias(via, addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if addr == "" {
		delete(t.aliases, via)
		return
	}
	if t.aliases == nil {
		t.aliases = map[string]string{}
	}
	t.aliases[via] = addr
}

// RealAddr returns the address a stands for: the master's own address for a proxy address that
// RouteReplication made it known by (until its undo), else a. A replica that follows its master
// through the proxy names the proxy's address in INFO replication.
func (t *Target) RealAddr(a string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r, ok := t.aliases[a]; ok {
		return r
	}
	return a
}

// remonitor has every Sentinel monitor master (with the topology's settings) and points every
// replica at it, then waits until the replicas are in sync and the Sentinels agree.
func (t *Target) remonitor(ctx context.Context, master string, replicas []string) error {
	host, port, _ := net.SplitHostPort(master)
	name := t.Info.MasterName
	for _, a := range t.Info.Sentinels {
		c := redis.NewSentinelClient(t.probeOptions(a))
		err := func() error {
			if err := c.Remove(ctx, name).Err(); err != nil {
				return fmt.Errorf("SENTINEL REMOVE %s: %w", name, err)
			}
			if err := c.Monitor(ctx, name, host, port, strconv.Itoa(sentinelQuorum)).Err(); err != nil {
				return fmt.Errorf("SENTINEL MONITOR %s %s: %w", name, master, err)
			}
			for _, kv := range [][2]string{
				{"auth-pass", t.Password},
				{"down-after-milliseconds", strconv.Itoa(sentinelDownAfterMs)},
				{"failover-timeout", strconv.Itoa(sentinelFailoverTimeoutMs)},
				{"parallel-syncs", "1"},
			} {
				if err := c.Set(ctx, name, kv[0], kv[1]).Err(); err != nil {
					return fmt.Errorf("SENTINEL SET %s %s: %w", name, kv[0], err)
				}
			}
			return nil
		}()
		_ = c.Close()
		if err != nil {
			return fmt.Errorf("sentinel %s: %w", a, err)
		}
	}
	for _, r := range replicas {
		c := redis.NewClient(t.probeOptions(r))
		err := c.Do(ctx, "REPLICAOF", host, port).Err()
		_ = c.Close()
		if err != nil {
			return fmt.Errorf("%s: REPLICAOF %s %s: %w", r, host, port, err)
		}
	}
	if err := waitReplicasSynced(ctx, master, replicas, t.Password); err != nil {
		return err
	}
	return waitSentinelsAgree(ctx, t.Info.Sentinels, t.Password, master, replicas)
}

// waitAnnounced polls until every node that answers names the node id by addr in CLUSTER NODES.
func (t *Target) waitAnnounced(ctx context.Context, id, addr string) error {
	for {
		last := error(nil)
		for _, n := range t.Info.Nodes {
			c := redis.NewClient(t.probeOptions(n.Addr))
			raw, err := c.Do(ctx, "CLUSTER", "NODES").Text()
			_ = c.Close()
			if err != nil {
				continue // a node that is down or paused learns it when it is back
			}
			live, err := parseLiveClusterNodes(raw)
			if err != nil {
				return fmt.Errorf("%s: %w", n.Addr, err)
			}
			for _, ln := range live {
				if ln.ID == id && ln.Addr != addr {
					last = fmt.Errorf("%s names %s by %s", n.Addr, addr, ln.Addr)
				}
			}
			if last != nil {
				break
			}
		}
		if last == nil {
			return nil
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return errors.Join(fmt.Errorf("the cluster does not name %s by its own port again: %w", addr, err), last)
		}
	}
}

// waitReplicasFollow polls until every replica follows master with its link up.
func (t *Target) waitReplicasFollow(ctx context.Context, replicas []string, master string) error {
	var last error
	for {
		last = nil
		for _, r := range replicas {
			c := redis.NewClient(t.probeOptions(r))
			info, err := c.Info(ctx, "replication").Result()
			_ = c.Close()
			if err != nil {
				last = fmt.Errorf("%s: INFO replication: %w", r, err)
				break
			}
			if got := net.JoinHostPort(infoField(info, "master_host"), infoField(info, "master_port")); got != master {
				last = fmt.Errorf("%s follows %s", r, got)
				break
			}
			if s := infoField(info, "master_link_status"); s != "up" {
				last = fmt.Errorf("%s: master_link_status:%s", r, s)
				break
			}
		}
		if last == nil {
			return nil
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return errors.Join(fmt.Errorf("replicas do not follow %s: %w", master, err), last)
		}
	}
}
