package gate

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"golang.org/x/perf/benchmath"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// metricInput is what compareMetric needs for one metric of one algorithm × topology.
type metricInput struct {
	def      metricDef
	old, cur *result.Entry
	// kinds are the figures that may be compared, raw first; relative ones need both refs.
	kinds            []Figures
	oldRefs, newRefs refSamples
	threshold        float64
	// alpha is the level of the row's interval and MDE: Alpha, or the level of the current
	// run's last look when it chose its rounds sequentially (result.Sequential).
	alpha float64
}

// candidate is one kind of figures of a row, summarized.
type candidate struct {
	figures Figures
	ov, nv  []float64
	os, ns  setSummary
	// scale turns a difference of figures into the row's unit: 100 / |baseline median| for
	// percentages, 100 for efficiency points.
	scale float64
	mde   float64
	// drift is, for raw figures when the reference was measured in both runs, the reference's own
	// change between the runs, in percent of its baseline median: the machine's drift, which raw
	// figures cannot tell from a change of code. 0 for ratios, which cancel it.
	drift float64
}

// score is what the choice of figures minimizes: the MDE plus the drift the figures carry.
func (c candidate) score() float64 { return c.mde + math.Abs(c.drift) }

// compareMetric builds the row of one metric, or returns a note saying why it cannot be compared.
// Of the kinds of figures it may compare, it compares the one whose MDE plus drift is smallest
// (raw on a tie): the MDE depends on each side's spread only, and the drift of raw figures is the
// reference's own change between the runs, never the entry's, so the choice does not favour a
// verdict about the entry.
func compareMetric(in metricInput) (Row, string) {
	if in.alpha == 0 {
		in.alpha = Alpha
	}
	var cands []candidate
	var firstNote string
	for _, k := range in.kinds {
		c, note := newCandidate(in, k)
		if note != "" {
			if firstNote == "" {
				firstNote = note
			}
			continue
		}
		cands = append(cands, c)
	}
	if len(cands) == 0 {
		if firstNote == "" {
			firstNote = "no figures to compare"
		}
		return Row{}, firstNote + "; not compared"
	}
	if len(cands) > 1 && in.oldRefs != nil && in.newRefs != nil {
		for i := range cands {
			if cands[i].figures == FiguresRaw {
				cands[i].drift = referenceDrift(in)
			}
		}
	}
	best := cands[0]
	for _, c := range cands[1:] {
		if c.score() < best.score() {
			best = c
		}
	}
	def, th := in.def, in.threshold
	row := Row{
		Algorithm: in.old.Algorithm, Topology: in.old.Topology, Metric: def.metric, Figures: best.figures,
		Unit: def.metric.Unit(), Threshold: th, DeltaUnit: "%", OldN: len(best.ov), NewN: len(best.nv),
		OldMedian: best.os.median, NewMedian: best.ns.median, OldSpread: best.os.spread, NewSpread: best.ns.spread,
		MDE:           best.mde,
		RepeatsNeeded: repeatsNeeded(best.os.sigma*best.scale, best.ns.sigma*best.scale, th, in.alpha, Power),
	}
	for _, c := range cands {
		row.Candidates = append(row.Candidates, Candidate{Figures: c.figures, MDE: c.mde, Drift: c.drift})
	}
	if best.figures == FiguresRelative {
		row.Unit = "× reference"
	}
	cmp := benchmath.AssumeNothing.Compare(
		benchmath.NewSample(append([]float64(nil), best.ov...), &benchmath.Thresholds{CompareAlpha: in.alpha}),
		benchmath.NewSample(append([]float64(nil), best.nv...), &benchmath.Thresholds{CompareAlpha: in.alpha}))
	row.P = cmp.P
	row.DeltaLow, row.DeltaHigh = shiftCI(best.ov, best.nv, best.scale, in.alpha)

	// worse and better are how far the change certainly goes in the bad and the good direction,
	// in the row's unit: the end of the interval nearer to no change (negative when the interval
	// reaches the other side), never more than the change of the medians. reach is how far the
	// interval goes in the bad direction: the change the run cannot rule out.
	var worse, better, reach float64
	if def.metric == result.Efficiency {
		row.DeltaUnit = "pt"
		row.Delta = (best.ns.median - best.os.median) * 100
		worse, reach = min(-row.Delta, -row.DeltaHigh), -row.DeltaLow
		// Better for efficiency is closer to 1; the interval bounds the move in the direction
		// the medians moved.
		better = (math.Abs(best.os.median-1) - math.Abs(best.ns.median-1)) * 100
		if row.Delta >= 0 {
			better = min(better, row.DeltaLow)
		} else {
			better = min(better, -row.DeltaHigh)
		}
	} else {
		row.Delta = (best.ns.median - best.os.median) / best.os.median * 100
		worse, better, reach = min(row.Delta, row.DeltaLow), min(-row.Delta, -row.DeltaHigh), row.DeltaHigh
		if def.metric.HigherIsBetter() {
			worse, better, reach = better, worse, -row.DeltaLow
		}
	}
	ci := fmt.Sprintf("%s%% CI %s", confidence(in.alpha), formatCI(row))
	significant := row.DeltaLow > 0 || row.DeltaHigh < 0
	switch {
	case worse > th:
		row.Verdict = Regression
	case better > th:
		row.Verdict = Improvement
	case reach > th && row.MDE > th:
		row.Verdict = Inconclusive
		row.Note = fmt.Sprintf("cannot rule out a regression of %s: the %s reaches %s, and these samples detect only changes of %s or more",
			formatThreshold(row), ci, formatSigned(row, signedReach(row, def)), formatAmount(row, row.MDE))
	case !significant:
		row.Verdict = Insignificant
		if reach > th {
			row.Note = fmt.Sprintf("the %s reaches beyond the threshold; these samples detect changes of %s", ci, formatAmount(row, row.MDE))
		}
	case reach > th:
		row.Verdict = OK
		row.Note = fmt.Sprintf("significant; the %s straddles the threshold and these samples detect changes of %s: a change near the threshold, not certainly beyond it",
			ci, formatAmount(row, row.MDE))
	case math.Abs(row.Delta) > th:
		row.Verdict = OK
		row.Note = fmt.Sprintf("significant, but the %s reaches inside the threshold", ci)
	default:
		row.Verdict = OK
		row.Note = "significant but within the threshold"
	}
	return row, ""
}

