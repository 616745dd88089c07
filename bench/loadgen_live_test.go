package bench_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/measure"
	"github.com/limitbench/limitbench/internal/metrics"
)

// loadgenLive measures what live metrics (--metrics-addr) cost the generator, depth 1 closed loop
// with recording on both sides: in paired rounds (alternating which side goes first), one side
// with the metrics stage seeing every outcome and /metrics scraped every second, one without. It
// reports the median of the rounds' throughput ratios, on ÷ off, as "live-metrics" (issue 32's
// target: at least 0.97), and of their CPU per request, off ÷ on, as "live-metrics-cpu" (steadier
// than throughput beside other processes: a ratio below 1 is what the export costs), and logs
// every round's.
func loadgenLive(b *testing.B, e *loadgenEnv, c redis.UniversalClient, rounds int) {
	var on, off, ratios, onCPU, offCPU, cpuRatios []float64
	for i := range rounds {
		for j, live := range []bool{i%2 == 0, i%2 == 1} {
			p := load.Plan{Arrival: load.ClosedLoop{}, Duration: loadgenMeasure, Clients: loadgenClients}
			stop := func() {}
			if live {
				p, stop = withLiveMetrics(b, p)
			}
			r := e.limitbench(b, c, p, false)
			stop()
			if live {
				on, onCPU = append(on, r.res.Throughput), append(onCPU, float64(r.cpu)/1e3)
			} else {
				off, offCPU = append(off, r.res.Throughput), append(offCPU, float64(r.cpu)/1e3)
			}
			if j == 1 {
				ratios = append(ratios, on[len(on)-1]/off[len(off)-1])
				cpuRatios = append(cpuRatios, offCPU[len(offCPU)-1]/onCPU[len(onCPU)-1])
			}
		}
	}
	b.Logf("live metrics: on %.0f/s %.0f, off %.0f/s %.0f: median of paired ratios %.3f, range %.3f to %.3f, rounds %.3f",
		median(on), on, median(off), off, median(ratios), slices.Min(ratios), slices.Max(ratios), ratios)
	b.ReportMetric(median(ratios), "live-metrics")
	if _, _, ok := cpuUsed(); ok {
		b.Logf("live metrics: CPU per request on %.2f µs %.2f, off %.2f µs %.2f: median of paired ratios off ÷ on %.3f, range %.3f to %.3f, rounds %.3f",
			median(onCPU), onCPU, median(offCPU), offCPU, median(cpuRatios), slices.Min(cpuRatios), slices.Max(cpuRatios), cpuRatios)
		b.ReportMetric(median(cpuRatios), "live-metrics-cpu")
	}
}

// withLiveMetrics returns p with an exporter's stage observing its outcomes, as a measurement with
// --metrics-addr has it, and a scraper reading /metrics every second; stop ends both.
func withLiveMetrics(b *testing.B, p load.Plan) (load.Plan, func()) {
	ctx := context.Background()
	x, err := metrics.Start(ctx, metrics.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	st := x.Stage(metrics.Labels{RunID: "bench", Scenario: "loadgen", Algorithm: "script", Topology: "single"}, nil)
	m := &measure.Measurement{Plan: p, Contract: algorithms.Contract{Kind: algorithms.FixedWindow, Limit: loadgenLimit, Window: time.Second}}
	if err := st.Setup(ctx, m); err != nil {
		b.Fatal(err)
	}
	st.Start(ctx, m, time.Now())
	p = m.Plan
	p.OnOutcome = func(o *load.Outcome) { st.Observe(o) }
	done := make(chan struct{})
	scraped := make(chan struct{})
	go func() {
		defer close(scraped)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if resp, err := http.Get("http://" + x.Addr() + "/metrics"); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}
	}()
	return p, func() {
		close(done)
		<-scraped
		st.End(ctx, m, nil)
		if err := x.Stop(ctx); err != nil {
			b.Error(err)
		}
	}
}
