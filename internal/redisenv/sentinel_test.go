package redisenv_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

func TestProcessSentinel(t *testing.T) {
	target := redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess, Topology: redisenv.TopologySentinel, Replicas: 2})
	checkSentinel(t, target, 2)
	checkNoPasswordOnCommandLines(t, target.Password)
	checkSentinelFailover(t, target)
}

func TestContainerSentinel(t *testing.T) {
	target := redistest.Start(t, redisenv.Config{Backend: redisenv.BackendContainer, Image: redisenv.HostImage,
		Topology: redisenv.TopologySentinel})
	checkSentinel(t, target, 1)
	checkNoPasswordInContainers(t, target)
	checkSentinelFailover(t, target)
}

// checkSentinel checks a freshly started sentinel topology with replicas replicas.
func checkSentinel(t *testing.T, target *redisenv.Target, replicas int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	info := target.Info
	if info.Topology != redisenv.TopologySentinel || info.MasterName != redisenv.SentinelMasterName || len(info.Sentinels) != 3 {
		t.Fatalf("Info = %+v; want topology sentinel, master name %s, 3 Sentinels", info, redisenv.SentinelMasterName)
	}
	if len(info.Nodes) != 1+replicas || info.Nodes[0].Role != redisenv.RoleMaster {
		t.Fatalf("Nodes = %+v; want a master then %d replicas", info.Nodes, replicas)
	}
	for _, n := range info.Nodes[1:] {
		if n.Role != redisenv.RoleReplica {
			t.Errorf("node %+v: want a replica", n)
		}
	}
	if len(target.Servers()) != 1+replicas+3 {
		t.Errorf("Servers() = %v; want %d servers and Sentinels", target.Servers(), 1+replicas+3)
	}
	c, ok := target.Client.(*redis.Client)
	if !ok || c.Options().Addr != "FailoverClient" {
		t.Fatalf("Client = %T; want go-redis's failover client", target.Client)
	}
	if nc, ok := target.NewClient(redisenv.ClientOptions{PoolSize: 1}).(*redis.Client); !ok || nc.Options().Addr != "FailoverClient" {
		t.Errorf("NewClient = %T; want a failover client", nc)
	}
	checkVersion(t, target)
	checkLoopback(t, target)
	checkNoRetries(t, target)
	for _, a := range info.Sentinels {
		_, portStr, _ := net.SplitHostPort(a)
		port, _ := strconv.Atoi(portStr)
		ips, err := listeningIPs(port)
		if err != nil {
			t.Logf("cannot read listening sockets: %v", err)
			break
		}
		if len(ips) == 0 {
			t.Errorf("Sentinel %s: no listening socket", a)
		}
		for _, ip := range ips {
			if !ip.IsLoopback() {
				t.Errorf("Sentinel %s listens on %s", a, ip)
			}
		}
		// Sentinels require the password too.
		anon := redis.NewSentinelClient(&redis.Options{Addr: a, MaxRetries: -1})
		err = anon.Ping(ctx).Err()
		_ = anon.Close()
		if err == nil || !strings.Contains(err.Error(), "NOAUTH") {
			t.Errorf("PING Sentinel %s without password: %v, want NOAUTH", a, err)
		}
	}
	if err := target.Client.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET through the failover client: %v", err)
	}
	// Every replica gets the write.
	n, err := target.Client.Do(ctx, "WAIT", replicas, 5000).Int()
	if err != nil || n != replicas {
		t.Errorf("WAIT %d 5000 = %d, %v; want %d", replicas, n, err, replicas)
	}
	anon := redis.NewClient(&redis.Options{Addr: target.Masters()[0], MaxRetries: -1})
	defer anon.Close()
	if err := anon.Get(ctx, "k").Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("GET without password: %v, want NOAUTH", err)
	}
	live, err := target.LiveNodes(ctx)
	if err != nil {
		t.Fatalf("LiveNodes: %v", err)
	}
	if got, want := nodeAddrs(live), nodeAddrs(info.Nodes); !slices.Equal(got, want) {
		t.Errorf("LiveNodes = %v, want %v", got, want)
	}
}

