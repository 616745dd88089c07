package gate

import (
	"math"
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"

	"github.com/limitbench/limitbench/result"
)

// cpuDef is the definition of the cpu metric (lower is better).
var cpuDef = metricDefs[2]

// cpuRow compares old and cur as CPU µs per decision under threshold th, on raw figures.
func cpuRow(t interface{ Fatalf(string, ...any) }, old, cur []float64, th float64) Row {
	entry := func(vs []float64) *result.Entry {
		e := &result.Entry{Algorithm: "a", Topology: "single"}
		for i, v := range vs {
			e.Samples = append(e.Samples, result.Sample{Repeat: i + 1, CPUUSecPerDecision: v})
		}
		return e
	}
	row, note := compareMetric(metricInput{def: cpuDef, old: entry(old), cur: entry(cur), kinds: []Figures{FiguresRaw}, threshold: th})
	if note != "" {
		t.Fatalf("not compared: %s", note)
	}
	return row
}

// drawSide draws n positive figures with any spread: a level and a relative noise of up to ±90%.
func drawSide(rt *rapid.T, label string, n int) []float64 {
	level := rapid.Float64Range(1, 1000).Draw(rt, label+" level")
	vs := make([]float64, n)
	for i := range vs {
		vs[i] = level * (1 + rapid.Float64Range(-0.9, 0.9).Draw(rt, label))
	}
	return vs
}

// TestRuleSameCodeNeverRegression: when the current samples are a permutation of the baseline's
// (the same figures in another order, whatever their spread), the differences are symmetric about
// 0, so the interval contains 0: the row is never a regression, an improvement or ok; noisy
// samples make it inconclusive, never "no regression" when the interval reaches the threshold.
func TestRuleSameCodeNeverRegression(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(MinSamples, 12).Draw(rt, "n")
		old := drawSide(rt, "old", n)
		perm := rapid.Permutation(old).Draw(rt, "permutation")
		th := rapid.Float64Range(0, 30).Draw(rt, "threshold")
		r := cpuRow(rt, old, perm, th)
		if r.Verdict != Insignificant && r.Verdict != Inconclusive {
			rt.Fatalf("same figures permuted: verdict %s (interval [%.2f, %.2f], MDE %.2f, threshold %v); want insignificant or inconclusive",
				r.Verdict, r.DeltaLow, r.DeltaHigh, r.MDE, th)
		}
		if r.DeltaHigh > th && r.MDE > th && r.Verdict != Inconclusive {
			rt.Fatalf("interval reaches %.2f beyond threshold %v with MDE %.2f: verdict %s; want inconclusive", r.DeltaHigh, th, r.MDE, r.Verdict)
		}
	})
}

// TestRuleDefinition checks each verdict against the rule's definition on arbitrary samples:
// regression ⇔ the whole interval (and the medians' change) beyond the threshold on the worse
// side, whatever the spread; inconclusive ⇒ the interval reaches beyond the threshold and the
// MDE exceeds it; insignificant ⇒ the interval contains 0.
func TestRuleDefinition(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(MinSamples, 10).Draw(rt, "n")
		old, cur := drawSide(rt, "old", n), drawSide(rt, "cur", n)
		th := rapid.Float64Range(0, 30).Draw(rt, "threshold")
		r := cpuRow(rt, old, cur, th)
		certain := min(r.Delta, r.DeltaLow) > th
		if (r.Verdict == Regression) != certain {
			rt.Fatalf("verdict %s with delta %.2f in [%.2f, %.2f], threshold %v", r.Verdict, r.Delta, r.DeltaLow, r.DeltaHigh, th)
		}
		switch r.Verdict {
		case Inconclusive:
			if !(r.DeltaHigh > th && r.MDE > th) {
				rt.Fatalf("inconclusive with interval [%.2f, %.2f], MDE %.2f, threshold %v", r.DeltaLow, r.DeltaHigh, r.MDE, th)
			}
		case Insignificant:
			if r.DeltaLow > 0 || r.DeltaHigh < 0 {
				rt.Fatalf("insignificant with interval [%.2f, %.2f]", r.DeltaLow, r.DeltaHigh)
			}
		}
	})
}

