package redisenv_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

// nodeClient returns a client of one node of target with retries off and short timeouts.
func nodeClient(t *testing.T, target *redisenv.Target, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Password: target.Password, MaxRetries: -1,
		DialTimeout: time.Second, ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// runID returns the run_id of the server at addr.
func runID(ctx context.Context, t *testing.T, target *redisenv.Target, addr string) string {
	t.Helper()
	c := nodeClient(t, target, addr)
	s, err := c.Info(ctx, "server").Result()
	if err != nil {
		t.Fatalf("INFO server on %s: %v", addr, err)
	}
	return infoValue(s, "run_id")
}

func TestControlProcess(t *testing.T) {
	testControl(t, redisenv.Config{Backend: redisenv.BackendProcess})
}

func TestControlContainer(t *testing.T) {
	testControl(t, redisenv.Config{Backend: redisenv.BackendContainer, Image: redisenv.HostImage})
}

// testControl kills, restarts, pauses and resumes the single server of cfg, and checks what a
// restart keeps with each persistence.
func testControl(t *testing.T, cfg redisenv.Config) {
	for _, p := range []redisenv.Persistence{redisenv.PersistenceNone, redisenv.PersistenceAOFEverySec, redisenv.PersistenceAOFAlways} {
		t.Run(string(p), func(t *testing.T) {
			cfg := cfg
			cfg.Persistence = p
			target := redistest.Start(t, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			addr := target.Masters()[0]
			c := nodeClient(t, target, addr)
			got, err := c.ConfigGet(ctx, "appendonly").Result()
			wantAOF := map[redisenv.Persistence]string{redisenv.PersistenceNone: "no"}[p]
			if wantAOF == "" {
				wantAOF = "yes"
			}
			if err != nil || got["appendonly"] != wantAOF {
				t.Fatalf("CONFIG GET appendonly = %v, %v; want %s", got, err, wantAOF)
			}
			if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			before := runID(ctx, t, target, addr)

			if err := target.Restart(ctx, addr); err != nil {
				t.Fatalf("Restart(%s): %v", addr, err)
			}
			if after := runID(ctx, t, target, addr); after == before || after == "" {
				t.Errorf("run_id %q after Restart, %q before: want a new one", after, before)
			}
			v, err := c.Get(ctx, "k").Result()
			if p == redisenv.PersistenceNone {
				if !errors.Is(err, redis.Nil) {
					t.Errorf("GET k after a restart without persistence = %q, %v; want nil (state lost)", v, err)
				}
			} else if err != nil || v != "v" {
				t.Errorf("GET k after a restart with %s = %q, %v; want v (state kept)", p, v, err)
			}
			if p != redisenv.PersistenceNone {
				return
			}

			// Pause: the port still accepts, nothing answers; Resume: answers again.
			if err := target.Pause(ctx, addr); err != nil {
				t.Fatalf("Pause: %v", err)
			}
			if err := target.Pause(ctx, addr); err != nil {
				t.Errorf("Pause twice: %v", err)
			}
			err = c.Ping(ctx).Err()
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				t.Errorf("PING a paused server = %v, want a timeout", err)
			}
			if err := target.Resume(ctx, addr); err != nil {
				t.Fatalf("Resume: %v", err)
			}
			waitFor(ctx, t, "the resumed server to answer", func() error { return c.Ping(ctx).Err() })
			if err := target.Resume(ctx, addr); err != nil {
				t.Errorf("Resume of a running server: %v", err)
			}

			// Kill: gone until Restart; killing twice is fine; a killed server cannot be paused.
			if err := target.Kill(ctx, addr); err != nil {
				t.Fatalf("Kill: %v", err)
			}
			if err := target.Kill(ctx, addr); err != nil {
				t.Errorf("Kill twice: %v", err)
			}
			if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				_ = conn.Close()
				t.Errorf("%s accepts connections after Kill", addr)
			}
			if err := target.Pause(ctx, addr); err == nil {
				t.Errorf("Pause of a killed server succeeded")
			}
			if err := target.Restart(ctx, addr); err != nil {
				t.Fatalf("Restart after Kill: %v", err)
			}
			if err := c.Ping(ctx).Err(); err != nil {
				t.Errorf("PING after Restart: %v", err)
			}
			// A paused server is stopped by Stop (redistest checks nothing is left).
			if err := target.Pause(ctx, addr); err != nil {
				t.Fatalf("Pause before Stop: %v", err)
			}
		})
	}
}

