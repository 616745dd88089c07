package faults

import (
	"math"
	"time"

	"github.com/limitbench/limitbench/internal/faults/watch"
)

// Summary returns w's section of a result entry, its times in seconds from start (the start of
// the measured part), rounded to the ms. Call it after Stop.
func (w *Watcher) Summary(start time.Time) watch.Summary {
	sec := func(t time.Time) float64 {
		if t.IsZero() {
			return 0
		}
		return math.Round(t.Sub(start).Seconds()*1000) / 1000
	}
	s := watch.Summary{Polls: w.Polls(), IntervalMS: float64(w.opts.Interval) / float64(time.Millisecond)}
	for _, n := range w.nodes {
		first, last := w.First(n), w.Last(n)
		st := watch.NodeState{Node: n, RoleBefore: first.Role, RunIDBefore: first.RunID, UptimeBeforeS: first.Uptime.Seconds(),
			LastError: last.Err}
		if last.Reachable() {
			st.RoleAfter, st.RunIDAfter, st.UptimeAfterS = last.Role, last.RunID, last.Uptime.Seconds()
		}
		s.Nodes = append(s.Nodes, st)
	}
	for _, e := range w.Events() {
		s.Events = append(s.Events, watch.EventRecord{Node: e.Node, Kind: e.Kind, AfterS: sec(e.After), AtS: sec(e.At), From: e.From,
			To: e.To, Role: e.Role, StateLost: e.StateLost()})
	}
	return s
}