// confidence returns the confidence 1 − alpha in percent with as many digits as it needs: "99"
// for Alpha, "99.9" or "99.87" for a sequential look's level.
func confidence(alpha float64) string {
	return strconv.FormatFloat((1-alpha)*100, 'g', 4, 64)
}

// signedReach returns the end of row's interval on the worse side, signed as the delta is.
func signedReach(row Row, def metricDef) float64 {
	if def.metric.HigherIsBetter() {
		return row.DeltaLow
	}
	return row.DeltaHigh
}

// referenceDrift returns the change of the reference's own figure of in's metric between the
// runs, in percent of its baseline median (0 when it cannot be computed): the reference runs the
// same code in both, so its change is the machine's.
func referenceDrift(in metricInput) float64 {
	side := func(refs refSamples, e *result.Entry) []float64 {
		var vs []float64
		for _, s := range e.Samples {
			vs = append(vs, in.def.value(refs[e.Topology][s.Repeat]))
		}
		return vs
	}
	old, cur := summarize(side(in.oldRefs, in.old)), summarize(side(in.newRefs, in.cur))
	if old.median == 0 {
		return 0
	}
	return (cur.median - old.median) / math.Abs(old.median) * 100
}

// newCandidate reads and summarizes the figures of kind k for in, or returns a note saying why
// they cannot be compared.
func newCandidate(in metricInput, k Figures) (candidate, string) {
	c := candidate{figures: k}
	var note string
	if c.ov, note = values(in.def, in.old, k, in.oldRefs); note != "" {
		return c, "baseline " + note
	}
	if c.nv, note = values(in.def, in.cur, k, in.newRefs); note != "" {
		return c, "current " + note
	}
	c.os, c.ns = summarize(c.ov), summarize(c.nv)
	switch {
	case in.def.metric == result.Efficiency:
		c.scale = 100
	case c.os.median == 0:
		return c, "baseline median is 0, so no percentage"
	default:
		c.scale = 100 / math.Abs(c.os.median)
	}
	c.mde = mde(c.os.sigma*c.scale, c.ns.sigma*c.scale, len(c.ov), len(c.nv), in.alpha, Power)
	return c, ""
}

