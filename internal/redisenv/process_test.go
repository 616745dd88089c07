package redisenv_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/redisenv"
)

func needRedisServer(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH: %v", err)
	}
}

// startT starts cfg and registers Stop with t.Cleanup.
func startT(t testing.TB, cfg redisenv.Config) *redisenv.Target {
	t.Helper()
	cfg.Logf = t.Logf
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	target, err := redisenv.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("Start(%+v): %v", cfg, err)
	}
	t.Cleanup(func() {
		if err := target.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return target
}

func TestProcessSingle(t *testing.T) {
	needRedisServer(t)
	target := startT(t, redisenv.Config{Backend: redisenv.BackendProcess})
	checkSingle(t, target)
}

func checkSingle(t *testing.T, target *redisenv.Target) {
	t.Helper()
	ctx := context.Background()
	if got := len(target.Info.Nodes); got != 1 {
		t.Fatalf("Nodes = %d, want 1", got)
	}
	if !target.Info.SharedClock {
		t.Errorf("Info = %+v, want SharedClock", target.Info)
	}
	checkVersion(t, target)
	checkLoopback(t, target)
	checkNoRetries(t, target)
	if err := target.Client.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	// The server requires the generated password.
	anon := redis.NewClient(&redis.Options{Addr: target.Masters()[0], MaxRetries: -1})
	defer anon.Close()
	if err := anon.Get(ctx, "k").Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("GET without password: %v, want NOAUTH", err)
	}
	c := target.NewClient(redisenv.ClientOptions{PoolSize: 2})
	if _, ok := c.(*redis.Client); !ok {
		t.Errorf("NewClient on single = %T, want *redis.Client", c)
	}
	if err := c.Get(ctx, "k").Err(); err != nil {
		t.Errorf("GET with NewClient: %v", err)
	}
	for _, kv := range [][2]string{{"save", ""}, {"appendonly", "no"}} {
		got, err := target.Client.ConfigGet(ctx, kv[0]).Result()
		if err != nil {
			t.Fatalf("CONFIG GET %s: %v", kv[0], err)
		}
		if got[kv[0]] != kv[1] {
			t.Errorf("CONFIG GET %s = %q, want %q", kv[0], got[kv[0]], kv[1])
		}
	}
	infos, err := target.InfoAll(ctx, "commandstats")
	if err != nil || len(infos) != 1 || !strings.Contains(infos[target.Masters()[0]], "cmdstat_set") {
		t.Errorf("InfoAll(commandstats) = %v, %v; want one entry with cmdstat_set", infos, err)
	}
}

func TestProcessCluster(t *testing.T) {
	needRedisServer(t)
	target := startT(t, redisenv.Config{Backend: redisenv.BackendProcess, Topology: redisenv.TopologyCluster})
	checkCluster(t, target, 3)
}

// hashTagScript touches two keys that share a hash tag and returns the node's port via INFO.
var hashTagScript = redis.NewScript(`
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], ARGV[1])
return redis.call('INCR', KEYS[1]) + redis.call('INCR', KEYS[2])`)

func checkCluster(t *testing.T, target *redisenv.Target, masters int) {
	t.Helper()
	ctx := context.Background()
	if got := target.Masters(); len(got) != masters {
		t.Fatalf("Masters() = %v, want %d", got, masters)
	}
	checkVersion(t, target)
	checkLoopback(t, target)
	checkNoRetries(t, target)
	covered := 0
	for _, n := range target.Info.Nodes {
		if n.Role != redisenv.RoleMaster {
			continue
		}
		if n.ID == "" {
			t.Errorf("node %s has no ID", n.Addr)
		}
		for _, r := range n.Slots {
			covered += r[1] - r[0] + 1
		}
	}
	if covered != 16384 {
		t.Errorf("slots covered = %d, want 16384", covered)
	}
	if _, ok := target.Client.(*redis.ClusterClient); !ok {
		t.Fatalf("Client = %T, want *redis.ClusterClient", target.Client)
	}
	// A script with two keys sharing a hash tag runs on every master: pick tags until each
	// master has owned one.
	seen := map[string]bool{}
	for i := 0; len(seen) < masters && i < 1000; i++ {
		tag := fmt.Sprintf("{tag%d}", i)
		slot := keySlot(tag[1 : len(tag)-1])
		owner := ""
		for _, n := range target.Info.Nodes {
			for _, r := range n.Slots {
				if slot >= r[0] && slot <= r[1] {
					owner = n.Addr
				}
			}
		}
		if seen[owner] {
			continue
		}
		got, err := hashTagScript.Run(ctx, target.Client, []string{tag + ":a", tag + ":b"}, 1).Int()
		if err != nil || got != 4 {
			t.Fatalf("script on %s (slot %d) = %d, %v; want 4", owner, slot, got, err)
		}
		seen[owner] = true
	}
	if len(seen) != masters {
		t.Errorf("script ran on %d masters, want %d", len(seen), masters)
	}
	infos, err := target.InfoAll(ctx, "commandstats")
	if err != nil || len(infos) != masters {
		t.Fatalf("InfoAll = %d entries, %v; want %d", len(infos), err, masters)
	}
	for addr, s := range infos {
		if !strings.Contains(s, "cmdstat_evalsha") && !strings.Contains(s, "cmdstat_eval") {
			t.Errorf("master %s ran no script: %s", addr, s)
		}
	}
	c := target.NewClient(redisenv.ClientOptions{PoolSize: 2})
	if _, ok := c.(*redis.ClusterClient); !ok {
		t.Errorf("NewClient on cluster = %T, want *redis.ClusterClient", c)
	}
	if err := c.Set(ctx, "x", 1, 0).Err(); err != nil {
		t.Errorf("SET via NewClient: %v", err)
	}
}

