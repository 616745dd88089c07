// Package watch holds what the node watch (faults.Watcher) sees, as plain values: the kinds of
// change it reports (EventKind) and the section of a result entry that records a watch
// (Summary: each node before and after a measurement, and every event in between).
//
// It is split from package faults, which polls the nodes, so that the result schema (package
// result) can hold a watch's record without linking faults' network proxies, redisenv's
// environments and their container libraries: it imports nothing of the project.
package watch

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
	// EventEvicted: the node evicted keys to stay under maxmemory (INFO stats evicted_keys
	// went up; From: how many, To: the maxmemory-policy). The limiters' keys may be among them:
	// their state may be gone, as after a flush.
	EventEvicted EventKind = "evicted"
	// EventFlushed: someone ran FLUSHALL, FLUSHDB or SWAPDB on the node (From, To: the command
	// and how many calls). Its keys, the limiters' state among them, may be gone.
	EventFlushed EventKind = "flushed"
	// EventScriptsFlushed: someone ran SCRIPT FLUSH (From, To: the command and how many calls):
	// the script cache is empty, and a script run by its digest answers NOSCRIPT until loaded
	// again. Keys are kept.
	EventScriptsFlushed EventKind = "scripts-flushed"
	// EventClientsKilled: someone ran CLIENT KILL (From, To: the command and how many calls):
	// connections may have been closed with requests in flight. Keys are kept.
	EventClientsKilled EventKind = "clients-killed"
)

// Summary is the node watch's section of a result entry: each node as the watch found it when
// the measurement began and left it when it ended, and every event seen in between. Times are
// seconds from the start of the measured part (negative during preparation and warmup).
type Summary struct {
	// Nodes lists every node watched, in the order of the target's nodes.
	Nodes []NodeState `json:"nodes"`
	// Events lists what changed, ordered by when it was seen.
	Events []EventRecord `json:"events,omitempty"`
	// Polls counts the polls made, all nodes together; IntervalMS is the time between two polls
	// of one node.
	Polls      int     `json:"polls"`
	IntervalMS float64 `json:"interval_ms"`
}

// NodeState is one node before and after a measurement.
type NodeState struct {
	Node string `json:"node"`
	// RoleBefore and RoleAfter are master or replica; "" when the node never answered.
	RoleBefore string `json:"role_before"`
	RoleAfter  string `json:"role_after"`
	// RunIDBefore and RunIDAfter are the server's run ids: they differ when it restarted.
	RunIDBefore string `json:"run_id_before"`
	RunIDAfter  string `json:"run_id_after"`
	// UptimeBeforeS and UptimeAfterS are uptime_in_seconds.
	UptimeBeforeS float64 `json:"uptime_before_s"`
	UptimeAfterS  float64 `json:"uptime_after_s"`
	// LastError is why the last poll failed; "" when the node answered it.
	LastError string `json:"last_error,omitempty"`
}

// EventRecord is an Event in a result: it happened in (AfterS, AtS].
type EventRecord struct {
	Node   string    `json:"node"`
	Kind   EventKind `json:"kind"`
	AfterS float64   `json:"after_s"`
	AtS    float64   `json:"at_s"`
	From   string    `json:"from,omitempty"`
	To     string    `json:"to,omitempty"`
	Role   string    `json:"role,omitempty"`
	// StateLost is Event.StateLost.
	StateLost bool `json:"state_lost,omitempty"`
}
