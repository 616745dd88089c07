package scenarios

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/result"
)

const faultBase = "version: 1\nduration: 10s\nlimit: {limit: 100, window: 2s}\n"

func TestFaultsParse(t *testing.T) {
	s, err := parseString(t, "faults", faultBase+`persistence: aof-always
faults:
  - {at: 2s, kind: restart}
  - {at: 1s, kind: latency, target: masters, duration: 3s, latency: 50ms, jitter: 10ms, recovery: 500ms}
  - {at: 4s, kind: blackhole, target: "node:127.0.0.1:7000", duration: 1s, drop: true}
  - {at: 5s, kind: failover, target: "master:1", mode: kill}
  - {at: 6s, kind: failover, mode: default}
  - {at: 7s, kind: latency, link: replication, target: masters, duration: 2s, latency: 300ms, jitter: 50ms}
  - {at: 7s, kind: reset, link: client, duration: 1s}
  - {at: 8s, kind: failover, target: masters, mode: takeover}
`)
	if err != nil {
		t.Fatal(err)
	}
	want := []Fault{
		{At: 2 * time.Second, Kind: FaultRestart, Recovery: 2 * time.Second},
		{At: time.Second, Kind: FaultLatency, Target: redisenv.Selector{Kind: redisenv.SelectMasters}, Duration: 3 * time.Second,
			Recovery: 500 * time.Millisecond, Latency: 50 * time.Millisecond, Jitter: 10 * time.Millisecond},
		{At: 4 * time.Second, Kind: FaultBlackhole, Target: redisenv.Selector{Kind: redisenv.SelectNode, Addr: "127.0.0.1:7000"},
			Duration: time.Second, Recovery: 2 * time.Second, Drop: true},
		{At: 5 * time.Second, Kind: FaultFailover, Target: redisenv.Selector{Kind: redisenv.SelectMaster, Shard: 1},
			Recovery: 2 * time.Second, Mode: redisenv.FailoverKill},
		{At: 6 * time.Second, Kind: FaultFailover, Recovery: 2 * time.Second},
		{At: 7 * time.Second, Kind: FaultLatency, Target: redisenv.Selector{Kind: redisenv.SelectMasters}, Duration: 2 * time.Second,
			Recovery: 2 * time.Second, Latency: 300 * time.Millisecond, Jitter: 50 * time.Millisecond, Link: LinkReplication},
		{At: 7 * time.Second, Kind: FaultReset, Duration: time.Second, Recovery: 2 * time.Second},
		{At: 8 * time.Second, Kind: FaultFailover, Target: redisenv.Selector{Kind: redisenv.SelectMasters}, Recovery: 2 * time.Second,
			Mode: redisenv.FailoverTakeover},
	}
	if diff := cmp.Diff(want, s.Faults); diff != "" {
		t.Errorf("faults (-want +got):\n%s", diff)
	}
	if s.Persistence != redisenv.PersistenceAOFAlways {
		t.Errorf("persistence %q", s.Persistence)
	}
	if got := s.Faults[1].Name(); got != "latency 50ms±10ms masters at 1s for 3s" {
		t.Errorf("name %q", got)
	}
	if got := s.Faults[5].Name(); got != "latency 300ms±50ms replication link of masters at 7s for 2s" {
		t.Errorf("name %q", got)
	}
	if from, to := s.Faults[1].Window(); from != time.Second || to != 4500*time.Millisecond {
		t.Errorf("window [%s, %s]", from, to)
	}
}

