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
		{Name: "my-limiter", Custom: &Custom{
			Name: "my-limiter", Script: "limiter.lua", ScriptPath: "testdata/limiter.lua", Source: string(src),
			Keys:     []string{"rl:{{tag}}:count", "{{prefix}}rl:{{ tag }}:ts"},
			Args:     []string{"{{limit}}", "{{window_ms}}", "{{now_ms}}", "{{uuid}}", "{{cost}}"},
			Allowed:  AllowedRule{Element: 1, Op: Equals, Value: "1"},
			Time:     &TimeRule{Element: 2, Unit: Millis},
			Contract: CustomContract{Kind: algorithms.FixedWindow, Limit: 10, Window: time.Second, Granularity: time.Millisecond},
		}},
		{Name: "bucket", Custom: &Custom{
			Name: "bucket", Script: "limiter.lua", ScriptPath: "testdata/limiter.lua", Source: string(src),
			Keys:     []string{"tb:{{tag}}"},
			Allowed:  AllowedRule{Op: GreaterThan, Number: 0},
			Contract: CustomContract{Kind: algorithms.TokenBucket, Capacity: 5, Rate: 1, Per: time.Second},
		}},
		{Name: "nil-means-ok", Custom: &Custom{
			Name: "nil-means-ok", Script: "limiter.lua", ScriptPath: "testdata/limiter.lua", Source: string(src),
			Keys:     []string{"n:{{tag}}"},
			Allowed:  AllowedRule{Op: IsNil},
			Contract: CustomContract{Kind: algorithms.NoContract},
		}},
	}
	if diff := cmp.Diff(want, s.Algorithms); diff != "" {
		t.Errorf("algorithms (-want +got):\n%s", diff)
	}
	got := s.Algorithms[2].Custom.Contract.Contract()
	if got.String() != "token-bucket(5, 1/1s)" {
		t.Errorf("Contract() = %s; want token-bucket(5, 1/1s)", got)
	}
}

func TestCustomValidation(t *testing.T) {
	base := func() *Scenario {
		s := Default()
		s.Name = "go"
		s.Algorithms = []AlgorithmEntry{{Name: "mine", Custom: &Custom{
			Name: "mine", Script: "x.lua", Source: "return 1", Keys: []string{"k:{{tag}}"},
			Allowed:  AllowedRule{Op: Equals, Value: "1"},
			Contract: CustomContract{Kind: algorithms.SlidingWindow, Limit: 1, Window: time.Second},
		}}}
		return s
	}
	if err := base().validate(designNames, nil); err != nil {
		t.Fatalf("valid custom entry: %v", err)
	}
	tests := []struct {
		name   string
		change func(*Custom)
		want   string
	}{
		{"no source", func(c *Custom) { c.Source = "" }, "script x.lua was not read"},
		{"no keys", func(c *Custom) { c.Keys = nil }, "at least one key template"},
		{"no rule", func(c *Custom) { c.Allowed.Op = "" }, "needs exactly one rule"},
		{"bad rule", func(c *Custom) { c.Allowed.Op = "matches" }, `unknown rule "matches"`},
		{"time on scalar", func(c *Custom) { c.Time = &TimeRule{Element: 2, Unit: Micros} }, "time needs an array reply"},
		{"time unit", func(c *Custom) { c.Allowed.Element = 1; c.Time = &TimeRule{Element: 2, Unit: "ns"} }, `unknown unit "ns"`},
		{"missing window", func(c *Custom) { c.Contract.Window = 0 }, "contract.window: missing: a sliding-window contract needs limit, window"},
		{"no kind", func(c *Custom) { c.Contract.Kind = "" }, "a contract needs kind"},
		{"builtin name", func(c *Custom) { c.Name = "gcra" }, `"gcra" is the name of a built-in algorithm`},
		{"cluster slots", func(c *Custom) { c.Keys = []string{"a:{{tag}}", "b:{{uuid}}"} }, "do not share a hash tag"},
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

func TestTemplates(t *testing.T) {
	vars := map[string]string{"tag": "{u1}", "prefix": "lb:1:", "now_ms": "1700000000000"}
	if got := ExpandTemplate("{{prefix}}rl:{{ tag }}:{{now_ms}}", vars); got != "lb:1:rl:{u1}:1700000000000" {
		t.Errorf("ExpandTemplate = %q", got)
	}
	for key, want := range map[string]string{"rl:{u1}:a": "u1", "rl:{}:a": "rl:{}:a", "rl:a": "rl:a", "{a}{b}": "a", "x{y": "x{y"} {
		if got := HashTag(key); got != want {
			t.Errorf("HashTag(%q) = %q; want %q", key, got, want)
		}
	}
	if len(Templates()) != 14 {
		t.Errorf("Templates() = %v; want the 14 of issue 8", Templates())
	}
}
