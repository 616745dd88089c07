package redisenv

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// SelectorKind says which nodes a Selector names.
type SelectorKind string

// Selector kinds.
const (
	// SelectMaster is the master of one shard.
	SelectMaster SelectorKind = "master"
	// SelectReplica is one replica of one shard's master.
	SelectReplica SelectorKind = "replica"
	// SelectMasters is every master.
	SelectMasters SelectorKind = "masters"
	// SelectNode is one node by address.
	SelectNode SelectorKind = "node"
)

// Selector names the nodes a fault acts on. Its text form, read by ParseSelector and written by
// String (and by MarshalText, so a YAML or JSON field can hold it):
//
//	master          the master of shard 0 (the first master of Info.Nodes at start)
//	master:N        the master of shard N (0-based)
//	replica         a replica of the master of shard 0
//	replica:N       a replica of the master of shard N
//	masters         every master
//	node:HOST:PORT  the node at HOST:PORT (a server or, on sentinel, a Sentinel)
//
// A shard is named by its place at start and resolved when the fault starts (Target.Select):
// on a cluster shard N is whichever node owns the first slot of the N-th master of Info.Nodes
// then, so after a failover "master:0" is the promoted replica. Single and sentinel topologies
// have shard 0 only. The zero Selector is "master".
type Selector struct {
	Kind SelectorKind
	// Shard is the shard of master and replica, 0-based.
	Shard int
	// Addr is the host:port of node.
	Addr string
}

// ParseSelector reads the text form of a Selector. Errors wrap ErrBadConfig and say what is
// accepted.
func ParseSelector(s string) (Selector, error) {
	bad := func(format string, args ...any) (Selector, error) {
		return Selector{}, fmt.Errorf("%w: node selector %q: "+format+" (want master, master:N, replica, replica:N, masters or node:HOST:PORT)",
			append([]any{ErrBadConfig, s}, args...)...)
	}
	kind, arg, hasArg := strings.Cut(strings.TrimSpace(s), ":")
	switch SelectorKind(kind) {
	case SelectMaster, SelectReplica:
		sel := Selector{Kind: SelectorKind(kind)}
		if hasArg {
			n, err := strconv.Atoi(arg)
			if err != nil || n < 0 {
				return bad("shard %q is not a number from 0", arg)
			}
			sel.Shard = n
		}
		return sel, nil
	case SelectMasters:
		if hasArg {
			return bad("masters takes no shard")
		}
		return Selector{Kind: SelectMasters}, nil
	case SelectNode:
		host, port, err := net.SplitHostPort(arg)
		if !hasArg || err != nil || host == "" {
			return bad("node needs an address HOST:PORT")
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return bad("bad port %q", port)
		}
		return Selector{Kind: SelectNode, Addr: net.JoinHostPort(host, port)}, nil
	default:
		return bad("unknown kind %q", kind)
	}
}

// String returns the text form ParseSelector reads.
func (s Selector) String() string {
	switch s.Kind {
	case SelectMaster, "":
		if s.Shard == 0 {
			return string(SelectMaster)
		}
		return fmt.Sprintf("%s:%d", SelectMaster, s.Shard)
	case SelectReplica:
		if s.Shard == 0 {
			return string(SelectReplica)
		}
		return fmt.Sprintf("%s:%d", SelectReplica, s.Shard)
	case SelectNode:
		return string(SelectNode) + ":" + s.Addr
	default:
		return string(s.Kind)
	}
}

// MarshalText implements encoding.TextMarshaler with String.
func (s Selector) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseSelector.
func (s *Selector) UnmarshalText(b []byte) error {
	sel, err := ParseSelector(string(b))
	if err != nil {
		return err
	}
	*s = sel
	return nil
}

// Shards returns the number of shards at start: the masters of Info.Nodes.
func (t *Target) Shards() int { return len(t.Masters()) }

// Select returns the addresses of the nodes sel names now (LiveNodes), in the order of
// Info.Nodes. A shard beyond Shards, or a node address that is none of the target's nodes or
// Sentinels, is an error wrapping ErrBadConfig. A replica is the first replica, by address, of
// the shard's master that is not Down; a shard without one is an error. A master that is down
// (killed, paused) is still its shard's master until a replica takes over, so a restart can
// name it.
func (t *Target) Select(ctx context.Context, sel Selector) ([]string, error) {
	if sel.Kind == "" {
		sel.Kind = SelectMaster
	}
	if sel.Kind == SelectNode {
		if !t.knows(sel.Addr) {
			return nil, fmt.Errorf("%w: node %s is not one of this target's nodes", ErrBadConfig, sel.Addr)
		}
		return []string{sel.Addr}, nil
	}
	if sel.Kind != SelectMaster && sel.Kind != SelectReplica && sel.Kind != SelectMasters {
		return nil, fmt.Errorf("%w: unknown node selector kind %q", ErrBadConfig, sel.Kind)
	}
	if sel.Kind != SelectMasters && (sel.Shard < 0 || sel.Shard >= t.Shards()) {
		return nil, fmt.Errorf("%w: %s: this target has %d shard(s), numbered from 0", ErrBadConfig, sel, t.Shards())
	}
	live, err := t.LiveNodes(ctx)
	if err != nil {
		return nil, fmt.Errorf("select %s: %w", sel, err)
	}
	var masters []Node // the master of each shard, in shard order
	for i, m := range t.startMasters() {
		owner, ok := shardMaster(live, m, t.IsCluster())
		if !ok {
			return nil, fmt.Errorf("select %s: no node serves shard %d now", sel, i)
		}
		masters = append(masters, owner)
	}
	switch sel.Kind {
	case SelectMasters:
		out := make([]string, len(masters))
		for i, m := range masters {
			out[i] = m.Addr
		}
		return out, nil
	case SelectMaster:
		return []string{masters[sel.Shard].Addr}, nil
	default:
		m := masters[sel.Shard]
		for _, n := range live {
			if n.Role != RoleReplica || n.Down {
				continue
			}
			if (t.IsCluster() && n.MasterID == m.ID) || !t.IsCluster() {
				return []string{n.Addr}, nil
			}
		}
		return nil, fmt.Errorf("select %s: the master of shard %d (%s) has no replica up", sel, sel.Shard, m.Addr)
	}
}

// startMasters returns the masters of Info.Nodes, in order.
func (t *Target) startMasters() []Node {
	var out []Node
	for _, n := range t.Info.Nodes {
		if n.Role == RoleMaster {
			out = append(out, n)
		}
	}
	return out
}

// shardMaster returns the live node that serves the shard start named: on a cluster the master
// that owns start's first slot, else the one master.
func shardMaster(live []Node, start Node, cluster bool) (Node, bool) {
	if cluster && len(start.Slots) > 0 {
		slot := start.Slots[0][0]
		for _, n := range live {
			if n.Role == RoleMaster && slotIn(n.Slots, slot) {
				return n, true
			}
		}
		return Node{}, false
	}
	for _, n := range live {
		if n.Role == RoleMaster {
			return n, true
		}
	}
	return Node{}, false
}

// knows reports whether addr is one of the target's nodes or Sentinels.
func (t *Target) knows(addr string) bool {
	if slices.Contains(t.Info.Sentinels, addr) {
		return true
	}
	return slices.ContainsFunc(t.Info.Nodes, func(n Node) bool { return n.Addr == addr })
}
