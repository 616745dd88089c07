package faults

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
	"github.com/limitbench/limitbench/scenarios"
)

// Issue 19: a latency fault on the replication link of a master, carried out by the injector
// on the run's clock (a Sentinel group and a cluster of processes, a Sentinel group of
// containers): while it lasts the
// replica's replication offset lags the master's (INFO replication, under a steady stream of
// writes that the load generator's path carries without delay), after it the lag is gone, its
// start and end are recorded, and no proxy is left behind.
func TestInjectReplicationLatency(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  redisenv.Config
		// lazy leaves the proxy to the injector when the fault starts (a master promoted
		// after the setup), instead of RouteReplication before.
		lazy bool
	}{
		{"sentinel", redisenv.Config{Backend: redisenv.BackendProcess, Topology: redisenv.TopologySentinel}, false},
		{"cluster", redisenv.Config{Backend: redisenv.BackendProcess, Topology: redisenv.TopologyCluster, Replicas: 1}, false},
		{"cluster, proxied when the fault starts", redisenv.Config{Backend: redisenv.BackendProcess, Topology: redisenv.TopologyCluster, Replicas: 1}, true},
		// Containers share the host's network: the master's replica dials the proxy on the
		// host's loopback.
		{"sentinel container", redisenv.Config{Backend: redisenv.BackendContainer, Image: redisenv.HostImage, Topology: redisenv.TopologySentinel}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tgt := redistest.Start(t, tt.cfg)
			checkReplicationLag(t, tgt, tt.lazy)
		})
	}
}

