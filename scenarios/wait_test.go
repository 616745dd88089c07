package scenarios

import (
	"errors"
	"testing"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/redisenv"
)

func TestWaitParsed(t *testing.T) {
	s, err := parseString(t, "wait", "version: 1\ntopologies: [sentinel]\nwait_replicas: 1\nwait_timeout: 250ms\n")
	if err != nil {
		t.Fatal(err)
	}
	want := algorithms.Wait{Replicas: 1, Timeout: 250 * time.Millisecond}
	if s.Wait != want || s.Plan().Wait != want {
		t.Errorf("Wait = %+v, Plan().Wait = %+v; want %+v", s.Wait, s.Plan().Wait, want)
	}
	s, err = parseString(t, "deny", "version: 1\ntopologies: [sentinel]\nwait_replicas: 1\nwait_short: deny\n")
	if err != nil || !s.Wait.DenyShort {
		t.Errorf("wait_short: deny: Wait = %+v, err %v; want DenyShort", s.Wait, err)
	}
	s, err = parseString(t, "nowait", "version: 1\n")
	if err != nil || s.Wait.Enabled() {
		t.Errorf("a scenario without wait_replicas: Wait = %+v, err %v; want none", s.Wait, err)
	}
}

// TestWaitInvalid: every problem of wait_replicas and wait_timeout is named with its file, line
// and field.
func TestWaitInvalid(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"negative", "version: 1\nwait_replicas: -1\n",
			"testdata/negative.yaml:2: wait_replicas: must be between 0 and 5 (the most replicas per master limitbench starts), got -1"},
		{"too-many", "version: 1\nwait_replicas: 6\n",
			"testdata/too-many.yaml:2: wait_replicas: must be between 0 and 5 (the most replicas per master limitbench starts), got 6"},
		{"not-int", "version: 1\nwait_replicas: one\n",
			"testdata/not-int.yaml:2: wait_replicas: must be a whole number; got \"one\""},
		{"timeout-alone", "version: 1\nwait_timeout: 1s\n",
			"testdata/timeout-alone.yaml:2: wait_timeout: only applies with wait_replicas"},
		{"timeout-zero", "version: 1\ntopologies: [sentinel]\nwait_replicas: 1\nwait_timeout: 0s\n",
			"testdata/timeout-zero.yaml:4: wait_timeout: must be > 0 (WAIT's 0, wait forever, would stop the load while a replica is missing), got 0s"},
		{"timeout-fraction", "version: 1\ntopologies: [sentinel]\nwait_replicas: 1\nwait_timeout: 1500us\n",
			"testdata/timeout-fraction.yaml:4: wait_timeout: must be whole milliseconds, got 1.5ms"},
		{"timeout-long", "version: 1\ntopologies: [sentinel]\nwait_replicas: 1\nwait_timeout: 5s\n",
			"testdata/timeout-long.yaml:4: wait_timeout: must be at most 2s (below the clients' read timeout), got 5s"},
		{"short-unknown", "version: 1\ntopologies: [sentinel]\nwait_replicas: 1\nwait_short: drop\n",
			"testdata/short-unknown.yaml:4: wait_short: unknown value \"drop\"; use admit or deny"},
		{"short-alone", "version: 1\nwait_short: deny\n",
			"testdata/short-alone.yaml:2: wait_short: only applies with wait_replicas"},
		{"autopipeline", "version: 1\ntopologies: [sentinel]\nclient_mode: autopipeline\nwait_replicas: 1\n",
			"testdata/autopipeline.yaml:4: wait_replicas: cannot be used with client_mode: autopipeline (its pipelines mix every client's requests on any connection, and WAIT waits for its own connection's writes); use plain or pipeline"},
		{"cluster-pipeline", "version: 1\ntopologies: [sentinel, cluster]\nclient_mode: pipeline\nwait_replicas: 1\n",
			"testdata/cluster-pipeline.yaml:4: wait_replicas: cannot be used with client_mode: pipeline on topology cluster (a cluster pipeline sends a WAIT, which has no key, to any master); use client_mode: plain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseString(t, tc.name, tc.text)
			if err == nil || err.Error() != tc.want {
				t.Errorf("parse =\n%v\nwant\n%s", err, tc.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not match ErrInvalid", err)
			}
		})
	}
}

