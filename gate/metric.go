package gate

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/limitbench/limitbench/result"
)

// Metrics lists the metrics the gate compares, each with a threshold, in the order rows are
// reported; each entry's verdict row (result.Verdict) follows them. Throughput is decisions
// per second and efficiency compared in points (1 point = 0.01, a drop is a regression;
// over-admission is the verifier's business); p99, CPU and memory are lower-is-better.
var Metrics = []result.Metric{result.Throughput, result.P99, result.CPU, result.Memory, result.Efficiency}

// Thresholds are the smallest changes that count as a regression or an improvement: percent
// of the baseline median for throughput, p99, CPU and memory; absolute points (0.01 of
// efficiency) for efficiency. A change is a regression when its whole confidence interval lies
// beyond the threshold (see the package documentation). The zero value means "any significant
// change"; DefaultThresholds gives the documented defaults.
type Thresholds struct {
	ThroughputPct float64 `json:"throughput_pct"`
	P99Pct        float64 `json:"p99_pct"`
	CPUPct        float64 `json:"cpu_pct"`
	MemoryPct     float64 `json:"memory_pct"`
	EfficiencyPt  float64 `json:"efficiency_pt"`
}

// DefaultThresholds returns throughput=10%,p99=15%,cpu=10%,memory=5%,efficiency=1pt.
func DefaultThresholds() Thresholds {
	return Thresholds{ThroughputPct: 10, P99Pct: 15, CPUPct: 10, MemoryPct: 5, EfficiencyPt: 1}
}

// For returns the threshold of m (percent, or points for efficiency); 0 for result.Verdict.
func (t Thresholds) For(m result.Metric) float64 {
	switch m {
	case result.Throughput:
		return t.ThroughputPct
	case result.P99:
		return t.P99Pct
	case result.CPU:
		return t.CPUPct
	case result.Memory:
		return t.MemoryPct
	case result.Efficiency:
		return t.EfficiencyPt
	}
	return 0
}

func (t *Thresholds) set(m result.Metric, v float64) {
	switch m {
	case result.Throughput:
		t.ThroughputPct = v
	case result.P99:
		t.P99Pct = v
	case result.CPU:
		t.CPUPct = v
	case result.Memory:
		t.MemoryPct = v
	case result.Efficiency:
		t.EfficiencyPt = v
	}
}

// String renders t in the syntax ParseThresholds reads, every metric named.
func (t Thresholds) String() string {
	parts := make([]string, 0, len(Metrics))
	for _, m := range Metrics {
		parts = append(parts, string(m)+"="+strconv.FormatFloat(t.For(m), 'f', -1, 64)+thresholdUnit(m))
	}
	return strings.Join(parts, ",")
}

func thresholdUnit(m result.Metric) string {
	if m == result.Efficiency {
		return "pt"
	}
	return "%"
}

// ParseThresholds reads a comma-separated list of metric=value, for example
// "throughput=10%,p99=15%,cpu=10%,memory=5%,efficiency=1pt". Metrics not named keep their
// defaults (DefaultThresholds); "" gives the defaults. Percent metrics need a "%" suffix and
// efficiency a "pt" suffix; values must be finite and not negative; a metric may appear once.
// Every problem is reported at once, each wrapping ErrBadThreshold.
func ParseThresholds(s string) (Thresholds, error) {
	th := DefaultThresholds()
	if strings.TrimSpace(s) == "" {
		return th, nil
	}
	known := make([]string, len(Metrics))
	for i, m := range Metrics {
		known[i] = string(m)
	}
	var errs []error
	seen := map[result.Metric]bool{}
	for i, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		name, value, ok := strings.Cut(item, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		switch {
		case item == "":
			errs = append(errs, fmt.Errorf("%w: item %d is empty", ErrBadThreshold, i+1))
			continue
		case !ok:
			errs = append(errs, fmt.Errorf("%w: %q: want metric=value, for example throughput=10%%", ErrBadThreshold, item))
			continue
		}
		m := result.Metric(name)
		if !slices.Contains(Metrics, m) {
			errs = append(errs, fmt.Errorf("%w: %q: unknown metric %q (known: %s)", ErrBadThreshold, item, name, strings.Join(known, ", ")))
			continue
		}
		if seen[m] {
			errs = append(errs, fmt.Errorf("%w: %q: %s given twice", ErrBadThreshold, item, name))
			continue
		}
		seen[m] = true
		unit := thresholdUnit(m)
		num, hasUnit := strings.CutSuffix(value, unit)
		if !hasUnit {
			errs = append(errs, fmt.Errorf("%w: %q: %s takes %s, for example %s=%s", ErrBadThreshold, item, name,
				map[bool]string{true: "points of efficiency", false: "a percentage of the baseline median"}[unit == "pt"],
				name, strconv.FormatFloat(DefaultThresholds().For(m), 'f', -1, 64)+unit))
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%w: %q: %q is not a number", ErrBadThreshold, item, num))
			continue
		case math.IsNaN(v) || math.IsInf(v, 0) || v < 0:
			errs = append(errs, fmt.Errorf("%w: %q: must be a finite number ≥ 0", ErrBadThreshold, item))
			continue
		}
		th.set(m, v)
	}
	if len(errs) > 0 {
		return th, errors.Join(errs...)
	}
	return th, nil
}

// metricDef says how the gate judges one metric; the metric reads its figure from a repeat's
// Sample (result.Metric.OfSample), in its unit.
type metricDef struct {
	metric result.Metric
	// zeroIsUnmeasured: a zero means the figure was not measured (Server figures, latency without
	// requests); a set containing zeros is not compared.
	zeroIsUnmeasured bool
	// relative: may be compared as a ratio to the reference of the same round (always when the
	// machines differ).
	relative bool
}

var metricDefs = []metricDef{
	{result.Throughput, false, true},
	{result.P99, true, true},
	{result.CPU, true, true},
	{result.Memory, true, true},
	{result.Efficiency, false, false},
}

// value returns the figure of def's metric in s.
func (def metricDef) value(s result.Sample) float64 {
	v, _ := def.metric.OfSample(s)
	return v
}
