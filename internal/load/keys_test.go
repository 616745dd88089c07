package load

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPickerIsSeeded(t *testing.T) {
	for _, k := range []Keys{
		{Count: 1000},
		{Count: 1000, Distribution: Zipf, ZipfS: 0.9},
		{Count: 1000, Distribution: Hot, HotShare: 0.5},
	} {
		t.Run(string(k.Distribution), func(t *testing.T) {
			a, b, c := NewPicker(k, 42), NewPicker(k, 42), NewPicker(k, 43)
			var same, differ int
			for n := uint64(0); n < 10_000; n++ {
				if a.Pick(n) != b.Pick(n) {
					t.Fatalf("Pick(%d) differs between two pickers with seed 42", n)
				}
				if a.Pick(n) == c.Pick(n) {
					same++
				} else {
					differ++
				}
			}
			if differ < 1000 {
				t.Errorf("seeds 42 and 43 agree on %d of 10000 picks; want different sequences", same)
			}
		})
	}
}

// frequencies picks n subjects with k and returns their shares.
func frequencies(k Keys, n int) []float64 {
	p := NewPicker(k, 7)
	counts := make([]float64, k.Count)
	for i := range n {
		counts[p.Pick(uint64(i))]++
	}
	for i := range counts {
		counts[i] /= float64(n)
	}
	return counts
}

func TestPickerDistributions(t *testing.T) {
	const samples = 400_000
	zipfWant := func(count int, s float64) []float64 {
		w := make([]float64, count)
		var sum float64
		for i := range w {
			w[i] = math.Pow(float64(i+1), -s)
			sum += w[i]
		}
		for i := range w {
			w[i] /= sum
		}
		return w
	}
	uniform := func(count int) []float64 {
		w := make([]float64, count)
		for i := range w {
			w[i] = 1 / float64(count)
		}
		return w
	}
	hot := func(count int, share float64) []float64 {
		w := make([]float64, count)
		w[0] = share
		for i := 1; i < count; i++ {
			w[i] = (1 - share) / float64(count-1)
		}
		return w
	}
	tests := []struct {
		name string
		k    Keys
		want []float64
	}{
		{"uniform", Keys{Count: 10}, uniform(10)},
		{"zipf s=0 is uniform", Keys{Count: 10, Distribution: Zipf}, uniform(10)},
		{"zipf s=0.8 (s<=1 supported)", Keys{Count: 20, Distribution: Zipf, ZipfS: 0.8}, zipfWant(20, 0.8)},
		{"zipf s=1", Keys{Count: 20, Distribution: Zipf, ZipfS: 1}, zipfWant(20, 1)},
		{"zipf s=1.5", Keys{Count: 20, Distribution: Zipf, ZipfS: 1.5}, zipfWant(20, 1.5)},
		{"hot 90%", Keys{Count: 10, Distribution: Hot, HotShare: 0.9}, hot(10, 0.9)},
		{"hot 0%", Keys{Count: 10, Distribution: Hot}, hot(10, 0)},
		{"hot one subject", Keys{Count: 1, Distribution: Hot, HotShare: 0.3}, []float64{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := frequencies(tt.k, samples)
			for i, w := range tt.want {
				// 5 standard errors of a binomial share, plus a floor.
				tol := 5*math.Sqrt(w*(1-w)/samples) + 1e-4
				if math.Abs(got[i]-w) > tol {
					t.Errorf("share of subject %d = %.4f; want %.4f ± %.4f", i, got[i], w, tol)
				}
			}
		})
	}
}

func TestKeysValidate(t *testing.T) {
	tests := []struct {
		name string
		k    Keys
		bad  bool
	}{
		{"zero value", Keys{}, false},
		{"negative count", Keys{Count: -1}, true},
		{"zipf negative zipf_s", Keys{Count: 3, Distribution: Zipf, ZipfS: -1}, true},
		{"zipf NaN zipf_s", Keys{Count: 3, Distribution: Zipf, ZipfS: math.NaN()}, true},
		{"hot share above 1", Keys{Count: 3, Distribution: Hot, HotShare: 1.5}, true},
		{"unknown distribution", Keys{Count: 3, Distribution: "pareto"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := errors.Join(tt.k.validate(nil)...)
			if (err != nil) != tt.bad || (err != nil && !errors.Is(err, ErrBadPlan)) {
				t.Errorf("validate(%+v) = %v; want error: %v", tt.k, err, tt.bad)
			}
		})
	}
	if diff := cmp.Diff([]string{"user-0", "user-1"}, Keys{Count: 2, Prefix: "user-"}.Names()); diff != "" {
		t.Errorf("Names() (-want +got):\n%s", diff)
	}
}

func TestSkewOffset(t *testing.T) {
	tests := []struct {
		name    string
		s       Skew
		clients int
		want    []time.Duration
	}{
		{"none", Skew{}, 3, []time.Duration{0, 0, 0}},
		{"list cycled", Skew{Offsets: []time.Duration{-2 * time.Second, 2 * time.Second}}, 5,
			[]time.Duration{-2 * time.Second, 2 * time.Second, -2 * time.Second, 2 * time.Second, -2 * time.Second}},
		{"spread", Skew{Spread: 2 * time.Second}, 5,
			[]time.Duration{-2 * time.Second, -time.Second, 0, time.Second, 2 * time.Second}},
		{"spread one client", Skew{Spread: time.Second}, 1, []time.Duration{-time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := make([]time.Duration, tt.clients)
			for c := range got {
				got[c] = tt.s.Offset(c, tt.clients)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Offset (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSkewJSON: a skew is written in seconds and read back as it was; String says it in words.
func TestSkewJSON(t *testing.T) {
	for _, tt := range []struct {
		s          Skew
		json, text string
	}{
		{Skew{Offsets: []time.Duration{0, 1500 * time.Millisecond, -2 * time.Second}}, `{"offsets_s":[0,1.5,-2]}`, "offsets 0s, 1.5s, -2s cycled over clients"},
		{Skew{Spread: 250 * time.Millisecond}, `{"spread_s":0.25}`, "spread ±250ms"},
		{Skew{}, `{}`, ""},
	} {
		b, err := json.Marshal(tt.s)
		if err != nil || string(b) != tt.json {
			t.Errorf("Marshal(%+v) = %s, %v; want %s", tt.s, b, err, tt.json)
		}
		var back Skew
		if err := json.Unmarshal(b, &back); err != nil || tt.s.String() != back.String() || !slices.Equal(tt.s.Offsets, back.Offsets) || tt.s.Spread != back.Spread {
			t.Errorf("Unmarshal(%s) = %+v, %v; want %+v", b, back, err, tt.s)
		}
		if got := tt.s.String(); got != tt.text {
			t.Errorf("String() = %q; want %q", got, tt.text)
		}
	}
}