// TestCheckReplicas: wait_replicas may not exceed the replicas a topology limitbench starts has
// per master; on an external Redis it is taken as written.
func TestCheckReplicas(t *testing.T) {
	s, err := parseString(t, "wr", "version: 1\ntopologies: [single, sentinel, cluster]\nwait_replicas: 2\n")
	if err != nil {
		t.Fatal(err)
	}
	process := redisenv.Config{Backend: redisenv.BackendProcess}
	for _, tc := range []struct {
		env  redisenv.Config
		topo redisenv.Topology
		want string // "" for no problem
	}{
		{process, redisenv.TopologySingle, "testdata/wr.yaml:3: wait_replicas: 2: topology single has 0 replicas per master here (use topology sentinel, or cluster with replicas: or --replicas)"},
		{process, redisenv.TopologySentinel, "testdata/wr.yaml:3: wait_replicas: 2: topology sentinel has 1 replica per master here (set replicas: or --replicas)"},
		{redisenv.Config{Backend: redisenv.BackendProcess, Replicas: 2}, redisenv.TopologySentinel, ""},
		{process, redisenv.TopologyCluster, "testdata/wr.yaml:3: wait_replicas: 2: topology cluster has 0 replicas per master here (set replicas: or --replicas)"},
		{redisenv.Config{Backend: redisenv.BackendContainer, Replicas: 3}, redisenv.TopologyCluster, ""},
		{redisenv.Config{Backend: redisenv.BackendExternal}, redisenv.TopologySingle, ""},
	} {
		err := s.CheckReplicas(tc.env, tc.topo)
		got := ""
		if err != nil {
			got = err.Error()
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("CheckReplicas(%+v, %s) = %v; does not match ErrInvalid", tc.env, tc.topo, err)
			}
		}
		if got != tc.want {
			t.Errorf("CheckReplicas(%+v, %s) =\n%s\nwant\n%s", tc.env, tc.topo, got, tc.want)
		}
	}
}

// TestApplyWaitReplicas: --wait-replicas replaces wait_replicas; 0 turns the WAIT off, the
// scenario's wait_timeout with it, and a bad value names the flag.
func TestApplyWaitReplicas(t *testing.T) {
	const text = "version: 1\ntopologies: [sentinel]\nwait_replicas: 1\nwait_timeout: 300ms\n"
	s, err := parseString(t, "ow", text)
	if err != nil {
		t.Fatal(err)
	}
	zero := 0
	if err := s.apply(Overrides{WaitReplicas: &zero}, designNames); err != nil || s.Wait.Enabled() || s.Wait.Timeout != 0 {
		t.Errorf("apply(--wait-replicas 0) = %v, Wait %+v; want no WAIT", err, s.Wait)
	}
	s, _ = parseString(t, "ow", text)
	two := 2
	if err := s.apply(Overrides{WaitReplicas: &two}, designNames); err != nil || s.Wait.Replicas != 2 || s.Wait.Timeout != 300*time.Millisecond {
		t.Errorf("apply(--wait-replicas 2) = %v, Wait %+v; want 2 replicas, 300ms", err, s.Wait)
	}
	s, _ = parseString(t, "ow", text)
	deny, drop := WaitShortDeny, "drop"
	if err := s.apply(Overrides{WaitShort: &deny}, designNames); err != nil || !s.Wait.DenyShort {
		t.Errorf("apply(--wait-short deny) = %v, Wait %+v; want DenyShort", err, s.Wait)
	}
	s, _ = parseString(t, "ow", text)
	err = s.apply(Overrides{WaitShort: &drop}, designNames)
	if want := "testdata/ow.yaml: wait_short: unknown value \"drop\"; use admit or deny (set by --wait-short)"; err == nil || err.Error() != want {
		t.Errorf("apply(--wait-short drop) =\n%v\nwant\n%s", err, want)
	}
	s, _ = parseString(t, "ow", text)
	bad := 9
	err = s.apply(Overrides{WaitReplicas: &bad}, designNames)
	want := "testdata/ow.yaml: wait_replicas: must be between 0 and 5 (the most replicas per master limitbench starts), got 9 (set by --wait-replicas)"
	if err == nil || err.Error() != want {
		t.Errorf("apply(--wait-replicas 9) =\n%v\nwant\n%s", err, want)
	}
}

// TestCheckReplicasScenarioReplicas: the scenario's replicas: counts as --replicas does, when
// --replicas is not given (regression: failover.yaml, with replicas: 1, refused --wait-replicas 1).
func TestCheckReplicasScenarioReplicas(t *testing.T) {
	s, err := parseString(t, "wr2", "version: 1\ntopologies: [single, cluster]\nreplicas: 1\nwait_replicas: 1\n")
	if err != nil {
		t.Fatal(err)
	}
	process := redisenv.Config{Backend: redisenv.BackendProcess}
	if err := s.CheckReplicas(process, redisenv.TopologyCluster); err != nil {
		t.Errorf("cluster with replicas: 1: %v; want wait_replicas 1 allowed", err)
	}
	if err := s.CheckReplicas(process, redisenv.TopologySingle); err == nil {
		t.Error("single: want wait_replicas 1 refused (a single server has no replica whatever replicas: says)")
	}
}
