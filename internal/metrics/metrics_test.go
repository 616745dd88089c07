package metrics

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/measure"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/scenarios"
	"github.com/limitbench/limitbench/verify"
)

// feed runs the stage's steps around outcomes the way measure.Do does, outcomes observed from
// workers goroutines at once.
func feed(t *testing.T, st measure.Stage, m *measure.Measurement, workers int, outcomes func(w int) []load.Outcome) {
	t.Helper()
	if err := st.Setup(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	st.Start(context.Background(), m, time.Now()) // the measured part begins now
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for _, o := range outcomes(w) {
				st.Observe(&o)
			}
		})
	}
	wg.Wait()
}

func TestStageCounts(t *testing.T) {
	x, err := Start(context.Background(), Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Stop(context.Background())
	l := Labels{RunID: "r1", Scenario: "s", Algorithm: "gcra", Topology: "single"}
	schedule := []scenarios.Fault{{At: 0, Kind: scenarios.FaultPause, Duration: time.Hour}}
	st := x.Stage(l, schedule)
	m := &measure.Measurement{Plan: load.Plan{Arrival: load.Constant(100), Warmup: time.Second, Keys: load.Keys{Count: 4}},
		Contract: algorithms.Contract{Kind: algorithms.FixedWindow, Limit: 5, Window: 10000 * time.Hour}}
	const workers, each = 8, 1000
	feed(t, st, m, workers, func(w int) []load.Outcome {
		var out []load.Outcome
		for i := range each {
			o := load.Outcome{Client: uint16(w), Subject: uint32(i % 4), Cost: 1, Intended: 2 * time.Second,
				Sent: 2*time.Second + time.Millisecond, Received: 2*time.Second + 3*time.Millisecond}
			switch i % 5 {
			case 0:
				o.Intended = 0 // the warmup's
			case 1, 2:
				o.Decision.Allowed = true
			case 3:
				o.Class, o.Err = load.ClassUnknown, errors.New("read tcp: i/o timeout")
			}
			out = append(out, o)
		}
		return out
	})
	st.Report(m, &result.Entry{Verification: verify.Summary{DefiniteViolations: 2, PossibleViolations: 3}})

	got := values(t, x)
	n := float64(workers * each / 5)
	want := map[string]float64{
		"limitbench_requests_total": 4 * n, "limitbench_admitted_total": 2 * n, "limitbench_admitted_permits_total": 2 * n,
		"limitbench_denied_total": n, "limitbench_unknown_outcomes_total": n, "limitbench_warmup_requests_total": n,
		"limitbench_latency_seconds": 4 * n, "limitbench_service_seconds": 4 * n, "limitbench_lateness_seconds": 4 * n,
		"limitbench_faults_active": 1, "limitbench_window_allowance_permits": 5,
		// Every admission of one subject lands in one window (of 10000 hours: the test never straddles two): 2n / 4 subjects.
		"limitbench_window_admitted_permits": 2 * n / 4, "limitbench_window_admitted_permits_max": 2 * n / 4,
		"limitbench_violations_definite_total": 2, "limitbench_violations_possible_total": 3,
		"limitbench_offered_requests_per_second": 100, "limitbench_errors_total": n,
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s = %v; want %v", name, got[name], w)
		}
	}
	for name := range got {
		if !slices.Contains(Series, name) {
			t.Errorf("exported %s, which Series does not list", name)
		}
	}
	for _, name := range Series {
		// No progress was reported (achieved), and no streaming verifier runs here (the live count:
		// verify's TestStreamLogMatchesAdmissionLogOnRedis and cmd/limitbench's live test).
		if _, ok := got[name]; !ok && name != "limitbench_achieved_requests_per_second" && name != "limitbench_violations_definite_live" {
			t.Errorf("Series lists %s, which was not exported", name)
		}
	}

	// The exposition serves the same.
	resp, err := http.Get("http://" + x.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `limitbench_admitted_total{algorithm="gcra",run_id="r1",scenario="s",segment="",topology="single"} 3200`) {
		t.Errorf("/metrics lacks the admitted count:\n%s", body)
	}

	// Once the measurement ends, nothing is offered or under way; the counts stay.
	st.End(context.Background(), m, nil)
	got = values(t, x)
	for _, name := range []string{"limitbench_offered_requests_per_second", "limitbench_window_admitted_permits"} {
		if _, ok := got[name]; ok {
			t.Errorf("%s still exported after the measurement ended", name)
		}
	}
	if got["limitbench_faults_active"] != 0 || got["limitbench_admitted_total"] != 2*n || got["limitbench_window_admitted_permits_max"] != 2*n/4 {
		t.Errorf("after the end: faults %v, admitted %v, most %v", got["limitbench_faults_active"], got["limitbench_admitted_total"],
			got["limitbench_window_admitted_permits_max"])
	}
}

