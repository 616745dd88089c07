package gate

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/aclements/go-moremath/stats"
)

// TestNormalOrderMean checks E[X₍ₖ₎] of standard normal samples against the published table
// (Harter 1961; Teichroew 1956), to four decimals (a rounding error of at most 5e−5).
func TestNormalOrderMean(t *testing.T) {
	tests := []struct {
		k, n int
		want float64
	}{
		{6, 6, 1.2672}, {5, 6, 0.6418}, {4, 6, 0.2015}, {1, 6, -1.2672},
		{10, 10, 1.5388}, {9, 10, 1.0014}, {8, 10, 0.6561}, {7, 10, 0.3758}, {6, 10, 0.1227},
		{2, 2, 0.5642}, {3, 3, 0.8463}, {2, 3, 0},
	}
	for _, tt := range tests {
		if got := normalOrderMean(tt.k, tt.n); math.Abs(got-tt.want) > 6e-5 {
			t.Errorf("normalOrderMean(%d, %d) = %.5f; want %.4f", tt.k, tt.n, got, tt.want)
		}
	}
}

// TestSigmaFromIQR checks that σ̂ = IQR/κ(n) is unbiased for normal samples: the mean of σ̂ over
// many simulated samples of n values with σ = 1 is 1 within 1.5%, where IQR/1.349 would be 21%
// short with 6 values.
func TestSigmaFromIQR(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 6))
	for _, n := range []int{6, 7, 10, 20} {
		const trials = 20000
		sum := 0.0
		for range trials {
			s := make([]float64, n)
			for i := range s {
				s[i] = r.NormFloat64()
			}
			sum += summarize(s).sigma
		}
		if mean := sum / trials; math.Abs(mean-1) > 0.015 {
			t.Errorf("n = %d: mean σ̂ = %.4f; want 1 ± 0.015 (κ(%d) = %.4f)", n, mean, n, iqrScale(n))
		}
	}
	if k := iqrScale(1000); math.Abs(k-1.349) > 0.003 {
		t.Errorf("κ(1000) = %.4f; want about 2·Φ⁻¹(3/4) = 1.349", k)
	}
	if got := sigmaFromIQR(0, 6); got != 0 {
		t.Errorf("sigmaFromIQR(0, 6) = %v; want 0", got)
	}
}

// TestIntervalLevel checks the exact level of the interval: for 6 against 6 at 99% (c = 2) it is
// 2·4/924, and at 95% (c = 5) 2·19/924, the arrangements with U ≤ c being the partitions counted
// in TestGateUCritical.
func TestIntervalLevel(t *testing.T) {
	if got, want := intervalLevel(6, 6, 0.01), 8.0/924; math.Abs(got-want) > 1e-12 {
		t.Errorf("intervalLevel(6, 6, 0.01) = %v; want %v", got, want)
	}
	if got, want := intervalLevel(6, 6, 0.05), 38.0/924; math.Abs(got-want) > 1e-12 {
		t.Errorf("intervalLevel(6, 6, 0.05) = %v; want %v", got, want)
	}
	for _, n := range []int{6, 7, 8, 10, 20, 50} {
		if l := intervalLevel(n, n, 0.05); !(l > 0.03 && l <= 0.05) {
			t.Errorf("intervalLevel(%d, %d) = %v; want in (0.03, 0.05]", n, n, l)
		}
	}
	if got := intervalLevel(60, 60, 0.05); got != 0.05 {
		t.Errorf("intervalLevel(60, 60) = %v; want alpha above the exact limit", got)
	}
}

// TestMDECalibration checks the minimum detectable effect's definition by simulation: with
// normal repeats of known standard deviations, the gate's 99% interval separates a true shift of
// mde from 0 in about Power (80%) of experiments: from 0.76 with 6 repeats a side and equal
// spreads to 0.80 with 15 or more, and conservatively (more than 0.8) with unequal spreads or
// counts (the simulation's standard error is 0.006).
func TestMDECalibration(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 26))
	tests := []struct {
		m, n     int
		sx, sy   float64
		lo, high float64
	}{
		{6, 6, 1, 1, 0.73, 0.79},
		{7, 7, 1, 1, 0.74, 0.80},
		{10, 10, 1, 1, 0.76, 0.82},
		{20, 20, 1, 1, 0.77, 0.83},
		{6, 6, 1, 3, 0.80, 0.90},
		{6, 12, 1, 1, 0.80, 0.88},
	}
	for _, tt := range tests {
		d := mde(tt.sx, tt.sy, tt.m, tt.n, Alpha, Power)
		const trials = 4000
		detected := 0
		x, y := make([]float64, tt.m), make([]float64, tt.n)
		for range trials {
			for i := range x {
				x[i] = r.NormFloat64() * tt.sx
			}
			for i := range y {
				y[i] = d + r.NormFloat64()*tt.sy
			}
			if lo, _ := shiftCI(x, y, 1, Alpha); lo > 0 {
				detected++
			}
		}
		if p := float64(detected) / trials; p < tt.lo || p > tt.high {
			t.Errorf("%d against %d, σ %v and %v: MDE %.3f detected in %.3f of trials; want [%.2f, %.2f]",
				tt.m, tt.n, tt.sx, tt.sy, d, p, tt.lo, tt.high)
		}
	}
}