// values returns def's figures of e's samples, raw or as ratios to the reference sample of the
// same repeat. note is non-empty when the figures cannot be compared.
func values(def metricDef, e *result.Entry, figures Figures, refs refSamples) (vs []float64, note string) {
	vs = make([]float64, 0, len(e.Samples))
	zeros := 0
	for _, s := range e.Samples {
		v := def.value(s)
		if v == 0 {
			zeros++
		}
		if figures == FiguresRelative {
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

// outcome returns e's verification outcome (Entry.Outcome), turned to "fail" when the entry says
// pass but a repeat failed.
func outcome(e *result.Entry) (string, string) {
	o := e.Label()
	if o == string(verify.Pass) {
		for _, s := range e.Samples {
			if s.Verdict == verify.Fail {
				return string(verify.Fail), fmt.Sprintf("repeat %d failed", s.Repeat)
			}
		}
	}
	return o, ""
}

// outcomeClass sorts outcomes into good (pass, a planted bug caught), bad (fail, a planted bug
// missed) and neither (inconclusive, a tolerated failure, unknown).
func outcomeClass(o string) int {
	switch o {
	case string(verify.Pass), result.LabelCaught:
		return 1
	case string(verify.Fail), result.LabelMissed:
		return -1
	}
	return 0
}

// compareOutcome builds the verdict row of one algorithm × topology: pass → fail (or caught →
// missed) is a regression, the reverse an improvement; an outcome that supports no verdict
// (inconclusive, tolerated) on either side cannot rule out a regression.
func compareOutcome(old, cur *result.Entry) Row {
	o, onote := outcome(old)
	n, nnote := outcome(cur)
	row := Row{Algorithm: old.Algorithm, Topology: old.Topology, Metric: result.Verdict, OldOutcome: o, NewOutcome: n,
		OldContract: old.Verification.Contract, NewContract: cur.Verification.Contract}
	oc, nc := outcomeClass(o), outcomeClass(n)
	switch {
	case !sameContract(row.OldContract, row.NewContract):
		// A pass under a looser contract (a larger limit, a coarser granularity) is not the
		// same pass: the outcomes do not compare.
		row.Verdict = Inconclusive
		row.Note = "the contract changed (" + orNone(row.OldContract) + " → " + orNone(row.NewContract) + "), so the verdicts do not compare"
	case o == n:
		row.Verdict = OK
	case oc == 1 && nc == -1:
		row.Verdict = Regression
		row.Note = o + " → " + n
	case oc == -1 && nc == 1:
		row.Verdict = Improvement
		row.Note = o + " → " + n
	case o == result.LabelTolerated || n == result.LabelTolerated:
		row.Verdict = Inconclusive
		row.Note = "a tolerated violation (expect.may_violate) supports no verdict"
	case oc == 0 || nc == 0:
		row.Verdict = Inconclusive
		row.Note = "an inconclusive run cannot rule out pass → fail"
	default:
		row.Verdict = OK
	}
	if notes := strings.Trim(strings.Join([]string{prefixed("baseline ", onote), prefixed("current ", nnote)}, "; "), "; "); notes != "" {
		row.Note = strings.Trim(row.Note+"; "+notes, "; ")
	}
	return row
}

// sameContract reports whether two contract texts (algorithms.Contract.String) name the same
// contract. A side whose text names no granularity (a result written before granularity was
// printed) is compared without it.
func sameContract(a, b string) bool {
	if a == b {
		return true
	}
	ca, errA := algorithms.ParseContract(orNone(a))
	cb, errB := algorithms.ParseContract(orNone(b))
	if errA != nil || errB != nil {
		return false
	}
	if !strings.Contains(a, "granularity") || !strings.Contains(b, "granularity") {
		ca, cb = withoutGranularity(ca), withoutGranularity(cb)
	}
	return ca.String() == cb.String()
}

// withoutGranularity returns c with every granularity (its own and its Also's) zero.
func withoutGranularity(c algorithms.Contract) algorithms.Contract {
	c.Granularity = 0
	also := make([]algorithms.Contract, len(c.Also))
	for i, a := range c.Also {
		also[i] = withoutGranularity(a)
	}
	c.Also = also
	return c
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}
