package scenarios

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/result"
)

// TestSettings: result.json's settings are the scenario's effective ones, defaults filled in.
func TestSettings(t *testing.T) {
	s, err := Parse("settings.yaml", []byte(`version: 1
name: settings
duration: 3s
warmup: 500ms
clients: 6
client_mode: pipeline
pipeline_depth: 8
arrival:
  steps: [{for: 1s, rate: 100}, {for: 2s, rate: 300}]
  align: {every: 1s, offset: 900ms}
keys: {count: 10, distribution: zipf, zipf_s: 1.2}
limit: {limit: 20, window: 2s}
cost: 2
clock_skew: [0s, 1500ms]
algorithms: [gcra, sliding-log-published]
expect:
  may_violate: [sliding-log-published]
thresholds: ["p99 < 5ms", "gcra: efficiency >= 95%"]
persistence: aof-everysec
faults: [{at: 1s, kind: pause, duration: 500ms}]
`))
	if err != nil {
		t.Fatal(err)
	}
	want := &result.Settings{
		Limit: algorithms.Limit{Limit: 20, Window: 2 * time.Second},
		Cost:  2, WarmupS: 0.5, DurationS: 3, Clients: 6, ClientMode: load.ModePipeline, PipelineDepth: 8,
		Arrival: &arrival.Arrival{
			Steps: []arrival.Step{{For: time.Second, Rate: 100}, {For: 2 * time.Second, Rate: 300}},
			Align: arrival.Align{Every: time.Second, Offset: 900 * time.Millisecond}},
		Keys:        load.Keys{Count: 10, Distribution: load.Zipf, ZipfS: 1.2},
		ClockSkew:   load.Skew{Offsets: []time.Duration{0, 1500 * time.Millisecond}},
		Algorithms:  []string{"gcra", "sliding-log-published"},
		Expect:      result.Expect{MayViolate: []string{"sliding-log-published"}},
		Thresholds:  []string{"p99 < 5ms", "gcra: efficiency >= 95%"},
		Persistence: "aof-everysec",
		Faults:      []string{"pause master at 1s for 500ms, recovery 2s"},
	}
	if diff := cmp.Diff(want, s.settings()); diff != "" {
		t.Errorf("settings (-want +got):\n%s", diff)
	}
	if got := s.Describe("x.yaml").Settings; got == nil {
		t.Error("Describe leaves Settings out")
	}
}
