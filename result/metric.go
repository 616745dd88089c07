package result

import (
	"fmt"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/load"
)

// Metric names a figure of an Entry. It is the one vocabulary of an entry's figures: a scenario's
// thresholds ("p99 < 5ms", "gcra: efficiency > 0.95") and a capacity objective name the metrics
// of ThresholdMetrics; the gate compares CPU, Memory and some of those per repeat, and reports
// Verdict as a row of its own. A metric reads its figure from an entry (Evaluate) or a repeat's
// Sample (OfSample) in its unit (Unit).
type Metric string

// The metrics.
const (
	P50  Metric = "p50"  // latency from the intended send time, µs
	P90  Metric = "p90"  // µs
	P99  Metric = "p99"  // µs
	P999 Metric = "p999" // µs
	Max  Metric = "max"  // µs
	// Throughput is completed decisions (allowed or denied) per second.
	Throughput Metric = "throughput"
	// Efficiency is admitted/ideal: 1 is exact, below 1 denies too much, above 1 admits too much.
	Efficiency Metric = "efficiency"
	// ErrorRate is the share of requests that ended in an error or an unknown outcome, 0 to 1.
	ErrorRate Metric = "errors"
	// FaultExcess is the permits admitted beyond the contract in the windows of the faults the
	// scenario injected (verify.Summary.FaultExcess), a plain number; only with faults.
	FaultExcess Metric = "fault_excess"
	// CPU is Redis CPU (user + sys) per decision, µs (Server.CPUUSecPerDecision).
	CPU Metric = "cpu"
	// Memory is the memory per limited subject, bytes (Server.BytesPerKey).
	Memory Metric = "memory"
	// Verdict is the entry's verification outcome (Entry.Label); not a number, so Evaluate and
	// OfSample have no value for it.
	Verdict Metric = "verdict"
)

// ThresholdMetrics are the metrics a scenario's threshold and a capacity objective may name, in
// the order their errors list them.
var ThresholdMetrics = []Metric{P50, P90, P99, P999, Max, Throughput, Efficiency, ErrorRate, FaultExcess}

// IsLatency reports whether m is a latency percentile (or the maximum), measured in µs.
func (m Metric) IsLatency() bool {
	switch m {
	case P50, P90, P99, P999, Max:
		return true
	}
	return false
}

// Unit names m's unit as the gate's rows show it: "µs", "rps", "µs/decision", "bytes/subject",
// "admitted/ideal", "share of requests", "permits"; "" for Verdict.
func (m Metric) Unit() string {
	switch {
	case m.IsLatency():
		return "µs"
	}
	return map[Metric]string{Throughput: "rps", Efficiency: "admitted/ideal", ErrorRate: "share of requests",
		FaultExcess: "permits", CPU: "µs/decision", Memory: "bytes/subject"}[m]
}

// HigherIsBetter reports whether a larger value of m is an improvement: throughput and
// efficiency (over-admission is the verifier's business, not a figure's).
func (m Metric) HigherIsBetter() bool { return m == Throughput || m == Efficiency }

// latency returns the percentile m of l; m must be a latency.
func (m Metric) latency(l load.Latency) float64 {
	return map[Metric]float64{P50: l.P50, P90: l.P90, P99: l.P99, P999: l.P999, Max: l.Max}[m]
}

// Evaluate returns the value of m for e in m's unit (µs, decisions/s, fraction, permits, bytes),
// or, when e holds no data to evaluate m, why not: no request measured (throughput, errors), no
// decision completed (latencies), no contract or nothing an exact limiter would have admitted
// (efficiency), no fault injected (fault_excess), not measured on the server (cpu, memory).
func (m Metric) Evaluate(e *Entry) (float64, string) {
	switch {
	case m.IsLatency():
		if e.Allowed+e.Denied == 0 || e.Histograms.Latency == "" && e.LatencyUS == (load.Latency{}) {
			return 0, "no decision completed, so there is no latency to compare"
		}
		return m.latency(e.LatencyUS), ""
	case m == Throughput:
		if e.Requests == 0 || e.DurationS <= 0 {
			return 0, "no request was measured"
		}
		return e.ThroughputRPS, ""
	case m == Efficiency:
		switch {
		case e.Verification.Contract == "" || e.Verification.Contract == string(algorithms.NoContract):
			return 0, "the algorithm has no contract, so there is no exact limiter to compare with"
		case e.Accuracy.IdealAllowed == 0:
			return 0, "an exact limiter would have admitted nothing (no request completed, or accuracy was not computed)"
		}
		return e.Accuracy.Efficiency, ""
	case m == ErrorRate:
		if e.Requests == 0 {
			return 0, "no request was measured"
		}
		return float64(e.Errors+e.Unknown) / float64(e.Requests), ""
	case m == FaultExcess:
		if len(e.Verification.Faults) == 0 {
			return 0, "no fault was injected in this measurement"
		}
		return float64(e.Verification.FaultExcess), ""
	case m == CPU || m == Memory:
		v := e.Server.CPUUSecPerDecision
		if m == Memory {
			v = e.Server.BytesPerKey
		}
		if v == 0 {
			return 0, "not measured on the server"
		}
		return v, ""
	}
	return 0, fmt.Sprintf("%q has no value in an entry", m)
}

// Value returns the value of m for e in m's unit, and false when e holds no data to evaluate m
// (see Evaluate).
func (m Metric) Value(e *Entry) (float64, bool) {
	v, missing := m.Evaluate(e)
	return v, missing == ""
}

// OfSample returns the value of m in s, one repeat's figures, in m's unit, and false for a metric
// a Sample does not hold (errors, fault_excess, verdict). Zero may mean not measured (see
// Server).
func (m Metric) OfSample(s Sample) (float64, bool) {
	switch {
	case m.IsLatency():
		return m.latency(s.LatencyUS), true
	case m == Throughput:
		return s.ThroughputRPS, true
	case m == Efficiency:
		return s.Efficiency, true
	case m == CPU:
		return s.CPUUSecPerDecision, true
	case m == Memory:
		return s.BytesPerKey, true
	}
	return 0, false
}
