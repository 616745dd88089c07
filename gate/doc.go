// Package gate is limitbench's CI regression gate: Compare compares a current run with a baseline
// run of the same scenario, per algorithm × topology, and decides for each figure whether it
// regressed. It owns the statistics, the decision rule and the gate's Markdown and JSON. It reads
// results through the result schema (result.Result, result.Sample), a leaf package, so the gate
// links neither the reports' rendering nor the environments' container libraries. This comment is the gate's specification; docs/ci-gate.md says the same for users.
//
// # What is compared
//
// Every algorithm × topology in both results, from its per-repeat result.Sample figures (at least
// MinSamples a side, `limitbench run --repeat 6`): throughput (decisions/s, higher is better), p99
// latency from intended send time (µs), Redis CPU per decision (µs), bytes per subject, and
// efficiency (admitted/ideal, compared in points, 1pt = 0.01; a drop is worse), each against its
// Thresholds value: a percentage of the baseline median, or points for efficiency. The entry's
// verification outcome is compared too (the verdict row).
//
// # Figures: raw or paired with the reference
//
// `limitbench run` measures the reference script (a bare INCR + PEXPIRE) in every round of
// repeats, beside the algorithms. For round r the relative figure of an algorithm is its figure
// divided by the reference's figure of the same round on the same topology, x_r / ref_r: a
// machine that is busier in one round, or in the whole current run, slows both, and the ratio
// cancels it. When both results have the same MachineDescription, each row computes the minimum
// detectable effect (below) of the raw figures and of the ratios, and the drift of the raw
// figures: the reference's own change between the two runs (median to median, in percent), which
// runs the same code in both, so that its change is the machine's, and which raw figures cannot
// tell from a change of code. The row compares the figures with the smaller MDE + |drift| (raw on
// a tie; the ratios have no drift); Row.Figures says which, Row.Candidates lists both, and a note
// gives the reference's drift. The choice depends on each side's spread and on the reference,
// never on the entry's own difference between the sides, so it does not favour any verdict.
// When the machines differ, throughput, p99, CPU and memory are compared as ratios only
// (ErrNoReference without reference samples). Efficiency and verdicts are always compared as
// they are, and the reference entry itself is never gated.
//
// # Statistics of one row
//
// Let x₁..x_m be the baseline's figures and y₁..y_n the current run's, M = median(x).
//
//   - Delta: (median(y) − M) / |M| × 100 percent; (median(y) − M) × 100 points for efficiency.
//
//   - Interval: the 1 − Alpha (99%) Hodges-Lehmann confidence interval of the shift that goes
//     with the Mann-Whitney U test: of the m·n differences (y_j − x_i) × 100/|M|, from the
//     (c+1)-th smallest to the (c+1)-th largest, c the largest U with P(U ≤ c) ≤ α/2 under the
//     null hypothesis, counted exactly up to 50 repeats a side (normal approximation above): for 6
//     against 6, c = 2, from the 3rd smallest to the 3rd largest of 36. Its exact two-sided level
//     α′ = 2·P(U ≤ c) is at most α (8/924 = 0.0087 for 6 against 6). It assumes
//     only that the repeats of a side are independent and identically distributed and that a
//     change shifts them.
//
//   - P: the two-sided Mann-Whitney U p-value (golang.org/x/perf/benchmath), shown for reference;
//     without ties the interval excludes 0 exactly when the exact test rejects at level α′.
//
//   - Spread: (Q3 − Q1) / |median| of each side, quartiles of type 7 (numpy's and R's default).
//
//   - σ̂ of each side: IQR / κ(n), κ(n) = E[Q3 − Q1] of n standard normal values (1.063 for 6,
//     1.349 in the limit), so σ̂ is unbiased for normal repeats and moves little for one stray one.
//
//   - MDE, the minimum detectable effect: the true shift that the interval separates from 0 with
//     probability Power (80%), if each side's repeats are independent and normal with standard
//     deviations σ̂_x and σ̂_y (in the row's unit):
//
//     MDE = (t_ν(1 − α′/2) + t_ν(Power)) · √(π/3) · √(σ̂_x²/m + σ̂_y²/n)
//
//     with t_ν Student's t quantile and ν the Welch-Satterthwaite degrees of freedom
//     (σ̂_x²/m + σ̂_y²/n)² / ((σ̂_x²/m)²/(m−1) + (σ̂_y²/n)²/(n−1)). √(π/3) is the efficiency of
//     the Hodges-Lehmann shift against the difference of means for normal data (asymptotic
//     relative efficiency 3/π); t quantiles at the exact level carry the formula to small
//     samples, as G*Power's A.R.E. method does (Lehmann 1975). Simulated with equal spreads, its
//     power is 0.76 with 6 repeats a side, 0.79 with 10 and 0.80 from 15 on; with unequal spreads
//     or counts it is conservative (0.82 to 0.86). Two readings follow: a change of threshold +
//     MDE is a regression with probability about Power; and when MDE ≤ threshold, a run without
//     change rules out a regression of threshold size with probability about Power or more.
//
//   - RepeatsNeeded: the fewest repeats a side (at least MinSamples) whose MDE, with the same
//     σ̂, reaches the threshold; 0 when none up to a million does (a threshold of 0).
//
// # Decision rule
//
// Let [lo, hi] be the interval in the worse direction, hi the largest worsening it admits and lo
// the smallest (lo = DeltaLow and hi = DeltaHigh for p99, CPU and memory; lo = −DeltaHigh and
// hi = −DeltaLow for throughput and efficiency, where a drop is worse), and T the threshold. The
// verdict is the first that applies:
//
//  1. Regression: min(lo, worsening of the medians) > T. The whole interval lies beyond the
//     threshold, whatever the spread: a 4× slowdown measured with 30% spreads is a regression.
//  2. Improvement: likewise beyond T on the better side (for efficiency: closer to 1 by more
//     than T).
//  3. Inconclusive: hi > T and MDE > T. The interval reaches beyond the threshold and the
//     samples are too noisy to see a change of threshold size, so the run cannot rule out a
//     regression; the note gives the interval and the MDE, and the table the repeats needed.
//     Spread thus only ever weakens a verdict that would otherwise be clean; it never vetoes a
//     clear change and never makes one.
//  4. Insignificant: the interval contains 0.
//  5. OK: a significant change that is not certainly beyond T, measured precisely enough
//     (MDE ≤ T) to see one that were: within the threshold, or near it.
//
// The verdict row: pass → fail (also a repeat that failed under an entry that says pass) and
// "expected violation caught" → "missed" are regressions whatever the figures; the reverse are
// improvements; an inconclusive or tolerated outcome on either side is Inconclusive (it cannot
// rule out pass → fail); an unchanged outcome is OK. Each side's outcome is shown with the contract
// it was reached under (granularity included), and a verdict row whose contracts differ is
// Inconclusive: a pass under a looser contract is not the same pass. (A side whose contract text
// names no granularity, written before granularity was printed, is compared without it.)
//
// # Error rates
//
// Rule 1 is a one-sided test of "the change exceeds T" at level α′/2 (0.43% for 6 against 6):
// whatever the spread, a row whose true change is at most T is a regression with probability at
// most α′/2, and far less while the spread is comparable to the threshold. Simulated with 6
// normal repeats a side and no change, T = 10% (TestRuleFalseAlarmRate): 0 false regressions in
// 3,000 rows with 3% or 9% noise, 0.07% with 30% noise. A gate of k rows raises a false alarm
// with probability at most k·α′/2; the level is 99%, not 95%, for that reason (see Alpha).
// These rates assume repeats that vary independently around one level; a machine that changes
// between the two runs moves every raw repeat of one side, which is what the paired ratios to the
// reference cancel, and why raw figures are charged the reference's drift when the figures are
// chosen. Load that comes and goes in bursts longer than a round of repeats can still move one
// side's figures more than the other's, and the reference, measured at another moment of the
// round, does not see it; the 99% level is what keeps such runs from false alarms (see Alpha).
// BenchmarkGatePower in bench/ (make bench-gate) measures the power and the false alarms on a
// real Redis.
//
// # Sequential rounds (run --repeat auto)
//
// `limitbench run --repeat auto` (Sequence) runs MinSamples rounds of every topology, then adds
// rounds until every gated figure can decide at its threshold or the topology's time budget B
// (--repeat-budget) is spent. It looks after MinSamples rounds and then whenever the rounds have
// grown by half (after ⌈1.5·k⌉ rounds when the last look was after k: 6, 9, 14, 21, 32, ...,
// LookGrowth), and after the last round the budget allows. Looking repeatedly and stopping on what
// was seen would make a fixed 99% interval too narrow, so the looks spend the level Alpha (Lan &
// DeMets 1983, Pocock-type spending function, over calendar time):
//
//	Spent(t) = α·ln(1 + (e − 1)·t),   t = elapsed / B ∈ [0, 1],   Spent(1) = α
//
// Look k, at elapsed time e_k, has the level λ_k = Spent(e_k/B) − Spent(e_{k−1}/B) (e_0 = 0): the
// level of the rounds without a look goes to the next look, so fewer looks judge at wider levels;
// the look after which no round fits in the budget (e_k + the last round's time > B) is the last
// and takes λ_k = α − Spent(e_{k−1}/B). At look k every metric row of the topology (the
// reference and verdict rows excepted) is compared at level λ_k: against the --baseline result
// it can decide when its verdict is not Inconclusive (a regression or improvement is certain, or
// its MDE is at most its threshold); without a baseline, against the run's own samples, when its
// MDE is at most its threshold. The rounds stop at the first look where every row can decide,
// or at the last look. result.json records, per topology, the rounds, the looks and the level
// λ of the look that stopped them (result.Sequential), and Compare judges the current run's rows
// of that topology at that level instead of Alpha, and says so in a note.
//
// Why it stays valid: the levels depend on the clock, the budget and the round count only, never
// on the figures,
// and the gate rejects at the stopping look at that look's level. A false alarm at the stopping
// look K is a rejection at some look k at level λ_k, so its probability is at most
// Σ_k λ_k ≤ Spent(1) = α for each row, however the stopping depends on the figures (the union
// bound; the exact group-sequential boundaries would be less conservative but need the looks'
// correlation). So a row of unchanged code is a regression with probability at most α/2, as
// with fixed repeats. The price is power: each look has a small share of α, so a figure needs
// more rounds to decide than a fixed run of as many rounds would at α. Simulated with 5% normal
// noise, a baseline of 6 repeats, thresholds of 10% and a budget of 30 rounds
// (TestSequentialFalseAlarmsAndPower, 100 trials): no regression without a change, a +25% CPU
// regression found in 97 trials after 20 rounds on average (91 after 24 with a look after every
// round). The baseline's own repeats bound what
// any number of current rounds can reach: with a noisy baseline the budget is spent and the run
// says which figures could not decide.
//
// # History formats
//
// Report.BMF and Report.BenchmarkAction write the rows with a figure (not the verdict rows) for
// teams that keep history elsewhere: Bencher's Metric Format and github-action-benchmark's custom
// JSON. Each names its algorithm × topology "<scenario>/<algorithm>/<topology>" (Row.Benchmark)
// and its metric by name, with "-ratio" for a row compared as ratios to the reference
// (Row.Measure), so that a history never mixes units; the value is the current run's median and
// its bounds are Row.Bound: the baseline median moved by each end of the 99% interval of the
// change, that is where the current figure lies with the gate's confidence.
//
// # Exit codes
//
// Policy says which verdicts fail the gate, and `limitbench gate` exits accordingly:
//
//	0  no row fails: improvements, insignificant and ok rows, and inconclusive rows by default
//	1  a Regression; or an Inconclusive row with Policy.FailInconclusive (--fail-inconclusive)
//	2  bad input: Compare's errors (different scenarios, different loads without
//	   Policy.AllowDifferentLoad, fewer than MinSamples a side, machines that differ without
//	   reference samples, nothing in common), unreadable files, bad flags
//
// Inconclusive rows pass by default because on a noisy machine most comparisons of unchanged code
// cannot rule out a threshold-size change (83% of rows at 9% noise in TestRuleFalseAlarmRate):
// failing them would fail builds for noise, while a change of threshold + MDE or more is a
// Regression at least 4 times in 5, whatever the noise. The summary never says "no regression" when a row is inconclusive; a team
// that wants every threshold-size regression proven absent sets FailInconclusive and raises the
// repeats to Row.RepeatsNeeded.
package gate