func TestControlRefusals(t *testing.T) {
	env := redistest.Env{Target: redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess})}
	ctx := context.Background()
	ext, err := redisenv.Start(ctx, redisenv.Config{Backend: redisenv.BackendExternal,
		URL: "redis://:" + env.Target.Password + "@" + env.Target.Masters()[0]})
	if err != nil {
		t.Fatal(err)
	}
	defer ext.Stop(ctx)
	addr := ext.Masters()[0]
	for name, op := range map[string]func() error{
		"Kill":     func() error { return ext.Kill(ctx, addr) },
		"Restart":  func() error { return ext.Restart(ctx, addr) },
		"Pause":    func() error { return ext.Pause(ctx, addr) },
		"Resume":   func() error { return ext.Resume(ctx, addr) },
		"Failover": func() error { _, err := ext.Failover(ctx, addr, ""); return err },
	} {
		if err := op(); !errors.Is(err, redisenv.ErrNotStarted) {
			t.Errorf("%s on an external target = %v, want ErrNotStarted", name, err)
		}
	}
	if ext.Servers() != nil {
		t.Errorf("Servers() of an external target = %v, want nil", ext.Servers())
	}
	if err := env.Target.Kill(ctx, "127.0.0.1:1"); !errors.Is(err, redisenv.ErrNotStarted) {
		t.Errorf("Kill of an unknown address = %v, want ErrNotStarted", err)
	}
	if _, err := env.Target.Failover(ctx, env.Target.Masters()[0], ""); !errors.Is(err, redisenv.ErrBadConfig) {
		t.Errorf("Failover on a single server = %v, want ErrBadConfig (no replica)", err)
	}
	// The server is still there and untouched.
	if err := env.Target.Client.Ping(ctx).Err(); err != nil {
		t.Errorf("PING after the refusals: %v", err)
	}
}

// TestClusterFailover fails a cluster over in every mode, checks that the cluster client and the
// selectors follow, and restarts a killed master, which rejoins as a replica.
func TestClusterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 6 servers and waits for a failure detection")
	}
	target := redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess, Topology: redisenv.TopologyCluster, Replicas: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if n := target.Shards(); n != 3 {
		t.Fatalf("Shards() = %d, want 3", n)
	}
	for shard, mode := range []redisenv.FailoverMode{redisenv.FailoverCoordinated, redisenv.FailoverForce, redisenv.FailoverTakeover} {
		sel := redisenv.Selector{Kind: redisenv.SelectMaster, Shard: shard}
		masters, err := target.Select(ctx, sel)
		if err != nil || len(masters) != 1 {
			t.Fatalf("Select(%s) = %v, %v", sel, masters, err)
		}
		replicas, err := target.Select(ctx, redisenv.Selector{Kind: redisenv.SelectReplica, Shard: shard})
		if err != nil || len(replicas) != 1 {
			t.Fatalf("Select(replica:%d) = %v, %v", shard, replicas, err)
		}
		promoted, err := target.Failover(ctx, masters[0], mode)
		if err != nil {
			t.Fatalf("Failover(%s, %q): %v", masters[0], mode, err)
		}
		if promoted != replicas[0] {
			t.Errorf("Failover(%s, %q) promoted %s, want its replica %s", masters[0], mode, promoted, replicas[0])
		}
		now, err := target.Select(ctx, sel)
		if err != nil || len(now) != 1 || now[0] != promoted {
			t.Errorf("Select(%s) after the failover = %v, %v; want [%s]", sel, now, err, promoted)
		}
		// The cluster client follows the new slot owner (retries are off: a MOVED is an error
		// once, then the client has reloaded the slot map).
		key := keyOnShard(t, target, shard)
		waitFor(ctx, t, "a write to shard "+fmt.Sprint(shard), func() error { return target.Client.Set(ctx, key, "v", 0).Err() })
	}
	all, err := target.Select(ctx, redisenv.Selector{Kind: redisenv.SelectMasters})
	if err != nil || len(all) != 3 {
		t.Fatalf("Select(masters) = %v, %v", all, err)
	}

	// Kill mode: the cluster elects the replica after cluster-node-timeout.
	old := all[0]
	promoted, err := target.Failover(ctx, old, redisenv.FailoverKill)
	if err != nil {
		t.Fatalf("Failover(%s, kill): %v", old, err)
	}
	if promoted == old {
		t.Fatalf("Failover(kill) promoted the killed master %s", old)
	}
	// The killed master is still known; restarted, it comes back as the new master's replica.
	if err := target.Restart(ctx, old); err != nil {
		t.Fatalf("Restart(%s): %v", old, err)
	}
	waitFor(ctx, t, "the restarted "+old+" to rejoin as a replica", func() error {
		live, err := target.LiveNodes(ctx)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(live, func(n redisenv.Node) bool { return n.Addr == old })
		if i < 0 || live[i].Role != redisenv.RoleReplica || live[i].Down {
			return fmt.Errorf("LiveNodes = %+v", live)
		}
		return nil
	})
	if _, err := target.Failover(ctx, old, ""); err == nil || !strings.Contains(err.Error(), "not a master") {
		t.Errorf("Failover of the replica %s = %v; want an error", old, err)
	}
}

