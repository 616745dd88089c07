package report

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// TestExplorerData: an explorer carries its excerpt, each lane's clock offset, the faults that
// acted (not one that never started) and the node events as annotations, and the definite
// violations within the excerpt's span as marks; definite violations come first, then possible.
func TestExplorerData(t *testing.T) {
	r := readFixture(t, "demo-result.json")
	x := &verify.Excerpt{Violation: "definite", Contract: "sliding-window(20, 1s)", Kind: "sliding-window", Limit: 20, WindowUS: 1_000_000,
		Scope: "subject", Subject: "s0", FromUS: 100_000, ToUS: 900_000, Permits: 25, Allowed: 20, SpanFromUS: -900_000, SpanToUS: 1_900_000,
		Lanes: []string{"c1", "c2", "c3"}, LaneClients: []int{1, 2, 3}}
	possible := *x
	possible.Violation = "possible"
	r.Entries = []result.Entry{
		{Algorithm: "maybe", Topology: "single", Excerpt: &possible, Verification: verify.Summary{Verdict: verify.Pass}},
		{Algorithm: "broken", Topology: "single", Excerpt: x, Verification: verify.Summary{Verdict: verify.Fail,
			ViolationTimesS: []float64{0.5, 0.75, 5},
			Faults: []verify.FaultReport{{Name: "restart master at 0.2s", FromS: 0.2, ToS: 0.3, UntilS: 1.3},
				{Name: "pause never started", Error: "not started"}},
			Disruptions: []verify.DisruptionReport{{What: "127.0.0.1:7000 restarted", FromS: 0.25, ToS: 0.31}}}},
	}
	xs := explorerViews(r)
	if len(xs) != 2 || xs[0].Data.Title != "broken on single: definite violation of sliding-window(20, 1s)" || !xs[0].Open || xs[1].Open {
		t.Fatalf("explorers %+v; want broken's (open) then maybe's (closed)", xs)
	}
	d := xs[0].Data
	want := explorerData{Excerpt: x, Title: d.Title, Skews: []string{"+2s", "-2s", "0s"},
		Faults: []annotation{{Label: "restart master at 0.2s", FromUS: 200_000, ToUS: 300_000, UntilUS: 1_300_000}},
		Events: []annotation{{Label: "127.0.0.1:7000 restarted", FromUS: 250_000, ToUS: 310_000}},
		Marks:  []int64{500_000, 750_000}}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("explorer data (-want +got):\n%s", diff)
	}
}
