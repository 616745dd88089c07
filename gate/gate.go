package gate

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/limitbench/limitbench/result"
)

// The gate's constants, fixed by its specification (doc.go); the per-metric thresholds and the
// Policy are what a user chooses.
const (
	// Alpha is the level of the gate's confidence intervals (1 − Alpha = 99%) and of the
	// Mann-Whitney U test reported beside them. It is 0.01, not 0.05, because a gate judges many
	// rows and a false alarm fails a build: whatever the noise, a row of unchanged code is a
	// regression with probability at most α′/2 = 0.43% with 6 repeats a side (2.06% at 95%). On a
	// shared machine whose load came in bursts of several seconds, the 95% interval called 4 of 84
	// same-code comparisons of throughput or p99 a regression; the 99% interval none of them.
	Alpha = 0.01
	// Power is the probability with which a change of the minimum detectable effect is detected:
	// Row.MDE is the true shift that the 1 − Alpha interval separates from 0 in 80% of runs.
	Power = 0.80
	// MinSamples is the fewest samples (repeats) a side the gate accepts. With 6 against 6 the 99%
	// interval runs from the 3rd smallest to the 3rd largest of the 36 differences (c = 2), so a
	// change is still found when the two sets overlap a little; with 5 against 5 it is the whole
	// range of the differences (c = 0: only complete separation counts), and with 4 against 4 no
	// 99% interval exists (complete separation has p = 2/70 = 0.029).
	MinSamples = 6
)

