package scenarios

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/limitbench/limitbench/result"
)

func TestParseThreshold(t *testing.T) {
	tests := []struct {
		in   string
		want Threshold
	}{
		{"p99 < 5ms", Threshold{Metric: result.P99, Op: Less, Value: 5000}},
		{"p50<=250us", Threshold{Metric: result.P50, Op: LessEqual, Value: 250}},
		{"p90 < 250µs", Threshold{Metric: result.P90, Op: Less, Value: 250}},
		{"p999 < 0.5s", Threshold{Metric: result.P999, Op: Less, Value: 500000}},
		{"max <= 1s", Threshold{Metric: result.Max, Op: LessEqual, Value: 1e6}},
		{"  P99   <   2ms  ", Threshold{Metric: result.P99, Op: Less, Value: 2000}},
		{"throughput >= 1000", Threshold{Metric: result.Throughput, Op: GreaterEqual, Value: 1000}},
		{"throughput > 2.5e3", Threshold{Metric: result.Throughput, Op: Greater, Value: 2500}},
		{"efficiency > 0.95", Threshold{Metric: result.Efficiency, Op: Greater, Value: 0.95}},
		{"efficiency >= 95%", Threshold{Metric: result.Efficiency, Op: GreaterEqual, Value: 0.95}},
		{"errors < 1%", Threshold{Metric: result.ErrorRate, Op: Less, Value: 0.01}},
		{"errors <= 0", Threshold{Metric: result.ErrorRate, Op: LessEqual, Value: 0}},
		{"gcra: efficiency > 0.95", Threshold{Algorithm: "gcra", Metric: result.Efficiency, Op: Greater, Value: 0.95}},
		{"sliding-log:p99<5ms", Threshold{Algorithm: "sliding-log", Metric: result.P99, Op: Less, Value: 5000}},
		{"my_limiter : throughput > 10", Threshold{Algorithm: "my_limiter", Metric: result.Throughput, Op: Greater, Value: 10}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseThreshold(tt.in)
			if err != nil {
				t.Fatalf("ParseThreshold(%q) error %v", tt.in, err)
			}
			tt.want.Text = tt.in
			// Compare values with a tolerance: 0.95 and 95% differ in the last bit.
			if d := got.Value - tt.want.Value; d > 1e-9 || d < -1e-9 {
				t.Errorf("ParseThreshold(%q).Value = %v; want %v", tt.in, got.Value, tt.want.Value)
			}
			got.Value = tt.want.Value
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseThreshold(%q) (-want +got):\n%s", tt.in, diff)
			}
			// The canonical form parses back to the same threshold.
			again, err := ParseThreshold(got.String())
			if err != nil || again.Metric != got.Metric || again.Op != got.Op || again.Algorithm != got.Algorithm ||
				again.Value-got.Value > 1e-9 || got.Value-again.Value > 1e-9 {
				t.Errorf("ParseThreshold(%q.String() = %q) = %+v, %v; want %+v", tt.in, got.String(), again, err, got)
			}
		})
	}
}

func TestParseThresholdErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "empty"},
		{"p99 5ms", "no comparison"},
		{"p99 == 5ms", `unknown comparison "=="`},
		{"p99 =< 5ms", `unknown comparison "=<"`},
		{"< 5ms", "no metric"},
		{"p42 < 5ms", `unknown metric "p42"`},
		{"p99 <", "no value"},
		{"p99 < 5", "give the value a unit"},
		{"p99 < 5min", `unknown latency unit "min"`},
		{"p99 < fast", `value "fast" is not a number`},
		{"p99 < -5ms", "negative"},
		{"throughput > 5ms", "plain number"},
		{"throughput > 5%", "plain number"},
		{"efficiency > 0.9x", "ratio"},
		{"errors < 5", "cannot exceed 1"},
		{"errors < 101%", "cannot exceed 1"},
		{": p99 < 5ms", "nothing before the colon"},
		{"p99 < 5ms < 6ms", "more than one comparison"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseThreshold(tt.in)
			if err == nil {
				t.Fatalf("ParseThreshold(%q) = %+v, nil; want an error containing %q", tt.in, got, tt.want)
			}
			if !errors.Is(err, ErrBadThreshold) {
				t.Errorf("ParseThreshold(%q) error %v does not wrap ErrBadThreshold", tt.in, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseThreshold(%q) error %q; want it to contain %q", tt.in, err, tt.want)
			}
		})
	}
}

func TestThresholdHolds(t *testing.T) {
	tests := []struct {
		th   string
		v    float64
		want bool
	}{
		{"p99 < 5ms", 4999, true},
		{"p99 < 5ms", 5000, false},
		{"p99 <= 5ms", 5000, true},
		{"efficiency > 0.95", 0.95, false},
		{"efficiency >= 0.95", 0.95, true},
		{"throughput > 100", 101, true},
	}
	for _, tt := range tests {
		th, err := ParseThreshold(tt.th)
		if err != nil {
			t.Fatal(err)
		}
		if got := th.Holds(tt.v); got != tt.want {
			t.Errorf("ParseThreshold(%q).Holds(%v) = %v; want %v", tt.th, tt.v, got, tt.want)
		}
	}
}