// checkVersion checks that Info.Version is the redis_version every master reports.
func checkVersion(t *testing.T, target *redisenv.Target) {
	t.Helper()
	infos, err := target.InfoAll(context.Background(), "server")
	if err != nil {
		t.Fatalf("InfoAll(server): %v", err)
	}
	for addr, s := range infos {
		var v string
		for line := range strings.SplitSeq(s, "\n") {
			if x, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
				v = x
			}
		}
		if v == "" || target.Info.Version != v {
			t.Errorf("Info.Version = %q; %s reports redis_version %q", target.Info.Version, addr, v)
		}
	}
}

// checkLoopback checks that every server the harness started binds 127.0.0.1 only: CONFIG GET
// bind on each node, protected-mode off on containers (DESIGN: always passed), and, on Linux, the
// kernel's list of listening sockets for the node's port (and its cluster bus port) holds
// loopback addresses only.
func checkLoopback(t *testing.T, target *redisenv.Target) {
	t.Helper()
	ctx := context.Background()
	for _, n := range target.Info.Nodes {
		c := redis.NewClient(&redis.Options{Addr: n.Addr, Username: target.Username, Password: target.Password, MaxRetries: -1})
		got, err := c.ConfigGet(ctx, "*").Result()
		_ = c.Close()
		if err != nil {
			t.Fatalf("%s: CONFIG GET: %v", n.Addr, err)
		}
		if got["bind"] != "127.0.0.1" {
			t.Errorf("%s: CONFIG GET bind = %q, want 127.0.0.1", n.Addr, got["bind"])
		}
		if target.Info.Backend == redisenv.BackendContainer && got["protected-mode"] != "no" {
			t.Errorf("%s: CONFIG GET protected-mode = %q, want no on a container", n.Addr, got["protected-mode"])
		}
		_, portStr, _ := net.SplitHostPort(n.Addr)
		port, _ := strconv.Atoi(portStr)
		ports := []int{port}
		if target.IsCluster() {
			ports = append(ports, port+10000)
		}
		for _, p := range ports {
			ips, err := listeningIPs(p)
			if err != nil {
				t.Logf("cannot read listening sockets (%v); CONFIG GET bind checked only", err)
				return
			}
			if len(ips) == 0 {
				t.Errorf("%s: no listening socket on port %d in /proc/net/tcp{,6}", n.Addr, p)
			}
			for _, ip := range ips {
				if !ip.IsLoopback() {
					t.Errorf("%s: a socket listens on %s port %d, want loopback only", n.Addr, ip, p)
				}
			}
		}
	}
}

// listeningIPs returns the local addresses of the TCP sockets listening on port, from
// /proc/net/tcp and /proc/net/tcp6.
func listeningIPs(port int) ([]net.IP, error) {
	var ips []net.IP
	for _, name := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(name)
		if err != nil {
			if name == "/proc/net/tcp6" && errors.Is(err, os.ErrNotExist) {
				continue // IPv6 disabled
			}
			return nil, err
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 4 || f[3] != "0A" { // 0A: TCP_LISTEN
				continue
			}
			hexIP, hexPort, ok := strings.Cut(f[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 16); !ok || err != nil || int(p) != port {
				continue
			}
			raw, err := hex.DecodeString(hexIP)
			if err != nil || len(raw)%4 != 0 {
				return nil, fmt.Errorf("%s: bad address %q", name, f[1])
			}
			// The kernel prints each 32-bit word in host (little-endian) byte order.
			ip := make(net.IP, len(raw))
			for w := 0; w < len(raw); w += 4 {
				for b := range 4 {
					ip[w+b] = raw[w+3-b]
				}
			}
			ips = append(ips, ip)
		}
	}
	return ips, nil
}

