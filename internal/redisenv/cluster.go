package redisenv

import (
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
)

// numSlots is the number of Redis Cluster hash slots.
const numSlots = 16384

// slotRanges splits the 16384 slots into n contiguous inclusive ranges of near-equal size.
func slotRanges(n int) [][2]int {
	out := make([][2]int, n)
	for i := range n {
		out[i] = [2]int{i * numSlots / n, (i+1)*numSlots/n - 1}
	}
	return out
}

// started is what a backend started: the nodes' addresses (masters first, then their replicas in
// order), their password, what to call them in errors ("nodes", "containers"), node i's log tail
// for an error, gone (nil: none) saying whether a node exited, and how to stop them all.
type started struct {
	addrs    []string
	password string
	what     string
	logs     func(i int) string
	gone     func() error
	stopAll  func(context.Context) error
	// servers are the started nodes, in addrs' order, for node control (Target.adopt).
	servers []server
}

// assemble turns the nodes a backend started into a Target described by info: on a cluster it
// joins them (joinCluster), on a single node it takes the one master; then it reads the server's
// version. On an error it stops every node and says why, with the nodes' logs.
func assemble(ctx context.Context, cfg Config, info Info, n started) (*Target, error) {
	if cfg.Topology == TopologyCluster {
		nodes, err := joinCluster(ctx, n.addrs, n.password, cfg.masters(), cfg.Replicas, n.gone)
		if err != nil {
			var logs strings.Builder
			for i := range n.addrs {
				logs.WriteString(n.logs(i))
			}
			_ = n.stopAll(context.Background())
			return nil, fmt.Errorf("%w: cluster of %d %s: %w%s", ErrUnavailable, len(n.addrs), n.what, err, logs.String())
		}
		info.Nodes = nodes
	} else {
		info.Nodes = []Node{{Addr: n.addrs[0], Role: RoleMaster}}
	}
	t := newTarget(info, "", n.password, nil, n.stopAll)
	t.adopt(n.servers)
	v, err := serverVersion(ctx, t.masters[0])
	if err != nil {
		_ = t.Stop(context.Background())
		return nil, fmt.Errorf("%w: INFO server: %w%s", ErrUnavailable, err, n.logs(0))
	}
	t.Info.Version = v
	return t, nil
}