// The gate's errors. Compare wraps them in an *InputError when they are about one side.
var (
	// ErrTooFewSamples: an entry has fewer than MinSamples samples on one side.
	ErrTooFewSamples = errors.New("too few samples")
	// ErrScenarioMismatch: the two results ran different scenarios.
	ErrScenarioMismatch = errors.New("baseline and current ran different scenarios")
	// ErrLoadMismatch: the two results ran their scenario under different loads
	// (LoadDifferences), and the Policy does not allow it.
	ErrLoadMismatch = errors.New("baseline and current ran different loads")
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

// The two sides.
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

// Verdict is the gate's conclusion about one row. doc.go states the rule; Policy.Fails says which
// verdicts fail the gate.
type Verdict string

const (
	// Regression: the whole confidence interval of the change lies beyond the threshold on the
	// worse side (whatever the spread), or a verdict went pass → fail. It fails the gate.
	Regression Verdict = "regression"
	// Inconclusive: the run cannot rule out a regression of threshold size: the interval reaches
	// beyond the threshold on the worse side while the samples are too noisy to detect a change
	// of threshold size (MDE > threshold); or a verification outcome is inconclusive or
	// tolerated. It fails the gate only under Policy.FailInconclusive.
	Inconclusive Verdict = "inconclusive"
	// Improvement: the whole interval lies beyond the threshold on the better side, or a verdict
	// went fail → pass.
	Improvement Verdict = "improvement"
	// Insignificant: the interval contains 0 and does not reach beyond the threshold on the worse
	// side unnoticed (see Inconclusive): no detectable change.
	Insignificant Verdict = "insignificant"
	// OK: a significant change that is not certainly beyond the threshold, from samples precise
	// enough to see a change of threshold size; or an unchanged verification outcome.
	OK Verdict = "ok"
)

// Figures says which figures a row compares.
type Figures string

const (
	// FiguresRaw compares the measured figures themselves.
	FiguresRaw Figures = "raw"
	// FiguresRelative compares per-repeat ratios to the reference script measured in the same
	// repeat (round) on the same topology.
	FiguresRelative Figures = "relative"
)

// Policy is what a user chooses about the gate: the thresholds, and whether an inconclusive row
// fails it. The zero value has zero thresholds (any significant change counts) and lets
// inconclusive rows pass; DefaultPolicy gives the documented defaults.
type Policy struct {
	Thresholds Thresholds `json:"thresholds"`
	// FailInconclusive makes an Inconclusive row fail the gate like a Regression (exit 1 in the
	// CLI); by default it is reported and passes.
	FailInconclusive bool `json:"fail_inconclusive"`
	// AllowDifferentLoad compares runs whose loads differ (LoadDifferences), naming the
	// differences in the summary; by default Compare refuses them (ErrLoadMismatch).
	AllowDifferentLoad bool `json:"allow_different_load,omitempty"`
}

// DefaultPolicy returns DefaultThresholds with inconclusive rows passing.
func DefaultPolicy() Policy { return Policy{Thresholds: DefaultThresholds()} }

// Fails reports whether a row with verdict v fails the gate under p.
func (p Policy) Fails(v Verdict) bool {
	return v == Regression || (v == Inconclusive && p.FailInconclusive)
}

// Row is one comparison: one metric of one algorithm × topology.
//
// For a metric row, OldMedian and NewMedian are the sample medians, in the metric's unit for raw
// figures (rps, µs, µs per decision, bytes, efficiency as a fraction) and as a ratio to the
// reference for relative ones. Delta is (new − old) / old in percent, or (new − old) × 100 in
// points for efficiency (DeltaUnit says which); DeltaLow and DeltaHigh, MDE and Threshold are in
// the same unit. P is the two-sided Mann-Whitney U p-value, shown for reference: the verdict
// follows from the interval and the MDE alone (see doc.go).
//
// For the result.Verdict row, OldOutcome and NewOutcome hold the outcomes and the numbers are zero.
type Row struct {
	Scenario  string        `json:"scenario"`
	Algorithm string        `json:"algorithm"`
	Topology  string        `json:"topology"`
	Metric    result.Metric `json:"metric"`
	// Figures is the kind of figures compared: the one of Candidates with the smallest
	// MDE + |Drift| (raw on a tie), always FiguresRelative when the machines differ.
	Figures    Figures `json:"figures,omitempty"`
	Unit       string  `json:"unit,omitempty"`
	OldMedian  float64 `json:"old_median"`
	NewMedian  float64 `json:"new_median"`
	OldOutcome string  `json:"old_outcome,omitempty"`
	NewOutcome string  `json:"new_outcome,omitempty"`
	// OldContract and NewContract are, on the verdict row, the contract each side was verified
	// against, as algorithms.Contract.String renders it (granularity included); a verdict row
	// whose contracts differ is Inconclusive.
	OldContract string  `json:"old_contract,omitempty"`
	NewContract string  `json:"new_contract,omitempty"`
	Delta       float64 `json:"delta"`
	DeltaUnit   string  `json:"delta_unit,omitempty"`
	// DeltaLow and DeltaHigh bound the change with confidence 1 − Alpha (99%): the Hodges-Lehmann
	// interval of the shift that goes with the U test (see shiftCI); finite, since Compare
	// compares at least MinSamples a side.
	DeltaLow  float64 `json:"delta_ci_low"`
	DeltaHigh float64 `json:"delta_ci_high"`
	P         float64 `json:"p_value"`
	OldN      int     `json:"old_n,omitempty"`
	NewN      int     `json:"new_n,omitempty"`
	// OldSpread and NewSpread are (Q3 − Q1) / |median| of each side's figures; +Inf (null in
	// JSON) for a side whose median is 0 and whose IQR is not.
	OldSpread float64 `json:"old_spread"`
	NewSpread float64 `json:"new_spread"`
	// MDE is the minimum detectable effect of these samples: the true change that the interval
	// tells from no change with probability Power, from the two sides' spreads and counts (see
	// doc.go). A change of Threshold + MDE is a Regression with probability Power.
	MDE float64 `json:"mde"`
	// RepeatsNeeded is the fewest repeats a side, at least MinSamples, with which the MDE would
	// reach Threshold if the spreads stayed as measured; 0 when no number does (a threshold of 0
	// with any spread, or more than a million repeats).
	RepeatsNeeded int `json:"repeats_needed"`
	// Candidates are the kinds of figures that could be compared, each with its MDE and drift.
	Candidates []Candidate `json:"candidates,omitempty"`
	Threshold  float64     `json:"threshold"`
	Verdict    Verdict     `json:"verdict"`
	// Note says, in words, why the verdict is what it is when that is not obvious.
	Note string `json:"note,omitempty"`
}

// MarshalJSON writes r with the spreads, the interval ends and the MDE as null when they are not
// finite (a side whose median is 0 has no spread), which JSON cannot hold.
func (r Row) MarshalJSON() ([]byte, error) {
	type plain Row
	finite := func(v float64) *float64 {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return nil
		}
		return &v
	}
	return json.Marshal(struct {
		plain
		DeltaLow  *float64 `json:"delta_ci_low"`
		DeltaHigh *float64 `json:"delta_ci_high"`
		OldSpread *float64 `json:"old_spread"`
		NewSpread *float64 `json:"new_spread"`
		MDE       *float64 `json:"mde"`
	}{plain(r), finite(r.DeltaLow), finite(r.DeltaHigh), finite(r.OldSpread), finite(r.NewSpread), finite(r.MDE)})
}

