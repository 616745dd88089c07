package gate

import (
	"math"
	"sort"
)

// The gate's confidence interval for the size of a change.
//
// A row is a regression only when the change is significant and larger than its threshold. With
// six noisy repeats a side, "larger" judged on the two medians alone is not enough: two sets of
// the same code measured with a 9% spread differ in their medians by 10% often enough that ten
// comparisons raised a false alarm in CI (throughput −10.2% at p = 0.015, spreads 9% and 8%).
// The gate therefore asks that the whole confidence interval of the shift lie beyond the
// threshold, which is the one-sided test "the change is larger than the threshold" at the same
// level as the U test.
//
// The interval is the one that goes with the Mann-Whitney U test (Hodges & Lehmann 1963; Bauer
// 1972): sort the m·n differences new_j − old_i; with c the largest U such that
// P(U ≤ c) ≤ α/2 under the null hypothesis, the interval [d₍c+1₎, d₍mn−c₎] covers the shift with
// probability at least 1 − α. Differences are taken in percent of the baseline median (points
// for efficiency), the units of the row's delta, so for 6 against 6 (c = 5) it runs from the
// 6th smallest to the 6th largest of the 36 differences.

// shiftCI returns the 1 − alpha confidence interval [lo, hi] of the shift from old to cur,
// each difference cur[j] − old[i] multiplied by scale. With too few samples for any interval at
// that level it returns (−Inf, +Inf).
func shiftCI(old, cur []float64, scale, alpha float64) (lo, hi float64) {
	m, n := len(old), len(cur)
	c := uCritical(m, n, alpha/2)
	if c < 0 {
		return math.Inf(-1), math.Inf(1)
	}
	d := make([]float64, 0, m*n)
	for _, x := range old {
		for _, y := range cur {
			d = append(d, (y-x)*scale)
		}
	}
	sort.Float64s(d)
	return d[c], d[m*n-1-c]
}

// uCritical returns the largest c such that P(U ≤ c) ≤ p for the Mann-Whitney U statistic of
// samples of sizes m and n under the null hypothesis (no ties), or −1 when even P(U = 0) > p.
//
// The number of arrangements with U = u is the coefficient of q^u in the Gaussian binomial
// coefficient [m+n choose m]_q = ∏_{i=1..m} (1 − q^(n+i)) / (1 − q^i), built here one factor at
// a time in float64 (every intermediate polynomial has non-negative integer coefficients of at
// most C(m+n, m)).
func uCritical(m, n int, p float64) int {
	if m <= 0 || n <= 0 {
		return -1
	}
	if m > n {
		m, n = n, m
	}
	// Before the last division the product has degree m·n + m.
	poly := make([]float64, m*(n+1)+1)
	poly[0] = 1
	deg := 0
	for i := 1; i <= m; i++ {
		// Multiply by (1 − q^(n+i)): the new degree is deg + n + i.
		k := n + i
		for u := deg + k; u >= k; u-- {
			poly[u] -= poly[u-k]
		}
		deg += k
		// Divide by (1 − q^i), exactly: r[u] = poly[u] + r[u − i].
		for u := i; u <= deg; u++ {
			poly[u] += poly[u-i]
		}
		deg -= i
	}
	total := 0.0
	for _, v := range poly {
		total += v
	}
	cum := 0.0
	for c, v := range poly {
		cum += v
		if cum/total > p {
			return c - 1
		}
	}
	return len(poly) - 1
}
