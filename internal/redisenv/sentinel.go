package redisenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// A sentinel topology is one master, Config.Replicas replicas (at least 1) and three Sentinels
// (redis-server --sentinel) that monitor the master under SentinelMasterName with a quorum of 2.
// Every server and Sentinel requires the generated password (the Sentinels' own requirepass and
// sentinel-pass, auth-pass towards the servers), all on 127.0.0.1. The master is subjectively
// down after 2 s without an answer; two Sentinels then fail it over.
//
// Start returns when every Sentinel names the master, sees every replica (flags "slave", link
// ok) and the two other Sentinels, so that a failover can start at once. Target.Client and
// Target.NewClient are go-redis failover clients: they ask the Sentinels where the master is and
// switch when a Sentinel announces +switch-master. Info.Nodes, Masters and ForEachMaster keep the
// master as started; LiveNodes asks the Sentinels which node is master now.

// startSentinel starts the sentinel topology with l: the master, its replicas (waiting until each
// is in sync), then the Sentinels, and waits until they agree. closeExtra, when not nil, runs
// after the servers have stopped (the container backend closes its engine client).
func startSentinel(ctx context.Context, cfg Config, l launcher, info Info, closeExtra func(context.Context) error) (*Target, error) {
	password := newPassword()
	var (
		mu      sync.Mutex
		started []server
	)
	keep := func(s server) {
		mu.Lock()
		started = append(started, s)
		mu.Unlock()
	}
	stopAll := func(ctx context.Context) error {
		mu.Lock()
		all := slices.Clone(started)
		mu.Unlock()
		errs := make([]error, len(all)+1)
		var wg sync.WaitGroup
		for i, s := range all {
			wg.Go(func() { errs[i] = s.remove(ctx) })
		}
		wg.Wait()
		if closeExtra != nil {
			errs[len(all)] = closeExtra(ctx)
		}
		return errors.Join(errs...)
	}
	fail := func(err error) (*Target, error) {
		mu.Lock()
		var logs strings.Builder
		for _, s := range started {
			logs.WriteString(s.logTail())
		}
		mu.Unlock()
		_ = stopAll(context.Background())
		return nil, fmt.Errorf("%w: sentinel topology: %w%s", ErrUnavailable, err, logs.String())
	}

	master, err := l.launch(ctx, serverSpec{password: password, persistence: cfg.Persistence})
	if err != nil {
		_ = stopAll(context.Background())
		return nil, err
	}
	keep(master)
	n := cfg.replicas()
	replicas := make([]server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() {
			replicas[i], errs[i] = l.launch(ctx, serverSpec{password: password, persistence: cfg.Persistence,
				replicaOf: master.addr()})
			if errs[i] == nil {
				keep(replicas[i])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		_ = stopAll(context.Background())
		return nil, err
	}
	replicaAddrs := make([]string, n)
	for i, r := range replicas {
		replicaAddrs[i] = r.addr()
	}
	// Sentinels learn the replicas from the master's INFO when they first connect: start them
	// once every replica is in sync, so that the first INFO already lists them all.
	if err := waitReplicasSynced(ctx, master.addr(), replicaAddrs, password); err != nil {
		return fail(err)
	}

	sentinels := make([]server, sentinelCount)
	errs = make([]error, sentinelCount)
	for i := range sentinels {
		wg.Go(func() {
			sentinels[i], errs[i] = l.launch(ctx, serverSpec{password: password, monitor: master.addr()})
			if errs[i] == nil {
				keep(sentinels[i])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		_ = stopAll(context.Background())
		return nil, err
	}
	sentinelAddrs := make([]string, sentinelCount)
	for i, s := range sentinels {
		sentinelAddrs[i] = s.addr()
	}
	if err := waitSentinelsAgree(ctx, sentinelAddrs, password, master.addr(), replicaAddrs); err != nil {
		return fail(err)
	}

	info.Nodes = []Node{{Addr: master.addr(), Role: RoleMaster}}
	for _, a := range replicaAddrs {
		info.Nodes = append(info.Nodes, Node{Addr: a, Role: RoleReplica})
	}
	sortNodes(info.Nodes)
	info.Sentinels = sentinelAddrs
	info.MasterName = SentinelMasterName
	t := newTarget(info, "", password, nil, stopAll)
	t.adopt(append(append([]server{master}, replicas...), sentinels...))
	v, err := serverVersion(ctx, t.masters[0])
	if err != nil {
		_ = t.Stop(context.Background())
		return nil, fmt.Errorf("%w: INFO server: %w%s", ErrUnavailable, err, master.logTail())
	}
	t.Info.Version = v
	return t, nil
}

// quietClient returns a client of one node (or Sentinel) for the harness's own checks: one
// connection, retries off, short timeouts.
func quietClient(addr, password string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, Password: password, MaxRetries: -1, PoolSize: 1,
		DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second,
		MaintNotificationsConfig: noMaintNotifications(), DisableIdentity: true})
}

// waitReplicasSynced polls until every replica reports master_link_status:up towards master and
// the master lists them all as online.
func waitReplicasSynced(ctx context.Context, master string, replicas []string, password string) error {
	var last error
	for {
		last = replicasSynced(ctx, master, replicas, password)
		if last == nil {
			return nil
		}
		if err := sleepCtx(ctx, 5*time.Millisecond); err != nil {
			return fmt.Errorf("replicas not in sync: %w (last: %w)", err, last)
		}
	}
}

func replicasSynced(ctx context.Context, master string, replicas []string, password string) error {
	for _, r := range replicas {
		c := quietClient(r, password)
		info, err := c.Info(ctx, "replication").Result()
		_ = c.Close()
		if err != nil {
			return fmt.Errorf("%s: INFO replication: %w", r, err)
		}
		if got := net.JoinHostPort(infoField(info, "master_host"), infoField(info, "master_port")); got != master {
			return fmt.Errorf("%s replicates %s, want %s", r, got, master)
		}
		if s := infoField(info, "master_link_status"); s != "up" {
			return fmt.Errorf("%s: master_link_status:%s", r, s)
		}
	}
	c := quietClient(master, password)
	info, err := c.Info(ctx, "replication").Result()
	_ = c.Close()
	if err != nil {
		return fmt.Errorf("%s: INFO replication: %w", master, err)
	}
	online := 0
	for line := range strings.SplitSeq(info, "\n") {
		if strings.HasPrefix(line, "slave") && strings.Contains(line, "state=online") {
			online++
		}
	}
	if online != len(replicas) {
		return fmt.Errorf("master %s has %d replicas online, want %d", master, online, len(replicas))
	}
	return nil
}

// waitSentinelsAgree polls until every Sentinel names master, sees exactly the replicas (each
// flagged "slave" alone, its link ok) and the other Sentinels (flagged "sentinel" alone).
func waitSentinelsAgree(ctx context.Context, sentinels []string, password, master string, replicas []string) error {
	clients := make([]*redis.SentinelClient, len(sentinels))
	for i, a := range sentinels {
		clients[i] = redis.NewSentinelClient(&redis.Options{Addr: a, Password: password, MaxRetries: -1,
			PoolSize: 1, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second,
			MaintNotificationsConfig: noMaintNotifications(), DisableIdentity: true})
	}
	defer func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	var last error
	for {
		last = sentinelsAgree(ctx, sentinels, clients, master, replicas)
		if last == nil {
			return nil
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return fmt.Errorf("sentinels do not agree: %w (last: %w)", err, last)
		}
	}
}

func sentinelsAgree(ctx context.Context, addrs []string, clients []*redis.SentinelClient, master string, replicas []string) error {
	for i, c := range clients {
		addr := addrs[i]
		got, err := c.GetMasterAddrByName(ctx, SentinelMasterName).Result()
		if err != nil {
			return fmt.Errorf("%s: SENTINEL GET-MASTER-ADDR-BY-NAME: %w", addr, err)
		}
		if len(got) != 2 || net.JoinHostPort(got[0], got[1]) != master {
			return fmt.Errorf("%s names master %v, want %s", addr, got, master)
		}
		m, err := c.Master(ctx, SentinelMasterName).Result()
		if err != nil {
			return fmt.Errorf("%s: SENTINEL MASTER: %w", addr, err)
		}
		if m["flags"] != "master" {
			return fmt.Errorf("%s: master flags %q", addr, m["flags"])
		}
		reps, err := c.Replicas(ctx, SentinelMasterName).Result()
		if err != nil {
			return fmt.Errorf("%s: SENTINEL REPLICAS: %w", addr, err)
		}
		var seen []string
		for _, r := range reps {
			if r["flags"] != "slave" || r["master-link-status"] != "ok" {
				return fmt.Errorf("%s: replica %s:%s flags %q link %q", addr, r["ip"], r["port"], r["flags"], r["master-link-status"])
			}
			seen = append(seen, net.JoinHostPort(r["ip"], r["port"]))
		}
		slices.Sort(seen)
		want := slices.Sorted(slices.Values(replicas))
		if !slices.Equal(seen, want) {
			return fmt.Errorf("%s sees replicas %v, want %v", addr, seen, want)
		}
		others, err := c.Sentinels(ctx, SentinelMasterName).Result()
		if err != nil {
			return fmt.Errorf("%s: SENTINEL SENTINELS: %w", addr, err)
		}
		up := 0
		for _, o := range others {
			if o["flags"] == "sentinel" {
				up++
			}
		}
		if up != len(clients)-1 {
			return fmt.Errorf("%s sees %d other Sentinels up, want %d", addr, up, len(clients)-1)
		}
	}
	return nil
}