// checkReplicationLag injects 400 ms of latency on the replication link of master for 1.5 s and
// watches the offsets of master and replica meanwhile.
func checkReplicationLag(t *testing.T, tgt *redisenv.Target, lazy bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	schedule := []scenarios.Fault{{At: 500 * time.Millisecond, Kind: scenarios.FaultLatency, Link: scenarios.LinkReplication,
		Duration: 1500 * time.Millisecond, Latency: 400 * time.Millisecond, Jitter: 20 * time.Millisecond}}
	master := tgt.Masters()[0]
	replica, err := tgt.Select(ctx, redisenv.Selector{Kind: redisenv.SelectReplica})
	if err != nil {
		t.Fatal(err)
	}
	netw, err := ProxyTarget(tgt)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = netw.Close(context.Background())
		}
	}()
	if !lazy {
		if err := RouteReplication(ctx, tgt, netw, schedule); err != nil {
			t.Fatalf("RouteReplication: %v", err)
		}
	} else if _, ok := netw.ReplicationProxy(master); ok {
		t.Fatalf("a replication proxy on %s before the fault", master)
	}
	mc := redis.NewClient(tgt.NodeOptions(master))
	defer mc.Close()
	rc := redis.NewClient(tgt.NodeOptions(replica[0]))
	defer rc.Close()
	// lag returns how many bytes of the master's replication stream the replica has not
	// applied: the master's offset read first, so a positive lag is never an artefact of the
	// order of the reads.
	lag := func() int64 {
		mi, err := mc.Info(ctx, "replication").Result()
		if err != nil {
			t.Fatalf("INFO replication on %s: %v", master, err)
		}
		ri, err := rc.Info(ctx, "replication").Result()
		if err != nil {
			t.Fatalf("INFO replication on %s: %v", replica[0], err)
		}
		m, _ := strconv.ParseInt(infoValue(mi, "master_repl_offset"), 10, 64)
		r, _ := strconv.ParseInt(infoValue(ri, "slave_repl_offset"), 10, 64)
		return m - r
	}
	key := "lag"
	if tgt.Info.Topology == redisenv.TopologyCluster {
		key = keyOnMaster(t, tgt, master)
	}
	origin := time.Now()
	in := Inject(ctx, tgt, netw, schedule, origin)
	type sample struct {
		at  time.Duration
		lag int64
	}
	var samples []sample
	// Until the fault has been over for 1.5 s: it starts late when its proxy is put in place
	// then (up to cluster-node-timeout/2, 2.5 s).
	var ended time.Time
	for ended.IsZero() || time.Since(ended) < 1500*time.Millisecond {
		if ended.IsZero() && time.Since(origin) > 30*time.Second {
			t.Fatalf("the fault has not ended 30s after it was due")
		}
		if err := mc.Incr(ctx, key).Err(); err != nil {
			t.Fatalf("INCR on %s: %v", master, err)
		}
		samples = append(samples, sample{time.Since(origin), lag()})
		time.Sleep(10 * time.Millisecond)
		ended = in.Injections()[0].End
	}
	js := in.Stop()
	rp, ok := netw.ReplicationProxy(master)
	if !ok {
		t.Fatalf("no replication proxy on %s", master)
	}
	if len(js) != 1 || js[0].Err != nil || js[0].Start.IsZero() || js[0].End.Sub(js[0].Start) < 1500*time.Millisecond {
		t.Fatalf("injections %+v; want the fault carried out for 1.5s", js)
	}
	start, end := js[0].Start.Sub(origin), js[0].End.Sub(origin)
	if js[0].Nodes[0] != master {
		t.Errorf("the fault acted on %v; want the master %s", js[0].Nodes, master)
	}
	// Every write waits 400 ms ± 20 ms on its way to the replica: from 450 ms into the fault
	// to its end, every sample lags, by about 400 ms of writes; from 600 ms after it (the
	// delayed data drains in 420 ms) the replica has caught up: it lags by less than a quarter
	// of the fault's median lag (a sample taken right after an INCR may find that write not yet
	// applied, more so on a loaded machine, which says nothing about the fault).
	var during, lagging, after, caughtUp int
	var lags []int64
	for _, s := range samples {
		if s.at > start+450*time.Millisecond && s.at < end-50*time.Millisecond {
			during++
			lags = append(lags, s.lag)
			if s.lag > 0 {
				lagging++
			}
		}
	}
	slices.Sort(lags)
	var stall int64
	if len(lags) > 0 {
		stall = lags[len(lags)/2]
	}
	for _, s := range samples {
		if s.at > end+600*time.Millisecond {
			after++
			if s.lag*4 < stall {
				caughtUp++
			}
		}
	}
	t.Logf("fault from %s to %s; %d samples during it, %d lagging (median %d bytes); %d after it, %d caught up", start, end, during, lagging, stall, after, caughtUp)
	if during < 10 || lagging < during*9/10 {
		t.Errorf("%d of %d samples during the fault show the replica lagging; want nearly all", lagging, during)
	}
	if after < 10 || caughtUp < after*9/10 {
		t.Errorf("%d of %d samples after the fault show the replica caught up; want nearly all", caughtUp, after)
	}
	cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
	defer ccancel()
	if err := netw.Close(cctx); err != nil {
		t.Errorf("Network.Close: %v", err)
	}
	closed = true
	// The proxy is gone and the replica follows the master directly again.
	if c, err := net.DialTimeout("tcp", rp.Addr(), time.Second); err == nil {
		c.Close()
		t.Errorf("the replication proxy %s still accepts connections after Close", rp.Addr())
	}
	ri, err := rc.Info(ctx, "replication").Result()
	if err != nil {
		t.Fatal(err)
	}
	if got := net.JoinHostPort(infoValue(ri, "master_host"), infoValue(ri, "master_port")); got != master {
		t.Errorf("after Close the replica follows %s; want %s", got, master)
	}
}

// infoValue returns the value of field in the text of an INFO reply ("" when absent).
func infoValue(info, field string) string {
	for line := range strings.SplitSeq(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && k == field {
			return v
		}
	}
	return ""
}

// keyOnMaster returns a key whose slot the cluster master at addr owns now: the first that the
// master accepts a write for (no MOVED).
func keyOnMaster(t *testing.T, tgt *redisenv.Target, addr string) string {
	t.Helper()
	c := redis.NewClient(tgt.NodeOptions(addr))
	defer c.Close()
	for i := range 1000 {
		k := "lag" + strconv.Itoa(i)
		if err := c.Set(context.Background(), k, "0", 0).Err(); err == nil {
			return k
		}
	}
	t.Fatalf("no key for %s among 1000", addr)
	return ""
}
