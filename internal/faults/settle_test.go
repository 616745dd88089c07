package faults

import (
	"testing"
	"time"

	"github.com/limitbench/limitbench/internal/redisenv"
)

// TestSettled: replication is at rest when no more nodes than the topology's masters act as
// masters and every replica's link to an answering master is up; a node that does not answer is
// left out, and a poll begun before the wait does not count.
func TestSettled(t *testing.T) {
	since := time.Unix(1000, 0)
	after, before := since.Add(time.Millisecond), since.Add(-time.Millisecond)
	master := func(n string) Snapshot { return Snapshot{Node: n, Sent: after, Role: redisenv.RoleMaster} }
	replica := func(n, of string, up bool) Snapshot {
		return Snapshot{Node: n, Sent: after, Role: redisenv.RoleReplica, MasterAddr: of, LinkUp: up}
	}
	down := func(n string) Snapshot { return Snapshot{Node: n, Sent: after, Err: "connection refused"} }
	for _, c := range []struct {
		name    string
		masters int
		polls   []Snapshot
		want    bool
	}{
		{"master and replica in sync", 1, []Snapshot{master("a"), replica("b", "a", true)}, true},
		{"promoted replica, former master not yet demoted", 1, []Snapshot{master("a"), master("b")}, false},
		{"former master demoted, still syncing", 1, []Snapshot{replica("a", "b", false), master("b")}, false},
		{"former master demoted and in sync", 1, []Snapshot{replica("a", "b", true), master("b")}, true},
		{"replica of a node that is not a master", 1, []Snapshot{master("a"), replica("b", "c", true), replica("c", "a", true)}, false},
		{"killed master, no replica left: nothing to wait for", 1, []Snapshot{down("a")}, true},
		{"killed master, replica promoted", 1, []Snapshot{down("a"), master("b")}, true},
		{"killed master, replica still following it", 1, []Snapshot{down("a"), replica("b", "a", false)}, false},
		{"cluster of two shards", 2, []Snapshot{master("a"), master("b"), replica("c", "a", true), replica("d", "b", true)}, true},
		{"poll from before the wait", 1, []Snapshot{master("a"), {Node: "b", Sent: before, Role: redisenv.RoleReplica, MasterAddr: "a", LinkUp: true}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := &Watcher{last: map[string]Snapshot{}}
			for _, s := range c.polls {
				w.nodes = append(w.nodes, s.Node)
				w.last[s.Node] = s
			}
			if got, why := w.settled(since, c.masters); got != c.want {
				t.Errorf("settled = %v (%s); want %v", got, why, c.want)
			}
		})
	}
	w := &Watcher{nodes: []string{"a", "b"}, last: map[string]Snapshot{"a": master("a")}}
	if ok, _ := w.settled(since, 1); ok {
		t.Error("settled before every node was polled")
	}
}
