package verify

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/limitbench/limitbench/algorithms"
)

// Measurement is what the verifier is given about one measurement of one algorithm.
type Measurement struct {
	// Contract is the algorithm's contract; Model its reference model (nil: nothing to replay).
	Contract algorithms.Contract
	Model    algorithms.Model
	// Log holds the measured part's events (nil: nothing was recorded); Warmup the warmup's (nil
	// or empty without a warmup), which only put the ideal limiter and the reference model in the
	// state the warmup left Redis in.
	Log, Warmup *Log
	// Warnings are what the load generator reported besides the log.
	Warnings Warnings
	// Start is where the measured part starts on the logs' clock, µs since the Unix epoch.
	Start int64
	// Fresh says that the algorithm held no state when the warmup began (or the measured part,
	// without a warmup): its keys were new, as on a run's own key prefix. Only
	// first-hit-window uses it (see Log.Fresh).
	Fresh bool
	// Disruptions are what happened to Redis during the measurement (warmup included) that the
	// algorithm did not cause, on the logs' clock; those that may have lost the state cut the
	// measured history into epochs verified apart (CheckEpochs).
	Disruptions []Disruption
	// Faults are the faults the scenario asked for, as the runner injected them, on the logs'
	// clock: the history is judged with JudgeFaults, and each gets a FaultReport.
	Faults []InjectedFault
	// SpeedOnly says that the scenario measures speed only and does not set out to press the
	// contract (a saturation run, a gate example): a measurement that never pressed it keeps
	// its verdict, and its finding says that the contract was not exercised, instead of
	// making it inconclusive (see Sections).
	SpeedOnly bool
}

// Sections returns the measurement's verification and accuracy sections of a result entry: the
// verification Summarize gives (a first-hit-window limit checked on the warmup and the measured
// part together, see check), then, when there is a log and a contract, the accuracy against an
// exact limiter (its error a reason instead), the pressure on the contract (Summary.Pressure)
// and a note when decisions replayed through the reference model differ. A measurement that
// never pressed its contract does not pass: unless SpeedOnly, a pass becomes inconclusive with
// the reason "the contract was never pressed"; with SpeedOnly it keeps its verdict and its
// finding says that the contract was not exercised. A canceled measurement without a log says
// so.
func (m Measurement) Sections() (Summary, AccuracySummary) {
	v := summarize(m.Contract, m.Log, m.Warnings, m.Start, m.Disruptions, m.Faults, m.check)
	if m.Log == nil || m.Contract.Kind == algorithms.NoContract {
		return m.sections(v, m.Log != nil, nil, nil, "")
	}
	r, err := m.accuracy()
	return m.sections(v, true, &r, err, m.replay())
}

// sections completes the verification v of a history that was recorded (logged) or not with the
// accuracy r (nil: not computed, no log or no contract; err: it could not be), its pressure,
// and the replay's note, and returns the two sections.
func (m Measurement) sections(v Summary, logged bool, r *AccuracyReport, err error, replayNote string) (Summary, AccuracySummary) {
	var acc AccuracySummary
	switch {
	case r == nil:
	case err == nil:
		acc = r.Summary()
		v.pressed(r.Pressure, m.SpeedOnly)
	default:
		v.Reasons = append(v.Reasons, "accuracy not computed: "+err.Error())
	}
	if replayNote != "" {
		v.Reasons = append(v.Reasons, replayNote)
	}
	if m.Warnings.Canceled && !logged {
		// With a log, the verdict's reasons already say so.
		v.Reasons = append(v.Reasons, "the measurement was cut short")
	}
	return v, acc
}

// check checks log, the measured log or a part of it, against the contract. A first-hit-window
// limit is checked, on the first part of the history (first), with the warmup's events before
// it, From at Start and Fresh as m.Fresh: its windows depend on every request before, and a
// warmup request decided after the measured part began may have opened one. On a later part
// (after a loss of the state) it is checked on that part alone, its first window possibly
// opened before it. The report's counts are the measured part's.
func (m Measurement) check(log *Log, first bool) (Report, error) {
	rep, err := Check(m.Contract, log)
	if err != nil || !first {
		return rep, err
	}
	lims, _ := flatten(m.Contract) // Check has validated it
	for i, lim := range lims {
		if lim.kind != algorithms.FirstHitWindow {
			continue
		}
		all, err := m.withWarmup(log)
		if err != nil {
			return Report{}, err
		}
		primed := *all
		primed.From, primed.Fresh = m.Start, m.Fresh
		one, err := Check(lim.c, &primed)
		if err != nil {
			return Report{}, err
		}
		rep.Limits[i] = one.Limits[0]
	}
	return rep, nil
}

