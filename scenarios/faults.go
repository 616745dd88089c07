package scenarios

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/limitbench/limitbench/internal/problem"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/trace"
	"github.com/limitbench/limitbench/result"
)

// FaultKind names what a scheduled fault does.
type FaultKind string

// Fault kinds. The first seven act on servers limitbench started (process or container backend);
// the last three on the network between the load generator and Redis, and are the only ones
// allowed on an external Redis.
const (
	// FaultKill kills the targeted servers (SIGKILL, or docker kill) and leaves them dead.
	FaultKill FaultKind = "kill"
	// FaultRestart kills the targeted servers and starts them again on the same port: their
	// data is gone unless persistence keeps it.
	FaultRestart FaultKind = "restart"
	// FaultPause freezes the targeted servers (SIGSTOP, or docker pause) for Duration, then
	// resumes them: connections stay open, nothing is answered meanwhile.
	FaultPause FaultKind = "pause"
	// FaultFailover promotes a replica of the targeted master (cluster or sentinel), in Mode;
	// target masters fails every shard over at once (on a cluster in mode takeover only).
	FaultFailover FaultKind = "failover"
	// FaultFlushScripts runs SCRIPT FLUSH on the targeted servers: the next EVALSHA meets
	// NOSCRIPT.
	FaultFlushScripts FaultKind = "flush-scripts"
	// FaultClientKill runs CLIENT KILL TYPE normal on the targeted servers: every client
	// connection is closed.
	FaultClientKill FaultKind = "client-kill"
	// FaultEvict forces every key out of the targeted masters through maxmemory, as a server
	// short of memory does: it sets maxmemory-policy allkeys-random and maxmemory 1 byte, lets
	// the server evict until it holds no key (at most 2 s), then puts both settings back. The
	// limiter's state is gone, as after a restart, but the server, its connections and its
	// scripts stay; requests that write meanwhile are refused (OOM).
	FaultEvict FaultKind = "evict"
	// FaultLatency delays every reply from the targeted nodes by Latency ± Jitter for Duration.
	FaultLatency FaultKind = "latency"
	// FaultReset resets every connection to the targeted nodes that carries data during
	// Duration.
	FaultReset FaultKind = "reset"
	// FaultBlackhole holds all traffic to and from the targeted nodes for Duration, then
	// releases it (or, with Drop, drops it and closes the connections).
	FaultBlackhole FaultKind = "blackhole"
)

// FaultKinds lists every kind, in the order of the package doc.
var FaultKinds = []FaultKind{FaultKill, FaultRestart, FaultPause, FaultFailover, FaultFlushScripts,
	FaultClientKill, FaultEvict, FaultLatency, FaultReset, FaultBlackhole}

// LosesState reports whether k takes the limiter's state away by itself: kill, restart, failover
// (a promoted replica lacks the last writes) and evict.
func (k FaultKind) LosesState() bool {
	return k == FaultKill || k == FaultRestart || k == FaultFailover || k == FaultEvict
}

// Network reports whether k acts on the network between the load generator and Redis (through
// a proxy in front of each node) rather than on a server.
func (k FaultKind) Network() bool {
	return k == FaultLatency || k == FaultReset || k == FaultBlackhole
}

// FaultLink names the link a network fault acts on.
type FaultLink string

// Links of a network fault.
const (
	// LinkClient is the default (""): the link between the load generator and the targeted
	// nodes (a proxy in front of each node, which the load's clients dial).
	LinkClient FaultLink = ""
	// LinkReplication is the link from each targeted master to its replicas (a proxy that the
	// master is announced by, so that its replicas, and on sentinel the Sentinels, reach it
	// through it; faults.Network.ProxyReplication). Its target names masters (master, master:N,
	// masters); the load's clients never cross it. A latency fault there makes the replicas
	// lag by about the latency (the replication stream is delayed towards the replicas), a
	// blackhole stops replication for the duration, a reset breaks the link (the replicas
	// reconnect and resync partially).
	LinkReplication FaultLink = "replication"
)

// String returns "client" or "replication".
func (l FaultLink) String() string {
	if l == LinkClient {
		return "client"
	}
	return string(l)
}

// Lasts reports whether k has a duration: pause and the network faults. The others act once.
func (k FaultKind) Lasts() bool { return k == FaultPause || k.Network() }

