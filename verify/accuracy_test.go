package verify

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/limitbench/limitbench/algorithms"
)

// exactLog returns h as a log of exact decision times (no unknown outcomes).
func (h *trueHistory) exactLog() *Log {
	log := &Log{Subjects: h.subjects, Clients: h.clients, Base: h.base}
	for i, t := range h.x {
		k := Denied
		if h.admitted[i] {
			k = Admitted
		}
		log.Events = append(log.Events, mustEvent(t-h.base, t-h.base, uint32(h.subject[i]), uint16(h.client[i]), uint16(h.cost[i]), k))
	}
	return log
}

// TestAccuracyOfExactLimiter: an exact limiter's own history has efficiency 1, no false denials,
// and never more than its limit in a window.
func TestAccuracyOfExactLimiter(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genScaledContract(t, "")
		c.Granularity = 0
		if rapid.Bool().Draw(t, "two") {
			a := genScaledContract(t, "also")
			a.Granularity = 0
			c.Also = []algorithms.Contract{a}
		}
		maxGap := max(c.Window, c.RefillPer).Microseconds()/3 + 1
		h := genArrivals(t, rapid.IntRange(1, 200).Draw(t, "n"), 1_700_000_000_000_000, maxGap)
		h.decide(t, newRefLimiter(c), 0)
		rep, err := Accuracy(c, h.exactLog(), 0)
		if err != nil {
			t.Fatalf("Accuracy: %v", err)
		}
		if rep.Admitted != rep.IdealAllowed || rep.FalseDenials != 0 || rep.Offered != int64(len(h.t)) {
			t.Fatalf("%s: Offered %d Admitted %d IdealAllowed %d FalseDenials %d; want %d offered, admitted = ideal, no false denials",
				c, rep.Offered, rep.Admitted, rep.IdealAllowed, rep.FalseDenials, len(h.t))
		}
		if rep.Admitted > 0 && rep.Efficiency != 1 {
			t.Fatalf("Efficiency = %v; want 1", rep.Efficiency)
		}
		// A sliding window straddling two aligned windows may hold 2L under fixed-window.
		bound := 1.0
		for _, l := range append([]algorithms.Contract{c}, c.Also...) {
			if l.Kind == algorithms.FixedWindow {
				bound = 2
			}
		}
		if rep.MaxWindowRatio > bound {
			t.Fatalf("%s: MaxWindowRatio = %v; want <= %v", c, rep.MaxWindowRatio, bound)
		}
	})
}

