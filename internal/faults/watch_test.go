package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

func TestParseSnapshot(t *testing.T) {
	at := time.Unix(100, 0)
	master := "# Server\r\nredis_version:7.0.15\r\nrun_id:aaa\r\nuptime_in_seconds:42\r\n# Replication\r\nrole:master\r\nconnected_slaves:2\r\nmaster_repl_offset:1234\r\n"
	replica := "run_id:bbb\nuptime_in_seconds:7\nrole:slave\nmaster_host:127.0.0.1\nmaster_port:7000\nmaster_link_status:down\nmaster_repl_offset:99\nconnected_slaves:0\n"
	tests := []struct {
		name string
		info string
		want Snapshot
		err  string
	}{
		{"master", master, Snapshot{Node: "n", At: at, RunID: "aaa", Uptime: 42 * time.Second, Role: redisenv.RoleMaster,
			ConnectedReplicas: 2, ReplOffset: 1234}, ""},
		{"replica", replica, Snapshot{Node: "n", At: at, RunID: "bbb", Uptime: 7 * time.Second, Role: redisenv.RoleReplica,
			MasterAddr: "127.0.0.1:7000", ReplOffset: 99}, ""},
		{"replica link up", strings.Replace(replica, "down", "up", 1), Snapshot{Node: "n", At: at, RunID: "bbb",
			Uptime: 7 * time.Second, Role: redisenv.RoleReplica, MasterAddr: "127.0.0.1:7000", LinkUp: true, ReplOffset: 99}, ""},
		{"no run_id", "role:master\n", Snapshot{}, "no run_id"},
		{"no role", "run_id:x\n", Snapshot{}, `role ""`},
		{"sentinel role", "run_id:x\nrole:sentinel\n", Snapshot{}, `role "sentinel"`},
		{"bad number", "run_id:x\nrole:master\nmaster_repl_offset:12a\n", Snapshot{}, "not a number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSnapshot("n", at, tt.info)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseSnapshot = %+v, %v; want an error with %q", got, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseSnapshot (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChanges(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	m := func(ms int, run string, up time.Duration, off int64) Snapshot {
		return Snapshot{Node: "n", At: at(ms), RunID: run, Uptime: up, Role: redisenv.RoleMaster, ReplOffset: off}
	}
	r := func(ms int, run, master string, link bool, off int64) Snapshot {
		return Snapshot{Node: "n", At: at(ms), RunID: run, Uptime: time.Minute, Role: redisenv.RoleReplica,
			MasterAddr: master, LinkUp: link, ReplOffset: off}
	}
	down := func(ms int, err string) Snapshot { return Snapshot{Node: "n", At: at(ms), Err: err} }
	ev := func(kind EventKind, after, ms int, from, to string) Event {
		e := Event{Node: "n", Kind: kind, At: at(ms), From: from, To: to}
		if after >= 0 {
			e.After = at(after)
		}
		return e
	}
	tests := []struct {
		name          string
		prev, up, cur Snapshot
		want          []Event
	}{
		{"first poll answers", Snapshot{}, Snapshot{}, m(0, "a", time.Second, 10), nil},
		{"first poll fails", Snapshot{}, Snapshot{}, down(0, "timeout"),
			[]Event{ev(EventUnreachable, -1, 0, "", "timeout")}},
		{"nothing changed", m(0, "a", time.Second, 10), m(0, "a", time.Second, 10), m(100, "a", time.Second, 20), nil},
		{"unreachable", m(0, "a", time.Second, 10), m(0, "a", time.Second, 10), down(100, "connection refused"),
			[]Event{ev(EventUnreachable, 0, 100, "", "connection refused")}},
		{"still unreachable", down(100, "timeout"), m(0, "a", time.Second, 10), down(200, "timeout"), nil},
		{"reachable again, same server (a pause)", down(600, "timeout"), m(0, "a", time.Second, 10), m(700, "a", 2*time.Second, 10),
			[]Event{ev(EventReachable, 600, 700, "timeout", "")}},
		{"restart across an outage", down(100, "connection refused"), m(0, "a", time.Hour, 500), m(200, "b", 0, 0),
			[]Event{ev(EventReachable, 100, 200, "connection refused", ""), ev(EventRestarted, 0, 200, "a", "b")}},
		{"restart between two polls: no offset-back", m(0, "a", time.Hour, 500), m(0, "a", time.Hour, 500), m(100, "b", 0, 0),
			[]Event{ev(EventRestarted, 0, 100, "a", "b")}},
		{"uptime went back, same run id", m(0, "a", time.Hour, 5), m(0, "a", time.Hour, 5), m(100, "a", time.Second, 5),
			[]Event{ev(EventRestarted, 0, 100, "1h0m0s", "1s")}},
		{"promoted", r(0, "a", "127.0.0.1:1", true, 50), r(0, "a", "127.0.0.1:1", true, 50), m(100, "a", time.Minute, 60),
			[]Event{ev(EventPromoted, 0, 100, "127.0.0.1:1", "")}},
		{"demoted, history cut", m(0, "a", time.Minute, 900), m(0, "a", time.Minute, 900), r(100, "a", "127.0.0.1:2", false, 700),
			[]Event{ev(EventDemoted, 0, 100, "", "127.0.0.1:2"), ev(EventOffsetBack, 0, 100, "900", "700")}},
		{"master changed", r(0, "a", "127.0.0.1:1", true, 5), r(0, "a", "127.0.0.1:1", true, 5), r(100, "a", "127.0.0.1:2", true, 5),
			[]Event{ev(EventMasterChanged, 0, 100, "127.0.0.1:1", "127.0.0.1:2")}},
		{"link down", r(0, "a", "127.0.0.1:1", true, 5), r(0, "a", "127.0.0.1:1", true, 5), r(100, "a", "127.0.0.1:1", false, 5),
			[]Event{ev(EventLinkDown, 0, 100, "", "")}},
		{"link up", r(0, "a", "127.0.0.1:1", false, 5), r(0, "a", "127.0.0.1:1", false, 5), r(100, "a", "127.0.0.1:1", true, 9),
			[]Event{ev(EventLinkUp, 0, 100, "", "")}},
		{"restarted replica of another master, link down", r(0, "a", "127.0.0.1:1", true, 5), r(0, "a", "127.0.0.1:1", true, 5),
			r(100, "b", "127.0.0.1:2", false, 0),
			[]Event{ev(EventRestarted, 0, 100, "a", "b"), ev(EventMasterChanged, 0, 100, "127.0.0.1:1", "127.0.0.1:2"), ev(EventLinkDown, 0, 100, "", "")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Changes(tt.prev, tt.up, tt.cur)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Changes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEventString(t *testing.T) {
	for _, tt := range []struct {
		e    Event
		want string
	}{
		{Event{Node: "127.0.0.1:1", Kind: EventRestarted, From: "a", To: "b"}, "127.0.0.1:1 restarted (a -> b)"},
		{Event{Node: "127.0.0.1:1", Kind: EventLinkDown}, "127.0.0.1:1 link-down"},
	} {
		if got := tt.e.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

// find returns the first event of kind on node seen at or after since, or false.
func find(events []Event, node string, kind EventKind, since time.Time) (Event, bool) {
	for _, e := range events {
		if e.Node == node && e.Kind == kind && !e.At.Before(since) {
			return e, true
		}
	}
	return Event{}, false
}

// waitEvent polls w until it has an event of kind on node seen at or after since, for at most d.
func waitEvent(t *testing.T, w *Watcher, node string, kind EventKind, since time.Time, d time.Duration) Event {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if e, ok := find(w.Events(), node, kind, since); ok {
			return e
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %s event on %s since %s within %s; events: %v", kind, node, since.Format(time.StampMicro), d, w.Events())
	return Event{}
}

// TestWatchRestartAndPause restarts and pauses a real server under a watcher, which sees a
// restart (new run_id) and an unreachable, then reachable, node with the same run_id.
func TestWatchRestartAndPause(t *testing.T) {
	target := redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	addr := target.Masters()[0]
	var seen []Event
	w := WatchTarget(ctx, target, WatchOptions{Interval: 20 * time.Millisecond, Timeout: 200 * time.Millisecond,
		OnEvent: func(e Event) { seen = append(seen, e) }})
	defer w.Stop()
	for w.Last(addr).At.IsZero() {
		time.Sleep(5 * time.Millisecond)
	}
	first := w.Last(addr)
	if !first.Reachable() || first.Role != redisenv.RoleMaster || first.RunID == "" {
		t.Fatalf("first poll = %+v; want a reachable master with a run id", first)
	}
	before := time.Now()
	if err := target.Restart(ctx, addr); err != nil {
		t.Fatal(err)
	}
	e := waitEvent(t, w, addr, EventRestarted, before, 5*time.Second)
	if e.From != first.RunID || e.To == first.RunID || e.To == "" {
		t.Errorf("restart event %v: want From %s and a new run id", e, first.RunID)
	}
	if !e.After.Before(e.At) || e.At.Before(before) {
		t.Errorf("restart event dated (%s, %s]; the restart began at %s", e.After, e.At, before)
	}

	paused := time.Now()
	if err := target.Pause(ctx, addr); err != nil {
		t.Fatal(err)
	}
	u := waitEvent(t, w, addr, EventUnreachable, paused, 5*time.Second)
	if u.To != "timeout" {
		t.Errorf("unreachable event %v: want a timeout", u)
	}
	if err := target.Resume(ctx, addr); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, w, addr, EventReachable, paused, 5*time.Second)
	events := w.Stop()
	restarts := 0
	for _, e := range events {
		if e.Kind == EventRestarted {
			restarts++
		}
	}
	if restarts != 1 {
		t.Errorf("%d restart events, want 1 (a pause is no restart): %v", restarts, events)
	}
	if len(seen) != len(events) {
		t.Errorf("OnEvent saw %d events, Events has %d", len(seen), len(events))
	}
	// The first poll, the one that saw the restart, the unreachable and the reachable one.
	if w.Polls() < 4 {
		t.Errorf("%d polls, want at least 4", w.Polls())
	}
}

// TestWatchClusterFailover sees a cluster failover as a promotion and a demotion.
func TestWatchClusterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 6 servers")
	}
	target := redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess, Topology: redisenv.TopologyCluster, Replicas: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w := WatchTarget(ctx, target, WatchOptions{Interval: 20 * time.Millisecond})
	defer w.Stop()
	master := target.Masters()[0]
	promoted, err := target.Failover(ctx, master, redisenv.FailoverCoordinated)
	if err != nil {
		t.Fatal(err)
	}
	p := waitEvent(t, w, promoted, EventPromoted, time.Time{}, 10*time.Second)
	if p.From != master {
		t.Errorf("promotion %v: want From %s", p, master)
	}
	d := waitEvent(t, w, master, EventDemoted, time.Time{}, 10*time.Second)
	if d.To != promoted {
		t.Errorf("demotion %v: want To %s", d, promoted)
	}
	for _, e := range w.Stop() {
		if e.Kind == EventRestarted {
			t.Errorf("unexpected %v", e)
		}
	}
}