// Fault is one entry of a scenario's faults list: what to break, where, when and for how long.
type Fault struct {
	// At is when it starts, from the start of the measured part (after the warmup); >= 0, and
	// At + Duration at most the scenario's duration.
	At   time.Duration
	Kind FaultKind
	// Target names the nodes: master (default), master:N, replica, replica:N, masters,
	// node:HOST:PORT (redisenv.Selector), resolved when the fault starts.
	Target redisenv.Selector
	// Duration is how long pause and network faults last (required for them, > 0); the others
	// act once and take none.
	Duration time.Duration
	// Recovery is how long after the fault ends its effects are still its own: violations,
	// unknown outcomes and errors until then are attributed to it. In a file, default: the limit's window
	// (a window that began before the fault ended reaches that far). >= 0.
	Recovery time.Duration
	// Latency and Jitter, for latency only: whole milliseconds, Latency > 0, 0 <= Jitter <=
	// Latency.
	Latency, Jitter time.Duration
	// Drop, for blackhole only: drop the held traffic and close the connections at the end
	// instead of releasing it.
	Drop bool
	// Mode, for failover only: "" (coordinated), force, takeover (cluster) or kill (see
	// redisenv.FailoverMode).
	Mode redisenv.FailoverMode
	// Link, for network faults only: which link the fault acts on, LinkClient (the zero value,
	// "client" in a file) or LinkReplication ("replication": from each targeted master to its
	// replicas; needs replicas, a master target and a server limitbench started).
	Link FaultLink
}

// Name describes f in a few words: "restart master at 2s", "latency 50ms±10ms masters at 1s
// for 2s", "latency 300ms replication link of master:0 at 1s for 2s".
func (f Fault) Name() string {
	s := string(f.Kind)
	if f.Kind == FaultLatency {
		s += " " + f.Latency.String()
		if f.Jitter > 0 {
			s += "±" + f.Jitter.String()
		}
	}
	if f.Kind == FaultFailover && f.Mode != "" {
		s += " (" + string(f.Mode) + ")"
	}
	if f.Kind == FaultBlackhole && f.Drop {
		s += " (drop)"
	}
	if f.Link == LinkReplication {
		s += " replication link of"
	}
	s += " " + f.Target.String() + " at " + f.At.String()
	if f.Duration > 0 {
		s += " for " + f.Duration.String()
	}
	return s
}

// Window returns when f's effects are its own, from the start of the measured part: [At, At +
// Duration + Recovery]. The injector records when it actually acted; this is the plan.
func (f Fault) Window() (from, to time.Duration) { return f.At, f.At + f.Duration + f.Recovery }

// faultFields are the fields of a faults entry.
var faultFields = []string{"at", "kind", "target", "duration", "recovery", "latency", "jitter", "drop", "mode", "link"}

// faults decodes the faults list; an entry without recovery takes the limit's window, filled in
// by the validation (the window may be given after the faults).
func (d *decoder) faults(n *yaml.Node) []Fault {
	var out []Fault
	for i, it := range d.list(n, "faults", "[{at: 2s, kind: restart, target: master}]") {
		f := fmt.Sprintf("faults[%d]", i)
		m := d.mapping(it, f, faultFields)
		ft := Fault{Recovery: -1}
		set(&ft.At, m["at"], f+".at", d.duration)
		if v := m["kind"]; v != nil {
			if k, ok := d.str(v, f+".kind"); ok {
				ft.Kind = FaultKind(k)
			}
		}
		if v := m["target"]; v != nil {
			if t, ok := d.str(v, f+".target"); ok {
				sel, err := redisenv.ParseSelector(t)
				if err != nil {
					d.fail(v, f+".target", "%q: want master, master:N, replica, replica:N, masters or node:HOST:PORT", t)
				}
				ft.Target = sel
			}
		}
		set(&ft.Duration, m["duration"], f+".duration", d.duration)
		set(&ft.Recovery, m["recovery"], f+".recovery", d.duration)
		set(&ft.Latency, m["latency"], f+".latency", d.duration)
		set(&ft.Jitter, m["jitter"], f+".jitter", d.duration)
		set(&ft.Drop, m["drop"], f+".drop", d.bool)
		if v := m["mode"]; v != nil {
			if s, ok := d.str(v, f+".mode"); ok {
				if s == "default" {
					s = ""
				}
				ft.Mode = redisenv.FailoverMode(s)
			}
		}
		if v := m["link"]; v != nil {
			if s, ok := d.str(v, f+".link"); ok {
				if s == "client" {
					s = ""
				}
				ft.Link = FaultLink(s)
			}
		}
		if m != nil {
			for _, req := range []string{"at", "kind"} {
				if m[req] == nil {
					d.fail(it, f+"."+req, "missing: every fault needs at (when) and kind (what)")
				}
			}
		}
		out = append(out, ft)
	}
	return out
}

