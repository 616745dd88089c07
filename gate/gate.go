// Package gate is the CI regression gate: Compare compares a current run with a baseline run of
// the same scenario, per algorithm × topology, and decides for each figure whether it regressed.
// It owns the statistics, the decision rule and the gate's Markdown and JSON. It reads results
// through package report's schema and is never imported by it. See docs/ci-gate.md.
package gate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/perf/benchmath"

	"github.com/limitbench/limitbench/report"
)

// The gate's constants. They are fixed by the gate's specification (issue 7); the per-metric thresholds
// are what a user tunes.
const (
	// Alpha is the significance level of the Mann-Whitney U test: a change with p ≥ Alpha
	// is "insignificant".
	Alpha = 0.05
	// MinSamples is the fewest samples (repeats) a side the gate accepts. With 6 against 6,
	// complete separation gives a two-sided p of 0.0022 and a shift is still significant with some
	// overlap (p = 0.015 at U = 3); with 4 against 4 the smallest possible p is 0.029, and with 3
	// against 3 it is 0.1, above α.
	MinSamples = 6
	// MaxSpread is the largest spread a sample set may have and still get a verdict; above it
	// the row is "unstable". Spread is the interquartile range over the median, (Q3 − Q1) / median,
	// with quartiles interpolated linearly between order statistics (Hyndman & Fan type 7, what
	// numpy and R use by default). The IQR ignores one stray repeat, as the U test does.
	MaxSpread = 0.10
)

// The gate's errors. Compare wraps them in a *InputError when they are about one side.
var (
	// ErrTooFewSamples: an entry has fewer than MinSamples samples on one side.
	ErrTooFewSamples = errors.New("too few samples")
	// ErrScenarioMismatch: the two results ran different scenarios.
	ErrScenarioMismatch = errors.New("baseline and current ran different scenarios")
	// ErrNoReference: the runs come from different machines, so relative figures are needed, and a
	// result has no reference entry with per-repeat samples to compute them from.
	ErrNoReference = errors.New("no reference samples for relative figures")
	// ErrNothingToCompare: no algorithm × topology appears in both results.
	ErrNothingToCompare = errors.New("no algorithm × topology in common")
	// ErrBadThreshold: a --metric-threshold specification could not be parsed.
	ErrBadThreshold = errors.New("bad metric threshold")
)

// Side names one of the two results given to Compare.
type Side string

const (
	Baseline Side = "baseline"
	Current  Side = "current"
)

// InputError is an input problem found in one side's result, about one entry when Algorithm
// is set. Err wraps one of the gate errors above. Compare returns several joined with errors.Join
// when it finds several, so a caller that knows the files' names can walk them and name the file.
type InputError struct {
	Side      Side
	Algorithm string
	Topology  string
	Err       error
}

