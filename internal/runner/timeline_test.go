package runner

import (
	"context"
	"testing"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/scenarios"
)

// TestTimelineBinsOfARun: a 1 s run of a 10 ms window gets 100 bins of 10 ms (BinFor: never
// wider than the narrowest window of the run), for every entry alike, the reference script's and
// a 60 s contract's too; the bins hold every request and admission, with a limit per bin.
func TestTimelineBinsOfARun(t *testing.T) {
	needRedis(t)
	s := scenarioOf(t, redisenv.TopologySingle, []string{"gcra", "fixed-window-published"}, func(s *scenarios.Scenario) {
		s.Duration, s.Warmup = time.Second, 0
		s.Clients = 2
		s.Limit = algorithms.Limit{Limit: 1, Window: 10 * time.Millisecond}
		s.Arrival = &arrival.Arrival{Rate: 300}
		s.Expect.MayViolate = []string{"fixed-window-published"}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := Run(ctx, Options{Scenario: s, Env: processEnv})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(out.Result.Entries) != 3 {
		t.Fatalf("%d entries; want 3 (reference, gcra, fixed-window-published)", len(out.Result.Entries))
	}
	for _, e := range out.Result.Entries {
		tl := e.Timeline
		if tl.BinS != 0.01 {
			t.Errorf("%s: bin_s = %g; want 0.01 (the 10 ms window)", e.Name(), tl.BinS)
		}
		if n := len(tl.Offered); n < 100 || n > 101 {
			t.Errorf("%s: %d bins; want 100 (a late last request may open a 101st)", e.Name(), n)
		}
		var offered, admitted int64
		for i := range tl.Offered {
			offered += tl.Offered[i]
			admitted += tl.Admitted[i]
		}
		if offered != e.Requests || admitted != e.Allowed {
			t.Errorf("%s: bins hold %d requests and %d admissions; want %d and %d", e.Name(), offered, admitted, e.Requests, e.Allowed)
		}
		if e.Algorithm != algorithms.ReferenceName && len(tl.Limit) != len(tl.Offered) {
			t.Errorf("%s: %d limits for %d bins", e.Name(), len(tl.Limit), len(tl.Offered))
		}
	}
}