// checkSentinelFailover forces a failover with SENTINEL FAILOVER and checks that the failover
// client follows it, that the old master becomes a replica, and that selectors follow.
func checkSentinelFailover(t *testing.T, target *redisenv.Target) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	old := target.Masters()[0]
	promoted, err := target.Failover(ctx, old, redisenv.FailoverCoordinated)
	if err != nil {
		t.Fatalf("Failover(%s): %v", old, err)
	}
	if promoted == old || !slices.ContainsFunc(target.Info.Nodes, func(n redisenv.Node) bool {
		return n.Addr == promoted && n.Role == redisenv.RoleReplica
	}) {
		t.Fatalf("Failover promoted %s; want one of the replicas of %+v", promoted, target.Info.Nodes)
	}
	// The failover client follows: its writes land on the promoted replica. Retries are off, so
	// a call on a connection to the old master fails once before the client switches.
	_, wantPort, _ := net.SplitHostPort(promoted)
	waitFor(ctx, t, "the failover client writes to "+promoted, func() error {
		if err := target.Client.Set(ctx, "after", "1", 0).Err(); err != nil {
			return err
		}
		s, err := target.Client.Info(ctx, "server").Result()
		if err != nil {
			return err
		}
		if p := infoValue(s, "tcp_port"); p != wantPort {
			return fmt.Errorf("client talks to port %s", p)
		}
		return nil
	})
	waitFor(ctx, t, "the old master "+old+" to follow "+promoted, func() error {
		live, err := target.LiveNodes(ctx)
		if err != nil {
			return err
		}
		for _, n := range live {
			if n.Addr == old && n.Role == redisenv.RoleReplica && !n.Down {
				return nil
			}
		}
		return fmt.Errorf("LiveNodes = %+v", live)
	})
	got, err := target.Select(ctx, redisenv.Selector{Kind: redisenv.SelectMaster})
	if err != nil || len(got) != 1 || got[0] != promoted {
		t.Errorf("Select(master) = %v, %v; want [%s]", got, err, promoted)
	}
	got, err = target.Select(ctx, redisenv.Selector{Kind: redisenv.SelectReplica})
	if err != nil || len(got) != 1 || got[0] == promoted {
		t.Errorf("Select(replica) = %v, %v; want a replica of %s", got, err, promoted)
	}
	if _, err := target.Failover(ctx, old, redisenv.FailoverCoordinated); err == nil || !strings.Contains(err.Error(), "not the master now") {
		t.Errorf("Failover of the old master %s = %v; want an error naming it not the master", old, err)
	}
}

// TestSentinelKillFailover kills the master: the Sentinels promote the replica on their own,
// and the old master, restarted empty, comes back as a replica of the new one.
func TestSentinelKillFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the Sentinels to notice a dead master")
	}
	target := redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess, Topology: redisenv.TopologySentinel})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	old := target.Masters()[0]
	if err := target.Client.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := target.Client.Do(ctx, "WAIT", 1, 5000).Err(); err != nil {
		t.Fatal(err)
	}
	promoted, err := target.Failover(ctx, old, redisenv.FailoverKill)
	if err != nil {
		t.Fatalf("Failover(kill): %v", err)
	}
	if promoted != target.Info.Nodes[1].Addr {
		t.Fatalf("promoted %s, want the replica %s", promoted, target.Info.Nodes[1].Addr)
	}
	waitFor(ctx, t, "the failover client to read k from "+promoted, func() error {
		v, err := target.Client.Get(ctx, "k").Result()
		if err != nil {
			return err
		}
		if v != "v" {
			return fmt.Errorf("GET k = %q", v)
		}
		return nil
	})
	if err := target.Restart(ctx, old); err != nil {
		t.Fatalf("Restart(%s): %v", old, err)
	}
	waitFor(ctx, t, "the restarted "+old+" to become a replica", func() error {
		c := redis.NewClient(&redis.Options{Addr: old, Password: target.Password, MaxRetries: -1})
		defer c.Close()
		s, err := c.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		if infoValue(s, "role") != "slave" || infoValue(s, "master_link_status") != "up" {
			return fmt.Errorf("role %s link %s", infoValue(s, "role"), infoValue(s, "master_link_status"))
		}
		return nil
	})
}

// checkNoPasswordOnCommandLines fails when a process's command line shows password.
func checkNoPasswordOnCommandLines(t *testing.T, password string) {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Logf("no /proc (%v): command lines not checked", err)
		return
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(data), password) {
			t.Errorf("pid %s shows the password on its command line: %q", e.Name(), data)
		}
	}
}

// waitFor polls cond every 50 ms until it returns nil, failing t when ctx ends first.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() error) {
	t.Helper()
	var last error
	for {
		if last = cond(); last == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v (last: %v)", what, ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func nodeAddrs(nodes []redisenv.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Role+" "+n.Addr)
	}
	return out
}

// infoValue returns field from raw INFO text.
func infoValue(info, field string) string {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}