// faults checks the faults list, persistence and replicas.
func (c *checker) faults() {
	s := c.s
	c.faultThresholds()
	c.faultOverlaps()
	if s.Replicas < 0 || s.Replicas > 5 {
		c.add("replicas", "must be between 0 and 5 (replicas per master), got %d", s.Replicas)
	}
	switch s.Persistence {
	case redisenv.PersistenceNone, redisenv.PersistenceAOFEverySec, redisenv.PersistenceAOFAlways:
	default:
		c.add("persistence", "unknown persistence %q; use none, aof-everysec or aof-always", s.Persistence)
	}
	for i := range s.Faults {
		ft := &s.Faults[i]
		f := fmt.Sprintf("faults[%d]", i)
		if ft.Recovery < 0 {
			if c.s.present(f + ".recovery") {
				c.add(f+".recovery", "must be >= 0, got %s", ft.Recovery)
			}
			ft.Recovery = s.Limit.Window
		}
		known := false
		for _, k := range FaultKinds {
			known = known || ft.Kind == k
		}
		if !known {
			c.add(f+".kind", "unknown fault kind %q; use kill, restart, pause, failover, flush-scripts, client-kill, evict, latency, reset or blackhole", ft.Kind)
			continue
		}
		if ft.At < 0 {
			c.add(f+".at", "must be >= 0 (from the start of the measured part), got %s", ft.At)
		}
		switch {
		case ft.Kind.Lasts() && ft.Duration <= 0:
			c.add(f+".duration", "%s needs a duration > 0, got %s", ft.Kind, ft.Duration)
		case !ft.Kind.Lasts() && c.s.present(f+".duration"):
			c.add(f+".duration", "%s acts once and takes no duration", ft.Kind)
		case ft.At >= 0 && ft.At+ft.Duration > s.Duration:
			c.add(f+".at", "the fault would end at %s, after the measured part (duration %s)", ft.At+ft.Duration, s.Duration)
		}
		if ft.Kind == FaultLatency {
			if ft.Latency <= 0 || ft.Latency%time.Millisecond != 0 {
				c.add(f+".latency", "latency needs a positive whole number of milliseconds, got %s", ft.Latency)
			} else if ft.Jitter < 0 || ft.Jitter%time.Millisecond != 0 || ft.Jitter > ft.Latency {
				c.add(f+".jitter", "must be whole milliseconds from 0 to the latency (%s), got %s", ft.Latency, ft.Jitter)
			}
		} else {
			for _, fld := range []string{"latency", "jitter"} {
				if c.s.present(f + "." + fld) {
					c.add(f+"."+fld, "only for kind latency, not %s", ft.Kind)
				}
			}
		}
		if ft.Kind != FaultBlackhole && c.s.present(f+".drop") {
			c.add(f+".drop", "only for kind blackhole, not %s", ft.Kind)
		}
		if ft.Kind == FaultFailover {
			switch ft.Mode {
			case redisenv.FailoverCoordinated, redisenv.FailoverForce, redisenv.FailoverTakeover, redisenv.FailoverKill:
			default:
				c.add(f+".mode", "unknown failover mode %q; use default, force, takeover or kill", ft.Mode)
			}
		} else if c.s.present(f + ".mode") {
			c.add(f+".mode", "only for kind failover, not %s", ft.Kind)
		}
		if why, ok := mastersOnly[ft.Kind]; ok && ft.Target.Kind != redisenv.SelectMaster && ft.Target.Kind != redisenv.SelectMasters && ft.Target.Kind != "" {
			c.add(f+".target", "%s acts on masters (master, master:N or masters%s), not %s", ft.Kind, why, ft.Target)
		}
		switch {
		case ft.Link != LinkClient && ft.Link != LinkReplication:
			c.add(f+".link", "unknown link %q; use client (between the load and Redis) or replication (from a master to its replicas)", ft.Link)
		case !ft.Kind.Network() && c.s.present(f+".link"):
			c.add(f+".link", "only for the network faults (latency, reset, blackhole), not %s", ft.Kind)
		case ft.Link == LinkReplication && ft.Target.Kind != "" && ft.Target.Kind != redisenv.SelectMaster && ft.Target.Kind != redisenv.SelectMasters:
			c.add(f+".target", "the replication link is named by its master (master, master:N or masters), not %s", ft.Target)
		}
	}
}

