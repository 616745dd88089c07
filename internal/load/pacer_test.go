package load

import (
	"errors"
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestConstantSchedules20000TicksIn2s(t *testing.T) {
	p := Constant(10_000)
	if got := Scheduled(p, 2*time.Second); got != 20_000 {
		t.Fatalf("Scheduled(Constant(10000), 2s) = %d; want 20000", got)
	}
	for n := uint64(0); n < 20_000; n++ {
		at, ok := p.At(n)
		want := time.Duration(n) * 100 * time.Microsecond
		if !ok || at != want {
			t.Fatalf("At(%d) = (%s, %v); want (%s, true)", n, at, ok, want)
		}
	}
	if at, _ := p.At(20_000); at != 2*time.Second {
		t.Fatalf("At(20000) = %s; want 2s (first hit after the window)", at)
	}
}

func TestProfilePace(t *testing.T) {
	tests := []struct {
		name     string
		p        Pacer
		elapsed  time.Duration
		hits     uint64
		wantWait time.Duration
		wantStop bool
	}{
		{"constant first hit due at once", Constant(10), 0, 0, 0, false},
		{"constant ahead waits", Constant(10), 0, 1, 100 * time.Millisecond, false},
		{"constant partly ahead", Constant(10), 30 * time.Millisecond, 1, 70 * time.Millisecond, false},
		{"constant behind sends now", Constant(10), time.Second, 5, 0, false},
		{"constant exactly due", Constant(10), 500 * time.Millisecond, 5, 0, false},
		{"zero rate stops", Constant(0), 0, 0, 0, true},
		{"ramp from 0: hit 1 after sqrt(2/a')", Ramp(0, 100, time.Second), 0, 1, time.Duration(math.Round(math.Sqrt(2.0/100) * 1e9)), false},
		{"steps to zero stop after", Steps(time.Second, 10, 0), 0, 10, 0, true},
		{"closed loop never waits", ClosedLoop{}, 0, 1_000_000, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wait, stop := tt.p.Pace(tt.elapsed, tt.hits)
			if wait != tt.wantWait || stop != tt.wantStop {
				t.Errorf("Pace(%s, %d) = (%s, %v); want (%s, %v)", tt.elapsed, tt.hits, wait, stop, tt.wantWait, tt.wantStop)
			}
		})
	}
}

// perSecond counts the hits p schedules in each whole second of [0, secs).
func perSecond(p Pacer, secs int) []uint64 {
	out := make([]uint64, secs)
	for i := range out {
		out[i] = Scheduled(p, time.Duration(i+1)*time.Second) - Scheduled(p, time.Duration(i)*time.Second)
	}
	return out
}

func TestProfilesHitTheirRates(t *testing.T) {
	tests := []struct {
		name string
		p    Pacer
		// want[i] is the expected number of hits in second i; tolerance 1 for rounding at bin edges.
		want []float64
	}{
		{"constant", Constant(1000), []float64{1000, 1000, 1000}},
		// Ramp 0→1000 over 10 s: second k holds ∫ 100·t dt over [k, k+1] = 50·(2k+1).
		{"ramp up", Ramp(0, 1000, 10*time.Second), []float64{50, 150, 250, 350, 450, 550, 650, 750, 850, 950, 1000, 1000}},
		{"ramp down", Ramp(1000, 0, 10*time.Second), []float64{950, 850, 750, 650, 550, 450, 350, 250, 150, 50, 0}},
		{"steps", Steps(time.Second, 100, 200, 300, 50), []float64{100, 200, 300, 50, 50}},
		{"spike", Spike(100, 2000, 2*time.Second, time.Second), []float64{100, 100, 2000, 100, 100}},
		{"spike at start", Spike(100, 2000, 0, time.Second), []float64{2000, 100}},
		{"segments with a pause", NewProfile(Piece{From: 10, To: 10, Duration: time.Second}, Piece{Duration: time.Second}, Piece{From: 20, To: 20, Duration: time.Second}), []float64{10, 0, 20, 20}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := perSecond(tt.p, len(tt.want))
			for i := range tt.want {
				if math.Abs(float64(got[i])-tt.want[i]) > 1 {
					t.Errorf("hits in second %d = %d; want %v ± 1 (all: %v)", i, got[i], tt.want[i], got)
				}
			}
			var prev time.Duration
			for n := uint64(0); n < 2000; n++ {
				at, ok := tt.p.At(n)
				if !ok {
					break
				}
				if at < prev {
					t.Fatalf("At(%d) = %s < At(%d) = %s: not monotonic", n, at, n-1, prev)
				}
				prev = at
			}
		})
	}
}

func TestProfileRate(t *testing.T) {
	p := NewProfile(Piece{From: 0, To: 100, Duration: 10 * time.Second}, Piece{From: 50, To: 50, Duration: time.Second})
	tests := []struct {
		at   time.Duration
		want float64
	}{
		{0, 0}, {5 * time.Second, 50}, {10 * time.Second, 50}, {11 * time.Second, 50}, {time.Hour, 50},
	}
	for _, tt := range tests {
		if got := p.Rate(tt.at); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("Rate(%s) = %v; want %v", tt.at, got, tt.want)
		}
	}
	if got, want := p.Hits(10*time.Second), 500.0; math.Abs(got-want) > 1e-9 {
		t.Errorf("Hits(10s) = %v; want %v", got, want)
	}
}

func TestProfileInvalid(t *testing.T) {
	tests := []struct {
		name string
		p    *Profile
	}{
		{"no segments", NewProfile()},
		{"negative rate", Constant(-1)},
		{"NaN rate", Constant(math.NaN())},
		{"infinite rate", Ramp(0, math.Inf(1), time.Second)},
		{"zero duration", Ramp(0, 10, 0)},
		{"zero step", Steps(0, 10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.p.Validate(); !errors.Is(err, ErrBadPacer) {
				t.Fatalf("Validate() = %v; want ErrBadPacer", err)
			}
			if _, ok := tt.p.At(0); ok {
				t.Errorf("invalid profile schedules hit 0")
			}
		})
	}
}

// TestFallingRampAtIsMonotone: At is non-decreasing and within the schedule for every hit of a
// ramp falling to zero after a segment that leaves a fraction of a hit, where a hit can fall a
// hair before the ramp's end and rounding can take the square root's argument below zero.
func TestFallingRampAtIsMonotone(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		lead := rapid.Float64Range(0.001, 1000).Draw(rt, "lead")
		leadFor := time.Duration(rapid.Int64Range(1, int64(time.Second)).Draw(rt, "lead_for"))
		from := rapid.Float64Range(1, 100_000).Draw(rt, "from")
		over := time.Duration(rapid.Int64Range(int64(time.Millisecond), int64(10*time.Second)).Draw(rt, "over"))
		p := NewProfile(Piece{From: lead, To: lead, Duration: leadFor}, Piece{From: from, To: 0, Duration: over})
		end := leadFor + over
		total := p.Hits(end)
		prev := time.Duration(0)
		for n := uint64(0); float64(n) < total; n++ {
			at, ok := p.At(n)
			if !ok || at < prev || at > end {
				rt.Fatalf("At(%d) = (%s, %v) after %s; want non-decreasing within [0, %s] (%g hits)", n, at, ok, prev, end, total)
			}
			prev = at
		}
	})
}