// TestRuleMonotone: a slower current run is never judged better than a faster one: adding work
// d ≥ 0 to every current repeat keeps a regression a regression, and never turns an inconclusive
// row into a clean one.
func TestRuleMonotone(t *testing.T) {
	rank := map[Verdict]int{Improvement: 0, OK: 1, Insignificant: 1, Inconclusive: 2, Regression: 3}
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(MinSamples, 10).Draw(rt, "n")
		old, cur := drawSide(rt, "old", n), drawSide(rt, "cur", n)
		th := rapid.Float64Range(0, 30).Draw(rt, "threshold")
		d := rapid.Float64Range(0, 500).Draw(rt, "added work")
		slower := make([]float64, n)
		for i, v := range cur {
			slower[i] = v + d
		}
		a, b := cpuRow(rt, old, cur, th), cpuRow(rt, old, slower, th)
		if a.Verdict == Regression && b.Verdict != Regression || a.Verdict == Inconclusive && rank[b.Verdict] < 2 {
			rt.Fatalf("adding %.2f to every current repeat turned %s into %s (intervals [%.2f, %.2f] → [%.2f, %.2f], MDE %.2f, threshold %v)",
				d, a.Verdict, b.Verdict, a.DeltaLow, a.DeltaHigh, b.DeltaLow, b.DeltaHigh, b.MDE, th)
		}
	})
}

// TestRuleFalseAlarmRate measures, by simulation, how often the same code is called a regression
// on one row: both sides normal with the same mean, 6 repeats each. The rule is a one-sided test
// of "the change exceeds the threshold" at the interval's level, so the rate is at most
// α′/2 = 0.43% whatever the spread, and far less while the spread is comparable to the threshold:
// P(Z > T/se + z) with se the standard error of the shift (doc.go).
func TestRuleFalseAlarmRate(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 1))
	tests := []struct {
		cv      float64 // standard deviation over the mean
		maxRate float64
	}{
		{0.03, 0},      // a quiet machine: MDE about 7%
		{0.09, 0},      // the CI false alarm of 2026 (spreads 9%): MDE about 22%
		{0.30, 0.0043}, // very noisy: MDE about 73%, the rate nears its bound
	}
	for _, tt := range tests {
		const trials = 3000
		alarms, inconclusive := 0, 0
		old, cur := make([]float64, 6), make([]float64, 6)
		for range trials {
			for i := range old {
				old[i] = 100 * (1 + tt.cv*r.NormFloat64())
				cur[i] = 100 * (1 + tt.cv*r.NormFloat64())
			}
			switch cpuRow(t, old, cur, 10).Verdict {
			case Regression:
				alarms++
			case Inconclusive:
				inconclusive++
			}
		}
		rate := float64(alarms) / trials
		t.Logf("noise %.0f%%: %d false regressions and %d inconclusive rows in %d trials", tt.cv*100, alarms, inconclusive, trials)
		if rate > tt.maxRate {
			t.Errorf("noise %.0f%%: false regression rate %.4f; want at most %.4f", tt.cv*100, rate, tt.maxRate)
		}
	}
	if bound := intervalLevel(6, 6, Alpha) / 2; math.Abs(bound-0.0043) > 0.0001 {
		t.Errorf("one-sided level = %.4f; the bound above assumes 0.0043", bound)
	}
}

// TestVerdictRowContract: the verdict row carries each side's contract; contracts that differ
// (granularity included) make it Inconclusive, a side written before granularity was printed is
// compared without it, and the Markdown shows the outcome under its contract.
func TestVerdictRowContract(t *testing.T) {
	entry := func(contract string) *result.Entry {
		e := &result.Entry{Algorithm: "mine", Topology: "single"}
		e.Verification.Verdict, e.Verification.Contract = "pass", contract
		return e
	}
	for _, tt := range []struct {
		old, cur string
		want     Verdict
	}{
		{"fixed-window(10, 1s)", "fixed-window(10, 1s)", OK},
		{"fixed-window(10, 1s, granularity 1ms)", "fixed-window(10, 1s, granularity 1ms)", OK},
		{"sliding-window(10, 1s)", "sliding-window(10, 1s, granularity 1ms)", OK}, // old text names no granularity
		{"fixed-window(10, 1s, granularity 1ms)", "fixed-window(10, 1s, granularity 1s)", Inconclusive},
		{"fixed-window(10, 1s)", "fixed-window(20, 1s)", Inconclusive},
		{"fixed-window(10, 1s)", "first-hit-window(10, 1s)", Inconclusive},
		{"", "fixed-window(10, 1s)", Inconclusive},
	} {
		row := compareOutcome(entry(tt.old), entry(tt.cur))
		if row.Verdict != tt.want || row.OldContract != tt.old || row.NewContract != tt.cur {
			t.Errorf("verdict row %q → %q = %s (%s), contracts %q, %q; want %s", tt.old, tt.cur, row.Verdict, row.Note,
				row.OldContract, row.NewContract, tt.want)
		}
	}
	if got, want := underContract("pass", "fixed-window(10, 1s, granularity 1ms)"), "pass under fixed-window(10, 1s, granularity 1ms)"; got != want {
		t.Errorf("underContract = %q; want %q", got, want)
	}
}