// mastersOnly holds the kinds that act on masters only, with why when it is not plain.
var mastersOnly = map[FaultKind]string{FaultFailover: "", FaultEvict: "; a replica ignores maxmemory"}

// faultOverlaps refuses a fault on a server (not a network fault) that may act on a node an
// earlier one still acts on, each acting during [At, At + Duration]: the first's end would undo
// the second (a resume ends both pauses; a restart during a pause starts a server the pause then
// resumes) while the result records both as scheduled. Network faults may overlap anything:
// each is a fault of its own on the proxy, taken off alone, and a latency on the replication
// link during a failover is what failover.yaml measures. The problem names the later fault's
// line.
func (c *checker) faultOverlaps() {
	fs := c.s.Faults
	for j := range fs {
		for i := range j {
			a, b := fs[i], fs[j]
			if a.Kind.Network() || b.Kind.Network() || !mayShareNode(a.Target, b.Target) ||
				b.At > a.At+a.Duration || a.At > b.At+b.Duration {
				continue
			}
			c.add(fmt.Sprintf("faults[%d].at", j), "%s overlaps faults[%d] (%s) on %s: the first's end would undo the second; give them times that do not overlap, or targets that do not share a node",
				b.Name(), i, a.Name(), sharedNode(a.Target, b.Target))
		}
	}
}

// mayShareNode reports whether a and b may name one node when the faults start: the same shard's
// master (masters names every master), the same shard's replica, or an address (node:) that may
// be any of them.
func mayShareNode(a, b redisenv.Selector) bool {
	kind := func(s redisenv.Selector) redisenv.SelectorKind {
		if s.Kind == "" {
			return redisenv.SelectMaster
		}
		return s.Kind
	}
	ka, kb := kind(a), kind(b)
	switch {
	case ka == redisenv.SelectNode && kb == redisenv.SelectNode:
		return a.Addr == b.Addr
	case ka == redisenv.SelectNode || kb == redisenv.SelectNode:
		return true
	case ka == redisenv.SelectMasters || kb == redisenv.SelectMasters:
		return ka != redisenv.SelectReplica && kb != redisenv.SelectReplica
	}
	return ka == kb && a.Shard == b.Shard
}

// sharedNode words the node a and b may share, for a message.
func sharedNode(a, b redisenv.Selector) string {
	if a.String() == b.String() {
		return "the same node (" + a.String() + ")"
	}
	return "a node both " + a.String() + " and " + b.String() + " may name"
}

// faultThresholds refuses a fault_excess threshold in a scenario without faults.
func (c *checker) faultThresholds() {
	if len(c.s.Faults) > 0 {
		return
	}
	for i, t := range c.s.Thresholds {
		if t.Metric == result.FaultExcess {
			c.add(fmt.Sprintf("thresholds[%d]", i), "fault_excess bounds what the scenario's faults cost, and it has none (add faults)")
		}
	}
}

// CheckEnvironment reports, as problems of s's file, the faults and persistence that env cannot
// carry out in topology: on an external Redis only network faults on the client link (never
// kill, pause, flush or reroute a server limitbench did not start) and no persistence; a
// failover needs a replica (cluster with replicas, or sentinel); a replica target and the
// replication link too. nil when everything can run.
func (s *Scenario) CheckEnvironment(env redisenv.Config, topology redisenv.Topology) error {
	var probs []problem.Problem
	add := func(field, format string, a ...any) {
		probs = append(probs, s.place(problem.Problem{Field: field, Msg: fmt.Sprintf(format, a...)}))
	}
	external := env.Backend == redisenv.BackendExternal
	if external && s.Persistence != redisenv.PersistenceNone && s.Persistence != "" {
		add("persistence", "applies to servers limitbench starts, not to an external Redis")
	}
	replicas := env.Replicas > 0 || (s.Replicas > 0 && !external) || topology == redisenv.TopologySentinel
	for i, ft := range s.Faults {
		f := fmt.Sprintf("faults[%d]", i)
		switch {
		case external && !ft.Kind.Network():
			add(f+".kind", "%s acts on a server limitbench started; on an external Redis only latency, reset and blackhole are allowed", ft.Kind)
		case external && ft.Link == LinkReplication:
			add(f+".link", "the replication link is rerouted through a proxy on servers limitbench started; on an external Redis only the client link is allowed")
		case ft.Link == LinkReplication && !replicas:
			add(f+".link", "the replication link needs a replica: topology sentinel, or cluster with replicas: N (or --replicas) (topology %s here)", topology)
		case ft.Kind == FaultFailover && !replicas:
			add(f+".kind", "failover needs a replica: topology sentinel, or cluster with replicas: N (or --replicas) (topology %s here)", topology)
		case ft.Target.Kind == redisenv.SelectReplica && !replicas:
			add(f+".target", "%s: topology %s has no replica here (use topology sentinel, or cluster with replicas: N or --replicas)", ft.Target, topology)
		case ft.Kind == FaultFailover && ft.Target.Kind == redisenv.SelectMasters && topology == redisenv.TopologyCluster &&
			ft.Mode != redisenv.FailoverTakeover:
			add(f+".mode", "a failover of every master at once needs mode takeover on a cluster (the other modes need the masters' votes, and a master votes once per epoch; kill would leave no majority)")
		case ft.Target.Shard > 0 && topology != redisenv.TopologyCluster:
			add(f+".target", "%s: topology %s has shard 0 only", ft.Target, topology)
		}
	}
	return errorsOf(probs)
}