// keyOnShard returns a key whose slot belongs to shard (its range at start).
func keyOnShard(t *testing.T, target *redisenv.Target, shard int) string {
	t.Helper()
	r := target.Info.Nodes[shard].Slots[0]
	for i := 0; i < 100000; i++ {
		k := fmt.Sprintf("k%d", i)
		if s := keySlot(k); s >= r[0] && s <= r[1] {
			return k
		}
	}
	t.Fatalf("no key for slots %v", r)
	return ""
}

func TestParseSelector(t *testing.T) {
	tests := []struct {
		in   string
		want redisenv.Selector
		err  string
	}{
		{"master", redisenv.Selector{Kind: redisenv.SelectMaster}, ""},
		{"master:2", redisenv.Selector{Kind: redisenv.SelectMaster, Shard: 2}, ""},
		{"replica", redisenv.Selector{Kind: redisenv.SelectReplica}, ""},
		{"replica:1", redisenv.Selector{Kind: redisenv.SelectReplica, Shard: 1}, ""},
		{"masters", redisenv.Selector{Kind: redisenv.SelectMasters}, ""},
		{"node:127.0.0.1:7000", redisenv.Selector{Kind: redisenv.SelectNode, Addr: "127.0.0.1:7000"}, ""},
		{"node:[::1]:7000", redisenv.Selector{Kind: redisenv.SelectNode, Addr: "[::1]:7000"}, ""},
		{"master:-1", redisenv.Selector{}, "not a number from 0"},
		{"master:x", redisenv.Selector{}, "not a number from 0"},
		{"masters:1", redisenv.Selector{}, "takes no shard"},
		{"node", redisenv.Selector{}, "needs an address"},
		{"node:127.0.0.1", redisenv.Selector{}, "needs an address"},
		{"node:127.0.0.1:0", redisenv.Selector{}, "bad port"},
		{"leader", redisenv.Selector{}, `unknown kind "leader"`},
	}
	for _, tt := range tests {
		got, err := redisenv.ParseSelector(tt.in)
		if tt.err != "" {
			if !errors.Is(err, redisenv.ErrBadConfig) || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseSelector(%q) = %v; want ErrBadConfig mentioning %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseSelector(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			continue
		}
		// Round trip through the text form.
		var back redisenv.Selector
		text, _ := got.MarshalText()
		if err := back.UnmarshalText(text); err != nil || back != got {
			t.Errorf("round trip of %q through %q = %+v, %v", tt.in, text, back, err)
		}
	}
	if s := (redisenv.Selector{}).String(); s != "master" {
		t.Errorf("zero Selector = %q, want master", s)
	}
}

func TestSelectErrors(t *testing.T) {
	env := redistest.Env{Target: redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess})}
	ctx := context.Background()
	for _, sel := range []redisenv.Selector{
		{Kind: redisenv.SelectMaster, Shard: 1},
		{Kind: redisenv.SelectNode, Addr: "127.0.0.1:1"},
		{Kind: "leader"},
	} {
		if got, err := env.Target.Select(ctx, sel); !errors.Is(err, redisenv.ErrBadConfig) {
			t.Errorf("Select(%s) = %v, %v; want ErrBadConfig", sel, got, err)
		}
	}
	if got, err := env.Target.Select(ctx, redisenv.Selector{Kind: redisenv.SelectReplica}); err == nil {
		t.Errorf("Select(replica) on a single server = %v; want an error (no replica)", got)
	}
	addr := env.Target.Masters()[0]
	for _, sel := range []redisenv.Selector{{}, {Kind: redisenv.SelectMasters}, {Kind: redisenv.SelectNode, Addr: addr}} {
		if got, err := env.Target.Select(ctx, sel); err != nil || !slices.Equal(got, []string{addr}) {
			t.Errorf("Select(%s) = %v, %v; want [%s]", sel, got, err, addr)
		}
	}
}

// TestStopAfterKill stops targets whose server was killed, and one whose server is paused:
// Stop ends them all and redistest checks that nothing is left.
func TestStopAfterKill(t *testing.T) {
	for _, cfg := range []redisenv.Config{
		{Backend: redisenv.BackendProcess},
		{Backend: redisenv.BackendContainer, Image: redisenv.HostImage},
	} {
		t.Run(string(cfg.Backend), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			killed := redistest.Start(t, cfg)
			if err := killed.Kill(ctx, killed.Masters()[0]); err != nil {
				t.Fatal(err)
			}
			paused := redistest.Start(t, cfg)
			if err := paused.Pause(ctx, paused.Masters()[0]); err != nil {
				t.Fatal(err)
			}
		})
	}
}
