package runner

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/report"
	"github.com/limitbench/limitbench/scenarios"
)

// TestSettingsOf: result.json's settings are the scenario's effective ones, defaults filled in.
func TestSettingsOf(t *testing.T) {
	s, err := scenarios.Parse("settings.yaml", []byte(`version: 1
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
`))
	if err != nil {
		t.Fatal(err)
	}
	want := &report.Settings{
		Limit: report.LimitSettings{Limit: 20, WindowS: 2, Burst: 20, ConsumerLimit: 20},
		Cost:  2, WarmupS: 0.5, DurationS: 3, Clients: 6, ClientMode: "pipeline", PipelineDepth: 8,
		Arrival: &report.ArrivalSettings{Kind: "steps",
			Steps: []report.StepSettings{{ForS: 1, Rate: 100}, {ForS: 2, Rate: 300}},
			Align: &report.AlignSettings{EveryS: 1, OffsetS: 0.9}},
		Keys:       load.Keys{Count: 10, Distribution: load.Zipf, ZipfS: 1.2},
		ClockSkew:  load.Skew{Offsets: []time.Duration{0, 1500 * time.Millisecond}},
		Algorithms: []string{"gcra", "sliding-log-published"},
		Expect:     report.ExpectSettings{MayViolate: []string{"sliding-log-published"}},
		Thresholds: []string{"p99 < 5ms", "gcra: efficiency >= 95%"},
	}
	if diff := cmp.Diff(want, settingsOf(s)); diff != "" {
		t.Errorf("settingsOf (-want +got):\n%s", diff)
	}
	if got := describeScenario(s, "x.yaml").Settings; got == nil {
		t.Error("describeScenario leaves Settings out")
	}
}