// checkNoRetries checks that the target's clients have go-redis retries off, as DESIGN asks (a
// timed-out script may have run; it must never be re-sent). go-redis stores MaxRetries -1 as 0
// on a node client (left unset it would be 3), and MaxRedirects -1 as 0 on a cluster client
// (unset: 3); a cluster client keeps MaxRetries -1.
func checkNoRetries(t *testing.T, target *redisenv.Target) {
	t.Helper()
	for name, c := range map[string]redis.UniversalClient{
		"Client":    target.Client,
		"NewClient": target.NewClient(redisenv.ClientOptions{PoolSize: 1}),
	} {
		switch c := c.(type) {
		case *redis.Client:
			if o := c.Options(); o.MaxRetries != 0 {
				t.Errorf("%s.Options().MaxRetries = %d, want 0 (retries off)", name, o.MaxRetries)
			}
		case *redis.ClusterClient:
			if o := c.Options(); o.MaxRetries != -1 || o.MaxRedirects != 0 {
				t.Errorf("%s.Options(): MaxRetries %d, MaxRedirects %d; want -1 and 0 (retries off)", name, o.MaxRetries, o.MaxRedirects)
			}
		default:
			t.Errorf("%s is a %T", name, c)
		}
	}
	checkQuietHandshake(t, target)
	err := target.ForEachMaster(context.Background(), func(_ context.Context, c *redis.Client) error {
		if r := c.Options().MaxRetries; r != 0 {
			return fmt.Errorf("MaxRetries = %d, want 0 (retries off)", r)
		}
		return nil
	})
	if err != nil {
		t.Errorf("ForEachMaster client: %v", err)
	}
}

// checkQuietHandshake checks that a new connection of the target's clients sends nothing the
// server refuses: go-redis's default CLIENT MAINT_NOTIFICATIONS handshake fails on Redis before
// 8.0 ("ERR unknown subcommand") and shows in INFO errorstats, so after CONFIG RESETSTAT and a
// PING on fresh connections of a NewClient every master must report no error.
func checkQuietHandshake(t *testing.T, target *redisenv.Target) {
	t.Helper()
	ctx := context.Background()
	if err := target.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		return c.ConfigResetStat(ctx).Err()
	}); err != nil {
		t.Fatalf("CONFIG RESETSTAT: %v", err)
	}
	c := target.NewClient(redisenv.ClientOptions{PoolSize: 1})
	if cc, ok := c.(*redis.ClusterClient); ok {
		err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return m.Ping(ctx).Err() })
		if err != nil {
			t.Fatalf("PING every master: %v", err)
		}
	} else if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	err := target.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "errorstats").Result()
		if err != nil {
			return err
		}
		if strings.Contains(info, "errorstat_") {
			return fmt.Errorf("a new connection caused errors: %q", info)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// keySlot is Redis Cluster's CRC16 slot of key (no hash tag handling: callers pass the tag).
func keySlot(key string) int {
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}

func TestStopIdempotent(t *testing.T) {
	needRedisServer(t)
	target, err := redisenv.Start(context.Background(), redisenv.Config{Backend: redisenv.BackendProcess})
	if err != nil {
		t.Fatal(err)
	}
	addr := target.Masters()[0]
	for i := range 2 {
		if err := target.Stop(context.Background()); err != nil {
			t.Fatalf("Stop #%d: %v", i+1, err)
		}
	}
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	if err := c.Ping(context.Background()).Err(); err == nil || errors.Is(err, redis.Nil) {
		t.Errorf("PING after Stop = %v, want a connection error", err)
	}
}

func TestProcessClusterWithReplicas(t *testing.T) {
	needRedisServer(t)
	if testing.Short() {
		t.Skip("starts 6 servers")
	}
	target := startT(t, redisenv.Config{Backend: redisenv.BackendProcess, Topology: redisenv.TopologyCluster, Replicas: 1})
	checkCluster(t, target, 3)
	masters := map[string]bool{}
	for _, n := range target.Info.Nodes {
		if n.Role == redisenv.RoleMaster {
			masters[n.ID] = true
		}
	}
	replicas := 0
	for _, n := range target.Info.Nodes {
		if n.Role == redisenv.RoleReplica {
			replicas++
			if !masters[n.MasterID] || len(n.Slots) != 0 {
				t.Errorf("replica %+v: want a known master and no slots", n)
			}
		}
	}
	if replicas != 3 {
		t.Errorf("%d replicas, want 3", replicas)
	}
}

func TestAutoPicksProcess(t *testing.T) {
	needRedisServer(t)
	target := startT(t, redisenv.Config{})
	if target.Info.Backend != redisenv.BackendProcess || !strings.Contains(target.Info.Chosen, "redis-server found") {
		t.Errorf("auto: Backend %q, Chosen %q; want process because redis-server is on PATH", target.Info.Backend, target.Info.Chosen)
	}
}