func TestAccuracy(t *testing.T) {
	const W = 10 * time.Microsecond
	tests := []struct {
		name string
		c    algorithms.Contract
		log  *Log
		bin  time.Duration
		want AccuracyReport
	}{
		{
			name: "false denials",
			c:    sliding(2, W),
			// 1 is denied with room for it; 3 rightly; 15 with an empty window.
			log: newLog(adm(0), kind(adm(1), Denied), adm(2), kind(adm(3), Denied), kind(adm(15), Denied)),
			bin: W,
			want: AccuracyReport{Offered: 5, Admitted: 2, IdealAllowed: 3, Efficiency: 2.0 / 3, FalseDenials: 2, MaxWindowRatio: 1,
				Bin: W, Series: []AccuracyBin{
					{Start: 0, Offered: 4, Admitted: 2, Ideal: 2, MaxRatio: 1},
					{Start: 10, Offered: 1, Ideal: 1},
				}},
		},
		{
			name: "over-admission shows in the window ratio",
			c:    sliding(1, W),
			log:  newLog(adm(0), adm(5), kind(adm(6), Unknown), kind(adm(7), Failed), adm(35)),
			bin:  W,
			want: AccuracyReport{Offered: 3, Admitted: 3, Excluded: 2, IdealAllowed: 2, Efficiency: 1.5, MaxWindowRatio: 2,
				Bin: W, Series: []AccuracyBin{
					{Start: 0, Offered: 2, Admitted: 2, Ideal: 1, MaxRatio: 2},
					{Start: 10},
					{Start: 20},
					{Start: 30, Offered: 1, Admitted: 1, Ideal: 1, MaxRatio: 1},
				}},
		},
		{
			name: "midpoints and the default bin",
			c:    fixed(1, W),
			// Midpoint 9: window 0, then window 1; both in the sliding window (2, 12].
			log: newLog(span(0, 18), adm(12)),
			want: AccuracyReport{Offered: 2, Admitted: 2, IdealAllowed: 2, Efficiency: 1, MaxWindowRatio: 2,
				Bin: time.Second, Series: []AccuracyBin{{Start: 0, Offered: 2, Admitted: 2, Ideal: 2, MaxRatio: 2}}},
		},
		{
			// Regression: the worst window of a fixed-window contract was measured over aligned
			// windows only, so its legitimate burst at a window boundary never showed.
			name: "fixed window: a burst at the boundary shows over a sliding window",
			c:    fixed(3, W),
			// 3 at the end of [0, 10), 3 at the start of [10, 20), one denied: the contract holds,
			// and the sliding window (2, 12] holds 6 = 2L.
			log: newLog(adm(7), adm(8), adm(9), adm(10), adm(11), adm(12), kind(adm(13), Denied)),
			bin: W,
			want: AccuracyReport{Offered: 7, Admitted: 6, IdealAllowed: 6, Efficiency: 1, MaxWindowRatio: 2,
				Bin: W, Series: []AccuracyBin{
					{Start: 0, Offered: 3, Admitted: 3, Ideal: 3, MaxRatio: 1},
					{Start: 10, Offered: 4, Admitted: 3, Ideal: 3, MaxRatio: 2},
				}},
		},
		{
			name: "token bucket: tokens drawn over capacity",
			c:    bucket(2, 1, W),
			log:  newLog(adm(0), adm(0), adm(5), kind(adm(10), Denied), adm(30)),
			bin:  100 * time.Microsecond,
			// The third admission, at 5, leaves 2 − 3 + 0.5 = −0.5 tokens: 2.5 drawn of 2. At 10,
			// 0 tokens: the denial was right.
			want: AccuracyReport{Offered: 5, Admitted: 4, IdealAllowed: 4, Efficiency: 1, MaxWindowRatio: 1.25,
				Bin: 100 * time.Microsecond, Series: []AccuracyBin{{Start: 0, Offered: 5, Admitted: 4, Ideal: 4, MaxRatio: 1.25}}},
		},
		{
			name: "two limits at once",
			c: func() algorithms.Contract {
				c := sliding(2, W)
				c.Also = []algorithms.Contract{withScope(sliding(1, W), algorithms.PerClient)}
				return c
			}(),
			// The ideal limiter refuses the second request of client x.
			log: newLog(adm(0), adm(1), kind(who(adm(2), 0, 1), Denied)),
			bin: W,
			want: AccuracyReport{Offered: 3, Admitted: 2, IdealAllowed: 2, Efficiency: 1, FalseDenials: 0, MaxWindowRatio: 2,
				Bin: W, Series: []AccuracyBin{{Start: 0, Offered: 3, Admitted: 2, Ideal: 2, MaxRatio: 2}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Accuracy(tt.c, tt.log, tt.bin)
			if err != nil {
				t.Fatalf("Accuracy: %v", err)
			}
			// Pressure has its own test (TestPressure).
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(AccuracyReport{}, "Pressure")); diff != "" {
				t.Errorf("Accuracy(%s) (-want +got):\n%s", tt.c, diff)
			}
		})
	}
}

// TestMaxWindowRatioIsSliding: for window contracts MaxWindowRatio is the most permits admitted
// in any (t−W, t] (midpoint times) over L, counted by brute force.
func TestMaxWindowRatioIsSliding(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genContract(t, "")
		if c.Kind == algorithms.TokenBucket {
			c = sliding(c.Capacity, c.RefillPer)
			c.Kind = rapid.SampledFrom([]algorithms.ContractKind{algorithms.SlidingWindow, algorithms.FixedWindow}).Draw(t, "window kind")
		}
		log := genLog(t, 30)
		w := c.Window.Microseconds()
		var want int64
		for _, evs := range bruteScopes(c, log, Admitted) {
			for _, e := range evs {
				var sum int64
				for _, f := range evs {
					if m := mid(&f); m > mid(&e)-w && m <= mid(&e) {
						sum += int64(f.Permits)
					}
				}
				want = max(want, sum)
			}
		}
		rep, err := Accuracy(c, cloneLog(log), 0)
		if err != nil {
			t.Fatalf("Accuracy: %v", err)
		}
		if got := rep.MaxWindowRatio; got != float64(want)/float64(c.Limit) {
			t.Fatalf("%s: MaxWindowRatio = %v; want %d/%d", c, got, want, c.Limit)
		}
	})
}

func TestAccuracyErrors(t *testing.T) {
	if _, err := Accuracy(sliding(0, time.Second), newLog(), 0); !errors.Is(err, ErrBadContract) {
		t.Errorf("Accuracy(bad contract) = %v; want ErrBadContract", err)
	}
	if _, err := Accuracy(sliding(1, time.Second), newLog(who(adm(1), 2, 0)), 0); !errors.Is(err, ErrBadLog) {
		t.Errorf("Accuracy(bad log) = %v; want ErrBadLog", err)
	}
	if _, err := Accuracy(sliding(1, time.Second), newLog(adm(0), adm(1<<38)), time.Microsecond); err == nil {
		t.Errorf("Accuracy with 2^38 bins = nil error; want one")
	}
}

// flipModel wraps a model and reverses its n-th decision.
type flipModel struct {
	m    algorithms.Model
	n, i int
}

func (f *flipModel) Decide(subject, client string, cost, t int64) bool {
	d := f.m.Decide(subject, client, cost, t)
	f.i++
	if f.i == f.n {
		return !d
	}
	return d
}

