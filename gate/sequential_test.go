package gate

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

func TestSpent(t *testing.T) {
	for _, tt := range []struct{ t, want float64 }{
		{-1, 0}, {0, 0}, {0.5, Alpha * math.Log(1+(math.E-1)/2)}, {1, Alpha}, {2, Alpha},
	} {
		if got := Spent(tt.t); math.Abs(got-tt.want) > 1e-15 {
			t.Errorf("Spent(%g) = %g; want %g", tt.t, got, tt.want)
		}
	}
	for t0 := 0.0; t0 < 1; t0 += 0.01 {
		if Spent(t0+0.01) <= Spent(t0) {
			t.Fatalf("Spent is not increasing at %g", t0)
		}
	}
}

// normalRun is a result of one entry "a" on single whose n repeats are independent normal
// figures around level (CPU, p99, 1/throughput) with relative standard deviation sd.
func normalRun(rng *rand.Rand, n int, level, sd float64) *result.Result {
	e := result.Entry{Algorithm: "a", Topology: "single"}
	e.Verification.Verdict = verify.Pass
	for i := range n {
		d := func() float64 { return level * (1 + sd*rng.NormFloat64()) }
		e.Samples = append(e.Samples, result.Sample{Repeat: i + 1, ThroughputRPS: 1e6 / d(), CPUUSecPerDecision: d(), BytesPerKey: 80,
			LatencyUS: result.Sample{}.LatencyUS, Efficiency: 0.99, Verdict: verify.Pass})
		e.Samples[i].LatencyUS.P99 = 10 * d()
	}
	return gateResult(2, e)
}

// grow appends round k's figures of run (drawn like normalRun) to cur.
func grow(rng *rand.Rand, cur *result.Result, level, sd float64) {
	next := normalRun(rng, 1, level, sd).Entries[0].Samples[0]
	next.Repeat = len(cur.Entries[0].Samples) + 1
	cur.Entries[0].Samples = append(cur.Entries[0].Samples, next)
}

