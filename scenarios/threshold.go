package scenarios

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/limitbench/limitbench/result"
)

// Op is a threshold's comparison.
type Op string

// The comparisons a threshold can use.
const (
	Less         Op = "<"
	LessEqual    Op = "<="
	Greater      Op = ">"
	GreaterEqual Op = ">="
)

// Threshold is one bound a run must keep, such as "p99 < 5ms" or "gcra: efficiency > 0.95".
//
// The grammar is `[algorithm ":"] metric op value`, with spaces anywhere between the parts:
//
//   - algorithm narrows the bound to one algorithm (by name, custom entries included); without it,
//     the bound applies to every algorithm × topology of the run.
//   - metric is p50, p90, p99, p999, max (latency from the intended send time), throughput
//     (completed requests per second), efficiency (admitted/ideal) or errors (share of requests that
//     ended in an error or an unknown outcome) or fault_excess (permits admitted beyond the contract
//     in the windows of the scenario's faults; only with faults).
//   - op is <, <=, > or >=.
//   - value for a latency is a number with a unit: us (or µs), ms or s ("5ms", "250us", "0.5s").
//     For throughput it is a plain number. For efficiency and errors it is a plain number or a
//     percentage ("0.95" or "95%"); errors cannot exceed 1 (100%).
type Threshold struct {
	// Algorithm is the algorithm the bound applies to; empty for every algorithm.
	Algorithm string
	Metric    result.Metric
	Op        Op
	// Value is in the metric's unit: µs for latencies, requests per second for throughput, a
	// fraction (0.95, not 95) for efficiency and errors.
	Value float64
	// Text is the threshold as written.
	Text string
}

// ParseThreshold parses s as described on Threshold. Errors wrap ErrBadThreshold.
func ParseThreshold(s string) (Threshold, error) {
	t := Threshold{Text: s}
	bad := func(format string, a ...any) (Threshold, error) {
		return Threshold{}, fmt.Errorf("%w %q: %s", ErrBadThreshold, s, fmt.Sprintf(format, a...))
	}
	rest := strings.TrimSpace(s)
	if rest == "" {
		return bad("empty; write it as [algorithm:] metric op value, for example \"p99 < 5ms\"")
	}
	if i := strings.IndexByte(rest, ':'); i >= 0 {
		t.Algorithm = strings.TrimSpace(rest[:i])
		rest = strings.TrimSpace(rest[i+1:])
		if t.Algorithm == "" {
			return bad("nothing before the colon; write an algorithm name or leave the colon out")
		}
		if strings.ContainsAny(t.Algorithm, " \t<>=") {
			return bad("%q is not an algorithm name", t.Algorithm)
		}
	}
	opAt := strings.IndexAny(rest, "<>=")
	if opAt < 0 {
		return bad("no comparison; use <, <=, > or >=")
	}
	name := strings.TrimSpace(rest[:opAt])
	rest = rest[opAt:]
	switch {
	case strings.HasPrefix(rest, "<="), strings.HasPrefix(rest, ">="):
		t.Op, rest = Op(rest[:2]), rest[2:]
	case strings.HasPrefix(rest, "<"), strings.HasPrefix(rest, ">"):
		t.Op, rest = Op(rest[:1]), rest[1:]
	default:
		return bad("unknown comparison %q; use <, <=, > or >=", strings.TrimSpace(rest[:min(2, len(rest))]))
	}
	if name == "" {
		return bad("no metric before %s; use one of %s", t.Op, metricList())
	}
	t.Metric = result.Metric(strings.ToLower(name))
	if !slices.Contains(result.ThresholdMetrics, t.Metric) {
		return bad("unknown metric %q; use one of %s", name, metricList())
	}
	val := strings.TrimSpace(rest)
	if val == "" {
		return bad("no value after %s", t.Op)
	}
	if strings.ContainsAny(val, "<>=") {
		return bad("more than one comparison")
	}
	v, err := parseValue(t.Metric, val)
	if err != nil {
		return bad("%v", err)
	}
	t.Value = v
	return t, nil
}