func TestFaultsInvalid(t *testing.T) {
	tests := []struct {
		name, faults string
		want         []string // each in the error text
	}{
		{"unknown kind", "- {at: 1s, kind: explode}", []string{"faults.yaml:5: faults[0].kind: unknown fault kind \"explode\""}},
		{"missing at", "- {kind: kill}", []string{"faults[0].at: missing"}},
		{"missing kind", "- {at: 1s}", []string{"faults[0].kind: missing"}},
		{"unknown field", "- {at: 1s, kind: kill, durations: 1s}", []string{"faults[0].durations", `did you mean "duration"`}},
		{"pause without duration", "- {at: 1s, kind: pause}", []string{"faults[0].duration: pause needs a duration > 0"}},
		{"kill with duration", "- {at: 1s, kind: kill, duration: 1s}", []string{"faults[0].duration: kill acts once"}},
		{"ends after the run", "- {at: 9s, kind: pause, duration: 2s}", []string{"faults[0].at: the fault would end at 11s"}},
		{"negative at", "- {at: -1s, kind: kill}", []string{"faults[0].at: must be >= 0"}},
		{"latency without latency", "- {at: 1s, kind: latency, duration: 1s}", []string{"faults[0].latency: latency needs a positive"}},
		{"fractional latency", "- {at: 1s, kind: latency, duration: 1s, latency: 1500us}", []string{"faults[0].latency"}},
		{"jitter over latency", "- {at: 1s, kind: latency, duration: 1s, latency: 5ms, jitter: 6ms}", []string{"faults[0].jitter"}},
		{"jitter on reset", "- {at: 1s, kind: reset, duration: 1s, jitter: 6ms}", []string{"faults[0].jitter: only for kind latency"}},
		{"drop on pause", "- {at: 1s, kind: pause, duration: 1s, drop: true}", []string{"faults[0].drop: only for kind blackhole"}},
		{"bad mode", "- {at: 1s, kind: failover, mode: gently}", []string{`faults[0].mode: unknown failover mode "gently"`}},
		{"mode on kill", "- {at: 1s, kind: kill, mode: force}", []string{"faults[0].mode: only for kind failover"}},
		{"failover of a replica", "- {at: 1s, kind: failover, target: replica}", []string{"faults[0].target: failover acts on masters"}},
		{"evict of a replica", "- {at: 1s, kind: evict, target: replica}", []string{"faults[0].target: evict acts on masters"}},
		{"evict with a duration", "- {at: 1s, kind: evict, duration: 1s}", []string{"faults[0].duration: evict acts once and takes no duration"}},
		{"bad target", "- {at: 1s, kind: kill, target: primary}", []string{`faults[0].target: "primary": want master`}},
		{"negative recovery", "- {at: 1s, kind: kill, recovery: -1s}", []string{"faults[0].recovery: must be >= 0"}},
		{"not a list", "{at: 1s}", []string{"faults: must be a list"}},
		{"unknown link", "- {at: 1s, kind: latency, duration: 1s, latency: 5ms, link: backbone}", []string{`faults[0].link: unknown link "backbone"`}},
		{"link on a restart", "- {at: 1s, kind: restart, link: replication}", []string{"faults[0].link: only for the network faults"}},
		{"link client on a kill", "- {at: 1s, kind: kill, link: client}", []string{"faults[0].link: only for the network faults"}},
		{"replication link of a replica", "- {at: 1s, kind: reset, duration: 1s, link: replication, target: replica}",
			[]string{"faults[0].target: the replication link is named by its master"}},
		{"replication link of a node", `- {at: 1s, kind: blackhole, duration: 1s, link: replication, target: "node:127.0.0.1:7000"}`,
			[]string{"faults[0].target: the replication link is named by its master"}},
		{"failover of a node", `- {at: 1s, kind: failover, target: "node:127.0.0.1:7000"}`, []string{"faults[0].target: failover acts on masters"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := faultBase + "faults:\n"
			if strings.HasPrefix(tt.faults, "-") {
				text += "  " + tt.faults + "\n"
			} else {
				text = faultBase + "faults: " + tt.faults + "\n"
			}
			_, err := parseString(t, "faults", text)
			if err == nil {
				t.Fatalf("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
	for _, bad := range []string{"-1", "6"} {
		_, err := parseString(t, "replicas", faultBase+"replicas: "+bad+"\n")
		if err == nil || !strings.Contains(err.Error(), "replicas.yaml:4: replicas: must be between 0 and 5") {
			t.Errorf("replicas %s: %v", bad, err)
		}
	}
	_, err := parseString(t, "persistence", faultBase+"persistence: sometimes\n")
	if err == nil || !strings.Contains(err.Error(), `persistence.yaml:4: persistence: unknown persistence "sometimes"`) {
		t.Errorf("bad persistence: %v", err)
	}
}

func TestFaultsCheckEnvironment(t *testing.T) {
	s, err := parseString(t, "env", faultBase+`persistence: aof-everysec
faults:
  - {at: 1s, kind: restart}
  - {at: 1s, kind: latency, duration: 1s, latency: 5ms}
  - {at: 2s, kind: failover}
  - {at: 2s, kind: pause, target: replica, duration: 1s}
  - {at: 2s, kind: kill, target: "master:2"}
  - {at: 3s, kind: latency, link: replication, duration: 1s, latency: 100ms}
  - {at: 4s, kind: failover, target: masters, mode: force}
`)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  redisenv.Config
		topo redisenv.Topology
		want []string
		not  []string
	}{
		{"external", redisenv.Config{Backend: redisenv.BackendExternal}, redisenv.TopologySingle,
			[]string{"env.yaml:4: persistence: applies to servers", "env.yaml:6: faults[0].kind: restart acts on a server", "faults[2].kind: failover acts",
				"faults[3].kind: pause", "faults[4].kind: kill", "env.yaml:11: faults[5].link: the replication link is rerouted"},
			[]string{"faults[1]"}},
		{"single", redisenv.Config{Backend: redisenv.BackendProcess}, redisenv.TopologySingle,
			[]string{"faults[2].kind: failover needs a replica", "faults[3].target: replica: topology single has no replica",
				"faults[4].target: master:2: topology single has shard 0 only", "faults[5].link: the replication link needs a replica"},
			[]string{"faults[0]", "faults[1]", "persistence"}},
		{"sentinel", redisenv.Config{Backend: redisenv.BackendContainer}, redisenv.TopologySentinel,
			[]string{"faults[4].target"}, []string{"faults[0]", "faults[1]", "faults[2]", "faults[3]", "faults[5]", "faults[6]"}},
		{"cluster with replicas", redisenv.Config{Backend: redisenv.BackendProcess, Replicas: 1}, redisenv.TopologyCluster,
			[]string{"faults[6].mode: a failover of every master at once needs mode takeover"}, []string{"faults[5]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.CheckEnvironment(tt.env, tt.topo)
			if (err == nil) != (len(tt.want) == 0) {
				t.Fatalf("error %v; want problems %v", err, tt.want)
			}
			text := ""
			if err != nil {
				text = err.Error()
			}
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("error lacks %q:\n%s", w, text)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(text, n) {
					t.Errorf("error names %q:\n%s", n, text)
				}
			}
		})
	}
}

func TestFaultExcessThreshold(t *testing.T) {
	th, err := ParseThreshold("gcra: fault_excess <= 0")
	if err != nil || th.Metric != result.FaultExcess || th.Op != LessEqual || th.Value != 0 || th.Algorithm != "gcra" {
		t.Fatalf("ParseThreshold = %+v, %v", th, err)
	}
	if _, err := ParseThreshold("fault_excess < 5ms"); err == nil || !strings.Contains(err.Error(), "plain number") {
		t.Errorf("fault_excess with a unit: %v", err)
	}
	if _, err := parseString(t, "fe", faultBase+"algorithms: [gcra]\nthresholds: [\"gcra: fault_excess <= 0\"]\n"); err == nil ||
		!strings.Contains(err.Error(), "fe.yaml:5: thresholds[0]: fault_excess bounds what the scenario's faults cost, and it has none") {
		t.Errorf("fault_excess without faults: %v", err)
	}
	if _, err := parseString(t, "fe", faultBase+"algorithms: [gcra]\nthresholds: [\"gcra: fault_excess <= 0\"]\nfaults: [{at: 1s, kind: restart}]\n"); err != nil {
		t.Errorf("fault_excess with faults: %v", err)
	}
}

// The scenario's replicas stand in for --replicas: a failover or a replication link on a cluster
// needs no flag then; on an external Redis they count for nothing.
func TestFaultsScenarioReplicas(t *testing.T) {
	s, err := parseString(t, "reps", faultBase+`replicas: 1
faults:
  - {at: 1s, kind: latency, link: replication, duration: 1s, latency: 100ms}
  - {at: 2s, kind: failover, mode: force}
`)
	if err != nil {
		t.Fatal(err)
	}
	if s.Replicas != 1 {
		t.Errorf("replicas %d; want 1", s.Replicas)
	}
	if err := s.CheckEnvironment(redisenv.Config{Backend: redisenv.BackendProcess}, redisenv.TopologyCluster); err != nil {
		t.Errorf("cluster with the scenario's replica: %v", err)
	}
	err = s.CheckEnvironment(redisenv.Config{Backend: redisenv.BackendExternal}, redisenv.TopologyCluster)
	if err == nil || !strings.Contains(err.Error(), "faults[0].link") || !strings.Contains(err.Error(), "faults[1].kind") {
		t.Errorf("external: %v; want both faults refused", err)
	}
}