// Candidate is one kind of figures a row could compare, with the MDE its samples give and, for
// raw figures when the reference was measured in both runs, Drift: the reference's own change
// between the runs in percent (the machine's drift, which raw figures carry and ratios cancel).
// The row compares the candidate with the smallest MDE + |Drift|.
type Candidate struct {
	Figures Figures `json:"figures"`
	MDE     float64 `json:"mde"`
	Drift   float64 `json:"drift,omitempty"`
}

// Counts counts rows by verdict.
type Counts struct {
	Regressions   int `json:"regressions"`
	Inconclusive  int `json:"inconclusive"`
	Improvements  int `json:"improvements"`
	Insignificant int `json:"insignificant"`
	OK            int `json:"ok"`
}

// Report is the gate's answer. Summary is one line; Rows are in the baseline's entry order,
// each entry's metrics in Metrics order followed by its verdict row. Notes list everything that
// was not compared (metrics not measured, entries in one result only, the reference, figures
// without reference samples) and why. Failed says whether the gate fails under Policy.
type Report struct {
	Summary  string `json:"summary"`
	Scenario string `json:"scenario"`
	Failed   bool   `json:"failed"`
	// SameMachine is true when both results have the same MachineDescription; then each row
	// compares raw figures or ratios to the reference, whichever detects smaller changes once the
	// machine's drift is counted, and otherwise only ratios (efficiency and verdicts are always
	// compared as they are).
	SameMachine     bool   `json:"same_machine"`
	BaselineMachine string `json:"baseline_machine"`
	CurrentMachine  string `json:"current_machine"`
	// Reference is the reference script's name; empty when neither result has one.
	Reference string `json:"reference,omitempty"`
	// LoadDiffers lists the settings of the load in which the runs differ (only under
	// Policy.AllowDifferentLoad: Compare refuses them otherwise); the summary names them, and
	// the reference's own change between the runs is then not the machine's drift alone.
	LoadDiffers []LoadDifference `json:"load_differs,omitempty"`
	Policy      Policy           `json:"policy"`
	Alpha       float64          `json:"alpha"`
	Power       float64          `json:"power"`
	MinSamples  int              `json:"min_samples"`
	Counts      Counts           `json:"counts"`
	Rows        []Row            `json:"rows"`
	Notes       []string         `json:"notes,omitempty"`
}

// Regressed reports whether any row is a regression.
func (g *Report) Regressed() bool { return g.Counts.Regressions > 0 }

// RowsWith returns the rows with verdict v, in order.
func (g *Report) RowsWith(v Verdict) []Row {
	var out []Row
	for _, r := range g.Rows {
		if r.Verdict == v {
			out = append(out, r)
		}
	}
	return out
}

// MachineDescription returns the description of the machine a result was measured on, from its
// Environment: backend, image, OS/arch, CPUs, GOMAXPROCS and Redis version. Two results with equal
// descriptions are compared on raw figures where those detect smaller changes. Harness and Go
// versions are left out on purpose: they change with the code under test.
func MachineDescription(env result.Environment) string {
	var b strings.Builder
	b.WriteString(env.Backend)
	if env.Image != "" {
		b.WriteString(" (" + env.Image + ")")
	}
	fmt.Fprintf(&b, ", %s/%s, %d CPUs, GOMAXPROCS %d, Redis %s", env.OS, env.Arch, env.CPUs, env.GOMAXPROCS, env.RedisVersion)
	return b.String()
}

