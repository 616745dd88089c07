package report

import (
	"testing"

	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// wideResult returns the fixture's result grown to the widest verdict table a run makes: every
// built-in algorithm, a custom script with a long name, and the reference script, on both the
// single and the cluster topology, with the longest contracts (two limits, per client, a clock
// granularity), every label and six- or seven-digit counts.
func wideResult(t *testing.T) *result.Result {
	t.Helper()
	r := readFixture(t, "result.json")
	base := r.Entries[0]
	base.Timeline = result.Timeline{} // no accuracy plots: the table is what is measured
	rows := []struct {
		alg, contract string
		verdict       verify.Verdict
		expected, may bool
	}{
		{"fixed-window", "fixed-window(100000, 1s)", verify.Pass, false, false},
		{"fixed-window-published", "fixed-window(100000, 1m0s, granularity 1s)", verify.Pass, true, false},
		{"sliding-log", "sliding-window(100000, 1s)", verify.Pass, false, false},
		{"sliding-log-published", "sliding-window(100000, 1s, granularity 1ms)", verify.Fail, false, true},
		{"token-bucket", "token-bucket(100000, 100000/1s)", verify.Inconclusive, false, false},
		{"token-bucket-published", "token-bucket(100000, 100000/1s, granularity 1s)", verify.Fail, true, false},
		{"redisson", "sliding-window(100000, 1s, granularity 1ms)", verify.Pass, false, false},
		{"redisson-per-client", "sliding-window(100000, 1s, granularity 1ms) per subject+client", verify.Pass, false, false},
		{"resource-consumer", "sliding-window(100000, 1s) and sliding-window(50000, 1s) per consumer", verify.Pass, false, false},
		{"resource-consumer-published", "sliding-window(100000, 1s, granularity 1s) and sliding-window(50000, 1s, granularity 1s) per consumer", verify.Fail, false, false},
		{"gcra", "token-bucket(100000, 100000/1s)", verify.Pass, false, false},
		{"sliding-counter", "fixed-window(100000, 1s)", verify.Pass, false, false},
		{"my-own-leaky-bucket-with-a-long-name", "first-hit-window(100000, 1m0s, granularity 1ms) per subject+client", verify.Fail, false, false},
		{"reference", "", verify.Inconclusive, false, false},
	}
	r.Entries = nil
	for _, topo := range []string{"single", "cluster"} {
		for i, row := range rows {
			e := base
			e.Algorithm, e.Topology = row.alg, topo
			e.Verification = verify.Summary{Verdict: row.verdict, Contract: row.contract, ExpectedViolation: row.expected,
				MayViolate: row.may, DefiniteViolations: 123456 * int64(i%2), PossibleViolations: 1234567}
			e.Accuracy = verify.AccuracySummary{MaxWindowRatio: 2.345, Efficiency: 1.3456}
			e.ThroughputRPS = 123456.7
			e.LatencyUS.P50, e.LatencyUS.P99 = 1234, 123456
			r.Entries = append(r.Entries, e)
		}
	}
	r.Environment.Topology = "single,cluster"
	return r
}
