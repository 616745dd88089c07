package result_test

import (
	"fmt"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// The runner fills an Entry per algorithm × topology: histograms in microseconds (merged from one
// per worker), then counts, verification, accuracy, server cost and timeline; report.WriteAll does the rest.
func ExampleEntry_SetHistograms() {
	latency := hdrhistogram.New(1, 60_000_000, 3) // from intended send time, µs
	service := hdrhistogram.New(1, 60_000_000, 3) // from actual send, µs
	for _, us := range []int64{200, 250, 300, 1200} {
		_ = latency.RecordValue(us)
		_ = service.RecordValue(us - 50)
	}
	e := result.Entry{Algorithm: "gcra", Topology: "single"}
	if err := e.SetHistograms(latency, service); err != nil {
		fmt.Println(err)
		return
	}
	e.Verification = verify.Summary{Verdict: verify.Pass, Contract: "token-bucket(10, 100/1s)"}
	fmt.Println(e.Name(), e.Label(), e.LatencyUS.P50, e.ServiceLatencyUS.Max)
	// Output: gcra-single pass 250 1150
}
