package scenarios

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/problem"
	"github.com/limitbench/limitbench/internal/redisenv"
)

// parseString parses a scenario held in a string, named testdata/<name>.yaml, with DESIGN.md's
// algorithm names.
func parseString(t *testing.T, name, text string) (*Scenario, error) {
	t.Helper()
	return parse("testdata/"+name+".yaml", []byte(text), designNames)
}

var ignoreUnexported = cmpopts.IgnoreUnexported(Scenario{})

func TestDefaults(t *testing.T) {
	s, err := parseString(t, "minimal", "version: 1\n")
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Name = "minimal"
	want.File = "testdata/minimal.yaml"
	if diff := cmp.Diff(want, s, ignoreUnexported); diff != "" {
		t.Errorf("minimal scenario (-want +got):\n%s", diff)
	}
	if err := Default().validate(designNames, nil); err == nil || !strings.Contains(err.Error(), "name: must not be empty") {
		t.Errorf("Default().Validate() = %v; want only the missing name", err)
	}

	tests := []struct {
		name, yaml string
		check      func(*Scenario) (got, want any)
	}{
		{"version", "name: x", func(s *Scenario) (any, any) { return s.Version, 1 }},
		{"topologies", "version: 1", func(s *Scenario) (any, any) { return s.Topologies, []redisenv.Topology{redisenv.TopologySingle} }},
		{"duration", "version: 1", func(s *Scenario) (any, any) { return s.Duration, 10 * time.Second }},
		{"duration from steps", "arrival: {steps: [{for: 2s, rate: 5}, {for: 3s, rate: 9}]}",
			func(s *Scenario) (any, any) { return s.Duration, 5 * time.Second }},
		{"duration given with steps", "duration: 1s\narrival: {steps: [{for: 2s, rate: 5}]}",
			func(s *Scenario) (any, any) { return s.Duration, time.Second }},
		{"warmup", "version: 1", func(s *Scenario) (any, any) { return s.Warmup, time.Duration(0) }},
		{"seed", "version: 1", func(s *Scenario) (any, any) { return s.Seed, int64(1) }},
		{"clients", "version: 1", func(s *Scenario) (any, any) { return s.Clients, 4 }},
		{"client_mode", "version: 1", func(s *Scenario) (any, any) { return s.ClientMode, load.ModePlain }},
		{"pipeline_depth without pipeline", "version: 1", func(s *Scenario) (any, any) { return s.PipelineDepth, 0 }},
		{"pipeline_depth with pipeline", "client_mode: pipeline", func(s *Scenario) (any, any) { return s.PipelineDepth, 16 }},
		{"pipeline_depth given", "client_mode: pipeline\npipeline_depth: 4", func(s *Scenario) (any, any) { return s.PipelineDepth, 4 }},
		{"call", "version: 1", func(s *Scenario) (any, any) { return s.Call, algorithms.CallEvalSha }},
		{"call fcall", "call: fcall", func(s *Scenario) (any, any) { return s.Call, algorithms.CallFCall }},
		{"closed loop", "version: 1", func(s *Scenario) (any, any) { return s.ClosedLoop(), true }},
		{"keys", "version: 1", func(s *Scenario) (any, any) { return s.Keys, load.Keys{Count: 1, Distribution: load.Uniform} }},
		{"zipf_s", "keys: {count: 9, distribution: zipf}", func(s *Scenario) (any, any) { return s.Keys.ZipfS, 0.99 }},
		{"hot_share", "keys: {count: 9, distribution: hot}", func(s *Scenario) (any, any) { return s.Keys.HotShare, 0.5 }},
		{"limit", "version: 1", func(s *Scenario) (any, any) {
			return s.Limit, algorithms.Limit{Limit: 100, Window: time.Second}
		}},
		{"partial limit", "limit: {limit: 7}", func(s *Scenario) (any, any) {
			return s.Limit, algorithms.Limit{Limit: 7, Window: time.Second}
		}},
		{"cost", "version: 1", func(s *Scenario) (any, any) { return s.Cost, int64(1) }},
		{"clock_skew", "version: 1", func(s *Scenario) (any, any) { return s.ClockSkew.IsZero(), true }},
		{"clock_skew list", "clock_skew: [0s, 2s, -2s]", func(s *Scenario) (any, any) {
			return s.ClockSkew.Offsets, []time.Duration{0, 2 * time.Second, -2 * time.Second}
		}},
		{"clock_skew spread", "clock_skew: {spread: 2s}", func(s *Scenario) (any, any) { return s.ClockSkew.Spread, 2 * time.Second }},
		{"algorithms", "version: 1", func(s *Scenario) (any, any) { return s.Algorithms, []AlgorithmEntry{{Name: "all"}} }},
		{"null means default", "duration: ~\narrival:\n", func(s *Scenario) (any, any) { return s.Duration, 10 * time.Second }},
		{"align scalar", "arrival: {rate: 5, align: 1s}", func(s *Scenario) (any, any) { return s.Arrival.Align, arrival.Align{Every: time.Second} }},
		{"align mapping", "arrival: {rate: 5, align: {every: 1m, offset: 55s}}", func(s *Scenario) (any, any) {
			return s.Arrival.Align, arrival.Align{Every: time.Minute, Offset: 55 * time.Second}
		}},
		{"anchors", "limit: &l {limit: 5}\nexpect: {violations: []}\n", func(s *Scenario) (any, any) { return s.Limit.Limit, int64(5) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := parseString(t, "defaults", tt.yaml)
			if err != nil {
				t.Fatalf("parse(%q): %v", tt.yaml, err)
			}
			got, want := tt.check(s)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("parse(%q) (-want +got):\n%s", tt.yaml, diff)
			}
		})
	}
}

