package capacity

import (
	"strings"
	"testing"
)

// TestParseSLO: objectives a rising rate makes harder to keep are accepted; one with the
// comparison backwards, one on throughput and one no measurement can keep are refused before a
// sweep runs to a foregone "no rate met the objective".
func TestParseSLO(t *testing.T) {
	tests := []struct {
		text string
		want string // substring of the error; "" when accepted
	}{
		{"p99 < 2ms", ""},
		{"p999 <= 5ms", ""},
		{"gcra: max < 1s", ""},
		{"errors < 1%", ""},
		{"errors <= 0", ""},
		{"efficiency > 0.95", ""},
		{"none", ""},
		{"p99 > 2ms", "comparison backwards"},
		{"p50 >= 1ms", "comparison backwards"},
		{"errors > 1%", "comparison backwards"},
		{"throughput > 1000", "bounds throughput"},
		{"throughput < 1000", "bounds throughput"},
		{"p99 < 0ms", "can never hold"},
		{"p99 <= 0us", "can never hold"},
		{"errors < 0", "can never hold"},
		{"sliding-log: p99 < 2ms", "names algorithm sliding-log"},
		{"p99 << 2ms", "bad threshold"},
	}
	for _, tt := range tests {
		th, err := ParseSLO(tt.text, "gcra")
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("ParseSLO(%q) = %v; want it accepted", tt.text, err)
		case tt.want == "" && (th == nil) != (tt.text == "none"):
			t.Errorf("ParseSLO(%q) = %v; want an objective (nil only for none)", tt.text, th)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("ParseSLO(%q) = %v; want an error containing %q", tt.text, err, tt.want)
		}
	}
}
