package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/redisenv"
)

// builtinsForTest returns the registered algorithms, or DESIGN.md's list while the registry is
// still empty, so that the suite can be checked either way.
func builtinsForTest() []string {
	if names := algorithms.Names(); len(names) > 0 {
		return names
	}
	return designNames
}

func loadForTest(t *testing.T, path string) *Scenario {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := parse(path, data, builtinsForTest())
	if err != nil {
		t.Fatalf("parse(%s):\n%v", path, err)
	}
	return s
}

// TestSuite loads every scenario file of the standard suite and checks that it validates, that
// its name matches its file and that its run time stays modest.
func TestSuite(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"smoke", "hot-key-overload", "many-keys-zipf", "cluster-spread", "clock-skew",
		"boundary-burst", "saturation", "demo", "restart", "slow-link", "sentinel-failover", "sentinel-failover-lag",
		"failover", "wait-replicas", "hunt-published"}
	have := map[string]bool{}
	for _, f := range files {
		have[strings.TrimSuffix(f, ".yaml")] = true
	}
	for _, w := range want {
		if !have[w] {
			t.Errorf("standard suite lacks %s.yaml", w)
		}
	}
	builtins := builtinsForTest()
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			s := loadForTest(t, f)
			if s.Name != strings.TrimSuffix(f, ".yaml") {
				t.Errorf("name %q differs from file %s", s.Name, f)
			}
			if len(s.Description) < 80 {
				t.Errorf("description %q is too short to say what the scenario shows", s.Description)
			}
			runs := len(s.resolve(builtins)) * len(s.Topologies)
			total := time.Duration(runs) * s.TotalDuration()
			t.Logf("%s: %d runs, %s of load", f, runs, total)
			if total > 2*time.Minute {
				t.Errorf("%s: %d runs of %s = %s of load; keep the suite modest", f, runs, s.TotalDuration(), total)
			}
		})
	}
}