// joinCluster turns the empty cluster-enabled servers at addrs into one cluster: the first
// masters nodes become masters, the rest replicas (replica j follows master j mod masters). It
// sets distinct config epochs, runs a full-mesh CLUSTER MEET, assigns slots with ADDSLOTSRANGE,
// attaches replicas, and returns when every node reports cluster_state:ok and all nodes agree on
// the node list, roles and slot map. gone, when not nil, reports a server that died.
func joinCluster(ctx context.Context, addrs []string, password string, masters, replicasPer int, gone func() error) ([]Node, error) {
	if len(addrs) != masters*(1+replicasPer) {
		return nil, fmt.Errorf("joinCluster: %d addresses for %d masters with %d replicas", len(addrs), masters, replicasPer)
	}
	clients := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		clients[i] = redis.NewClient(&redis.Options{Addr: a, Password: password, MaxRetries: -1,
			PoolSize: 2, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second,
			MaintNotificationsConfig: noMaintNotifications(), DisableIdentity: true})
	}
	defer func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	each := func(fn func(i int, c *redis.Client) error) error {
		errs := make([]error, len(clients))
		var wg sync.WaitGroup
		for i, c := range clients {
			wg.Go(func() {
				if err := fn(i, c); err != nil {
					errs[i] = fmt.Errorf("%s: %w", addrs[i], err)
				}
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	}

	ids := make([]string, len(addrs))
	if err := each(func(i int, c *redis.Client) error {
		id, err := c.Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			return fmt.Errorf("CLUSTER MYID: %w", err)
		}
		ids[i] = id
		// Distinct epochs avoid the epoch-collision dance that otherwise delays a stable slot map.
		if err := c.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
			return fmt.Errorf("CLUSTER SET-CONFIG-EPOCH: %w", err)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	// Full mesh: every node meets every other node.
	if err := each(func(i int, c *redis.Client) error {
		pipe := c.Pipeline()
		for j, a := range addrs {
			if j == i {
				continue
			}
			host, port, err := net.SplitHostPort(a)
			if err != nil {
				return err
			}
			pipe.Do(ctx, "CLUSTER", "MEET", host, port)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("CLUSTER MEET: %w", err)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	ranges := slotRanges(masters)
	if err := each(func(i int, c *redis.Client) error {
		if i >= masters {
			return nil
		}
		if err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", ranges[i][0], ranges[i][1]).Err(); err != nil {
			return fmt.Errorf("CLUSTER ADDSLOTSRANGE %d %d: %w", ranges[i][0], ranges[i][1], err)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	// Replicas: a node can only replicate a master it already knows.
	if err := each(func(i int, c *redis.Client) error {
		if i < masters {
			return nil
		}
		master := ids[(i-masters)%masters]
		for {
			err := c.Do(ctx, "CLUSTER", "REPLICATE", master).Err()
			if err == nil {
				return nil
			}
			if !strings.Contains(err.Error(), "Unknown node") {
				return fmt.Errorf("CLUSTER REPLICATE %s: %w", master, err)
			}
			if err := sleepCtx(ctx, 5*time.Millisecond); err != nil {
				return fmt.Errorf("CLUSTER REPLICATE %s: %w", master, err)
			}
		}
	}); err != nil {
		return nil, err
	}

	want := map[string]string{} // id -> role
	for i, id := range ids {
		want[id] = RoleMaster
		if i >= masters {
			want[id] = RoleReplica
		}
	}
	var last error
	for {
		if gone != nil {
			if err := gone(); err != nil {
				return nil, err
			}
		}
		nodes, err := clusterAgreed(ctx, clients, want)
		if err == nil {
			return nodes, nil
		}
		last = err
		if err := sleepCtx(ctx, 5*time.Millisecond); err != nil {
			return nil, fmt.Errorf("cluster not ready: %w (last: %w)", err, last)
		}
	}
}

// clusterAgreed returns the nodes when every client reports cluster_state:ok, all slots assigned,
// the expected nodes and roles, and the same view of the cluster as every other client.
func clusterAgreed(ctx context.Context, clients []*redis.Client, want map[string]string) ([]Node, error) {
	var first []Node
	var firstKey string
	for _, c := range clients {
		info, err := c.Do(ctx, "CLUSTER", "INFO").Text()
		if err != nil {
			return nil, fmt.Errorf("%s: CLUSTER INFO: %w", c.Options().Addr, err)
		}
		if s := infoField(info, "cluster_state"); s != "ok" {
			return nil, fmt.Errorf("%s: cluster_state:%s", c.Options().Addr, s)
		}
		raw, err := c.Do(ctx, "CLUSTER", "NODES").Text()
		if err != nil {
			return nil, fmt.Errorf("%s: CLUSTER NODES: %w", c.Options().Addr, err)
		}
		nodes, err := parseClusterNodes(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Options().Addr, err)
		}
		if want != nil {
			if len(nodes) != len(want) {
				return nil, fmt.Errorf("%s: knows %d nodes, want %d", c.Options().Addr, len(nodes), len(want))
			}
			for _, n := range nodes {
				if want[n.ID] != n.Role {
					return nil, fmt.Errorf("%s: node %s is %q, want %q", c.Options().Addr, n.ID, n.Role, want[n.ID])
				}
			}
		}
		key := nodesKey(nodes)
		if first == nil {
			first, firstKey = nodes, key
		} else if key != firstKey {
			return nil, fmt.Errorf("%s disagrees with %s on the cluster map", c.Options().Addr, clients[0].Options().Addr)
		}
	}
	covered := 0
	for _, n := range first {
		for _, r := range n.Slots {
			covered += r[1] - r[0] + 1
		}
	}
	if covered != numSlots {
		return nil, fmt.Errorf("%d of %d slots assigned", covered, numSlots)
	}
	return first, nil
}

// nodesKey is a canonical string of a cluster view, for comparing views.
func nodesKey(nodes []Node) string {
	var b strings.Builder
	for _, n := range nodes {
		fmt.Fprintf(&b, "%s %s %s %s %v\n", n.ID, n.Addr, n.Role, n.MasterID, n.Slots)
	}
	return b.String()
}

// parseClusterNodes parses CLUSTER NODES output into nodes: masters ordered by their first slot
// (masters without slots last), then replicas ordered by address. Nodes in handshake, failing or
// without an address make it an error: the cluster is not settled.
func parseClusterNodes(raw string) ([]Node, error) {
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
		flags := strings.Split(f[2], ",")
		n := Node{ID: f[0], Addr: addr}
		for _, fl := range flags {
			switch fl {
			case "master":
				n.Role = RoleMaster
			case "slave":
				n.Role = RoleReplica
			case "handshake", "fail", "fail?", "noaddr":
				return nil, fmt.Errorf("node %s is %s", n.ID, fl)
			}
		}
		if f[3] != "-" {
			n.MasterID = f[3]
		}
		if f[7] != "connected" {
			return nil, fmt.Errorf("node %s link is %s", n.ID, f[7])
		}
		slots, err := parseSlots(f[8:])
		if err != nil {
			return nil, err
		}
		n.Slots = slots
		nodes = append(nodes, n)
	}
	sortNodes(nodes)
	return nodes, nil
}

// parseSlots parses the slot fields of a CLUSTER NODES line ("5461", "0-5460") into inclusive
// ranges, leaving out slots being imported or migrated ("[...]").
func parseSlots(fields []string) ([][2]int, error) {
	var slots [][2]int
	for _, s := range fields {
		if strings.HasPrefix(s, "[") { // a slot being imported or migrated
			continue
		}
		lo, hi, ok := strings.Cut(s, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("CLUSTER NODES: bad slot %q", s)
		}
		b := a
		if ok {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("CLUSTER NODES: bad slot %q", s)
			}
		}
		slots = append(slots, [2]int{a, b})
	}
	return slots, nil
}

// sortNodes orders masters by first slot, then replicas by address.
func sortNodes(nodes []Node) {
	slices.SortFunc(nodes, func(a, b Node) int {
		if a.Role != b.Role {
			if a.Role == RoleMaster {
				return -1
			}
			return 1
		}
		if a.Role == RoleMaster {
			as, bs := numSlots, numSlots
			if len(a.Slots) > 0 {
				as = a.Slots[0][0]
			}
			if len(b.Slots) > 0 {
				bs = b.Slots[0][0]
			}
			if as != bs {
				return as - bs
			}
		}
		return strings.Compare(a.Addr, b.Addr)
	})
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