// TestReplay: a model replays its own history without a difference, even with many decisions at
// one instant; a history with distinct times from a model with one decision reversed differs first
// at that decision.
func TestReplay(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genScaledContract(t, "")
		c.Granularity = 0
		maxGap := max(c.Window, c.RefillPer).Microseconds()/3 + 1
		n := rapid.IntRange(1, 100).Draw(t, "n")
		h := genArrivals(t, n, 1_700_000_000_000_000, maxGap)
		flip := 0 // none
		if rapid.Bool().Draw(t, "distinct") {
			// Among equal times the order is not known, so a reversed decision can move.
			for i := 1; i < n; i++ {
				h.t[i] = max(h.t[i], h.t[i-1]+1)
			}
			flip = rapid.IntRange(0, n).Draw(t, "flip")
		}
		h.decide(t, &flipModel{m: newRefLimiter(c), n: flip}, 0)
		rep, err := Replay(newRefLimiter(c), h.exactLog())
		if err != nil {
			t.Fatalf("Replay: %v", err)
		}
		if rep.Replayed != int64(n) || rep.Inexact != 0 || rep.Differ != rep.AdmittedModelDenied+rep.DeniedModelAdmitted {
			t.Fatalf("Replay = %+v; want %d replayed", rep, n)
		}
		if flip == 0 {
			if rep.Differ != 0 {
				t.Fatalf("Replay of the model's own history: %d differ, first %+v", rep.Differ, rep.Examples)
			}
			return
		}
		if rep.Differ == 0 {
			t.Fatalf("decision %d reversed, but Replay found no difference", flip)
		}
		i := flip - 1
		first := rep.Examples[0]
		if first.At != h.x[i] || first.Admitted != h.admitted[i] {
			t.Fatalf("first difference %+v; want the reversed decision at %d (admitted %v)", first, h.x[i], h.admitted[i])
		}
	})
}

// TestReplayRegisteredModels: every registered model replays its own history with no difference.
func TestReplayRegisteredModels(t *testing.T) {
	for _, a := range algorithms.All() {
		d := a.Describe()
		l := algorithms.Limit{Limit: 3, Window: 10 * time.Millisecond, Burst: 4, ConsumerLimit: 2}
		if a.Model(l) == nil {
			continue
		}
		t.Run(d.Name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				h := genArrivals(t, rapid.IntRange(1, 200).Draw(t, "n"), 1_700_000_000_000_000, 3000)
				if !d.Cost {
					for i := range h.cost {
						h.cost[i] = 1
					}
				}
				h.decide(t, a.Model(l), 0)
				rep, err := Replay(a.Model(l), h.exactLog())
				if err != nil {
					t.Fatalf("Replay: %v", err)
				}
				if rep.Differ != 0 {
					t.Fatalf("%d of %d decisions differ; first %+v", rep.Differ, rep.Replayed, rep.Examples)
				}
			})
		})
	}
}

func TestReplayCounts(t *testing.T) {
	log := newLog(adm(0), span(1, 2), kind(adm(3), Unknown), kind(adm(4), Failed), adm(5), kind(adm(6), Denied))
	rep, err := Replay(newRefLimiter(sliding(1, 10*time.Microsecond)), log)
	if err != nil {
		t.Fatalf("Replay: %v", err)
	}
	want := ReplayReport{Replayed: 3, Inexact: 1, Excluded: 2, Differ: 1, AdmittedModelDenied: 1,
		Examples: []ReplayDiff{{Subject: "a", Client: "x", At: 5, Permits: 1, Admitted: true}}}
	if diff := cmp.Diff(want, rep); diff != "" {
		t.Errorf("Replay (-want +got):\n%s", diff)
	}
	if _, err := Replay(nil, log); !errors.Is(err, ErrNoModel) {
		t.Errorf("Replay(nil) = %v; want ErrNoModel", err)
	}
}

func ExampleCheck() {
	// sliding-window(2, 1s) per subject: three admissions of "alice" within one second, the last
	// decided somewhere between 0.9 s and 1.2 s.
	// Times are µs after the log's Base.
	const s = 1_000_000 // µs
	log := &Log{Subjects: []string{"alice"}, Clients: []string{"c0"}, Base: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()}
	for _, t := range [][2]int64{{0, 0}, {s / 2, s / 2}, {9 * s / 10, 12 * s / 10}} {
		e, err := NewEvent(t[0], t[1], 0, 0, 1, Admitted) // subject 0 ("alice"), client 0, 1 permit
		if err != nil {
			panic(err)
		}
		log.Events = append(log.Events, e)
	}
	c := algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 2, Window: time.Second}
	rep, err := Check(c, log)
	if err != nil {
		panic(err)
	}
	l := rep.Limits[0]
	fmt.Println("definite:", l.Definite, "possible:", l.Possible)
	fmt.Println("verdict:", Judge(rep, false).Verdict)
	// Output:
	// definite: 0 possible: 1
	// verdict: pass
}