func TestSuiteSpecifics(t *testing.T) {
	builtins := builtinsForTest()
	t.Run("smoke runs every algorithm on one node for about 2s", func(t *testing.T) {
		s := loadForTest(t, "smoke.yaml")
		if got := s.names(builtins); len(got) != len(builtins) {
			t.Errorf("smoke runs %v; want every built-in %v", got, builtins)
		}
		if len(s.Topologies) != 1 || s.Topologies[0] != redisenv.TopologySingle {
			t.Errorf("smoke topologies = %v; want [single]", s.Topologies)
		}
		if s.Duration < time.Second || s.Duration > 3*time.Second {
			t.Errorf("smoke duration = %s; want about 2s", s.Duration)
		}
		perSubject := s.Arrival.Rate / float64(s.Keys.Count)
		if r := perSubject / s.Limit.RatePerSecond(); r < 1.2 || r > 3 {
			t.Errorf("smoke offers %.2f times the limit; want moderately over it", r)
		}
	})
	t.Run("hot-key-overload is one subject, 64 clients, twice the limit, single and cluster", func(t *testing.T) {
		s := loadForTest(t, "hot-key-overload.yaml")
		if s.Keys.Count != 1 || s.Clients != 64 || s.Arrival.Rate != 2*s.Limit.RatePerSecond() || len(s.Topologies) != 2 {
			t.Errorf("hot-key-overload = keys %d, clients %d, rate %g, limit %g/s, topologies %v",
				s.Keys.Count, s.Clients, s.Arrival.Rate, s.Limit.RatePerSecond(), s.Topologies)
		}
	})
	t.Run("many-keys-zipf has 10,000 zipf subjects", func(t *testing.T) {
		s := loadForTest(t, "many-keys-zipf.yaml")
		if s.Keys.Count != 10000 || s.Keys.Distribution != load.Zipf {
			t.Errorf("keys = %+v", s.Keys)
		}
	})
	t.Run("cluster-spread is 1,000 subjects on a cluster", func(t *testing.T) {
		s := loadForTest(t, "cluster-spread.yaml")
		if s.Keys.Count != 1000 || len(s.Topologies) != 1 || s.Topologies[0] != redisenv.TopologyCluster {
			t.Errorf("keys %d, topologies %v", s.Keys.Count, s.Topologies)
		}
	})
	t.Run("clock-skew is ±2s and expects the client-clock designs", func(t *testing.T) {
		s := loadForTest(t, "clock-skew.yaml")
		if s.ClockSkew.IsZero() {
			t.Error("no skew")
		}
		for _, n := range []string{"token-bucket-published", "redisson"} {
			if !contains(s.Expect.Violations, n) {
				t.Errorf("expect.violations %v lacks %s", s.Expect.Violations, n)
			}
		}
	})
	t.Run("boundary-burst spikes straddle whole seconds", func(t *testing.T) {
		s := loadForTest(t, "boundary-burst.yaml")
		a := s.Arrival
		if a.Align.Every != s.Limit.Window {
			t.Fatalf("align %v; want the window %s", a.Align, s.Limit.Window)
		}
		// Each spike must start before a multiple of the window and end after it.
		w := s.Limit.Window
		for t0 := a.Spike.At; t0 < s.TotalDuration(); t0 += a.Spike.Every {
			if t0/w == (t0+a.Spike.For-1)/w {
				t.Errorf("spike [%s, %s) does not cross a window edge", t0, t0+a.Spike.For)
			}
		}
	})
	// Issue 18: the published variants the demo can only tolerate are demonstrated by
	// `limitbench hunt scenarios/hunt-published.yaml` (cmd/limitbench's TestHuntPublishedScenario
	// runs it against Redis).
	t.Run("hunt-published hunts every variant the demo tolerates, beside its corrected version", func(t *testing.T) {
		demo, h := loadForTest(t, "demo.yaml"), loadForTest(t, "hunt-published.yaml")
		names := h.names(builtins)
		for _, n := range demo.Expect.MayViolate {
			if !contains(names, n) || !contains(names, strings.TrimSuffix(n, "-published")) {
				t.Errorf("hunt-published runs %v; want %s, which the demo tolerates, and its corrected version", names, n)
			}
			if !contains(h.Expect.Violations, n) && !contains(h.Expect.MayViolate, n) {
				t.Errorf("hunt-published does not expect %s to break", n)
			}
		}
		for _, n := range []string{"fixed-window-published", "sliding-log-published", "resource-consumer-published"} {
			if !contains(h.Expect.Violations, n) {
				t.Errorf("hunt-published's expect.violations %v lacks %s, which the hunt breaks", h.Expect.Violations, n)
			}
		}
		if h.ClockSkew.IsZero() {
			t.Error("hunt-published has no clock skew: the client-clock flaws need it")
		}
		if !strings.Contains(demo.Description, "hunt-published.yaml") {
			t.Errorf("the demo's description does not point to hunt-published.yaml: %q", demo.Description)
		}
	})
	t.Run("saturation is a closed loop", func(t *testing.T) {
		if s := loadForTest(t, "saturation.yaml"); !s.ClosedLoop() {
			t.Errorf("arrival = %+v; want none", s.Arrival)
		}
	})
	// The issue asks for about 90 s; the demo runs about 70 s (with the reference script) so that
	// `make demo` on a new 2-core machine, which first compiles for about 90 s, ends within 3
	// minutes.
	t.Run("demo is every algorithm on single and cluster in a minute or so", func(t *testing.T) {
		s := loadForTest(t, "demo.yaml")
		total := time.Duration(len(s.resolve(designNames))*len(s.Topologies)) * s.TotalDuration()
		if len(s.Topologies) != 2 || total < 60*time.Second || total > 100*time.Second {
			t.Errorf("demo: topologies %v, %s of load with DESIGN.md's 12 algorithms; want both, 60s to 100s", s.Topologies, total)
		}
	})
}
