package report

import (
	"testing"

	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// decisionEntry is a passing entry on single with the figures the rule reads.
func decisionEntry(alg string, usec, p99, eff float64) result.Entry {
	return result.Entry{Algorithm: alg, Topology: "single",
		Verification: verify.Summary{Verdict: verify.Pass, Contract: "sliding-window(10, 1s)"},
		Accuracy:     verify.AccuracySummary{IdealAllowed: 100, Efficiency: eff},
		Server:       result.Server{USecPerCall: usec},
		LatencyUS:    load.Latency{P99: p99}}
}

// TestRecommend: the rule picks the least Redis time per decision among the entries that pass
// with no possible violation and an efficiency of at least 99%, and that the scenario does not
// expect to violate; ties by p99, then name; "" when none qualifies.
func TestRecommend(t *testing.T) {
	expect := &result.Settings{Expect: result.Expect{Violations: []string{"cheap-but-flagged"}, MayViolate: []string{"cheap-but-tolerated"}}}
	possible := decisionEntry("cheap-with-possible", 1, 1, 1)
	possible.Verification.PossibleViolations = 2
	failed := decisionEntry("cheap-but-failed", 1, 1, 1)
	failed.Verification.Verdict = verify.Fail
	reference := decisionEntry("reference", 0.5, 1, 1)
	tests := []struct {
		name    string
		entries []result.Entry
		want    string
	}{
		{"cheapest", []result.Entry{decisionEntry("b", 5, 1, 1), decisionEntry("a", 3, 9, 0.995), decisionEntry("c", 4, 1, 1)}, "a"},
		{"tie by p99 then name", []result.Entry{decisionEntry("b", 3, 2, 1), decisionEntry("c", 3, 1, 1), decisionEntry("a", 3, 1, 1)}, "a"},
		{"efficiency below 99%", []result.Entry{decisionEntry("a", 1, 1, 0.985), decisionEntry("b", 2, 1, 1)}, "b"},
		{"efficiency not measured", []result.Entry{decisionEntry("a", 1, 1, 0), decisionEntry("b", 2, 1, 1)}, "b"},
		{"not a pass, possible violations, expected or tolerated, the reference", []result.Entry{
			failed, possible, decisionEntry("cheap-but-flagged", 1, 1, 1), decisionEntry("cheap-but-tolerated", 1, 1, 1), reference,
			decisionEntry("ok", 9, 1, 1)}, "ok"},
		{"Redis time not measured", []result.Entry{decisionEntry("a", 0, 1, 1)}, ""},
		{"none qualifies", []result.Entry{failed, possible}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &result.Result{Entries: tt.entries, Reference: "reference", Scenario: result.Scenario{Settings: expect}}
			if got := Recommend(r, "single"); got != tt.want {
				t.Errorf("Recommend = %q; want %q", got, tt.want)
			}
			if got := Recommend(r, "cluster"); got != "" {
				t.Errorf("Recommend on a topology without entries = %q; want none", got)
			}
		})
	}
}

// TestDecisionTable: the decision table of the demo has every verified entry of its topology,
// those that qualify first by the rule's order, the recommended one marked, and the best value
// of each column marked.
func TestDecisionTable(t *testing.T) {
	r := readFixture(t, "demo-result.json")
	for _, d := range decisionViews(r) {
		if d.Recommended != Recommend(r, d.Topology) {
			t.Errorf("%s: the table recommends %q; Recommend says %q", d.Topology, d.Recommended, Recommend(r, d.Topology))
		}
		if want := len(entriesOn(r, d.Topology)) - 1; len(d.Rows) != want {
			t.Errorf("%s: %d rows; want %d (every entry but the reference)", d.Topology, len(d.Rows), want)
		}
		if d.Recommended != "" && (d.Rows[0].Algorithm != d.Recommended || !d.Rows[0].Recommended) {
			t.Errorf("%s: the first row is %s (recommended %v); want %s", d.Topology, d.Rows[0].Algorithm, d.Rows[0].Recommended, d.Recommended)
		}
		best := map[string]int{}
		for _, row := range d.Rows {
			for name, c := range map[string]cell{"efficiency": row.Efficiency, "worst": row.Worst, "server": row.Server, "memory": row.Memory, "p99": row.P99} {
				if c.Best {
					best[name]++
				}
			}
		}
		for _, col := range []string{"efficiency", "worst", "server", "memory", "p99"} {
			if best[col] == 0 {
				t.Errorf("%s: no best value marked in column %s", d.Topology, col)
			}
		}
	}
}