// accuracy compares the run's decisions, the warmup's first (see withWarmup), with an exact
// limiter's.
func (m Measurement) accuracy() (AccuracyReport, error) {
	log, err := m.withWarmup(m.Log)
	if err != nil {
		return AccuracyReport{}, err
	}
	return Accuracy(m.Contract, log, time.Second)
}

// withWarmup returns log (the measured log, or its first epoch) preceded by the warmup's events, with From set to Start:
// the ideal limiter sees every request the algorithm saw, so both start the measured part in the
// same state, and only the measured part is counted. The warmup's events are moved to the
// measured log's Base when theirs differs (the runner gives both one Base); it returns an error
// when one does not fit there.
func (m Measurement) withWarmup(log *Log) (*Log, error) {
	if m.Warmup == nil || len(m.Warmup.Events) == 0 {
		return log, nil
	}
	events := make([]Event, 0, len(m.Warmup.Events)+len(log.Events))
	events = append(events, m.Warmup.Events...)
	if d := m.Warmup.Base - log.Base; d != 0 {
		for i, e := range events {
			s, err := e.Shift(d)
			if err != nil {
				return nil, fmt.Errorf("warmup event %d: %w", i, err)
			}
			events[i] = s
		}
	}
	events = append(events, log.Events...)
	return &Log{Subjects: log.Subjects, Clients: log.Clients, Base: log.Base, Events: events, From: m.Start}, nil
}

// replay replays the decisions of the run (the warmup's first) through the reference model and
// returns a note when some differ; "" when they agree or replay is not possible: no model, or a
// warmup request without an exact decision time, which the model cannot follow.
func (m Measurement) replay() string {
	if m.Model == nil || m.Log == nil {
		return ""
	}
	if len(Cuts(m.Disruptions, math.MinInt64)) > 0 {
		// The reference model keeps the state the server lost: it would differ, and say nothing.
		return ""
	}
	if m.Warmup != nil {
		for _, e := range m.Warmup.Events {
			if k := e.Kind(); e.Lo() != e.Hi() || (k != Admitted && k != Denied) {
				return ""
			}
		}
	}
	log, err := m.withWarmup(m.Log)
	if err != nil {
		return ""
	}
	rr, err := Replay(m.Model, log)
	if err != nil || rr.Differ == 0 {
		return ""
	}
	return fmt.Sprintf("note: %d of %d decisions replayed through the reference model differ", rr.Differ, rr.Replayed)
}

// BinLimits returns, for each of bins bins of width bin from Start, the most the contract allows
// in it over every scope (subject, subject and client, or client, as the contract counts) that
// was offered a request in it: the contract's steady-state allowance per scope
// (Contract.Allowance) times the scopes, rounded to three decimals. An event counts in the bin of
// its interval's midpoint. It returns nil without a log or a contract.
func (m Measurement) BinLimits(bin time.Duration, bins int) []float64 {
	if m.Contract.Kind == algorithms.NoContract || m.Log == nil || bins == 0 {
		return nil
	}
	per := m.Contract.Allowance(bin)
	binUS := bin.Microseconds()
	active := make([]map[uint64]struct{}, bins)
	for _, ev := range m.Log.Events {
		// The midpoint, on the log's clock: Base plus relative times.
		i := int((m.Log.Base + ev.Lo() + (ev.Hi()-ev.Lo())/2 - m.Start) / binUS)
		if i < 0 || i >= bins {
			continue
		}
		if active[i] == nil {
			active[i] = map[uint64]struct{}{}
		}
		k := uint64(ev.Subject)
		if m.Contract.Scope == algorithms.PerClient {
			k = k<<16 | uint64(ev.Client)
		} else if m.Contract.Scope == algorithms.PerConsumer {
			k = uint64(ev.Client)
		}
		active[i][k] = struct{}{}
	}
	limits := make([]float64, bins)
	for i, scopes := range active {
		limits[i] = round3(per * float64(len(scopes)))
	}
	return limits
}