// parseValue reads a threshold value in m's unit.
func parseValue(m result.Metric, val string) (float64, error) {
	num, unit := splitNumber(val)
	if num == "" {
		return 0, fmt.Errorf("value %q is not a number", val)
	}
	x, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("value %q is not a number", val)
	}
	if x < 0 {
		return 0, fmt.Errorf("value %s is negative", val)
	}
	unit = strings.TrimSpace(unit)
	switch {
	case m.IsLatency():
		scale, ok := map[string]float64{"us": 1, "µs": 1, "μs": 1, "ms": 1e3, "s": 1e6}[unit]
		if !ok {
			if unit == "" {
				return 0, fmt.Errorf("%s is a latency: give the value a unit, us, ms or s (for example 5ms)", m)
			}
			return 0, fmt.Errorf("unknown latency unit %q; use us, ms or s", unit)
		}
		return x * scale, nil
	case m == result.Throughput:
		if unit != "" {
			return 0, fmt.Errorf("throughput is requests per second, a plain number; remove %q", unit)
		}
		return x, nil
	case m == result.FaultExcess:
		if unit != "" {
			return 0, fmt.Errorf("fault_excess is a number of permits, a plain number; remove %q", unit)
		}
		return x, nil
	default: // efficiency, errors
		switch unit {
		case "":
		case "%":
			x /= 100
		default:
			return 0, fmt.Errorf("%s is a ratio: write a plain number or a percentage, not %q", m, unit)
		}
		if m == result.ErrorRate && x > 1 {
			return 0, fmt.Errorf("errors is a share of requests and cannot exceed 1 (100%%); got %s", val)
		}
		return x, nil
	}
}

// splitNumber splits "5.5ms" into "5.5" and "ms".
func splitNumber(s string) (num, unit string) {
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.' || s[i] == '-' || s[i] == '+' ||
		(i > 0 && (s[i] == 'e' || s[i] == 'E') && i+1 < len(s) && (s[i+1] >= '0' && s[i+1] <= '9' || s[i+1] == '-' || s[i+1] == '+'))) {
		i++
	}
	return s[:i], s[i:]
}

func metricNames() []string {
	names := make([]string, len(result.ThresholdMetrics))
	for i, m := range result.ThresholdMetrics {
		names[i] = string(m)
	}
	return names
}

func metricList() string { return strings.Join(metricNames(), ", ") }

// Unmeetable returns why no measurement can keep t, or nil. Every metric is >= 0 and a latency
// is > 0 (a request takes time), so "p99 < 0ms", "p99 <= 0ms" and "errors < 0" never hold;
// "errors <= 0" (no errors at all) may.
func (t Threshold) Unmeetable() error {
	switch {
	case t.Op == Less && t.Value <= 0:
		return fmt.Errorf("%q can never hold: %s is never below 0", t.Text, t.Metric)
	case t.Op == LessEqual && t.Value <= 0 && t.Metric.IsLatency():
		return fmt.Errorf("%q can never hold: a latency is always above 0", t.Text)
	}
	return nil
}

// Holds reports whether v, in the metric's unit (see Value), keeps the bound.
func (t Threshold) Holds(v float64) bool {
	switch t.Op {
	case Less:
		return v < t.Value
	case LessEqual:
		return v <= t.Value
	case Greater:
		return v > t.Value
	case GreaterEqual:
		return v >= t.Value
	}
	return false
}

// String renders t in canonical form, for example "gcra: p99 < 5ms" or "errors <= 0.01".
func (t Threshold) String() string {
	var v string
	if t.Metric.IsLatency() {
		v = (time.Duration(t.Value * float64(time.Microsecond))).String()
	} else {
		v = strconv.FormatFloat(t.Value, 'g', -1, 64)
	}
	s := fmt.Sprintf("%s %s %s", t.Metric, t.Op, v)
	if t.Algorithm != "" {
		s = t.Algorithm + ": " + s
	}
	return s
}