// CheckTargets reports, as problems of s's file, the faults whose target names no node of tgt: a
// master:N or replica:N beyond its shards, a node:HOST:PORT that is none of its servers or
// Sentinels. The environment decides both (how many masters it has, which addresses it holds), so
// a run calls it once the environment is up, before the first measurement; the message says so.
// nil when every target names a node.
func (s *Scenario) CheckTargets(tgt *redisenv.Target) error {
	const when = "; fault targets are checked once the environment is up, before the first measurement"
	shards := tgt.Shards()
	var addrs []string
	for _, n := range tgt.Info.Nodes {
		addrs = append(addrs, n.Addr)
	}
	addrs = append(addrs, tgt.Info.Sentinels...)
	var probs []problem.Problem
	for i, ft := range s.Faults {
		sel, msg := ft.Target, ""
		switch {
		case sel.Kind != redisenv.SelectNode && sel.Kind != redisenv.SelectMasters && sel.Shard >= shards:
			msg = fmt.Sprintf("%s: the %s environment has %d shard(s), master:0 to master:%d", sel, tgt.Info.Topology, shards, shards-1)
		case sel.Kind == redisenv.SelectNode && !slices.Contains(addrs, sel.Addr):
			msg = fmt.Sprintf("%s: no server or Sentinel of the %s environment is at %s (they are at %s)", sel, tgt.Info.Topology,
				sel.Addr, strings.Join(addrs, ", "))
		default:
			continue
		}
		probs = append(probs, s.place(problem.Problem{Field: fmt.Sprintf("faults[%d].target", i), Msg: msg + when}))
	}
	return errorsOf(probs)
}

// NemesisKinds are the kinds a schedule's faults may have (trace.Fault, a hunt's nemesis): those
// that act on the master of a server limitbench started and leave it serving afterwards, so that
// a trial goes on after them. Kill is not among them (the master stays dead), nor are latency
// and reset, whose settings a schedule does not carry.
var NemesisKinds = []FaultKind{FaultRestart, FaultPause, FaultFailover, FaultFlushScripts, FaultClientKill, FaultEvict,
	FaultBlackhole}

// FaultsOf returns the fault schedule of t's faults (trace.Fault): each at its offset from the
// start of the measured part, on the master of the first shard, with the given recovery (a
// scenario's default is the limit's window). Every kind must be one of NemesisKinds.
func FaultsOf(t *trace.Trace, recovery time.Duration) ([]Fault, error) {
	var out []Fault
	for i, f := range t.Faults {
		k := FaultKind(f.Kind)
		if !slices.Contains(NemesisKinds, k) {
			return nil, fmt.Errorf("fault %d of the schedule: kind %q is not one a schedule may place (%s)", i, f.Kind, NemesisNames())
		}
		sf := Fault{At: f.At, Kind: k, Target: redisenv.Selector{Kind: redisenv.SelectMaster}, Recovery: recovery}
		if k.Lasts() {
			if f.Duration <= 0 {
				return nil, fmt.Errorf("fault %d of the schedule: %s needs a duration above 0", i, f.Kind)
			}
			sf.Duration = f.Duration
		}
		out = append(out, sf)
	}
	return out, nil
}

// NemesisNames lists NemesisKinds, comma separated.
func NemesisNames() string {
	names := make([]string, len(NemesisKinds))
	for i, k := range NemesisKinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}
