package load

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

// waitCalls returns the calls of WAIT each master of tgt has answered (INFO commandstats), by
// address.
func waitCalls(t *testing.T, tgt *redisenv.Target) map[string]int64 {
	t.Helper()
	var mu sync.Mutex
	out := map[string]int64{}
	err := tgt.ForEachMaster(context.Background(), func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "commandstats").Result()
		if err != nil {
			return err
		}
		var n int64
		for line := range strings.SplitSeq(info, "\n") {
			rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_wait:calls=")
			if !ok {
				continue
			}
			n, err = strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
			if err != nil {
				return err
			}
		}
		mu.Lock()
		out[c.Options().Addr] = n
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	return out
}

func sum(m map[string]int64) int64 {
	var s int64
	for _, v := range m {
		s += v
	}
	return s
}

// prepareGCRA prepares the gcra algorithm on c under prefix with a limit no request reaches, so
// that every request writes (an admission) and its WAIT has something to wait for.
func prepareGCRA(t *testing.T, c redis.UniversalClient, prefix string) algorithms.Limiter {
	t.Helper()
	a, err := algorithms.Lookup("gcra")
	if err != nil {
		t.Fatal(err)
	}
	lim, err := a.Prepare(context.Background(), c, algorithms.Limit{Limit: 1_000_000, Window: time.Second}, prefix)
	if err != nil {
		t.Fatalf("prepare gcra: %v", err)
	}
	return lim
}

// TestRunWait runs a load whose plan has a Wait on topologies with a replica (Sentinel's one
// master and one replica, a cluster of three masters with a replica each) and checks that every
// request was followed by a WAIT on the master that ran it (each master's commandstats of wait
// rose by exactly the requests sent, warmup included, and on a cluster by the requests for the
// subjects it holds), that the replica acknowledged every one (no WAIT short) and that the
// requests were decided.
func TestRunWait(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster with replicas")
	}
	cases := []struct {
		name string
		tgt  func(t *testing.T) (*redisenv.Target, string)
		mode Mode
	}{
		{"sentinel/plain", func(t *testing.T) (*redisenv.Target, string) {
			e := redistest.Sentinel(t)
			return e.Target, e.Prefix
		}, ModePlain},
		{"sentinel/pipeline", func(t *testing.T) (*redisenv.Target, string) {
			e := redistest.Sentinel(t)
			return e.Target, e.Prefix
		}, ModePipeline},
		{"cluster-replicas/plain", func(t *testing.T) (*redisenv.Target, string) {
			return redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess, Topology: redisenv.TopologyCluster,
				Masters: 3, Replicas: 1}), "wt:"
		}, ModePlain},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tgt, prefix := tc.tgt(t)
			c := tgt.NewClient(redisenv.ClientOptions{PoolSize: 6})
			defer c.Close()
			lim := prepareGCRA(t, c, prefix)
			before := waitCalls(t, tgt)
			// Which master each request went to: the master of its key's slot.
			var mu sync.Mutex
			perMaster := map[string]int64{}
			p := Plan{
				Arrival: Constant(300), Duration: 700 * time.Millisecond, Warmup: 100 * time.Millisecond,
				Clients: 4, Mode: tc.mode, PipelineDepth: 4, Keys: Keys{Count: 20},
				Wait: algorithms.Wait{Replicas: 1},
			}
			subjects := p.Keys.withDefaults().Names()
			p.OnOutcome = func(o *Outcome) {
				addr := "all"
				if cc, ok := c.(*redis.ClusterClient); ok {
					node, err := cc.MasterForKey(context.Background(), lim.Keys(algorithms.Request{Subject: subjects[o.Subject]})[0])
					if err == nil {
						addr = node.Options().Addr
					}
				}
				mu.Lock()
				perMaster[addr]++
				mu.Unlock()
			}
			res, err := Run(context.Background(), c, lim, p, Sinks{})
			if err != nil {
				t.Fatal(err)
			}
			after := waitCalls(t, tgt)
			sent := int64(res.Counts.Requests + res.Counts.Warmup)
			if got := sum(after) - sum(before); got != sent {
				t.Errorf("WAIT calls on the masters rose by %d; want %d (one per request)", got, sent)
			}
			if _, cluster := c.(*redis.ClusterClient); cluster {
				if len(perMaster) < 2 {
					t.Errorf("requests went to %d masters; want the subjects spread over several", len(perMaster))
				}
				for addr, n := range perMaster {
					if got := after[addr] - before[addr]; got != n {
						t.Errorf("master %s: WAIT calls rose by %d; want %d (the requests it ran)", addr, got, n)
					}
				}
			}
			if res.Counts.WaitShort != 0 {
				t.Errorf("WaitShort = %d; want 0 (a healthy replica acknowledges every write)", res.Counts.WaitShort)
			}
			if res.Counts.Allowed == 0 || res.Counts.Errors() != 0 {
				t.Errorf("counts %+v; want admissions and no errors", res.Counts)
			}
		})
	}
}