func (e *InputError) Error() string {
	if e.Algorithm != "" {
		return fmt.Sprintf("%s: %s on %s: %v", e.Side, e.Algorithm, e.Topology, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Side, e.Err)
}

func (e *InputError) Unwrap() error { return e.Err }

// Metric names a figure the gate compares.
type Metric string

const (
	// MetricThroughput is decisions per second (Sample.ThroughputRPS); higher is better.
	MetricThroughput Metric = "throughput"
	// MetricP99 is the 99th-percentile latency from intended send time, µs (Sample.LatencyUS.P99);
	// lower is better.
	MetricP99 Metric = "p99"
	// MetricCPU is Redis CPU microseconds per decision (Sample.CPUUSecPerDecision); lower is better.
	MetricCPU Metric = "cpu"
	// MetricMemory is bytes per limited subject (Sample.BytesPerKey); lower is better.
	MetricMemory Metric = "memory"
	// MetricEfficiency is admitted / ideal admitted (Sample.Efficiency), compared in points
	// (1 point = 0.01); a drop is a regression. Over-admission is the verifier's business.
	MetricEfficiency Metric = "efficiency"
	// MetricVerdict is the entry's verification outcome (Entry.Outcome); pass → fail is a
	// regression whatever the figures say.
	MetricVerdict Metric = "verdict"
)

// Metrics lists the metrics with thresholds, in the order rows are reported.
var Metrics = []Metric{MetricThroughput, MetricP99, MetricCPU, MetricMemory, MetricEfficiency}

// Verdict is the gate's conclusion about one row.
type Verdict string

const (
	// OK: the change is significant but within its threshold, or the outcome did not change.
	OK Verdict = "ok"
	// Regression: significant and worse than the threshold, or a verdict went pass → fail.
	Regression Verdict = "regression"
	// Improvement: significant and better than the threshold, or a verdict went fail → pass.
	Improvement Verdict = "improvement"
	// Unstable: a side's spread is over MaxSpread (or an outcome is inconclusive), so no
	// verdict is given.
	Unstable Verdict = "unstable"
	// Insignificant: p ≥ Alpha; no detectable change.
	Insignificant Verdict = "insignificant"
)

// Figures says which figures a row compares.
type Figures string

const (
	// FiguresRaw compares the measured figures themselves (same machine description).
	FiguresRaw Figures = "raw"
	// FiguresRelative compares per-repeat ratios to the reference script measured in the same
	// repeat on the same topology (machines differ).
	FiguresRelative Figures = "relative"
)

// Thresholds are the smallest changes that count as a regression or an improvement: percent
// of the baseline median for throughput, p99, CPU and memory; absolute points (0.01 of
// efficiency) for efficiency. A change must also be significant (p < Alpha). The zero value
// means "any significant change"; DefaultThresholds gives the documented defaults.
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

// For returns the threshold of m (percent, or points for efficiency); 0 for MetricVerdict.
func (t Thresholds) For(m Metric) float64 {
	switch m {
	case MetricThroughput:
		return t.ThroughputPct
	case MetricP99:
		return t.P99Pct
	case MetricCPU:
		return t.CPUPct
	case MetricMemory:
		return t.MemoryPct
	case MetricEfficiency:
		return t.EfficiencyPt
	}
	return 0
}

func (t *Thresholds) set(m Metric, v float64) {
	switch m {
	case MetricThroughput:
		t.ThroughputPct = v
	case MetricP99:
		t.P99Pct = v
	case MetricCPU:
		t.CPUPct = v
	case MetricMemory:
		t.MemoryPct = v
	case MetricEfficiency:
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

func thresholdUnit(m Metric) string {
	if m == MetricEfficiency {
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
	seen := map[Metric]bool{}
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
		m := Metric(name)
		if !isMetric(m) {
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

func isMetric(m Metric) bool {
	for _, k := range Metrics {
		if k == m {
			return true
		}
	}
	return false
}

// Row is one comparison: one metric of one algorithm × topology.
//
// For a metric row, OldMedian and NewMedian are the sample medians, in the metric's unit for raw
// figures (rps, µs, µs per decision, bytes, efficiency as a fraction) and as a ratio to the
// reference for relative ones. Delta is (new − old) / old in percent, or (new − old) × 100 in
// points for efficiency (DeltaUnit says which); DeltaLow and DeltaHigh are its 1 − α confidence
// interval. P is the two-sided Mann-Whitney U p-value.
// OldSpread and NewSpread are (Q3 − Q1) / median.
//
// For the MetricVerdict row, OldOutcome and NewOutcome hold the outcomes and the numbers are zero.
type Row struct {
	Scenario   string  `json:"scenario"`
	Algorithm  string  `json:"algorithm"`
	Topology   string  `json:"topology"`
	Metric     Metric  `json:"metric"`
	Figures    Figures `json:"figures,omitempty"`
	Unit       string  `json:"unit,omitempty"`
	OldMedian  float64 `json:"old_median"`
	NewMedian  float64 `json:"new_median"`
	OldOutcome string  `json:"old_outcome,omitempty"`
	NewOutcome string  `json:"new_outcome,omitempty"`
	Delta      float64 `json:"delta"`
	DeltaUnit  string  `json:"delta_unit,omitempty"`
	// DeltaLow and DeltaHigh bound the change with confidence 1 − α, in Delta's unit: the
	// Hodges-Lehmann interval of the shift that goes with the U test (see shiftCI); finite,
	// since Compare compares at least MinSamples a side.
	DeltaLow  float64 `json:"delta_ci_low"`
	DeltaHigh float64 `json:"delta_ci_high"`
	P         float64 `json:"p_value"`
	OldN      int     `json:"old_n,omitempty"`
	NewN      int     `json:"new_n,omitempty"`
	OldSpread float64 `json:"old_spread"`
	NewSpread float64 `json:"new_spread"`
	Threshold float64 `json:"threshold"`
	Verdict   Verdict `json:"verdict"`
	// Note says, in words, why the verdict is what it is when that is not obvious.
	Note string `json:"note,omitempty"`
}

// Counts counts rows by verdict.
type Counts struct {
	Regressions   int `json:"regressions"`
	Improvements  int `json:"improvements"`
	Unstable      int `json:"unstable"`
	Insignificant int `json:"insignificant"`
	OK            int `json:"ok"`
}

// Report is the gate's answer. Summary is one line; Rows are in the baseline's entry order,
// each entry's metrics in Metrics order followed by its verdict row. Notes list everything
// that was not compared (metrics not measured, entries in one result only, the reference) and why.
type Report struct {
	Summary  string `json:"summary"`
	Scenario string `json:"scenario"`
	// Figures is FiguresRaw when SameMachine, else FiguresRelative (efficiency and verdicts are
	// always compared as they are).
	Figures         Figures    `json:"figures"`
	SameMachine     bool       `json:"same_machine"`
	BaselineMachine string     `json:"baseline_machine"`
	CurrentMachine  string     `json:"current_machine"`
	Reference       string     `json:"reference,omitempty"`
	Thresholds      Thresholds `json:"thresholds"`
	Alpha           float64    `json:"alpha"`
	MinSamples      int        `json:"min_samples"`
	MaxSpread       float64    `json:"max_spread"`
	Counts          Counts     `json:"counts"`
	Rows            []Row      `json:"rows"`
	Notes           []string   `json:"notes,omitempty"`
}

// Regressed reports whether any row is a regression.
func (g *Report) Regressed() bool { return g.Counts.Regressions > 0 }

// Regressions returns the regression rows.
func (g *Report) Regressions() []Row {
	var out []Row
	for _, r := range g.Rows {
		if r.Verdict == Regression {
			out = append(out, r)
		}
	}
	return out
}

// MachineDescription returns the description of the machine a result was measured on, from its
// Environment: backend, image, OS/arch, CPUs, GOMAXPROCS and Redis version. Two results with equal
// descriptions are compared on raw figures. Harness and Go versions are left out on purpose: they
// change with the code under test.
func MachineDescription(env report.Environment) string {
	var b strings.Builder
	b.WriteString(env.Backend)
	if env.Image != "" {
		b.WriteString(" (" + env.Image + ")")
	}
	fmt.Fprintf(&b, ", %s/%s, %d CPUs, GOMAXPROCS %d, Redis %s", env.OS, env.Arch, env.CPUs, env.GOMAXPROCS, env.RedisVersion)
	return b.String()
}

// metricDef says how to read and judge one metric.
type metricDef struct {
	metric       Metric
	unit         string
	higherBetter bool
	// zeroIsUnmeasured: a zero means the figure was not measured (Server figures, latency without
	// requests); a set containing zeros is not compared.
	zeroIsUnmeasured bool
	// relative: compared as a ratio to the reference when the machines differ.
	relative bool
	value    func(report.Sample) float64
}

var metricDefs = []metricDef{
	{MetricThroughput, "rps", true, false, true, func(s report.Sample) float64 { return s.ThroughputRPS }},
	{MetricP99, "µs", false, true, true, func(s report.Sample) float64 { return s.LatencyUS.P99 }},
	{MetricCPU, "µs/decision", false, true, true, func(s report.Sample) float64 { return s.CPUUSecPerDecision }},
	{MetricMemory, "bytes/subject", false, true, true, func(s report.Sample) float64 { return s.BytesPerKey }},
	{MetricEfficiency, "admitted/ideal", true, false, false, func(s report.Sample) float64 { return s.Efficiency }},
}

// Compare compares current with baseline, per algorithm × topology, on throughput, p99, Redis CPU per
// decision, bytes per subject and efficiency, from the entries' per-repeat Samples, and on the
// verification outcome.
//
// A metric row is a regression when the change is significant (Mann-Whitney U, p < Alpha)
// and worse than its threshold over its whole 1 − Alpha confidence interval (shiftCI),
// an improvement likewise in the other direction; it is "unstable" instead when either side's
// spread exceeds MaxSpread. Raw figures are compared when both results have the same
// MachineDescription;
// otherwise throughput, p99, CPU and memory are compared as per-repeat ratios to the reference
// entry (Result.Reference on the same topology, paired by Sample.Repeat). The reference entry
// itself is not gated. An outcome that went from pass to fail (or from "expected violation
// caught" to "missed") is a regression whatever the figures.
//
// Input problems are errors, never rows: different scenario names (ErrScenarioMismatch), fewer
// than MinSamples samples in a compared entry (ErrTooFewSamples), different machines without
// reference samples (ErrNoReference), nothing in common (ErrNothingToCompare). Problems about one
// side are *InputError values; all that are found are returned joined.
func Compare(baseline, current *report.Result, th Thresholds) (*Report, error) {
	if baseline == nil || current == nil {
		return nil, errors.New("gate: nil result")
	}
	if baseline.Scenario.Name != current.Scenario.Name {
		return nil, fmt.Errorf("%w: baseline ran %q, current ran %q", ErrScenarioMismatch, baseline.Scenario.Name, current.Scenario.Name)
	}
	g := &Report{
		Scenario:        baseline.Scenario.Name,
		BaselineMachine: MachineDescription(baseline.Environment),
		CurrentMachine:  MachineDescription(current.Environment),
		Thresholds:      th,
		Alpha:           Alpha,
		MinSamples:      MinSamples,
		MaxSpread:       MaxSpread,
		Rows:            []Row{},
	}
	g.SameMachine = g.BaselineMachine == g.CurrentMachine
	g.Figures = FiguresRaw
	if !g.SameMachine {
		g.Figures = FiguresRelative
	}
	oldRef, newRef := referenceName(baseline), referenceName(current)
	g.Reference = oldRef
	if g.Figures == FiguresRelative && oldRef != "" && newRef != "" && oldRef != newRef {
		return nil, fmt.Errorf("%w: baseline is relative to %q, current to %q", ErrNoReference, oldRef, newRef)
	}
	if g.Reference == "" {
		g.Reference = newRef
	}

	var pairs []pair
	var errs []error
	for i := range baseline.Entries {
		e := &baseline.Entries[i]
		if isReference(e, oldRef) {
			g.Notes = append(g.Notes, fmt.Sprintf("%s is the reference script: used for relative figures, not gated", e.Name()))
			continue
		}
		c := current.Entry(e.Algorithm, e.Topology)
		if c == nil {
			g.Notes = append(g.Notes, fmt.Sprintf("%s is in the baseline only: not compared", e.Name()))
			continue
		}
		pairs = append(pairs, pair{e, c})
		errs = append(errs, checkSamples(Baseline, e), checkSamples(Current, c))
	}
	for i := range current.Entries {
		c := &current.Entries[i]
		if !isReference(c, newRef) && !isReference(c, oldRef) && baseline.Entry(c.Algorithm, c.Topology) == nil {
			g.Notes = append(g.Notes, fmt.Sprintf("%s is in the current run only: not compared", c.Name()))
		}
	}
	if len(pairs) == 0 {
		return nil, fmt.Errorf("%w: baseline has %s, current has %s", ErrNothingToCompare, entryNames(baseline), entryNames(current))
	}
	var oldRefs, newRefs map[string]map[int]report.Sample
	if g.Figures == FiguresRelative {
		var err error
		if oldRefs, err = referenceSamples(Baseline, baseline, oldRef, sideEntries(pairs, true)); err != nil {
			errs = append(errs, err)
		}
		if newRefs, err = referenceSamples(Current, current, newRef, sideEntries(pairs, false)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	for _, p := range pairs {
		for _, def := range metricDefs {
			row, note := compareMetric(def, p.old, p.new, g.Figures, oldRefs, newRefs, th.For(def.metric))
			if note != "" {
				g.Notes = append(g.Notes, fmt.Sprintf("%s %s: %s", p.old.Name(), def.metric, note))
				continue
			}
			row.Scenario = g.Scenario
			g.Rows = append(g.Rows, row)
		}
		row := compareOutcome(p.old, p.new)
		row.Scenario = g.Scenario
		g.Rows = append(g.Rows, row)
	}
	for _, r := range g.Rows {
		switch r.Verdict {
		case Regression:
			g.Counts.Regressions++
		case Improvement:
			g.Counts.Improvements++
		case Unstable:
			g.Counts.Unstable++
		case Insignificant:
			g.Counts.Insignificant++
		default:
			g.Counts.OK++
		}
	}
	g.Summary = g.summary()
	return g, nil
}

// pair is one algorithm × topology found in both results.
type pair struct{ old, new *report.Entry }

// sideEntries returns the baseline (old) or current entries of ps.
func sideEntries(ps []pair, old bool) []*report.Entry {
	out := make([]*report.Entry, len(ps))
	for i, p := range ps {
		out[i] = p.new
		if old {
			out[i] = p.old
		}
	}
	return out
}

// referenceName returns the name of r's reference algorithm: Result.Reference, else the one the
// entries' Relative figures name.
func referenceName(r *report.Result) string {
	if r.Reference != "" {
		return r.Reference
	}
	for _, e := range r.Entries {
		if e.Relative != nil && e.Relative.Reference != "" {
			return e.Relative.Reference
		}
	}
	return ""
}

func isReference(e *report.Entry, ref string) bool { return ref != "" && e.Algorithm == ref }

func entryNames(r *report.Result) string {
	if len(r.Entries) == 0 {
		return "no entries"
	}
	names := make([]string, len(r.Entries))
	for i := range r.Entries {
		names[i] = r.Entries[i].Name()
	}
	return strings.Join(names, ", ")
}

func checkSamples(side Side, e *report.Entry) error {
	if n := len(e.Samples); n < MinSamples {
		return &InputError{side, e.Algorithm, e.Topology, fmt.Errorf("%w: %d, the gate needs at least %d a side (limitbench run --repeat %d)",
			ErrTooFewSamples, n, MinSamples, MinSamples)}
	}
	return nil
}

// referenceSamples returns, per topology, the reference entry's samples by repeat, and checks that
// every entry in es has a reference sample for each of its repeats.
func referenceSamples(side Side, r *report.Result, ref string, es []*report.Entry) (map[string]map[int]report.Sample, error) {
	if ref == "" {
		return nil, &InputError{Side: side, Err: fmt.Errorf("%w: the machines differ and the result names no reference script", ErrNoReference)}
	}
	out := map[string]map[int]report.Sample{}
	var errs []error
	for _, e := range es {
		if _, done := out[e.Topology]; done {
			continue
		}
		re := r.Entry(ref, e.Topology)
		if re == nil || len(re.Samples) == 0 {
			errs = append(errs, &InputError{side, ref, e.Topology, fmt.Errorf("%w: the machines differ and the reference has no samples", ErrNoReference)})
			out[e.Topology] = nil
			continue
		}
		m := map[int]report.Sample{}
		for _, s := range re.Samples {
			m[s.Repeat] = s
		}
		out[e.Topology] = m
	}
	for _, e := range es {
		m := out[e.Topology]
		if m == nil {
			continue
		}
		for _, s := range e.Samples {
			if _, ok := m[s.Repeat]; !ok {
				errs = append(errs, &InputError{side, e.Algorithm, e.Topology, fmt.Errorf("%w: reference %s has no sample for repeat %d", ErrNoReference, ref, s.Repeat)})
				break
			}
		}
	}
	return out, errors.Join(errs...)
}

// values returns def's figures of e's samples, raw or as ratios to the reference sample of the same
// repeat. note is non-empty when the figures cannot be compared.
func values(def metricDef, e *report.Entry, figures Figures, refs map[string]map[int]report.Sample) (vs []float64, note string) {
	vs = make([]float64, 0, len(e.Samples))
	zeros := 0
	for _, s := range e.Samples {
		v := def.value(s)
		if v == 0 {
			zeros++
		}
		if figures == FiguresRelative && def.relative {
			r := def.value(refs[e.Topology][s.Repeat])
			if r == 0 {
				return nil, "the reference's figure is not measured, so no ratio"
			}
			v /= r
		}
		vs = append(vs, v)
	}
	if def.zeroIsUnmeasured && zeros > 0 {
		if zeros == len(vs) {
			return nil, "not measured"
		}
		return nil, fmt.Sprintf("not measured in %d of %d repeats", zeros, len(vs))
	}
	return vs, ""
}

// compareMetric builds the row of one metric, or returns a note saying why it cannot be compared.
func compareMetric(def metricDef, old, cur *report.Entry, figures Figures, oldRefs, newRefs map[string]map[int]report.Sample, threshold float64) (Row, string) {
	if !def.relative {
		figures = FiguresRaw
	}
	ov, onote := values(def, old, figures, oldRefs)
	if onote != "" {
		return Row{}, "baseline " + onote + "; not compared"
	}
	nv, nnote := values(def, cur, figures, newRefs)
	if nnote != "" {
		return Row{}, "current " + nnote + "; not compared"
	}
	row := Row{
		Algorithm: old.Algorithm, Topology: old.Topology, Metric: def.metric, Figures: figures,
		Unit: def.unit, Threshold: threshold, DeltaUnit: "%", OldN: len(ov), NewN: len(nv),
	}
	if figures == FiguresRelative {
		row.Unit = "× reference"
	}
	os, ns := summarize(ov), summarize(nv)
	row.OldMedian, row.NewMedian = os.median, ns.median
	row.OldSpread, row.NewSpread = os.spread, ns.spread

	cmp := benchmath.AssumeNothing.Compare(
		benchmath.NewSample(append([]float64(nil), ov...), &benchmath.Thresholds{CompareAlpha: Alpha}),
		benchmath.NewSample(append([]float64(nil), nv...), &benchmath.Thresholds{CompareAlpha: Alpha}))
	row.P = cmp.P

	// worse and better are how far the change certainly goes in the bad and the good direction,
	// in threshold units: the end of the confidence interval nearer to no change (negative when
	// the interval reaches the other side), never more than the change of the medians.
	var worse, better float64
	if def.metric == MetricEfficiency {
		row.DeltaUnit = "pt"
		row.Delta = (ns.median - os.median) * 100
		row.DeltaLow, row.DeltaHigh = shiftCI(ov, nv, 100, Alpha)
		worse = min(-row.Delta, -row.DeltaHigh)
		// Better for efficiency is closer to 1; the interval bounds the move in the direction
		// the medians moved.
		better = (math.Abs(os.median-1) - math.Abs(ns.median-1)) * 100
		if row.Delta >= 0 {
			better = min(better, row.DeltaLow)
		} else {
			better = min(better, -row.DeltaHigh)
		}
	} else {
		if os.median == 0 {
			return Row{}, "baseline median is 0, so no percentage; not compared"
		}
		row.Delta = (ns.median - os.median) / os.median * 100
		row.DeltaLow, row.DeltaHigh = shiftCI(ov, nv, 100/math.Abs(os.median), Alpha)
		worse, better = min(row.Delta, row.DeltaLow), min(-row.Delta, -row.DeltaHigh)
		if def.higherBetter {
			worse, better = better, worse
		}
	}

	switch {
	case os.spread > MaxSpread || ns.spread > MaxSpread:
		row.Verdict = Unstable
		row.Note = fmt.Sprintf("spread (IQR/median) %.1f%% baseline, %.1f%% current; limit %.0f%%", os.spread*100, ns.spread*100, MaxSpread*100)
	case !(cmp.P < Alpha):
		row.Verdict = Insignificant
	case worse > threshold:
		row.Verdict = Regression
	case better > threshold:
		row.Verdict = Improvement
	case math.Abs(row.Delta) > threshold:
		row.Verdict = OK
		row.Note = fmt.Sprintf("significant, but the %.0f%% confidence interval %s reaches inside the threshold",
			(1-Alpha)*100, formatCI(row))
	default:
		row.Verdict = OK
		row.Note = "significant but within the threshold"
	}
	return row, ""
}

type setSummary struct{ median, spread float64 }

// summarize returns the median and the spread (Q3 − Q1) / median of vs (type-7 quantiles). A set
// with median 0 has spread 0 when all values are 0, else +Inf.
func summarize(vs []float64) setSummary {
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	med := quantile(s, 0.5)
	iqr := quantile(s, 0.75) - quantile(s, 0.25)
	switch {
	case iqr == 0:
		return setSummary{med, 0}
	case med == 0:
		return setSummary{med, math.Inf(1)}
	}
	return setSummary{med, math.Abs(iqr / med)}
}

// quantile returns the q-quantile of sorted s by linear interpolation between order statistics
// (type 7): h = (n − 1)·q, Q = s[⌊h⌋] + (h − ⌊h⌋)·(s[⌊h⌋+1] − s[⌊h⌋]).
func quantile(s []float64, q float64) float64 {
	if len(s) == 0 {
		return 0
	}
	h := float64(len(s)-1) * q
	lo := int(math.Floor(h))
	if lo+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[lo] + (h-float64(lo))*(s[lo+1]-s[lo])
}

// outcome returns e's verification outcome (Entry.Outcome), turned to "fail" when the entry says
// pass but a repeat failed.
func outcome(e *report.Entry) (string, string) {
	o := e.Outcome()
	if o == string(report.Pass) {
		for _, s := range e.Samples {
			if s.Verdict == report.Fail {
				return string(report.Fail), fmt.Sprintf("repeat %d failed", s.Repeat)
			}
		}
	}
	return o, ""
}

// outcomeClass sorts outcomes into good (pass, a planted bug caught), bad (fail, a planted bug
// missed) and neither (inconclusive, a tolerated failure, unknown).
func outcomeClass(o string) int {
	switch o {
	case string(report.Pass), "expected violation caught":
		return 1
	case string(report.Fail), "expected violation missed":
		return -1
	}
	return 0
}

func compareOutcome(old, cur *report.Entry) Row {
	o, onote := outcome(old)
	n, nnote := outcome(cur)
	row := Row{Algorithm: old.Algorithm, Topology: old.Topology, Metric: MetricVerdict, OldOutcome: o, NewOutcome: n}
	oc, nc := outcomeClass(o), outcomeClass(n)
	switch {
	case o == n:
		row.Verdict = OK
	case oc == 1 && nc == -1:
		row.Verdict = Regression
		row.Note = o + " → " + n
	case oc == -1 && nc == 1:
		row.Verdict = Improvement
		row.Note = o + " → " + n
	case o == report.OutcomeTolerated || n == report.OutcomeTolerated:
		row.Verdict = Unstable
		row.Note = "a tolerated violation (expect.may_violate) supports no verdict"
	case oc == 0 || nc == 0:
		row.Verdict = Unstable
		row.Note = "an inconclusive run supports no verdict"
	default:
		row.Verdict = OK
	}
	if notes := strings.Trim(strings.Join([]string{prefixed("baseline ", onote), prefixed("current ", nnote)}, "; "), "; "); notes != "" {
		row.Note = strings.Trim(row.Note+"; "+notes, "; ")
	}
	return row
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

func (g *Report) summary() string {
	var b strings.Builder
	if g.Regressed() {
		fmt.Fprintf(&b, "limitbench gate: REGRESSION in scenario %s:", g.Scenario)
		regs := g.Regressions()
		for i, r := range regs {
			if i == 5 {
				fmt.Fprintf(&b, " and %d more", len(regs)-5)
				break
			}
			sep := ","
			if i == 0 {
				sep = ""
			}
			if r.Metric == MetricVerdict {
				fmt.Fprintf(&b, "%s %s/%s verdict %s → %s", sep, r.Algorithm, r.Topology, r.OldOutcome, r.NewOutcome)
			} else {
				fmt.Fprintf(&b, "%s %s/%s %s %s", sep, r.Algorithm, r.Topology, r.Metric, formatDelta(r))
			}
		}
		b.WriteString(".")
	} else {
		fmt.Fprintf(&b, "limitbench gate: no regression in scenario %s.", g.Scenario)
	}
	c := g.Counts
	fmt.Fprintf(&b, " %d rows: %d regression%s, %d improvement%s, %d unstable, %d insignificant, %d ok; %s figures",
		len(g.Rows), c.Regressions, plural(c.Regressions), c.Improvements, plural(c.Improvements), c.Unstable, c.Insignificant, c.OK, g.Figures)
	if g.SameMachine {
		b.WriteString(" (same machine).")
	} else {
		b.WriteString(" (machines differ).")
	}
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Markdown writes the report for a pull-request comment: the one-line summary, a line saying which
// figures were compared and how, the table, and the notes.
func (g *Report) Markdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("**" + escape(g.Summary) + "**\n\n")
	if g.SameMachine {
		fmt.Fprintf(&b, "Figures: **raw**; both runs on the same machine (%s).", escape(g.BaselineMachine))
	} else {
		fmt.Fprintf(&b, "Figures: **relative** to the reference script `%s` (ratios per repeat, shown as ×); machines differ: baseline %s, current %s. Efficiency and verdicts are compared as they are.",
			g.Reference, escape(g.BaselineMachine), escape(g.CurrentMachine))
	}
	fmt.Fprintf(&b, " Mann-Whitney U test, α = %g; thresholds %s; a regression (or improvement) is significant and its whole %.0f%% confidence interval lies beyond the threshold; a side whose spread (IQR/median) is over %.0f%% is unstable.\n\n",
		g.Alpha, g.Thresholds, (1-g.Alpha)*100, g.MaxSpread*100)
	fmt.Fprintf(&b, "| scenario | algorithm | topology | metric | old median | new median | delta | %.0f%% CI of delta | p-value | verdict |\n", (1-g.Alpha)*100)
	b.WriteString("|---|---|---|---|---:|---:|---:|---:|---:|---|\n")
	for _, r := range g.Rows {
		verdict := string(r.Verdict)
		if r.Verdict == Regression {
			verdict = "**regression**"
		}
		if r.Note != "" && r.Verdict != Insignificant {
			verdict += " (" + escape(r.Note) + ")"
		}
		if r.Metric == MetricVerdict {
			fmt.Fprintf(&b, "| %s | %s | %s | verdict | %s | %s | — | — | — | %s |\n",
				escape(r.Scenario), escape(r.Algorithm), escape(r.Topology), escape(r.OldOutcome), escape(r.NewOutcome), verdict)
			continue
		}
		metric := string(r.Metric)
		if r.Figures == FiguresRaw {
			metric += " (" + r.Unit + ")"
		} else {
			metric += " (×ref)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			escape(r.Scenario), escape(r.Algorithm), escape(r.Topology), metric,
			formatValue(r, r.OldMedian), formatValue(r, r.NewMedian), formatDelta(r), formatCI(r), formatP(r.P), verdict)
	}
	if len(g.Notes) > 0 {
		b.WriteString("\nNotes:\n")
		for _, n := range g.Notes {
			b.WriteString("- " + escape(n) + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// JSON writes g as indented JSON.
func (g *Report) JSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(g)
}

func formatValue(r Row, v float64) string {
	switch {
	case r.Figures == FiguresRelative:
		return strconv.FormatFloat(v, 'f', 3, 64) + "×"
	case r.Metric == MetricEfficiency:
		return strconv.FormatFloat(v*100, 'f', 2, 64) + "%"
	}
	a := math.Abs(v)
	switch {
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func formatDelta(r Row) string {
	return signed(r.Delta) + r.DeltaUnit
}

// formatCI writes r's confidence interval of the delta as "[lo, hi]" with r's unit.
func formatCI(r Row) string {
	return "[" + signed(r.DeltaLow) + ", " + signed(r.DeltaHigh) + "]" + r.DeltaUnit
}

// signed writes v with one decimal and a sign ("+1.5", "-2.0", "0.0", "-∞").
func signed(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+∞"
	case math.IsInf(v, -1):
		return "-∞"
	}
	d := strconv.FormatFloat(v, 'f', 1, 64)
	switch {
	case d == "-0.0":
		d = "0.0"
	case v > 0 && d != "0.0":
		d = "+" + d
	}
	return d
}

func formatP(p float64) string {
	if p < 0.001 {
		return "<0.001"
	}
	return strconv.FormatFloat(p, 'f', 3, 64)
}

// escape keeps s from breaking a Markdown table cell.
func escape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