func TestMDE(t *testing.T) {
	if got := mde(0, 0, 6, 6, Alpha, Power); got != 0 {
		t.Errorf("mde of constant sides = %v; want 0", got)
	}
	if got := mde(1, 1, 1, 6, Alpha, Power); !math.IsInf(got, 1) {
		t.Errorf("mde with one sample = %v; want +Inf", got)
	}
	// The MDE scales with σ and shrinks with the sample counts.
	a, b := mde(1, 1, 6, 6, Alpha, Power), mde(2, 2, 6, 6, Alpha, Power)
	if math.Abs(b-2*a) > 1e-9 {
		t.Errorf("mde(2σ) = %v; want twice mde(σ) = %v", b, 2*a)
	}
	prev := math.Inf(1)
	for k := 6; k <= 60; k++ {
		m := mde(1, 1, k, k, Alpha, Power)
		if m >= prev*1.03 {
			t.Errorf("mde(%d, %d) = %.4f, above mde(%d, %d) = %.4f by over 3%%", k, k, m, k-1, k-1, prev)
		}
		prev = min(prev, m)
	}
	// For 6 against 6 with σ = 1 the MDE is (t(1 − 0.0043) + t(0.8)) at 10 degrees of freedom,
	// times √(π/3)·√(1/3): about 2.44 σ; at alpha 0.05, t(1 − 0.0206): about 1.90 σ.
	if math.Abs(a-2.442) > 0.005 {
		t.Errorf("mde(1, 1, 6, 6) = %.4f; want about 2.442", a)
	}
	if b := mde(1, 1, 6, 6, 0.05, Power); math.Abs(b-1.904) > 0.005 {
		t.Errorf("mde(1, 1, 6, 6) at alpha 0.05 = %.4f; want about 1.904", b)
	}
}

func TestRepeatsNeeded(t *testing.T) {
	tests := []struct {
		name       string
		sx, sy, th float64
		want       int // -1: check the defining property only
	}{
		{"constant figures", 0, 0, 10, MinSamples},
		{"zero threshold", 1, 1, 0, 0},
		{"already enough", 1, 1, 5, MinSamples},
		{"a few more", 5, 5, 7, -1},
		{"beyond the exact limit", 20, 20, 5, -1},
		{"more than a million", 1000, 1000, 0.01, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := repeatsNeeded(tt.sx, tt.sy, tt.th, Alpha, Power)
			if tt.want >= 0 {
				if k != tt.want {
					t.Errorf("repeatsNeeded(%v, %v, %v) = %d; want %d", tt.sx, tt.sy, tt.th, k, tt.want)
				}
				return
			}
			if k < MinSamples {
				t.Fatalf("repeatsNeeded(%v, %v, %v) = %d; want at least %d", tt.sx, tt.sy, tt.th, k, MinSamples)
			}
			if m := mde(tt.sx, tt.sy, k, k, Alpha, Power); m > tt.th*1.001 {
				t.Errorf("repeatsNeeded = %d, but mde(%d, %d) = %.3f > threshold %v", k, k, k, m, tt.th)
			}
			if k > MinSamples {
				// Fewer repeats do not reach it (exactly below the exact limit, within one
				// repeat's rounding above it).
				if m := mde(tt.sx, tt.sy, k-2, k-2, Alpha, Power); m <= tt.th {
					t.Errorf("repeatsNeeded = %d, but mde(%d, %d) = %.3f already reaches %v", k, k-2, k-2, m, tt.th)
				}
			}
			t.Logf("σ %v, %v, threshold %v: %d repeats a side", tt.sx, tt.sy, tt.th, k)
		})
	}
}

// TestTQuantile checks Student t quantiles against published values (Abramowitz & Stegun, table
// 26.10) and against the normal quantile for many degrees of freedom.
func TestTQuantile(t *testing.T) {
	tests := []struct{ p, nu, want float64 }{
		{0.975, 10, 2.228139}, {0.975, 5, 2.570582}, {0.8, 10, 0.879058}, {0.9, 3, 1.637744},
		{0.975, 1, 12.706205}, {0.025, 10, -2.228139}, {0.975, 1e6, 1.959966}, {0.5, 4, 0},
	}
	for _, tt := range tests {
		if got := tQuantile(tt.p, tt.nu); math.Abs(got-tt.want) > 2e-4*max(1, math.Abs(tt.want)) {
			t.Errorf("tQuantile(%v, %v) = %.6f; want %.6f", tt.p, tt.nu, got, tt.want)
		}
	}
	// Fractional degrees of freedom (Welch): the CDF at the quantile gives p back.
	for _, nu := range []float64{2.5, 6.1, 17.3} {
		for _, p := range []float64{0.8, 0.9794, 0.995} {
			if got := (stats.TDist{V: nu}).CDF(tQuantile(p, nu)); math.Abs(got-p) > 1e-9 {
				t.Errorf("CDF(tQuantile(%v, %v)) = %v", p, nu, got)
			}
		}
	}
}