// Summary is the verifier's section of a result entry, result.json's "verification": the verdict
// and why, the contract checked, the violations found, where the worst one was and when each
// definite one happened. Summarize fills it from a checked log. The scenario's expectations and
// thresholds are judged elsewhere (they need the entry's other figures) and recorded here:
// ExpectedViolation and MayViolate as they are, and each threshold through AddThreshold, which
// applies what it does to the verdict.
type Summary struct {
	Verdict Verdict `json:"verdict"`
	// Reasons says, in words, why the verdict is fail or inconclusive.
	Reasons []string `json:"reasons,omitempty"`
	// Contract is the contract checked, as algorithms.Contract.String renders it ("none" for no
	// contract).
	Contract string `json:"contract"`
	// DefiniteViolations holds for every placement of decision times; PossibleViolations for some.
	DefiniteViolations int64 `json:"definite_violations"`
	PossibleViolations int64 `json:"possible_violations"`
	// WorstExcess is the largest number of permits above the contract in one window (0 if none).
	WorstExcess int64 `json:"worst_excess"`
	// Where locates the worst excess in words: key and window.
	Where string `json:"where,omitempty"`
	// Finding says in one sentence what the verification established about the contract: that
	// it was never exceeded only when no violation, definite or possible, was found and the
	// contract was pressed; otherwise what was found, or what could not be ruled out ("" without
	// a contract or a check).
	Finding string `json:"finding,omitempty"`
	// Pressure says how hard the measured part pressed the contract (nil when not measured:
	// no log, no contract, or no accuracy).
	Pressure *Pressure `json:"pressure,omitempty"`
	// ExpectedViolation is true when the scenario expects this algorithm to be flagged.
	ExpectedViolation bool `json:"expected_violation"`
	// MayViolate is true when the scenario tolerates this algorithm's violations
	// (expect.may_violate): its verdict is shown but decides nothing.
	MayViolate bool `json:"may_violate,omitempty"`
	// Thresholds holds the scenario's thresholds that apply to this entry, each checked against its
	// figures (AddThreshold). A broken threshold makes Verdict fail; one that cannot be evaluated
	// (no data for its metric) makes a pass inconclusive. Reasons says which, in words.
	Thresholds []ThresholdCheck `json:"thresholds,omitempty"`
	// ViolationTimesS holds the time of each definite violation, seconds since the measured part
	// started (at most the checker's cap per limit, LimitReport.Violations;
	// ViolationTimesOmitted counts the rest).
	ViolationTimesS       []float64 `json:"violation_times_s,omitempty"`
	ViolationTimesOmitted int64     `json:"violation_times_omitted,omitempty"`
	// Disruptions lists what happened to Redis during the measurement that the algorithm did not
	// cause (Measurement.Disruptions), as seen by the node watch.
	Disruptions []DisruptionReport `json:"disruptions,omitempty"`
	// Epochs is the number of parts the measured history was cut into where the limiter's state
	// may have been lost, each verified apart (CheckEpochs); 0 when it was verified as one. The
	// definite violations above are then the epochs' own.
	Epochs int `json:"epochs,omitempty"`
	// AttributedViolations counts the definite violations of the history as one that reach
	// across a loss of the state (EpochReport.Attributed): the disruption's, not the algorithm's.
	AttributedViolations int64 `json:"attributed_violations,omitempty"`
	// Unplaced counts the admissions and unknown outcomes decided while the state was being lost,
	// which no epoch checks (EpochReport.Unplaced).
	Unplaced int64 `json:"unplaced,omitempty"`
	// Faults reports each fault the scenario injected (Measurement.Faults), in its order;
	// FaultExcess is the sum of their Excess: the permits admitted beyond the contract in the
	// faults' windows, which the fault_excess threshold bounds.
	Faults      []FaultReport `json:"faults,omitempty"`
	FaultExcess int64         `json:"fault_excess,omitempty"`
	// OutsideFaultErrors counts, with faults, the requests sent outside every fault's window
	// that failed or whose outcome is unknown: the default errors threshold counts only these.
	OutsideFaultErrors int64 `json:"outside_fault_errors,omitempty"`
}

// DisruptionReport is a Disruption in a result entry, its times in seconds from the start of
// the measured part (negative before it).
type DisruptionReport struct {
	Node string `json:"node"`
	Kind string `json:"kind"`
	What string `json:"what"`
	// FromS and ToS bound when it happened.
	FromS float64 `json:"from_s"`
	ToS   float64 `json:"to_s"`
	// StateLost: the limiter's state may have been lost (see Disruption).
	StateLost bool `json:"state_lost,omitempty"`
}

// ThresholdStatus is the result of checking one threshold against one entry.
type ThresholdStatus string

// The threshold statuses.
const (
	// ThresholdHeld: the entry's figure keeps the bound.
	ThresholdHeld ThresholdStatus = "held"
	// ThresholdBroken: the entry's figure breaks the bound; the entry's verdict is fail.
	ThresholdBroken ThresholdStatus = "broken"
	// ThresholdUnevaluated: the entry has no data for the metric (no completed request, nothing an
	// exact limiter admitted), so the bound can neither hold nor break; it does not pass.
	ThresholdUnevaluated ThresholdStatus = "unevaluated"
)