// TestSequenceLevels: the looks come after round 6, then whenever the rounds have grown by half
// (9), and after the last round the budget allows (10); each is judged at the level spent since
// the last, the rounds between looks spend nothing, the levels add up to Alpha, and the last look
// takes what is left.
func TestSequenceLevels(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cur := normalRun(rng, MinSamples, 25, 0.5) // too noisy to decide
	seq := &Sequence{Budget: 100 * time.Second, Policy: DefaultPolicy()}
	var sum float64
	var looked []int
	for k := MinSamples; ; k++ {
		look, stop, err := seq.Look(cur, "single", k, time.Duration(k)*10*time.Second, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if look.Rounds != k {
			t.Fatalf("after round %d the look says %d rounds", k, look.Rounds)
		}
		if look.Looks > len(looked) { // a look after this round
			looked = append(looked, k)
			if math.Abs(look.Spent-sum) > 1e-15 || look.Level <= 0 {
				t.Fatalf("look %d: spent %g, level %g; want spent %g and a positive level", look.Looks, look.Spent, look.Level, sum)
			}
			sum += look.Level
			if want := Spent(float64(k) / 10); !stop && math.Abs(sum-want) > 1e-15 {
				t.Errorf("after the look at round %d spent %g; want Spent(%g) = %g", k, sum, float64(k)/10, want)
			}
		}
		if stop {
			if k != 10 || look.Decided || len(look.Undecided) == 0 || math.Abs(sum-Alpha) > 1e-15 {
				t.Errorf("stopped after round %d, decided %v (%q), levels sum %g; want round 10 (100s of 100s), undecided, Alpha spent",
					k, look.Decided, look.Undecided, sum)
			}
			break
		}
		grow(rng, cur, 25, 0.5)
	}
	if !slices.Equal(looked, []int{6, 9, 10}) {
		t.Errorf("looks after rounds %v; want 6, 9 (grown by half) and 10 (the last the budget allows)", looked)
	}
}

// TestSequenceStopsWhenDecided: quiet figures can decide at the first look, against themselves
// or against a baseline; noisy ones go on, and say which figure cannot decide.
func TestSequenceStopsWhenDecided(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	quiet := normalRun(rng, MinSamples, 25, 0.01)
	for _, base := range []*result.Result{nil, normalRun(rng, MinSamples, 25, 0.01)} {
		seq := &Sequence{Budget: 10 * time.Minute, Baseline: base, Policy: DefaultPolicy()}
		look, stop, err := seq.Look(quiet, "single", MinSamples, 3*time.Minute, 10*time.Second)
		if err != nil || !stop || !look.Decided || look.Level != Spent(0.3) {
			t.Errorf("baseline %v: look %+v, stop %v, %v; want decided at the first look, level Spent(0.3)", base != nil, look, stop, err)
		}
	}
	noisy := normalRun(rng, MinSamples, 25, 0.3)
	seq := &Sequence{Budget: time.Hour, Policy: DefaultPolicy()}
	look, stop, err := seq.Look(noisy, "single", MinSamples, time.Minute, 10*time.Second)
	if err != nil || stop || look.Decided || !strings.Contains(strings.Join(look.Undecided, " "), "a cpu (MDE ") {
		t.Errorf("look %+v, stop %v, %v; want another round, the CPU figure undecided", look, stop, err)
	}
	if _, _, err := (&Sequence{Budget: time.Hour, Baseline: withScenarioName(noisy, "other")}).Look(noisy, "single", 6, time.Minute, time.Second); err == nil {
		t.Error("a baseline of another scenario: no error")
	}
}

func withScenarioName(r *result.Result, name string) *result.Result {
	c := *r
	c.Scenario.Name = name
	return &c
}

// TestSequentialFalseAlarmsAndPower runs the procedure as `run --repeat auto` does, round by
// round, on simulated normal repeats (5% noise, baseline of 6, thresholds 10%), then gates the
// final result at its recorded level, as `limitbench gate` does: with no change no row is a
// regression (A/A), and a +25% CPU regression is found in nearly every trial.
func TestSequentialFalseAlarmsAndPower(t *testing.T) {
	trials := 100
	if testing.Short() {
		trials = 20
	}
	rng := rand.New(rand.NewPCG(5, 6))
	const round, budget = 10 * time.Second, 300 * time.Second // up to 30 rounds
	var falseAlarms, found, rounds int
	for range trials {
		for _, slow := range []float64{1, 1.25} {
			base := normalRun(rng, MinSamples, 25, 0.05)
			cur := normalRun(rng, MinSamples, 25*slow, 0.05)
			seq := &Sequence{Budget: budget, Baseline: base, Policy: DefaultPolicy()}
			var look result.SequentialTopology
			for k := MinSamples; ; k++ {
				l, stop, err := seq.Look(cur, "single", k, time.Duration(k)*round, round)
				if err != nil {
					t.Fatal(err)
				}
				look = l
				if stop {
					break
				}
				grow(rng, cur, 25*slow, 0.05)
			}
			rounds += look.Rounds
			cur.Sequential = &result.Sequential{Rule: SequentialRule, Alpha: Alpha, Topologies: []result.SequentialTopology{look}}
			g, err := Compare(base, cur, DefaultPolicy())
			if err != nil {
				t.Fatal(err)
			}
			cpu := rowOf(t, g, "a", result.CPU)
			if slow == 1 && g.Counts.Regressions > 0 {
				falseAlarms++
			}
			if slow > 1 && cpu.Verdict == Regression {
				found++
			}
		}
	}
	t.Logf("%d trials: A/A false alarms %d, +25%% CPU found %d, %.1f rounds on average", trials, falseAlarms, found, float64(rounds)/float64(2*trials))
	if falseAlarms > 0 {
		t.Errorf("A/A: %d of %d trials had a regression; want 0", falseAlarms, trials)
	}
	if found < trials*9/10 {
		t.Errorf("+25%% CPU found in %d of %d trials; want at least 90%%", found, trials)
	}
}

// TestGateJudgesAtTheSequentialLevel: a current run that chose its rounds sequentially is judged
// at its last look's level, said in a note, and its intervals are wider than at Alpha.
func TestGateJudgesAtTheSequentialLevel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	base, cur := normalRun(rng, 10, 25, 0.1), normalRun(rng, 10, 25, 0.1)
	fixed, err := Compare(base, cur, DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	cur.Sequential = &result.Sequential{Rule: SequentialRule, Alpha: Alpha,
		Topologies: []result.SequentialTopology{{Topology: "single", Rounds: 10, Looks: 5, Level: 0.002, Decided: true}}}
	seq, err := Compare(base, cur, DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	a, b := rowOf(t, fixed, "a", result.CPU), rowOf(t, seq, "a", result.CPU)
	if !(b.DeltaLow <= a.DeltaLow && b.DeltaHigh >= a.DeltaHigh && b.MDE > a.MDE) {
		t.Errorf("at level 0.002: interval [%g, %g], MDE %g; want it to hold the 99%% interval [%g, %g] and a larger MDE than %g",
			b.DeltaLow, b.DeltaHigh, b.MDE, a.DeltaLow, a.DeltaHigh, a.MDE)
	}
	if notes := strings.Join(seq.Notes, "\n"); !strings.Contains(notes, "judged at the level of its last look, 0.002 (99.8% intervals)") {
		t.Errorf("notes %q; want the sequential level said", notes)
	}
}
