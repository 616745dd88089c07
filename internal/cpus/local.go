package cpus

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/limitbench/limitbench/internal/redisenv"
)

// localServers returns how many redis-server processes the environment cfg gives for the largest
// of topologies run on this machine, and where, in words for the note: the servers a started
// backend starts, or the seeds of an external target that are on this machine (localAddr), each
// counted as one server. 0 means Redis runs elsewhere; where then says why.
func localServers(cfg redisenv.Config, topologies []redisenv.Topology, ifaces func() ([]net.Addr, error)) (int, string) {
	if cfg.Backend == redisenv.BackendExternal {
		seeds, err := cfg.Seeds()
		if err != nil {
			return 0, "the external target's address is unusable"
		}
		var local, remote []string
		seen := map[string]bool{}
		for _, s := range seeds {
			if seen[s] {
				continue
			}
			seen[s] = true
			if ok, why := localAddr(s, ifaces); ok {
				local = append(local, s+" ("+why+")")
			} else {
				remote = append(remote, s)
			}
		}
		if len(local) == 0 {
			return 0, "Redis at " + strings.Join(remote, ", ") + " is not on this machine"
		}
		return len(local), fmt.Sprintf("%d redis-server(s) on this machine at %s", len(local), strings.Join(local, ", "))
	}
	n := 1
	for _, t := range topologies {
		if t == redisenv.TopologyCluster {
			masters := cfg.Masters
			if masters == 0 {
				masters = 3
			}
			n = max(n, masters*(1+cfg.Replicas))
		}
	}
	return n, fmt.Sprintf("%d local redis-server(s)", n)
}

// localAddr reports whether addr, a server's host:port (or a unix socket's path), is on this
// machine, and why: a loopback address (127.0.0.0/8, ::1), an address of one of this machine's
// network interfaces (ifaces; nil or failing: none counted), a name reserved for the loopback
// (localhost and *.localhost, RFC 6761: such a name is never looked up), or a unix socket. Any
// other name is not looked up, since only a DNS server could answer, and counts as another
// machine.
func localAddr(addr string, ifaces func() ([]net.Addr, error)) (bool, string) {
	if strings.HasPrefix(addr, "/") || strings.HasPrefix(addr, "unix:") {
		return true, "a unix socket"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true, "localhost"
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false, ""
	}
	ip = ip.Unmap().WithZone("")
	if ip.IsLoopback() {
		return true, "a loopback address"
	}
	if ifaces == nil {
		return false, ""
	}
	as, err := ifaces()
	if err != nil {
		return false, ""
	}
	for _, a := range as {
		var own netip.Addr
		switch a := a.(type) {
		case *net.IPNet:
			own, _ = netip.AddrFromSlice(a.IP)
		case *net.IPAddr:
			own, _ = netip.AddrFromSlice(a.IP)
		}
		if own.IsValid() && own.Unmap() == ip {
			return true, "an address of this machine"
		}
	}
	return false, ""
}