// ThresholdCheck is one scenario threshold checked against one entry.
type ThresholdCheck struct {
	// Threshold is the threshold as the scenario wrote it, for example "gcra: efficiency > 0.9".
	Threshold string          `json:"threshold"`
	Status    ThresholdStatus `json:"status"`
	// Value is the entry's figure in the metric's unit (µs for latencies, requests per second for
	// throughput, a fraction for efficiency and errors); 0 when unevaluated.
	Value float64 `json:"value"`
	// Shown is Value formatted with its unit, or why the threshold could not be evaluated.
	Shown string `json:"shown"`
	// Default is true for a threshold the scenario did not set but every run is held to (the
	// default errors threshold): broken, it makes a pass inconclusive rather than fail.
	Default bool `json:"default,omitempty"`
}

// ThresholdBroken reports whether any of s's thresholds that fail a verdict is broken (a
// default threshold does not fail one).
func (s *Summary) ThresholdBroken() bool {
	for _, t := range s.Thresholds {
		if t.Status == ThresholdBroken && !t.Default {
			return true
		}
	}
	return false
}

// AddThreshold records c and what it does to the verdict: a broken threshold makes the verdict
// fail, and one that cannot be evaluated, or a broken default threshold (c.Default), turns a pass
// into inconclusive (it never leaves a pass standing); each adds reason, which says so in words,
// to Reasons. A held threshold changes nothing else.
func (s *Summary) AddThreshold(c ThresholdCheck, reason string) {
	switch {
	case c.Status == ThresholdUnevaluated, c.Status == ThresholdBroken && c.Default:
		s.Reasons = append(s.Reasons, reason)
		if s.Verdict == Pass {
			s.Verdict = Inconclusive
		}
	case c.Status == ThresholdBroken:
		s.Reasons = append(s.Reasons, reason)
		s.Verdict = Fail
	}
	s.Thresholds = append(s.Thresholds, c)
}

// Summarize checks log against contract and returns the entry's verification section: the
// verdict and reasons of JudgeWith(report, w), the definite and possible violations, the worst
// excess and where it was (its window from start), and the time of each definite violation in
// seconds from start, where start is the beginning of the measured part on the log's clock (µs
// since the Unix epoch). A nil log (nothing recorded) or a log Check refuses gives an
// inconclusive verdict that says why. It is Measurement.Sections' verification without
// disruptions.
func Summarize(contract algorithms.Contract, log *Log, w Warnings, start int64) Summary {
	return summarize(contract, log, w, start, nil, nil, plainCheck(contract))
}

// summarize is Summarize with the disruptions ds and check for each history (see epochCheck):
// the history is checked with CheckEpochs and
// judged with JudgeEpochs, so that where ds may have lost the state, the definite violations,
// the worst excess and the violation times are the epochs' own, and the violations that reach
// across a loss are counted apart.
func summarize(contract algorithms.Contract, log *Log, w Warnings, start int64, ds []Disruption, fs []InjectedFault, check epochCheck) Summary {
	v := newSummary(contract, start, ds)
	if log == nil {
		v.Verdict = Inconclusive
		v.Reasons = []string{"no admission log was recorded"}
		return v
	}
	er, err := checkEpochs(contract, log, ds, start, check)
	return v.judged(er, err, w, start, ds, fs, log)
}

// newSummary returns the summary of contract with the disruptions ds, before any check.
func newSummary(contract algorithms.Contract, start int64, ds []Disruption) Summary {
	v := Summary{Contract: contract.String()}
	if contract.Kind == algorithms.NoContract {
		v.Contract = string(algorithms.NoContract)
	}
	for _, d := range ds {
		v.Disruptions = append(v.Disruptions, DisruptionReport{Node: d.Node, Kind: d.Kind, What: d.What,
			FromS: round3(float64(d.Lo-start) / 1e6), ToS: round3(float64(d.Hi-start) / 1e6), StateLost: d.StateLost})
	}
	return v
}

