package scenarios

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/limitbench/limitbench/internal/golden"
)

// scenarioSections are scenarios in every arrival form, key distribution, skew form and client
// mode, with a custom script, expectations and thresholds.
var scenarioSections = []struct{ name, yaml string }{
	{"constant-aligned", `version: 1
name: constant-aligned
description: A constant rate aligned to the second, hot keys, pipelined, with a custom script.
topologies: [single, cluster]
duration: 4s
warmup: 1s
seed: 9
clients: 6
client_mode: pipeline
pipeline_depth: 8
arrival: {rate: 1500.5, align: {every: 1s, offset: 900ms}}
keys: {count: 100, distribution: hot, hot_share: 0.25}
limit: {limit: 20, window: 2s, burst: 30, consumer_limit: 5}
cost: 2
clock_skew: [0s, 1500ms, -2s]
algorithms:
  - gcra
  - sliding-log-published
  - name: my-token-bucket
    script: token_bucket.lua
    keys: ["rl:{{tag}}:tokens", "rl:{{tag}}:ts"]
    args: ["{{burst}}", "{{limit}}", "{{window_ms}}", "{{cost}}"]
    allowed: {element: 1, equals: 1}
    time: {element: 3, unit: us}
    contract: {kind: token-bucket, capacity: 30, rate: 20, per: 2s, granularity: 1ms}
expect:
  violations: [sliding-log-published]
  may_violate: [my-token-bucket]
thresholds: ["p99 < 5ms", "gcra: efficiency >= 95%", "errors < 1%"]
`},
	{"ramp-spread", `version: 1
name: ramp-spread
topologies: [cluster]
duration: 3s
clients: 3
client_mode: autopipeline
arrival: {ramp: {from: 0, to: 900}}
keys: {count: 1000, distribution: zipf}
clock_skew: {spread: 250ms}
algorithms: [fixed-window-published, token-bucket-published]
`},
	{"steps", `version: 1
name: steps
arrival:
  steps: [{for: 1s, rate: 100}, {for: 500ms, rate: 0}, {for: 2s, rate: 300}]
keys: {count: 7, distribution: zipf, zipf_s: 1.2}
limit: {limit: 1, window: 100ms}
algorithms: [gcra]
`},
	{"spike", `version: 1
name: spike
duration: 6s
arrival: {spike: {base: 50, peak: 2000, at: 1900ms, for: 200ms, every: 2s}}
algorithms: [sliding-counter]
thresholds: ["sliding-counter: p999 <= 20ms"]
`},
	{"closed", `version: 1
name: closed
algorithms: [all]
`},
}

// TestScenarioSectionGolden: the scenario section of result.json (name, seed, topologies and the
// effective settings) of scenarios in every form is testdata/scenario-sections.json. Package
// report's TestScenarioWords puts the same sections in words.
func TestScenarioSectionGolden(t *testing.T) {
	// The custom script is read relative to the scenario file.
	dir := filepath.Join("..", "examples", "custom")
	var got bytes.Buffer
	for _, sc := range scenarioSections {
		s, err := Parse(filepath.Join(dir, sc.name+".yaml"), []byte(sc.yaml))
		if err != nil {
			t.Fatalf("%s: %v", sc.name, err)
		}
		b, err := json.MarshalIndent(s.Describe(s.File), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got.Write(b)
		got.WriteString("\n")
	}
	golden.Check(t, filepath.Join("testdata", "scenario-sections.json"), got.Bytes())
}