// values gathers x and returns each family's value summed over its series (a histogram's count).
func values(t *testing.T, x *Exporter) map[string]float64 {
	t.Helper()
	fams, err := x.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[f.GetName()] += m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[f.GetName()] += m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[f.GetName()] += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

func TestOptionsValidate(t *testing.T) {
	err := Options{Addr: "9464", RemoteWrite: "127.0.0.1:9090", OTLP: "ftp://x"}.Validate()
	for _, w := range []string{"--metrics-addr", "--prometheus-remote-write", "--otlp-endpoint"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Validate = %v; want it to name %s", err, w)
		}
	}
	if !errors.Is(err, ErrBadOption) {
		t.Errorf("Validate = %v; want ErrBadOption", err)
	}
	if x, err := Start(context.Background(), Options{}); x != nil || err != nil {
		t.Errorf("Start with no destination = %v, %v; want nil, nil", x, err)
	}
	var none *Exporter
	if st := none.Stage(Labels{}, nil); st.Observe != nil || none.Stop(context.Background()) != nil {
		t.Error("a nil Exporter's stage or Stop does something")
	}
}

// TestWindowCountsSaturate checks that a subject past the counted ones is not counted and that a
// new window starts over.
func TestWindowCounts(t *testing.T) {
	origin := time.Unix(1000, 0)
	w := newWindowCounts(algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 3, Window: time.Second}, 2, origin)
	add := func(subject uint32, at time.Duration, cost uint16) {
		w.add(&load.Outcome{Subject: subject, Received: at, Cost: cost})
	}
	add(0, 100*time.Millisecond, 2)
	add(0, 900*time.Millisecond, 1)
	add(1, 500*time.Millisecond, 1)
	add(1<<20, 500*time.Millisecond, 50) // past the counted subjects: ignored
	if got := w.current(origin.Add(999 * time.Millisecond)); got != 3 {
		t.Errorf("current = %d; want 3", got)
	}
	add(0, 1100*time.Millisecond, 1)
	if got := w.current(origin.Add(1200 * time.Millisecond)); got != 1 {
		t.Errorf("current in the next window = %d; want 1", got)
	}
	if got := w.most.Load(); got != 3 {
		t.Errorf("most = %d; want 3", got)
	}
	if newWindowCounts(algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 3, Window: time.Second, Scope: algorithms.PerClient}, 2, origin) != nil {
		t.Error("window counts for a per-client contract; want none (they count per subject)")
	}
}

// BenchmarkStageObserve measures the hot path: one outcome observed, from parallel goroutines
// as workers do (compare with the generator's CPU per request, BenchmarkLoadgen's).
func BenchmarkStageObserve(b *testing.B) {
	x, err := Start(context.Background(), Options{Addr: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	defer x.Stop(context.Background())
	st := x.Stage(Labels{Algorithm: "a"}, nil)
	m := &measure.Measurement{Plan: load.Plan{Arrival: load.Constant(100), Keys: load.Keys{Count: 1000}},
		Contract: algorithms.Contract{Kind: algorithms.FixedWindow, Limit: 5, Window: time.Second}}
	if err := st.Setup(context.Background(), m); err != nil {
		b.Fatal(err)
	}
	st.Start(context.Background(), m, time.Now())
	var client atomic.Uint32
	b.RunParallel(func(pb *testing.PB) {
		c := uint16(client.Add(1))
		o := load.Outcome{Client: c, Cost: 1, Intended: time.Millisecond, Sent: 2 * time.Millisecond, Received: 3 * time.Millisecond}
		for i := 0; pb.Next(); i++ {
			o.Subject, o.Decision.Allowed = uint32(i%1000), i%2 == 0
			st.Observe(&o)
		}
	})
}
