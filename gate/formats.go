package gate

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/limitbench/limitbench/result"
)

// Bound is where the current run's figure lies, with the gate's confidence (99%): the baseline
// median moved by each end of the row's interval of the change, in the figure's own unit.
// OK is false when an end is not finite.
func (r Row) Bound() (lower, upper float64, ok bool) {
	at := func(delta float64) float64 {
		if r.DeltaUnit == "pt" {
			return r.OldMedian + delta/100
		}
		return r.OldMedian * (1 + delta/100)
	}
	lower, upper = at(r.DeltaLow), at(r.DeltaHigh)
	if lower > upper {
		lower, upper = upper, lower
	}
	ok = !math.IsInf(lower, 0) && !math.IsInf(upper, 0) && !math.IsNaN(lower) && !math.IsNaN(upper)
	return lower, upper, ok
}

// Benchmark names the row's algorithm × topology in the history formats:
// "<scenario>/<algorithm>/<topology>".
func (r Row) Benchmark() string { return r.Scenario + "/" + r.Algorithm + "/" + r.Topology }

// Measure names the row's figure in the history formats: the metric ("throughput", "p99",
// "cpu", "memory", "efficiency") for raw figures, with "-ratio" for ratios to the reference
// script, so that a history never mixes the two units.
func (r Row) Measure() string {
	if r.Figures == FiguresRelative {
		return string(r.Metric) + "-ratio"
	}
	return string(r.Metric)
}

// numericRows returns the rows that have a figure: every row but the verdict rows.
func (g *Report) numericRows() []Row {
	var out []Row
	for _, r := range g.Rows {
		if r.Metric != result.Verdict {
			out = append(out, r)
		}
	}
	return out
}

// BMFValue is one measure of a benchmark in the Bencher Metric Format.
type BMFValue struct {
	Value float64  `json:"value"`
	Lower *float64 `json:"lower_value,omitempty"`
	Upper *float64 `json:"upper_value,omitempty"`
}

// BMF writes the report's rows with a figure (not the verdict rows) in the Bencher Metric
// Format: {benchmark: {measure: {value, lower_value, upper_value}}}, one benchmark per
// algorithm × topology (Row.Benchmark), one measure per metric (Row.Measure), the current run's
// median as the value and Row.Bound as the bounds.
func (g *Report) BMF(w io.Writer) error {
	out := map[string]map[string]BMFValue{}
	for _, r := range g.numericRows() {
		v := BMFValue{Value: r.NewMedian}
		if lo, hi, ok := r.Bound(); ok {
			v.Lower, v.Upper = &lo, &hi
		}
		if out[r.Benchmark()] == nil {
			out[r.Benchmark()] = map[string]BMFValue{}
		}
		out[r.Benchmark()][r.Measure()] = v
	}
	return writeJSON(w, out)
}

// BenchmarkActionEntry is one entry of github-action-benchmark's custom JSON format.
type BenchmarkActionEntry struct {
	Name  string  `json:"name"`
	Unit  string  `json:"unit"`
	Value float64 `json:"value"`
	Range string  `json:"range,omitempty"`
	Extra string  `json:"extra,omitempty"`
}

// BenchmarkAction writes the report's rows with a figure as github-action-benchmark's custom
// JSON: [{name, unit, value, range, extra}], name "<benchmark> <measure>", the current run's
// median as the value, Row.Bound as the range, and in extra the baseline median, the change
// with its interval, the gate's verdict and which way is better. github-action-benchmark judges
// a whole file one way (customBiggerIsBetter or customSmallerIsBetter): throughput and
// efficiency are bigger-is-better, p99, cpu and memory smaller-is-better; the extra says which.
func (g *Report) BenchmarkAction(w io.Writer) error {
	out := []BenchmarkActionEntry{}
	for _, r := range g.numericRows() {
		unit := r.Unit
		if r.Figures == FiguresRelative {
			unit = "× reference"
		}
		e := BenchmarkActionEntry{Name: r.Benchmark() + " " + r.Measure(), Unit: unit, Value: r.NewMedian}
		if lo, hi, ok := r.Bound(); ok {
			e.Range = fmt.Sprintf("%.0f%% CI %s..%s", (1-Alpha)*100, short(lo), short(hi))
		}
		better := "smaller is better"
		if r.Metric.HigherIsBetter() {
			better = "bigger is better"
		}
		e.Extra = fmt.Sprintf("baseline median %s; change %s [%s, %s]%s; gate: %s; %s",
			short(r.OldMedian), formatDelta(r), signed(r.DeltaLow), signed(r.DeltaHigh), r.DeltaUnit, r.Verdict, better)
		out = append(out, e)
	}
	return writeJSON(w, out)
}

// short formats a figure with 6 significant digits.
func short(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
