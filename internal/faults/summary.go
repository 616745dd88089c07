package faults

import (
	"math"
	"time"
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

// Summary returns w's section of a result entry, its times in seconds from start (the start of
// the measured part), rounded to the ms. Call it after Stop.
func (w *Watcher) Summary(start time.Time) Summary {
	sec := func(t time.Time) float64 {
		if t.IsZero() {
			return 0
		}
		return math.Round(t.Sub(start).Seconds()*1000) / 1000
	}
	s := Summary{Polls: w.Polls(), IntervalMS: float64(w.opts.Interval) / float64(time.Millisecond)}
	for _, n := range w.nodes {
		first, last := w.First(n), w.Last(n)
		st := NodeState{Node: n, RoleBefore: first.Role, RunIDBefore: first.RunID, UptimeBeforeS: first.Uptime.Seconds(),
			LastError: last.Err}
		if last.Reachable() {
			st.RoleAfter, st.RunIDAfter, st.UptimeAfterS = last.Role, last.RunID, last.Uptime.Seconds()
		}
		s.Nodes = append(s.Nodes, st)
	}
	for _, e := range w.Events() {
		s.Events = append(s.Events, EventRecord{Node: e.Node, Kind: e.Kind, AfterS: sec(e.After), AtS: sec(e.At), From: e.From,
			To: e.To, Role: e.Role, StateLost: e.StateLost()})
	}
	return s
}
