package result

import (
	"fmt"
	"slices"
	"sort"

	"github.com/limitbench/limitbench/verify"
)

// MergeRepeats merges the repeats of one algorithm on one topology, entries[i] being repeat i+1,
// into one entry: the repeat with the median throughput gives every figure, its histograms,
// timeline, error classes and node watch; the verification takes the worst verdict, adds up the
// violations (attributed ones too), keeps the worst excess and where it was, and gives every
// repeat's reasons and disruptions; every repeat's warnings are kept; and every repeat becomes a
// Sample.
// One entry is returned as it is, without samples.
func MergeRepeats(entries []Entry) Entry {
	byTP := slices.Clone(entries)
	sort.SliceStable(byTP, func(i, j int) bool { return byTP[i].ThroughputRPS < byTP[j].ThroughputRPS })
	e := byTP[len(byTP)/2]
	if len(entries) == 1 {
		return e
	}
	var def, poss, worst, attributed int64
	verdict := verify.Pass
	var reasons []string
	var disruptions []verify.DisruptionReport
	var warnings []Warning
	for i, m := range entries {
		repeat := i + 1
		v := m.Verification
		def += v.DefiniteViolations
		poss += v.PossibleViolations
		attributed += v.AttributedViolations
		for _, d := range v.Disruptions {
			d.What = fmt.Sprintf("repeat %d: %s", repeat, d.What)
			disruptions = append(disruptions, d)
		}
		warnings = append(warnings, m.Warnings...)
		if v.WorstExcess > worst {
			worst = v.WorstExcess
			e.Verification.Where = fmt.Sprintf("repeat %d: %s", repeat, v.Where)
		}
		switch {
		case v.Verdict == verify.Fail:
			verdict = verify.Fail
		case v.Verdict == verify.Inconclusive && verdict == verify.Pass:
			verdict = verify.Inconclusive
		}
		for _, r := range v.Reasons {
			reasons = append(reasons, fmt.Sprintf("repeat %d: %s", repeat, r))
		}
		e.Samples = append(e.Samples, Sample{
			Repeat:             repeat,
			ThroughputRPS:      m.ThroughputRPS,
			LatencyUS:          m.LatencyUS,
			Efficiency:         m.Accuracy.Efficiency,
			USecPerCall:        m.Server.USecPerCall,
			CPUUSecPerDecision: m.Server.CPUUSecPerDecision,
			BytesPerKey:        m.Server.BytesPerKey,
			Verdict:            v.Verdict,
		})
	}
	e.Verification.Verdict = verdict
	e.Verification.Reasons = reasons
	e.Verification.DefiniteViolations = def
	e.Verification.PossibleViolations = poss
	e.Verification.WorstExcess = worst
	e.Verification.AttributedViolations = attributed
	e.Verification.Disruptions = disruptions
	e.Warnings = warnings
	return e
}

// Relate fills Relative for res's entries from first on (those of one topology), against the
// reference entry among them; nothing without a reference script.
func (res *Result) Relate(first int) {
	if res.Reference == "" {
		return
	}
	var ref *Entry
	for i := first; i < len(res.Entries); i++ {
		if res.Entries[i].Algorithm == res.Reference {
			ref = &res.Entries[i]
		}
	}
	if ref == nil {
		return
	}
	ratio := func(a, b float64) float64 {
		if a == 0 || b == 0 {
			return 0
		}
		return Round3(a / b)
	}
	for i := first; i < len(res.Entries); i++ {
		e := &res.Entries[i]
		if e == ref {
			continue
		}
		e.Relative = &Relative{
			Reference:          res.Reference,
			Throughput:         ratio(e.ThroughputRPS, ref.ThroughputRPS),
			P50:                ratio(e.LatencyUS.P50, ref.LatencyUS.P50),
			P99:                ratio(e.LatencyUS.P99, ref.LatencyUS.P99),
			USecPerCall:        ratio(e.Server.USecPerCall, ref.Server.USecPerCall),
			CPUUSecPerDecision: ratio(e.Server.CPUUSecPerDecision, ref.Server.CPUUSecPerDecision),
			BytesPerKey:        ratio(e.Server.BytesPerKey, ref.Server.BytesPerKey),
		}
	}
}