func TestExplicitZeroIsNotDefault(t *testing.T) {
	tests := []struct{ yaml, want string }{
		{"limit: {window: 0s}", "limit.window: must be > 0, got 0s"},
		{"client_mode: pipeline\npipeline_depth: 0", "pipeline_depth: must be in [1, 10000], got 0"},
		{"clients: 0", "clients: must be in [1, 10000], got 0"},
		{"call: eval", `call: unknown call "eval"; use evalsha or fcall`},
		{`call: ""`, `call: unknown call ""; use evalsha or fcall`},
		{"keys: {distribution: zipf, zipf_s: 0}", "keys.zipf_s: must be > 0"},
		{"arrival: {rate: 0}", "arrival.rate: must be > 0"},
		{"arrival: {}", "arrival: needs one of rate, ramp, steps, spike or trace"},
		{"arrival: {rate: 5, ramp: {from: 1, to: 2}}", "arrival: give only one of"},
		{"arrival: {steps: []}", "arrival.steps: must hold at least one step"},
		{"arrival: {steps: [{for: 1s}]}", "arrival.steps[0].rate: missing"},
		{"arrival: {spike: {peak: 5, for: 2s, every: 1s}}", "arrival.spike.for: 2s is longer than every (1s)"},
		{"arrival: {rate: 5, align: {every: 1s, offset: 1s}}", "arrival.align.offset: must be in [0, 1s)"},
		{"keys: {hot_share: 0.3}", "keys.hot_share: only applies with distribution: hot"},
		{"cost: 500", "cost: 500 is more than the limit's capacity 100"},
		{"topologies: [single, single]", "topologies[1]: single is listed twice"},
		{"duration: 5s\nduration: 6s", `duration: given twice (first on line 1)`},
		{"expect: {violations: [gcra], may_violate: [gcra]}", "expect.may_violate[0]: gcra is already in expect.violations"},
		{"algorithms: [gcra]\nexpect: {violations: [gcar]}", `expect.violations[0]: "gcar" is not run by this scenario (did you mean "gcra"?)`},
		{"algorithms: []", "algorithms: must name at least one algorithm, or all"},
		{"algorithms: [[gcra]]", "algorithms[0]: must be an algorithm name or a custom script"},
		{"a: &x 1\n<<: *x", "merge keys"},
		{"- 1\n- 2", "a scenario must be a mapping"},
		{"name: x\n---\nname: y", "more than one YAML document"},
	}
	for _, tt := range tests {
		t.Run(tt.yaml, func(t *testing.T) {
			_, err := parseString(t, "zero", tt.yaml)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("parse(%q) error:\n%v\nwant it to contain %q", tt.yaml, err, tt.want)
			}
		})
	}
}

func TestErrorsFormat(t *testing.T) {
	err := errorsOf([]problem.Problem{
		{Field: "clients", Msg: "from Go"},
		{File: "a.yaml", Line: 9, Field: "cost", Msg: "late"},
		{File: "a.yaml", Line: 2, Column: 7, Field: "limit.window", Msg: "early"},
		{File: "a.yaml", Msg: "whole file"},
	})
	want := "a.yaml:2: limit.window: early\na.yaml:9: cost: late\nclients: from Go\na.yaml: whole file"
	if err.Error() != want {
		t.Errorf("Error() =\n%s\nwant\n%s", err, want)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Error("errors.Is(err, ErrInvalid) = false")
	}
	if errorsOf(nil) != nil {
		t.Error("errorsOf(nil) != nil")
	}
}

func TestLoad(t *testing.T) {
	_, err := Load("testdata/no-such-scenario.yaml")
	if !errors.Is(err, ErrInvalid) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(missing) = %v; want ErrInvalid and fs.ErrNotExist", err)
	}
}

func TestValidateGoBuilt(t *testing.T) {
	s := Default()
	s.Name = "built"
	s.Arrival = &arrival.Arrival{Ramp: &arrival.Ramp{From: 10, To: 100}}
	s.Algorithms = []AlgorithmEntry{{Name: "gcra"}}
	if err := s.validate(designNames, nil); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
	s.Limit.Window = 0
	s.Clients = -1
	s.ClientMode = load.ModePlain
	s.PipelineDepth = 3
	err := s.validate(designNames, nil)
	want := "clients: must be in [1, 10000], got -1\npipeline_depth: only applies with client_mode: pipeline (client_mode is plain)\nlimit.window: must be > 0, got 0s"
	if err == nil || err.Error() != want {
		t.Errorf("Validate() =\n%v\nwant\n%s", err, want)
	}
}