// Compare compares current with baseline under p, per algorithm × topology, on throughput, p99,
// Redis CPU per decision, bytes per subject and efficiency, from the entries' per-repeat Samples,
// and on the verification outcome. The rule, the statistics and the exit code of each verdict are
// specified in the package documentation.
//
// Input problems are errors, never rows: different scenario names (ErrScenarioMismatch), loads
// that differ (ErrLoadMismatch, unless p.AllowDifferentLoad), fewer than MinSamples samples in a
// compared entry (ErrTooFewSamples), different machines without reference samples
// (ErrNoReference), nothing in common (ErrNothingToCompare). Problems about one side are
// *InputError values; all that are found are returned joined. Results that do not record their
// settings (written before they were) are compared with a note that their loads were not.
func Compare(baseline, current *result.Result, p Policy) (*Report, error) {
	if baseline == nil || current == nil {
		return nil, errors.New("gate: nil result")
	}
	if baseline.Scenario.Name != current.Scenario.Name {
		return nil, fmt.Errorf("%w: baseline ran %q, current ran %q", ErrScenarioMismatch, baseline.Scenario.Name, current.Scenario.Name)
	}
	loads, loadNote, err := compareLoads(baseline, current, p)
	if err != nil {
		return nil, err
	}
	g := &Report{
		LoadDiffers:     loads,
		Scenario:        baseline.Scenario.Name,
		BaselineMachine: MachineDescription(baseline.Environment),
		CurrentMachine:  MachineDescription(current.Environment),
		Policy:          p,
		Alpha:           Alpha,
		Power:           Power,
		MinSamples:      MinSamples,
		Rows:            []Row{},
	}
	g.SameMachine = g.BaselineMachine == g.CurrentMachine
	oldRef, newRef := referenceName(baseline), referenceName(current)
	sameRef := oldRef == "" || newRef == "" || oldRef == newRef
	if !sameRef && !g.SameMachine {
		return nil, fmt.Errorf("%w: baseline is relative to %q, current to %q", ErrNoReference, oldRef, newRef)
	}
	g.Reference = oldRef
	if g.Reference == "" {
		g.Reference = newRef
	}
	if loadNote != "" {
		g.Notes = append(g.Notes, loadNote)
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
	// Reference samples: required when the machines differ; on the same machine they only add
	// the relative candidate, so their absence is a note.
	var oldRefs, newRefs refSamples
	switch {
	case oldRef == "" && newRef == "" && g.SameMachine:
		// No reference on either side: raw figures only, as the Markdown says.
	case sameRef:
		var oldErr, newErr error
		oldRefs, oldErr = referenceSamples(Baseline, baseline, oldRef, sideEntries(pairs, true), !g.SameMachine)
		newRefs, newErr = referenceSamples(Current, current, newRef, sideEntries(pairs, false), !g.SameMachine)
		switch refErrs := flatten(errors.Join(oldErr, newErr)); {
		case !g.SameMachine:
			errs = append(errs, refErrs...)
		default:
			for _, e := range refErrs {
				g.Notes = append(g.Notes, e.Error()+": raw figures only")
			}
		}
	default:
		g.Notes = append(g.Notes, fmt.Sprintf("the baseline's reference script is %s, the current run's %s: raw figures only", oldRef, newRef))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	g.Notes = append(g.Notes, sequentialNotes(current.Sequential)...)
	for _, pr := range pairs {
		alpha := Alpha
		if lv, ok := current.Sequential.Level(pr.new.Topology); ok {
			alpha = lv
		}
		for _, def := range metricDefs {
			in := metricInput{def: def, old: pr.old, cur: pr.new, threshold: p.Thresholds.For(def.metric), alpha: alpha}
			if g.SameMachine || !def.relative {
				in.kinds = append(in.kinds, FiguresRaw)
			}
			if def.relative && oldRefs.complete(pr.old) && newRefs.complete(pr.new) {
				in.kinds = append(in.kinds, FiguresRelative)
				in.oldRefs, in.newRefs = oldRefs, newRefs
			}
			row, note := compareMetric(in)
			if note != "" {
				g.Notes = append(g.Notes, fmt.Sprintf("%s %s: %s", pr.old.Name(), def.metric, note))
				continue
			}
			row.Scenario = g.Scenario
			g.Rows = append(g.Rows, row)
		}
		row := compareOutcome(pr.old, pr.new)
		row.Scenario = g.Scenario
		g.Rows = append(g.Rows, row)
	}
	g.Notes = append(g.Notes, driftNotes(g.Rows, g.Reference, len(loads) > 0)...)
	for _, r := range g.Rows {
		switch r.Verdict {
		case Regression:
			g.Counts.Regressions++
		case Inconclusive:
			g.Counts.Inconclusive++
		case Improvement:
			g.Counts.Improvements++
		case Insignificant:
			g.Counts.Insignificant++
		default:
			g.Counts.OK++
		}
		if p.Fails(r.Verdict) {
			g.Failed = true
		}
	}
	g.Summary = g.summary()
	return g, nil
}

// driftNotes says, per topology, how much the reference's own figures moved between the runs,
// from the first row of each metric that measured it: the machine's drift, or, when the loads
// differ, the machine's drift and the load's change together.
func driftNotes(rows []Row, ref string, loadDiffers bool) []string {
	var topologies []string
	drift := map[string][]string{}
	seen := map[string]bool{}
	for _, r := range rows {
		for _, c := range r.Candidates {
			key := r.Topology + " " + string(r.Metric)
			if c.Figures != FiguresRaw || len(r.Candidates) < 2 || seen[key] {
				continue
			}
			seen[key] = true
			if _, ok := drift[r.Topology]; !ok {
				topologies = append(topologies, r.Topology)
			}
			drift[r.Topology] = append(drift[r.Topology], fmt.Sprintf("%s %s%%", r.Metric, signed(c.Drift)))
		}
	}
	why := "the machine's drift, carried by raw figures and cancelled by ratios"
	if loadDiffers {
		why = "the different loads and the machine's drift together, carried by raw figures; ratios cancel only what both the script and the reference feel alike"
	}
	var notes []string
	for _, t := range topologies {
		notes = append(notes, fmt.Sprintf("%s-%s moved between the runs by %s (%s)", ref, t, strings.Join(drift[t], ", "), why))
	}
	return notes
}

// pair is one algorithm × topology found in both results.
type pair struct{ old, new *result.Entry }

// sideEntries returns the baseline (old) or current entries of ps.
func sideEntries(ps []pair, old bool) []*result.Entry {
	out := make([]*result.Entry, len(ps))
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
func referenceName(r *result.Result) string {
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

func isReference(e *result.Entry, ref string) bool { return ref != "" && e.Algorithm == ref }

func entryNames(r *result.Result) string {
	if len(r.Entries) == 0 {
		return "no entries"
	}
	names := make([]string, len(r.Entries))
	for i := range r.Entries {
		names[i] = r.Entries[i].Name()
	}
	return strings.Join(names, ", ")
}

func checkSamples(side Side, e *result.Entry) error {
	if n := len(e.Samples); n < MinSamples {
		return &InputError{side, e.Algorithm, e.Topology, fmt.Errorf("%w: %d, the gate needs at least %d a side (limitbench run --repeat %d)",
			ErrTooFewSamples, n, MinSamples, MinSamples)}
	}
	return nil
}

// refSamples holds, per topology, the reference entry's samples by repeat; a topology maps to nil
// when its reference has no samples.
type refSamples map[string]map[int]result.Sample

// complete reports whether rs holds a reference sample for every repeat of e.
func (rs refSamples) complete(e *result.Entry) bool {
	m := rs[e.Topology]
	if m == nil {
		return false
	}
	for _, s := range e.Samples {
		if _, ok := m[s.Repeat]; !ok {
			return false
		}
	}
	return true
}

// referenceSamples returns the reference samples of r, and an error for each entry of es that
// lacks a reference sample for one of its repeats (or for the whole result when it names no
// reference); required says the machines differ, so that the errors say why they matter.
func referenceSamples(side Side, r *result.Result, ref string, es []*result.Entry, required bool) (refSamples, error) {
	why := ""
	if required {
		why = "the machines differ and "
	}
	if ref == "" {
		return nil, &InputError{Side: side, Err: fmt.Errorf("%w: %sthe result names no reference script", ErrNoReference, why)}
	}
	out := refSamples{}
	var errs []error
	for _, e := range es {
		if _, done := out[e.Topology]; done {
			continue
		}
		re := r.Entry(ref, e.Topology)
		if re == nil || len(re.Samples) == 0 {
			errs = append(errs, &InputError{side, ref, e.Topology, fmt.Errorf("%w: %sthe reference has no samples", ErrNoReference, why)})
			out[e.Topology] = nil
			continue
		}
		m := map[int]result.Sample{}
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

// flatten returns the errors joined in err (nested joins opened), or none for nil.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, flatten(e)...)
	}
	return out
}
