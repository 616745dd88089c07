package faults

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

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
	// EvictedKeys is INFO stats evicted_keys: how many keys the server evicted since it started
	// (or since CONFIG RESETSTAT); 0 when INFO stats was not read.
	EvictedKeys int64
	// MaxmemoryPolicy is INFO memory maxmemory_policy ("allkeys-lru"); "" when not read.
	MaxmemoryPolicy string
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

// ParseSnapshot reads the text of INFO server and INFO replication, and of INFO stats, memory and
// commandstats when read (in any order, in one string), that node answered at at. It fails when run_id or role is missing or a number is malformed.
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
	s.EvictedKeys = num("evicted_keys")
	s.MaxmemoryPolicy = fields["maxmemory_policy"]
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
	case watch.EventEvicted:
		return n + " evicted " + e.From + " keys (maxmemory-policy " + e.To + "): the limiter's keys may be among them"
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
// flushed, evicting keys (the limiter's may be among them), or a replica promoted (it has only the writes that reached it before); and a node
// that answers for the first time after the watch began (Role ""), since a restart before its
// first answer could not be seen. Nothing else changes the state clients see: a pause, an outage
// that ends with the same run id, a script flush, killed clients, a replica's restart or link.
func (e Event) StateLost() bool {
	switch e.Kind {
	case watch.EventRestarted, watch.EventFlushed, watch.EventEvicted:
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
// offset-back, evicted, then flushed, scripts-flushed and clients-killed. prev is the poll before cur and
// up the last poll before cur in which the node answered (equal to prev when prev answered);
// either is the zero Snapshot when there was none. Reachability compares cur with prev;
// everything else compares cur with up, so a restart across an outage is seen, and dated after
// up.Sent. A command or eviction counter that went down (CONFIG RESETSTAT, or a restart) only starts a new
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
	if !restarted && cur.EvictedKeys > up.EvictedKeys {
		ev(watch.EventEvicted, up.Sent, strconv.FormatInt(cur.EvictedKeys-up.EvictedKeys, 10), cur.MaxmemoryPolicy, role)
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