func TestUnknownAlgorithmWithEmptyRegistry(t *testing.T) {
	_, err := parse("x.yaml", []byte("algorithms: [gcra]"), nil)
	if err == nil || !strings.Contains(err.Error(), `unknown algorithm "gcra" (no built-in algorithm is registered)`) {
		t.Errorf("parse with no built-ins = %v", err)
	}
	if s, err := parse("x.yaml", []byte("algorithms: [all]"), nil); err != nil || len(s.resolve(nil)) != 0 {
		t.Errorf("parse [all] with no built-ins = %v, %v", s, err)
	}
}

func TestResolveAlgorithms(t *testing.T) {
	custom := &algorithms.CustomSpec{Name: "mine"}
	s := &Scenario{Algorithms: []AlgorithmEntry{{Name: "gcra"}, {Name: "mine", Custom: custom}, {Name: "all"}}}
	got := s.resolve([]string{"fixed-window", "gcra"})
	want := []AlgorithmEntry{{Name: "gcra"}, {Name: "mine", Custom: custom}, {Name: "fixed-window"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resolve (-want +got):\n%s", diff)
	}
	if reg := algorithms.Names(); len(reg) > 0 {
		if got := (&Scenario{Algorithms: []AlgorithmEntry{{Name: "all"}}}).ResolveAlgorithms(); len(got) != len(reg) {
			t.Errorf("ResolveAlgorithms() has %d entries; want %d", len(got), len(reg))
		}
	}
}

func TestApply(t *testing.T) {
	const text = `
name: o
duration: 5s
arrival: {steps: [{for: 1s, rate: 10}]}
algorithms: [gcra, redisson, sliding-log]
expect: {violations: [redisson]}
thresholds: ["redisson: p99 < 5ms", "p50 < 1ms"]
`
	dur, rate, clients, seed := 2*time.Second, 50.0, 3, int64(7)
	s, err := parseString(t, "apply", text)
	if err != nil {
		t.Fatal(err)
	}
	err = s.apply(Overrides{Duration: &dur, Rate: &rate, Clients: &clients, Seed: &seed,
		Topologies: []redisenv.Topology{redisenv.TopologyCluster}, Algorithms: []string{"gcra", "sliding-log"}}, designNames)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if s.Duration != dur || s.Arrival.Kind() != arrival.Constant || s.Arrival.Rate != 50 || s.Clients != 3 || s.Seed != 7 ||
		len(s.Topologies) != 1 || s.Topologies[0] != redisenv.TopologyCluster {
		t.Errorf("after apply: %+v", s)
	}
	if len(s.Expect.Violations) != 0 || len(s.Thresholds) != 1 || s.Thresholds[0].Text != "p50 < 1ms" {
		t.Errorf("apply kept expectations %v and thresholds %v for algorithms no longer run", s.Expect.Violations, s.Thresholds)
	}

	bad, zero := -1.0, 0
	s, _ = parseString(t, "apply", text)
	err = s.apply(Overrides{Rate: &bad, Clients: &zero, Algorithms: []string{"gcar"}}, designNames)
	want := "testdata/apply.yaml: clients: must be in [1, 10000], got 0 (set by --clients)\n" +
		"testdata/apply.yaml: arrival.rate: must not be negative, got -1 (set by --rate)\n" +
		"testdata/apply.yaml: algorithms[0]: unknown algorithm \"gcar\" (did you mean \"gcra\"?) (set by --algorithms)"
	if err == nil || err.Error() != want {
		t.Errorf("apply(bad) =\n%v\nwant\n%s", err, want)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Error("apply error does not match ErrInvalid")
	}
}

// TestSpeedOnly: speed_only is true (every algorithm), false (none) or a list of the scenario's
// algorithms, each once; a name it does not run is refused at its line.
func TestSpeedOnly(t *testing.T) {
	for _, c := range []struct {
		yaml   string
		covers map[string]bool
		err    string
	}{
		{"speed_only: true", map[string]bool{"gcra": true, "sliding-log": true}, ""},
		{"speed_only: false", map[string]bool{"gcra": false, "sliding-log": false}, ""},
		{"speed_only: [sliding-log]", map[string]bool{"gcra": false, "sliding-log": true}, ""},
		{"speed_only: [gcra, gcra]", nil, "t.yaml:3: speed_only[1]: gcra is listed twice"},
		{"speed_only: [token-bucket]", nil, `t.yaml:3: speed_only[0]: "token-bucket" is not run by this scenario`},
		{"speed_only: yes please", nil, "t.yaml:3: speed_only: must be true or false"},
	} {
		s, err := Parse("t.yaml", []byte("version: 1\nalgorithms: [gcra, sliding-log]\n"+c.yaml+"\n"))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v; want one containing %q", c.yaml, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.yaml, err)
			continue
		}
		for name, want := range c.covers {
			if got := s.SpeedOnly.Covers(name); got != want {
				t.Errorf("%s: covers %s = %v; want %v", c.yaml, name, got, want)
			}
		}
	}
}
