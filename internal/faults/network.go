package faults

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"

	"github.com/limitbench/limitbench/internal/redisenv"
)

// Network is one Proxy in front of each node (and Sentinel) of a target, with a Dialer that
// routes a client through them, and the replication proxies between masters and their replicas.
// Its methods are safe for concurrent use; Close ends it.
type Network struct {
	mu      sync.Mutex
	proxies map[string]*Proxy // node address -> the proxy clients reach it through
	alias   map[string]string // another address of a node (its replication proxy) -> the node
	repl    map[string]*replication
	closed  bool
}

// replication is a replication proxy in place: the proxy and how to restore the direct links.
type replication struct {
	proxy *Proxy
	undo  func(context.Context) error
}

// NewNetwork starts a proxy in front of each address of addrs (loopback host:port, each once).
// On error nothing is left running.
func NewNetwork(addrs []string) (*Network, error) {
	n := &Network{proxies: map[string]*Proxy{}, alias: map[string]string{}, repl: map[string]*replication{}}
	for _, a := range addrs {
		if _, dup := n.proxies[a]; dup {
			_ = n.Close(context.Background())
			return nil, fmt.Errorf("%w: address %s given twice", ErrBadFault, a)
		}
		p, err := NewProxy(a)
		if err != nil {
			_ = n.Close(context.Background())
			return nil, err
		}
		n.proxies[a] = p
	}
	return n, nil
}

// ProxyTarget starts a Network in front of every node of t's Info.Nodes and every Sentinel.
func ProxyTarget(t *redisenv.Target) (*Network, error) {
	var addrs []string
	for _, nd := range t.Info.Nodes {
		addrs = append(addrs, nd.Addr)
	}
	return NewNetwork(append(addrs, t.Info.Sentinels...))
}

// Addrs returns the addresses the Network proxies, sorted.
func (n *Network) Addrs() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]string, 0, len(n.proxies))
	for a := range n.proxies {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

// Proxy returns the proxy that clients reach the node at addr through (addr may also be the
// node's replication proxy address).
func (n *Network) Proxy(addr string) (*Proxy, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if a, ok := n.alias[addr]; ok {
		addr = a
	}
	p, ok := n.proxies[addr]
	return p, ok
}

// Dialer returns a dial function for redisenv.ClientOptions.Dialer (and go-redis's Dialer
// options): it connects to the proxy of the node a client asks for, whatever address the
// client learned it by (the node's own, or the replication proxy address the node announces),
// so every connection of the client crosses that node's proxy. An address that is none of the
// Network's nodes is refused with an error naming it: nothing bypasses the proxies unseen.
func (n *Network) Dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		p, ok := n.Proxy(addr)
		if !ok {
			return nil, fmt.Errorf("faults: no proxy for %s: a client of the network reaches only %s", addr, strings.Join(n.Addrs(), ", "))
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", p.Addr())
	}
}

// ProxyReplication puts a proxy on the link from the master at addr to its replicas
// (redisenv's Target.RouteReplication: on a cluster the master announces the proxy's port; on
// sentinel the Sentinels and replicas know the master by the proxy's address) and returns it
// once every replica replicates through it. The Network's Dialer maps the proxy's address to the
// master's client proxy, so its clients never cross the replication proxy. Close restores the
// direct links. One master has at most one replication proxy.
func (n *Network) ProxyReplication(ctx context.Context, t *redisenv.Target, addr string) (*Proxy, error) {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil, errors.New("faults: the network is closed")
	}
	if _, ok := n.proxies[addr]; !ok {
		n.mu.Unlock()
		return nil, fmt.Errorf("%w: %s is none of the network's nodes", ErrBadFault, addr)
	}
	if r, ok := n.repl[addr]; ok {
		n.mu.Unlock()
		return r.proxy, nil
	}
	n.mu.Unlock()
	p, err := NewProxy(addr)
	if err != nil {
		return nil, err
	}
	// The alias first: clients of the network may learn the new address as soon as the master
	// announces it.
	n.mu.Lock()
	n.alias[p.Addr()] = addr
	n.mu.Unlock()
	undo, err := t.RouteReplication(ctx, addr, p.Addr())
	if err != nil {
		n.mu.Lock()
		delete(n.alias, p.Addr())
		n.mu.Unlock()
		_ = p.Close()
		return nil, err
	}
	n.mu.Lock()
	n.repl[addr] = &replication{proxy: p, undo: undo}
	n.mu.Unlock()
	return p, nil
}

// ReplicationProxy returns the replication proxy of the master at addr, if ProxyReplication put
// one in place.
func (n *Network) ReplicationProxy(addr string) (*Proxy, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	r, ok := n.repl[addr]
	if !ok {
		return nil, false
	}
	return r.proxy, true
}

// Close restores the direct replication links (each undo bounded by ctx), then closes every
// proxy (removing their faults first) and every connection through them. It returns the undo
// errors joined; it is idempotent.
func (n *Network) Close(ctx context.Context) error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	repl := n.repl
	n.repl = map[string]*replication{}
	proxies := n.proxies
	n.mu.Unlock()
	var errs []error
	for addr, r := range repl {
		// Faults come off first, so that the undo's waits cross a clean link.
		r.proxy.Clear()
		if err := r.undo(ctx); err != nil {
			errs = append(errs, fmt.Errorf("restore the replication link of %s: %w", addr, err))
		}
		_ = r.proxy.Close()
	}
	for _, p := range proxies {
		_ = p.Close()
	}
	return errors.Join(errs...)
}
