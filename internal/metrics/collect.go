package metrics

import (
	"math"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// labelNames are the labels every series carries, in Labels' order.
var labelNames = []string{"run_id", "scenario", "algorithm", "topology", "segment"}

func (l Labels) values() []string {
	return []string{l.RunID, l.Scenario, l.Algorithm, l.Topology, l.Segment}
}

// desc returns the description of a series named name with the labels every series has and
// extra ones.
func desc(name, help string, extra ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append(slices.Clone(labelNames), extra...), nil)
}

// The series limitbench exports (docs/live-metrics.md has the table). Series lists every name.
var (
	descRequests = desc("limitbench_requests_total", "Requests of the measured part whose outcome came back.")
	descAdmitted = desc("limitbench_admitted_total", "Requests the limiter admitted.")
	descPermits  = desc("limitbench_admitted_permits_total", "Permits the limiter admitted (the admitted requests' costs).")
	descDenied   = desc("limitbench_denied_total", "Requests the limiter denied.")
	descErrors   = desc("limitbench_errors_total", "Requests that failed, by class (failed: did not run; unknown: may have run) and kind.", "class", "kind")
	descUnknown  = desc("limitbench_unknown_outcomes_total", "Requests whose outcome is unknown: they may have run and admitted.")
	descWarmup   = desc("limitbench_warmup_requests_total", "Requests of the warmup, kept out of every other series.")
	descOffered  = desc("limitbench_offered_requests_per_second", "The schedule's rate now (the whole load's, every generator's).")
	descAchieved = desc("limitbench_achieved_requests_per_second", "Requests per second that came back in the last second.")
	descService  = desc("limitbench_service_seconds", "Service time: from sending a request to its reply.")
	descLatency  = desc("limitbench_latency_seconds", "Latency from the request's intended time to its reply (queueing in the generator included).")
	descLateness = desc("limitbench_lateness_seconds", "Generator lateness: from a request's intended time to its sending.")
	descFaults   = desc("limitbench_faults_active", "Faults of the schedule under way, by kind.", "kind")
	descWindow   = desc("limitbench_window_admitted_permits", "The most permits admitted to one subject in the current window (harness's view, see the docs).")
	descMost     = desc("limitbench_window_admitted_permits_max", "The most permits admitted to one subject in one window so far.")
	descAllow    = desc("limitbench_window_allowance_permits", "The permits the contract allows one subject in one window (a bucket: capacity plus one refill period).")
	descDefinite = desc("limitbench_violations_definite_total", "Definite violations the verifier found in the measurements finished so far.")
	descPossible = desc("limitbench_violations_possible_total", "Possible violations the verifier found in the measurements finished so far.")
	descLive     = desc("limitbench_violations_definite_live", "Definite violations the streaming verifier has found so far in the measurement under way (a loss of state seen at its end may attribute some to the loss).")
)

// Series lists the name of every series limitbench exports (a histogram's own: its _bucket,
// _sum and _count series follow from it).
var Series = []string{
	"limitbench_requests_total", "limitbench_admitted_total", "limitbench_admitted_permits_total",
	"limitbench_denied_total", "limitbench_errors_total", "limitbench_unknown_outcomes_total",
	"limitbench_warmup_requests_total", "limitbench_offered_requests_per_second",
	"limitbench_achieved_requests_per_second", "limitbench_service_seconds", "limitbench_latency_seconds",
	"limitbench_lateness_seconds", "limitbench_faults_active", "limitbench_window_admitted_permits",
	"limitbench_window_admitted_permits_max", "limitbench_window_allowance_permits",
	"limitbench_violations_definite_total", "limitbench_violations_possible_total",
	"limitbench_violations_definite_live",
}

// collector is the Prometheus collector of an Exporter's series: it sums each series' shards
// when gathered. It describes nothing (an unchecked collector): its label sets come and go.
type collector struct{ x *Exporter }

func (collector) Describe(chan<- *prometheus.Desc) {}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	for _, s := range c.x.all() {
		collectSeries(ch, s, now)
	}
}

func collectSeries(ch chan<- prometheus.Metric, s *series, now time.Time) {
	lv := s.labels.values()
	counter := func(d *prometheus.Desc, v uint64, extra ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), append(slices.Clone(lv), extra...)...)
	}
	gauge := func(d *prometheus.Desc, v float64, extra ...string) {
		if !math.IsNaN(v) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append(slices.Clone(lv), extra...)...)
		}
	}
	hist := func(d *prometheus.Desc, h histSnapshot) {
		b := make(map[float64]uint64, len(LatencyBuckets))
		for i, ub := range LatencyBuckets {
			b[ub] = h.cumulative[i]
		}
		ch <- prometheus.MustNewConstHistogram(d, h.count, h.sum, b, lv...)
	}
	t := s.totals()
	counter(descRequests, t.requests)
	counter(descAdmitted, t.admitted)
	counter(descPermits, t.admittedPermits)
	counter(descDenied, t.denied)
	counter(descUnknown, t.unknown)
	counter(descWarmup, t.warmup)
	for k, v := range s.errorCounts() {
		counter(descErrors, v, k.class, k.kind)
	}
	hist(descService, t.service)
	hist(descLatency, t.latency)
	hist(descLateness, t.lateness)
	g := s.gauges(now)
	gauge(descOffered, g.offered)
	gauge(descAchieved, g.achieved)
	for kind, n := range g.active {
		gauge(descFaults, float64(n), string(kind))
	}
	if w := g.window; w != nil {
		if w.live {
			gauge(descWindow, float64(w.current))
		}
		gauge(descMost, float64(w.most))
		gauge(descAllow, float64(w.allowance))
	}
	counter(descDefinite, g.definite)
	counter(descPossible, g.possible)
	gauge(descLive, g.live)
}