// TestRunWaitShortLatency asks a WAIT for more replicas than the Sentinel topology has (two of
// one), so that each one times out: every request's round trip then includes its WAIT's 40 ms
// timeout (the latency with WAIT is recorded), and every request counts as short.
func TestRunWaitShortLatency(t *testing.T) {
	env := redistest.Sentinel(t)
	c := env.Target.NewClient(redisenv.ClientOptions{PoolSize: 4})
	defer c.Close()
	lim := prepareGCRA(t, c, env.Prefix)
	const timeout = 40 * time.Millisecond
	var mu sync.Mutex
	var fastest time.Duration = time.Hour
	p := Plan{
		Arrival: ClosedLoop{}, Duration: 300 * time.Millisecond, Clients: 2, Keys: Keys{Count: 2},
		Wait: algorithms.Wait{Replicas: 2, Timeout: timeout},
		OnOutcome: func(o *Outcome) {
			mu.Lock()
			fastest = min(fastest, o.Service())
			mu.Unlock()
		},
	}
	res, err := Run(context.Background(), c, lim, p, Sinks{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts.Requests == 0 || res.Counts.WaitShort != res.Counts.Requests {
		t.Errorf("WaitShort = %d of %d requests; want all", res.Counts.WaitShort, res.Counts.Requests)
	}
	if res.Counts.Allowed != res.Counts.Requests {
		t.Errorf("allowed %d of %d; want all (a short WAIT undoes nothing)", res.Counts.Allowed, res.Counts.Requests)
	}
	if fastest < timeout {
		t.Errorf("fastest service time %s; want >= the WAIT timeout %s (the WAIT is in the request's round trip)", fastest, timeout)
	}
}

// TestPlanWaitRefused: a Wait is refused where it cannot follow its request on the request's
// connection (autopipeline; pipeline mode on a cluster), and out of bounds.
func TestPlanWaitRefused(t *testing.T) {
	base := Plan{Arrival: Constant(10), Duration: time.Second, Clients: 1, Wait: algorithms.Wait{Replicas: 1}}
	for _, tc := range []struct {
		name string
		edit func(p *Plan)
		want string
	}{
		{"autopipeline", func(p *Plan) { p.Mode = ModeAutoPipeline }, "autopipeline"},
		{"replicas", func(p *Plan) { p.Wait.Replicas = 6 }, "replicas must be between 0 and 5"},
		{"timeout-ms", func(p *Plan) { p.Wait.Timeout = 1500 * time.Microsecond }, "whole milliseconds"},
		{"timeout-max", func(p *Plan) { p.Wait.Timeout = 3 * time.Second }, "at most 2s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := base
			tc.edit(&p)
			err := p.Validate()
			if !errors.Is(err, ErrBadPlan) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v; want ErrBadPlan with %q", err, tc.want)
			}
		})
	}
	t.Run("cluster-pipeline", func(t *testing.T) {
		env := redistest.Cluster(t)
		c := env.Target.NewClient(redisenv.ClientOptions{PoolSize: 2})
		defer c.Close()
		p := base
		p.Mode = ModePipeline
		_, err := Run(context.Background(), c, prepareGCRA(t, c, env.Prefix), p, Sinks{})
		if !errors.Is(err, ErrBadPlan) || !strings.Contains(err.Error(), "cluster") {
			t.Errorf("Run = %v; want ErrBadPlan naming the cluster", err)
		}
	})
}

// TestRunWaitDenyShort: with Wait.DenyShort, admissions whose WAIT came back short (two replicas
// asked of a Sentinel group that has one) are recorded as denials, and nothing else changes.
func TestRunWaitDenyShort(t *testing.T) {
	env := redistest.Sentinel(t)
	c := env.Target.NewClient(redisenv.ClientOptions{PoolSize: 4})
	defer c.Close()
	lim := prepareGCRA(t, c, env.Prefix)
	p := Plan{
		Arrival: ClosedLoop{}, Duration: 200 * time.Millisecond, Clients: 2, Keys: Keys{Count: 2},
		Wait: algorithms.Wait{Replicas: 2, Timeout: 20 * time.Millisecond, DenyShort: true},
	}
	res, err := Run(context.Background(), c, lim, p, Sinks{})
	if err != nil {
		t.Fatal(err)
	}
	if n := res.Counts.Requests; n == 0 || res.Counts.WaitShort != n || res.Counts.Denied != n || res.Counts.Allowed != 0 {
		t.Errorf("counts %+v; want every request short and denied", res.Counts)
	}
}
