package scenarios

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/redisenv"
)

func TestCustomEntries(t *testing.T) {
	src, err := os.ReadFile("testdata/limiter.lua")
	if err != nil {
		t.Fatal(err)
	}
	s := loadForTest(t, "testdata/custom.yaml")
	want := []AlgorithmEntry{
		{Name: "gcra"},
		{Name: "my-limiter", Custom: &algorithms.CustomSpec{
			Name: "my-limiter", Script: "limiter.lua", Path: "testdata/limiter.lua", Source: string(src),
			Keys:     []string{"rl:{{tag}}:count", "{{prefix}}rl:{{ tag }}:ts"},
			Args:     []string{"{{limit}}", "{{window_ms}}", "{{now_ms}}", "{{uuid}}", "{{cost}}"},
			Allowed:  algorithms.ReplyRule{Element: 1, Op: algorithms.RuleEquals, Value: "1"},
			Time:     &algorithms.ReplyTime{Element: 2, Unit: algorithms.Millis},
			Contract: algorithms.Contract{Kind: algorithms.FixedWindow, Limit: 10, Window: time.Second, Granularity: time.Millisecond},
		}},
		{Name: "bucket", Custom: &algorithms.CustomSpec{
			Name: "bucket", Script: "limiter.lua", Path: "testdata/limiter.lua", Source: string(src),
			Keys:     []string{"tb:{{tag}}"},
			Allowed:  algorithms.ReplyRule{Op: algorithms.RuleGreaterThan, Value: "0"},
			Contract: algorithms.Contract{Kind: algorithms.TokenBucket, Capacity: 5, RefillPermits: 1, RefillPer: time.Second},
		}},
		{Name: "nil-means-ok", Custom: &algorithms.CustomSpec{
			Name: "nil-means-ok", Script: "limiter.lua", Path: "testdata/limiter.lua", Source: string(src),
			Keys:     []string{"n:{{tag}}"},
			Allowed:  algorithms.ReplyRule{Op: algorithms.RuleIsNil},
			Contract: algorithms.Contract{Kind: algorithms.NoContract},
		}},
		{Name: "counter", Custom: &algorithms.CustomSpec{
			Name: "counter", Script: "limiter.lua", Path: "testdata/limiter.lua", Source: string(src),
			Keys:              []string{"c:{{tag}}:{{now_ms / window_ms}}", "c:{{tag}}:{{now_ms / window_ms - 1}}"},
			Args:              []string{"{{now_s_float}}"},
			Allowed:           algorithms.ReplyRule{Element: 1, Op: algorithms.RuleAtMost, Value: "{{limit}}"},
			Time:              &algorithms.ReplyTime{Element: 2, Unit: algorithms.Seconds},
			Contract:          algorithms.Contract{Kind: algorithms.FirstHitWindow, Granularity: time.Millisecond},
			ContractTemplates: map[string]string{"limit": "{{limit}}", "window": "{{window_ms}}ms"},
		}},
		{Name: "floor", Custom: &algorithms.CustomSpec{
			Name: "floor", Script: "limiter.lua", Path: "testdata/limiter.lua", Source: string(src),
			Keys:     []string{"f:{{tag}}"},
			Allowed:  algorithms.ReplyRule{Op: algorithms.RuleAtLeast, Value: "-1.5"},
			Contract: algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 10, Window: time.Second},
		}},
	}
	if diff := cmp.Diff(want, s.Algorithms); diff != "" {
		t.Errorf("algorithms (-want +got):\n%s", diff)
	}
	got := s.Algorithms[2].Custom.Contract
	if got.String() != "token-bucket(5, 1/1s)" {
		t.Errorf("Contract() = %s; want token-bucket(5, 1/1s)", got)
	}
}

func TestCustomValidation(t *testing.T) {
	base := func() *Scenario {
		s := Default()
		s.Name = "go"
		s.Algorithms = []AlgorithmEntry{{Name: "mine", Custom: &algorithms.CustomSpec{
			Name: "mine", Script: "x.lua", Source: "return 1", Keys: []string{"k:{{tag}}"},
			Allowed:  algorithms.ReplyRule{Op: algorithms.RuleEquals, Value: "1"},
			Contract: algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 1, Window: time.Second},
		}}}
		return s
	}
	if err := base().validate(designNames, nil); err != nil {
		t.Fatalf("valid custom entry: %v", err)
	}
	tests := []struct {
		name   string
		change func(*algorithms.CustomSpec)
		want   string
	}{
		{"no source", func(c *algorithms.CustomSpec) { c.Source = "" }, "script x.lua was not read"},
		{"no keys", func(c *algorithms.CustomSpec) { c.Keys = nil }, "at least one key template"},
		{"no rule", func(c *algorithms.CustomSpec) { c.Allowed.Op = "" }, "needs exactly one rule"},
		{"bad rule", func(c *algorithms.CustomSpec) { c.Allowed.Op = "matches" }, `unknown rule "matches"`},
		{"time on scalar", func(c *algorithms.CustomSpec) { c.Time = &algorithms.ReplyTime{Element: 2, Unit: algorithms.Micros} }, "time needs an array reply"},
		{"time unit", func(c *algorithms.CustomSpec) {
			c.Allowed.Element = 1
			c.Time = &algorithms.ReplyTime{Element: 2, Unit: "ns"}
		}, `unknown unit "ns"`},
		{"missing window", func(c *algorithms.CustomSpec) { c.Contract.Window = 0 }, "contract.window: missing: a sliding-window contract needs limit, window"},
		{"no kind", func(c *algorithms.CustomSpec) { c.Contract.Kind = "" }, "a contract needs kind"},
		{"builtin name", func(c *algorithms.CustomSpec) { c.Name = "gcra" }, `"gcra" is the name of a built-in algorithm`},
		{"cluster slots", func(c *algorithms.CustomSpec) { c.Keys = []string{"a:{{tag}}", "b:{{uuid}}"} }, "do not share a hash tag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base()
			s.Topologies = []redisenv.Topology{redisenv.TopologyCluster}
			tt.change(s.Algorithms[0].Custom)
			s.Algorithms[0].Name = s.Algorithms[0].Custom.Name
			err := s.validate(designNames, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("validate() = %v; want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestApplySelectsCustomEntries is the regression test of issue 28 item 11: --algorithms naming
// custom entries whose contracts are of different kinds was refused with problems of the entries
// that were not selected (their fields' places stayed under the indexes the selected ones took).
func TestApplySelectsCustomEntries(t *testing.T) {
	s := loadForTest(t, "testdata/custom.yaml")
	if err := s.Apply(Overrides{Algorithms: []string{"counter", "bucket"}}); err != nil {
		t.Fatalf("Apply(--algorithms counter,bucket) = %v; want the two valid entries accepted", err)
	}
	if !s.present("algorithms[1].contract.capacity") || s.present("algorithms[1].contract.limit") {
		t.Errorf("algorithms[1] after --algorithms counter,bucket: fields %v; want bucket's own", s.pos)
	}
}