// judged completes v, a summary with its contract and disruptions, from the check of the
// history in epochs er (err: it could not be checked), judged with the warnings w and the faults
// fs, whose effects log gives.
func (v Summary) judged(er EpochReport, err error, w Warnings, start int64, ds []Disruption, fs []InjectedFault, log faultLog) Summary {
	if err != nil {
		v.Verdict = Inconclusive
		v.Reasons = []string{"cannot verify: " + err.Error()}
		return v
	}
	j := JudgeEpochs(er, w)
	if len(fs) > 0 {
		v.Faults = faultReports(fs, er, log, start)
		for _, f := range v.Faults {
			v.FaultExcess += f.Excess
		}
		j = judgeFaults(er, w, log, fs, v.Faults)
		v.OutsideFaultErrors = log.outside(seen(fs, er.Cuts), Unknown, Failed)
	}
	v.Verdict, v.Reasons = j.Verdict, j.Reasons
	var kept []string
	for _, d := range ds {
		if !d.StateLost {
			kept = append(kept, d.What)
		}
	}
	if len(kept) > 0 {
		v.Reasons = append(v.Reasons, "note: Redis changed under the load, its state kept: "+strings.Join(kept, "; "))
	}
	v.DefiniteViolations = er.Definite()
	v.PossibleViolations = er.Whole.Possible()
	reports := []Report{er.Whole}
	if len(er.Cuts) > 0 {
		reports = er.Epochs
		v.Epochs, v.AttributedViolations, v.Unplaced = len(er.Epochs), er.Attributed, er.Unplaced
	}
	var worst Where
	for _, rep := range reports {
		for _, l := range rep.Limits {
			if l.Worst.Excess > worst.Excess {
				worst = l.Worst
			}
			for _, viol := range l.Violations {
				v.ViolationTimesS = append(v.ViolationTimesS, round3(float64(viol.At-start)/1e6))
			}
			v.ViolationTimesOmitted += l.ViolationsDropped
		}
	}
	sort.Float64s(v.ViolationTimesS)
	if worst.Excess > 0 {
		v.WorstExcess = worst.Excess
		v.Where = whereIn(worst, start)
	}
	var worstP Where
	for _, l := range er.Whole.Limits {
		if l.WorstPossible.Excess > worstP.Excess {
			worstP = l.WorstPossible
		}
	}
	v.Finding = v.finding(worstP, start)
	return v
}

// whereIn describes w in words, its times in seconds from start.
func whereIn(w Where, start int64) string {
	who := "subject " + w.Subject
	if w.Client != "" {
		who += " client " + w.Client
		if w.Subject == "" {
			who = "client " + w.Client
		}
	}
	return fmt.Sprintf("%s, %d permits where %d were allowed, between %.3fs and %.3fs", who,
		w.Permits, w.Allowed, float64(w.Lo-start)/1e6, float64(w.Hi-start)/1e6)
}

// finding returns v's Finding from its verdict and counts, worstP the worst possible violation
// (start as in whereIn). It claims that the contract held only on a pass without a possible
// violation.
func (v *Summary) finding(worstP Where, start int64) string {
	c := v.Contract
	switch {
	case c == string(algorithms.NoContract):
		return ""
	case v.DefiniteViolations > 0 && v.Verdict == Fail:
		return fmt.Sprintf("Admitted more than %s allows: %d definite %s, the worst %s.", c, v.DefiniteViolations,
			plural(v.DefiniteViolations, "violation", "violations"), v.Where)
	case v.DefiniteViolations > 0:
		return fmt.Sprintf("%d definite %s of %s, which the reasons leave in doubt or attribute to a loss of the state.",
			v.DefiniteViolations, plural(v.DefiniteViolations, "violation", "violations"), c)
	}
	s := "Never admitted more than " + c + " allows"
	if v.Verdict != Pass {
		s = "No definite violation of " + c + " was found, but the run cannot support a pass (see the reasons)"
	}
	if n := v.PossibleViolations; n > 0 {
		if v.Verdict == Pass {
			s = "No definite violation of " + c
		}
		s += fmt.Sprintf("; %d possible %s could not be ruled out within the timing uncertainty", n, plural(n, "violation", "violations"))
		if worstP.Excess > 0 {
			s += ", the worst " + whereIn(worstP, start)
		}
	}
	return s + "."
}

// pressed records p in v and what it does to the verdict: a contract never pressed turns a
// pass into inconclusive with a reason, unless speedOnly, which keeps the verdict and says that
// the contract was not exercised; either way the finding says so.
func (v *Summary) pressed(p Pressure, speedOnly bool) {
	v.Pressure = &p
	if p.Pressed || v.Verdict == Fail {
		return
	}
	if speedOnly {
		v.Finding = "The contract was not exercised: the scenario measures speed only, and no window of " + v.Contract +
			" reached its allowance nor was any request denied."
		return
	}
	v.Reasons = append(v.Reasons, ReasonNeverPressed)
	if v.Verdict == Pass {
		v.Verdict = Inconclusive
	}
	v.Finding = "The contract was never pressed: no window of " + v.Contract +
		" reached its allowance and no request was denied, so the run shows nothing about it."
}

// round3 rounds x to three decimals, as result.json holds its figures.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
