package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/faults/watch"
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
		{"commandstats", "run_id:x\nrole:master\n# Commandstats\ncmdstat_flushall:calls=2,usec=9,usec_per_call=4.50,rejected_calls=0,failed_calls=0\n" +
			"cmdstat_script|flush:calls=1,usec=3\ncmdstat_get:calls=9\n",
			Snapshot{Node: "n", At: at, RunID: "x", Role: redisenv.RoleMaster, Commands: map[string]int64{"flushall": 2, "script|flush": 1}}, ""},
		{"stats and memory", "run_id:x\nrole:master\n# Stats\nevicted_keys:189\n# Memory\nmaxmemory:4194304\nmaxmemory_policy:allkeys-lru\n",
			Snapshot{Node: "n", At: at, RunID: "x", Role: redisenv.RoleMaster, EvictedKeys: 189, MaxmemoryPolicy: "allkeys-lru"}, ""},
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
	// Each poll is sent 2 ms before it ends; an event is dated after the send of the poll
	// before it.
	m := func(ms int, run string, up time.Duration, off int64) Snapshot {
		return Snapshot{Node: "n", Sent: at(ms - 2), At: at(ms), RunID: run, Uptime: up, Role: redisenv.RoleMaster, ReplOffset: off}
	}
	r := func(ms int, run, master string, link bool, off int64) Snapshot {
		return Snapshot{Node: "n", Sent: at(ms - 2), At: at(ms), RunID: run, Uptime: time.Minute, Role: redisenv.RoleReplica,
			MasterAddr: master, LinkUp: link, ReplOffset: off}
	}
	down := func(ms int, err string) Snapshot { return Snapshot{Node: "n", Sent: at(ms - 2), At: at(ms), Err: err} }
	const master, replica = redisenv.RoleMaster, redisenv.RoleReplica
	ev := func(kind watch.EventKind, after, ms int, from, to, role string) Event {
		e := Event{Node: "n", Kind: kind, At: at(ms), From: from, To: to, Role: role}
		if after >= 0 {
			e.After = at(after - 2)
		}
		return e
	}
	cmds := func(s Snapshot, c map[string]int64) Snapshot { s.Commands = c; return s }
	ev2 := func(s Snapshot, evicted int64) Snapshot {
		s.EvictedKeys, s.MaxmemoryPolicy = evicted, "allkeys-lru"
		return s
	}
	tests := []struct {
		name          string
		prev, up, cur Snapshot
		want          []Event
	}{
		{"first poll answers", Snapshot{}, Snapshot{}, m(0, "a", time.Second, 10), nil},
		{"first poll fails", Snapshot{}, Snapshot{}, down(0, "timeout"),
			[]Event{ev(watch.EventUnreachable, -1, 0, "", "timeout", "")}},
		{"first answer after failed polls: since the watch began", down(100, "timeout"), Snapshot{}, m(200, "a", time.Second, 10),
			[]Event{ev(watch.EventReachable, -1, 200, "timeout", "", "")}},
		{"nothing changed", m(0, "a", time.Second, 10), m(0, "a", time.Second, 10), m(100, "a", time.Second, 20), nil},
		{"unreachable", m(0, "a", time.Second, 10), m(0, "a", time.Second, 10), down(100, "connection refused"),
			[]Event{ev(watch.EventUnreachable, 0, 100, "", "connection refused", master)}},
		{"still unreachable", down(100, "timeout"), m(0, "a", time.Second, 10), down(200, "timeout"), nil},
		{"reachable again, same server (a pause)", down(600, "timeout"), m(0, "a", time.Second, 10), m(700, "a", 2*time.Second, 10),
			[]Event{ev(watch.EventReachable, 600, 700, "timeout", "", master)}},
		{"restart across an outage", down(100, "connection refused"), m(0, "a", time.Hour, 500), m(200, "b", 0, 0),
			[]Event{ev(watch.EventReachable, 100, 200, "connection refused", "", master), ev(watch.EventRestarted, 0, 200, "a", "b", master)}},
		{"restart between two polls: no offset-back", m(0, "a", time.Hour, 500), m(0, "a", time.Hour, 500), m(100, "b", 0, 0),
			[]Event{ev(watch.EventRestarted, 0, 100, "a", "b", master)}},
		{"uptime went back, same run id", m(0, "a", time.Hour, 5), m(0, "a", time.Hour, 5), m(100, "a", time.Second, 5),
			[]Event{ev(watch.EventRestarted, 0, 100, "1h0m0s", "1s", master)}},
		{"promoted", r(0, "a", "127.0.0.1:1", true, 50), r(0, "a", "127.0.0.1:1", true, 50), m(100, "a", time.Minute, 60),
			[]Event{ev(watch.EventPromoted, 0, 100, "127.0.0.1:1", "", replica)}},
		{"demoted, history cut", m(0, "a", time.Minute, 900), m(0, "a", time.Minute, 900), r(100, "a", "127.0.0.1:2", false, 700),
			[]Event{ev(watch.EventDemoted, 0, 100, "", "127.0.0.1:2", master), ev(watch.EventOffsetBack, 0, 100, "900", "700", master)}},
		{"master changed", r(0, "a", "127.0.0.1:1", true, 5), r(0, "a", "127.0.0.1:1", true, 5), r(100, "a", "127.0.0.1:2", true, 5),
			[]Event{ev(watch.EventMasterChanged, 0, 100, "127.0.0.1:1", "127.0.0.1:2", replica)}},
		{"link down", r(0, "a", "127.0.0.1:1", true, 5), r(0, "a", "127.0.0.1:1", true, 5), r(100, "a", "127.0.0.1:1", false, 5),
			[]Event{ev(watch.EventLinkDown, 0, 100, "", "", replica)}},
		{"link up", r(0, "a", "127.0.0.1:1", false, 5), r(0, "a", "127.0.0.1:1", false, 5), r(100, "a", "127.0.0.1:1", true, 9),
			[]Event{ev(watch.EventLinkUp, 0, 100, "", "", replica)}},
		{"restarted replica of another master, link down", r(0, "a", "127.0.0.1:1", true, 5), r(0, "a", "127.0.0.1:1", true, 5),
			r(100, "b", "127.0.0.1:2", false, 0),
			[]Event{ev(watch.EventRestarted, 0, 100, "a", "b", replica), ev(watch.EventMasterChanged, 0, 100, "127.0.0.1:1", "127.0.0.1:2", replica), ev(watch.EventLinkDown, 0, 100, "", "", replica)}},
		{"flushed, scripts flushed, clients killed", cmds(m(0, "a", time.Hour, 5), map[string]int64{"flushall": 1, "script|flush": 2}),
			cmds(m(0, "a", time.Hour, 5), map[string]int64{"flushall": 1, "script|flush": 2}),
			cmds(m(100, "a", time.Hour, 5), map[string]int64{"flushall": 1, "flushdb": 3, "script|flush": 4, "client|kill": 1}),
			[]Event{ev(watch.EventFlushed, 0, 100, "FLUSHDB", "3", master), ev(watch.EventScriptsFlushed, 0, 100, "SCRIPT FLUSH", "2", master),
				ev(watch.EventClientsKilled, 0, 100, "CLIENT KILL", "1", master)}},
		{"counters reset (CONFIG RESETSTAT): no event", cmds(m(0, "a", time.Hour, 5), map[string]int64{"flushall": 4}),
			cmds(m(0, "a", time.Hour, 5), map[string]int64{"flushall": 4}), cmds(m(100, "a", time.Hour, 5), map[string]int64{}), nil},
		{"counters not read: no event", m(0, "a", time.Hour, 5), m(0, "a", time.Hour, 5),
			cmds(m(100, "a", time.Hour, 5), map[string]int64{"flushall": 4}), nil},
		{"evicted keys", ev2(m(0, "a", time.Hour, 5), 10), ev2(m(0, "a", time.Hour, 5), 10), ev2(m(100, "a", time.Hour, 5), 199),
			[]Event{ev(watch.EventEvicted, 0, 100, "189", "allkeys-lru", master)}},
		{"eviction counter reset: no event", ev2(m(0, "a", time.Hour, 5), 10), ev2(m(0, "a", time.Hour, 5), 10),
			ev2(m(100, "a", time.Hour, 5), 0), nil},
		{"a restart resets the eviction counter: no eviction", ev2(m(0, "a", time.Hour, 5), 10), ev2(m(0, "a", time.Hour, 5), 10),
			ev2(m(100, "b", 0, 0), 20), []Event{ev(watch.EventRestarted, 0, 100, "a", "b", master)}},
		{"a restart resets the counters: no flush", cmds(m(0, "a", time.Hour, 5), map[string]int64{"flushall": 0}),
			cmds(m(0, "a", time.Hour, 5), map[string]int64{"flushall": 0}), cmds(m(100, "b", 0, 0), map[string]int64{"flushall": 2}),
			[]Event{ev(watch.EventRestarted, 0, 100, "a", "b", master)}},
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

func TestEventMeaning(t *testing.T) {
	tests := []struct {
		e                  Event
		stateLost, deposes bool
		describe           string
	}{
		{Event{Node: "n", Kind: watch.EventRestarted, From: "4f2a1b2c5e6f", To: "9c1e0d3f7a8b", Role: redisenv.RoleMaster}, true, false,
			"n restarted (run id 4f2a1b2c → 9c1e0d3f)"},
		{Event{Node: "n", Kind: watch.EventRestarted, From: "1h0m0s", To: "1s", Role: redisenv.RoleMaster}, true, false, "n restarted (uptime 1h0m0s → 1s)"},
		{Event{Node: "n", Kind: watch.EventRestarted, From: "a", To: "b", Role: redisenv.RoleReplica}, false, false, "n restarted (run id a → b)"},
		{Event{Node: "n", Kind: watch.EventFlushed, From: "FLUSHALL", To: "1", Role: redisenv.RoleMaster}, true, false, "n was flushed (FLUSHALL)"},
		{Event{Node: "n", Kind: watch.EventEvicted, From: "189", To: "volatile-lru", Role: redisenv.RoleMaster}, true, false,
			"n evicted 189 keys (maxmemory-policy volatile-lru): the limiter's keys may be among them"},
		{Event{Node: "n", Kind: watch.EventEvicted, From: "3", To: "allkeys-lru", Role: redisenv.RoleReplica}, false, false,
			"n evicted 3 keys (maxmemory-policy allkeys-lru): the limiter's keys may be among them"},
		{Event{Node: "n", Kind: watch.EventPromoted, From: "m:1", Role: redisenv.RoleReplica}, true, false, "n was promoted to master (it followed m:1)"},
		{Event{Node: "n", Kind: watch.EventDemoted, To: "m:2", Role: redisenv.RoleMaster}, false, true, "n became a replica of m:2"},
		{Event{Node: "n", Kind: watch.EventUnreachable, To: "connection refused", Role: redisenv.RoleMaster}, false, true, "n stopped answering (connection refused)"},
		{Event{Node: "n", Kind: watch.EventUnreachable, To: "timeout", Role: redisenv.RoleMaster}, false, false, "n stopped answering (timeout)"},
		{Event{Node: "n", Kind: watch.EventReachable, Role: redisenv.RoleMaster}, false, false, "n answers again"},
		{Event{Node: "n", Kind: watch.EventReachable}, true, false, "n answers for the first time"},
		{Event{Node: "n", Kind: watch.EventScriptsFlushed, From: "SCRIPT FLUSH", To: "1", Role: redisenv.RoleMaster}, false, false,
			"n had its scripts flushed (SCRIPT FLUSH)"},
		{Event{Node: "n", Kind: watch.EventClientsKilled, From: "CLIENT KILL", To: "2", Role: redisenv.RoleMaster}, false, false,
			"n had clients killed (CLIENT KILL)"},
		{Event{Node: "n", Kind: watch.EventOffsetBack, From: "9", To: "7", Role: redisenv.RoleReplica}, false, false,
			"n dropped replicated writes (offset 9 → 7)"},
	}
	for _, tt := range tests {
		if got := tt.e.StateLost(); got != tt.stateLost {
			t.Errorf("%v: StateLost() = %v; want %v", tt.e, got, tt.stateLost)
		}
		if got := tt.e.Deposes(); got != tt.deposes {
			t.Errorf("%v: Deposes() = %v; want %v", tt.e, got, tt.deposes)
		}
		if got := tt.e.Describe(); got != tt.describe {
			t.Errorf("%v: Describe() = %q; want %q", tt.e, got, tt.describe)
		}
	}
}

func TestEventString(t *testing.T) {
	for _, tt := range []struct {
		e    Event
		want string
	}{
		{Event{Node: "127.0.0.1:1", Kind: watch.EventRestarted, From: "a", To: "b"}, "127.0.0.1:1 restarted (a -> b)"},
		{Event{Node: "127.0.0.1:1", Kind: watch.EventLinkDown}, "127.0.0.1:1 link-down"},
	} {
		if got := tt.e.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

// find returns the first event of kind on node seen at or after since, or false.
func find(events []Event, node string, kind watch.EventKind, since time.Time) (Event, bool) {
	for _, e := range events {
		if e.Node == node && e.Kind == kind && !e.At.Before(since) {
			return e, true
		}
	}
	return Event{}, false
}

// waitEvent polls w until it has an event of kind on node seen at or after since, for at most d.
func waitEvent(t *testing.T, w *Watcher, node string, kind watch.EventKind, since time.Time, d time.Duration) Event {
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
	e := waitEvent(t, w, addr, watch.EventRestarted, before, 5*time.Second)
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
	u := waitEvent(t, w, addr, watch.EventUnreachable, paused, 5*time.Second)
	if u.To != "timeout" {
		t.Errorf("unreachable event %v: want a timeout", u)
	}
	if err := target.Resume(ctx, addr); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, w, addr, watch.EventReachable, paused, 5*time.Second)
	events := w.Stop()
	restarts := 0
	for _, e := range events {
		if e.Kind == watch.EventRestarted {
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

// TestWatchSeesTheReturnAtOnce is the regression test of a restart the watch missed: after a
// refused dial, a go-redis client whose pool has one connection answers every request with that
// error, without dialing, until a background dial succeeds, which it tries once a second. A node
// that came back within that second was still unreachable to the watch, and a run that ended then
// saw an outage without its end (no new run id), so a state loss went unseen and the verifier
// judged both sides of the restart as one history: a correct fixed-window failed with 200
// admissions in a window of 100. The watch now dials afresh after every poll that failed. The
// node is killed, seen unreachable for 200 ms, started again, and the watch stopped as soon as it
// answers another client: the poll Stop makes must see it back, restarted.
func TestWatchSeesTheReturnAtOnce(t *testing.T) {
	target := redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	addr := target.Masters()[0]
	w := WatchTarget(ctx, target, WatchOptions{Interval: 20 * time.Millisecond, Timeout: 200 * time.Millisecond})
	defer w.Stop()
	for w.Last(addr).At.IsZero() {
		time.Sleep(5 * time.Millisecond)
	}
	first := w.Last(addr)
	killed := time.Now()
	if err := target.Kill(ctx, addr); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, w, addr, watch.EventUnreachable, killed, 5*time.Second)
	// A few polls fail while the node is down (go-redis's first background dial is at once).
	time.Sleep(200 * time.Millisecond)
	// Restart on a dead server starts it and returns once it answers a PING.
	if err := target.Restart(ctx, addr); err != nil {
		t.Fatal(err)
	}
	events := w.Stop()
	e, ok := find(events, addr, watch.EventRestarted, killed)
	if !ok || e.From != first.RunID || e.To == "" || e.To == first.RunID {
		t.Errorf("no restart from run id %s seen by the poll Stop made; last poll %+v; events %v", first.RunID, w.Last(addr), events)
	}
}

// TestWatchCommandsAndStop: FLUSHALL, SCRIPT FLUSH and CLIENT KILL on a watched server are each
// seen as their event; CLIENT KILL closes the watcher's own connection too, which must not be
// taken for an unreachable node; and a restart just before Stop is seen by the poll Stop makes,
// dated after the restart began. Issue 14, item 2: a flush or a restart at the end of a run is
// never missed.
func TestWatchCommandsAndStop(t *testing.T) {
	target := redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	addr := target.Masters()[0]
	w := WatchTarget(ctx, target, WatchOptions{Interval: 20 * time.Millisecond, Timeout: time.Second})
	defer w.Stop()
	if err := w.WaitPolled(ctx); err != nil {
		t.Fatal(err)
	}
	c := target.Client.(*redis.Client)
	for _, step := range []struct {
		run  func() error
		kind watch.EventKind
	}{
		{func() error { return c.FlushAll(ctx).Err() }, watch.EventFlushed},
		{func() error { return c.ScriptFlush(ctx).Err() }, watch.EventScriptsFlushed},
		{func() error { return c.ClientKillByFilter(ctx, "TYPE", "normal").Err() }, watch.EventClientsKilled},
	} {
		since := time.Now()
		if err := step.run(); err != nil && step.kind != watch.EventClientsKilled {
			t.Fatalf("%s: %v", step.kind, err)
		}
		waitEvent(t, w, addr, step.kind, since, 5*time.Second)
	}
	for _, e := range w.Stop() {
		if e.Kind == watch.EventUnreachable || e.Kind == watch.EventReachable {
			t.Errorf("unexpected %v: CLIENT KILL closed the watcher's connection, the node stayed reachable", e)
		}
	}
	// A poll interval long enough that only Stop's poll can see the restart.
	w2 := WatchTarget(ctx, target, WatchOptions{Interval: time.Hour})
	if err := w2.WaitPolled(ctx); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	if err := target.Restart(ctx, addr); err != nil {
		t.Fatal(err)
	}
	events := w2.Stop()
	e, ok := find(events, addr, watch.EventRestarted, before)
	if !ok || !e.StateLost() || !e.After.Before(before) {
		t.Errorf("events after a restart just before Stop: %v; want a restart that lost the state, dated after a poll sent before it", events)
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
	p := waitEvent(t, w, promoted, watch.EventPromoted, time.Time{}, 10*time.Second)
	if p.From != master {
		t.Errorf("promotion %v: want From %s", p, master)
	}
	d := waitEvent(t, w, master, watch.EventDemoted, time.Time{}, 10*time.Second)
	if d.To != promoted {
		t.Errorf("demotion %v: want To %s", d, promoted)
	}
	for _, e := range w.Stop() {
		if e.Kind == watch.EventRestarted {
			t.Errorf("unexpected %v", e)
		}
	}
}

// TestWatchPoke: Poke polls every node at once, without waiting for the interval.
func TestWatchPoke(t *testing.T) {
	target := redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := WatchTarget(ctx, target, WatchOptions{Interval: time.Hour})
	defer w.Stop()
	if err := w.WaitPolled(ctx); err != nil {
		t.Fatal(err)
	}
	w.Poke()
	for w.Polls() < 2 {
		if ctx.Err() != nil {
			t.Fatalf("%d polls after Poke; want 2", w.Polls())
		}
		time.Sleep(time.Millisecond)
	}
	s := w.Summary(time.Now())
	if len(s.Nodes) != 1 || s.Nodes[0].RunIDBefore == "" || s.Nodes[0].RunIDAfter != s.Nodes[0].RunIDBefore ||
		s.Nodes[0].RoleBefore != redisenv.RoleMaster || s.Polls != 2 || s.IntervalMS != 3.6e6 {
		t.Errorf("Summary = %+v; want one master, the same run id before and after, 2 polls every hour", s)
	}
}
