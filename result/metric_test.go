package result

import (
	"strings"
	"testing"

	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/verify"
)

// measured returns an entry of alg on single with a pass verdict and figures for every metric:
// 1000 requests (10 errors), p99 4ms, 500/s, efficiency 0.95 of 400 ideal admissions, 6.5 µs
// of Redis CPU and 96 bytes per subject.
func measured(alg string) Entry {
	return Entry{
		Algorithm: alg, Topology: "single", Requests: 1000, Allowed: 380, Denied: 610, Errors: 10, DurationS: 2,
		ThroughputRPS: 495, LatencyUS: load.Latency{P50: 800, P90: 2000, P99: 4000, P999: 6000, Max: 9000, Mean: 1000},
		Verification: verify.Summary{Verdict: verify.Pass, Contract: "sliding-window(100, 1s)"},
		Accuracy:     verify.AccuracySummary{IdealAllowed: 400, Efficiency: 0.95},
		Server:       Server{CPUUSecPerDecision: 6.5, BytesPerKey: 96},
	}
}

func TestEvaluate(t *testing.T) {
	e := measured("gcra")
	empty := Entry{Algorithm: "gcra", Topology: "single", Verification: verify.Summary{Verdict: verify.Inconclusive, Contract: "sliding-window(100, 1s)"}}
	noContract := measured("mine")
	noContract.Verification.Contract = "none"
	noContract.Accuracy = verify.AccuracySummary{}
	faulted := measured("gcra")
	faulted.Verification.Faults = []verify.FaultReport{{Name: "restart master at 1s", Excess: 89}}
	faulted.Verification.FaultExcess = 89
	tests := []struct {
		name    string
		e       Entry
		m       Metric
		want    float64
		missing string // substring of the reason; "" when the metric can be evaluated
	}{
		{"p50", e, P50, 800, ""},
		{"p90", e, P90, 2000, ""},
		{"p99", e, P99, 4000, ""},
		{"p999", e, P999, 6000, ""},
		{"max", e, Max, 9000, ""},
		{"throughput", e, Throughput, 495, ""},
		{"efficiency", e, Efficiency, 0.95, ""},
		{"errors", e, ErrorRate, 0.01, ""},
		{"p99 with no request", empty, P99, 0, "no decision completed"},
		{"throughput with no request", empty, Throughput, 0, "no request was measured"},
		{"errors with no request", empty, ErrorRate, 0, "no request was measured"},
		{"efficiency with no ideal admission", empty, Efficiency, 0, "an exact limiter would have admitted nothing"},
		{"efficiency without a contract", noContract, Efficiency, 0, "no contract"},
		{"fault_excess without faults", e, FaultExcess, 0, "no fault was injected"},
		{"fault_excess", faulted, FaultExcess, 89, ""},
		{"cpu", e, CPU, 6.5, ""},
		{"memory", e, Memory, 96, ""},
		{"cpu not measured", empty, CPU, 0, "not measured on the server"},
		{"memory not measured", empty, Memory, 0, "not measured on the server"},
		{"verdict", e, Verdict, 0, "has no value in an entry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, missing := tt.m.Evaluate(&tt.e)
			if got != tt.want || (tt.missing == "") != (missing == "") || !strings.Contains(missing, tt.missing) {
				t.Errorf("%s.Evaluate = (%g, %q); want (%g, containing %q)", tt.m, got, missing, tt.want, tt.missing)
			}
			if v, ok := tt.m.Value(&tt.e); ok != (missing == "") || v != got {
				t.Errorf("%s.Value = (%g, %v); want (%g, %v)", tt.m, v, ok, got, missing == "")
			}
		})
	}
}

// TestOfSample: the gate's metrics read a repeat's figures; the others have none in a Sample.
func TestOfSample(t *testing.T) {
	s := Sample{ThroughputRPS: 495, LatencyUS: load.Latency{P50: 800, P99: 4000, Max: 9000}, Efficiency: 0.95,
		CPUUSecPerDecision: 6.5, BytesPerKey: 96}
	for m, want := range map[Metric]float64{Throughput: 495, P50: 800, P99: 4000, Max: 9000, Efficiency: 0.95, CPU: 6.5, Memory: 96} {
		if got, ok := m.OfSample(s); !ok || got != want {
			t.Errorf("%s.OfSample = (%g, %v); want (%g, true)", m, got, ok, want)
		}
	}
	for _, m := range []Metric{ErrorRate, FaultExcess, Verdict} {
		if got, ok := m.OfSample(s); ok || got != 0 {
			t.Errorf("%s.OfSample = (%g, %v); want (0, false)", m, got, ok)
		}
	}
}
