package verify

import (
	"cmp"
	"fmt"
	"math"
	"math/big"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/limitbench/limitbench/algorithms"
)

// bruteApproach is the approach's brute-force oracle for one contract (Also ignored): every
// subset of every scope, with Approach's definitions written out literally, the ratio exact.
// Scopes must hold at most ~12 admissions.
func bruteApproach(c algorithms.Contract, log *Log) *big.Rat {
	best := new(big.Rat)
	g := c.Granularity.Microseconds()
	w := c.Window.Microseconds()
	for _, evs := range bruteScopes(c, log, Admitted) {
		for mask := 1; mask < 1<<len(evs); mask++ {
			var sum int64
			minLo, maxHi := int64(math.MaxInt64), int64(math.MinInt64)
			oneWindow, k := true, int64(0)
			first := true
			for i, e := range evs {
				if mask&(1<<i) == 0 {
					continue
				}
				sum += int64(e.Permits)
				lo, hi := log.Base+e.Lo()-g, log.Base+e.Hi()+g
				minLo, maxHi = min(minLo, lo), max(maxHi, hi)
				if c.Kind == algorithms.FixedWindow {
					kl, kh := floorDiv(lo, w), floorDiv(hi, w)
					if kl != kh || (!first && kl != k) {
						oneWindow = false
					}
					k, first = kl, false
				}
			}
			var r *big.Rat
			switch c.Kind {
			case algorithms.SlidingWindow:
				// (i): K·L within K·W; (ii): one admission, allowed L.
				if k := slidingK(c); maxHi-minLo < k*w {
					r = big.NewRat(sum, k*c.Limit)
				}
				if mask&(mask-1) == 0 && (r == nil || big.NewRat(sum, c.Limit).Cmp(r) > 0) {
					r = big.NewRat(sum, c.Limit)
				}
			case algorithms.FixedWindow:
				if oneWindow {
					r = big.NewRat(sum, c.Limit)
				}
			case algorithms.TokenBucket:
				// P / (C + RefillPermits·span/RefillPer), span and RefillPer in µs.
				per := c.RefillPer.Microseconds()
				r = big.NewRat(sum*per, c.Capacity*per+c.RefillPermits*(maxHi-minLo))
			}
			if r != nil && r.Cmp(best) > 0 {
				best = r
			}
		}
	}
	return best
}

// near reports whether the float score agrees with the exact ratio: within 1e-9 relative, and
// on the same side of 1.
func near(score float64, exact *big.Rat) bool {
	one := big.NewRat(1, 1)
	if (score > 1) != (exact.Cmp(one) > 0) {
		return false
	}
	x, _ := exact.Float64()
	return math.Abs(score-x) <= 1e-9*math.Max(1, x)
}

// TestApproachMatchesBruteForce: on small random histories the score of every limit is the
// brute-force largest ratio, and it is above 1 exactly when Check reports a definite violation
// (for every contract kind, scope and granularity genContract draws).
func TestApproachMatchesBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genContract(t, "")
		log := genLog(t, 12)
		ap, err := ApproachOf(c, cloneLog(log))
		if err != nil {
			t.Fatalf("ApproachOf: %v", err)
		}
		want := bruteApproach(c, log)
		got := ap.Limits[0]
		if !near(got.Score, want) {
			t.Fatalf("%s: score %v; brute force %s (%v)", c, got.Score, want.RatString(), want)
		}
		rep, err := Check(c, cloneLog(log))
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		if (got.Score > 1) != (rep.Limits[0].Definite > 0) {
			t.Fatalf("%s: score %v but Check found %d definite violations", c, got.Score, rep.Limits[0].Definite)
		}
		if got.Score > 0 {
			cl := got.Closest
			// The closest set's own figures give its ratio.
			r := float64(cl.Permits) / cl.Allowed
			if math.Abs(r-got.Score) > 1e-9*got.Score && !(got.Score > 1 && r >= 1) {
				t.Fatalf("%s: closest %+v has ratio %v; score %v", c, cl, r, got.Score)
			}
			if cl.Hi < cl.Lo || cl.Permits <= 0 {
				t.Fatalf("%s: closest %+v", c, cl)
			}
			// The closest set is every admission of its scope inside [Lo, Hi], and certain; for
			// sliding-window, that or (condition (ii)) one admission with exactly those bounds.
			key := cl.Subject
			switch c.Scope {
			case algorithms.PerClient:
				key = cl.Subject + "\x00" + cl.Client
			case algorithms.PerConsumer:
				key = cl.Client
			}
			g := c.Granularity.Microseconds()
			var in int64
			tightLo, tightHi, single := false, false, false
			for _, e := range bruteScopes(c, log, Admitted)[key] {
				lo, hi := log.Base+e.Lo()-g, log.Base+e.Hi()+g
				if lo >= cl.Lo && hi <= cl.Hi {
					in += int64(e.Permits)
					tightLo, tightHi = tightLo || lo == cl.Lo, tightHi || hi == cl.Hi
				}
				single = single || (lo == cl.Lo && hi == cl.Hi && int64(e.Permits) == cl.Permits)
			}
			w := c.Window.Microseconds()
			switch {
			case c.Kind == algorithms.SlidingWindow && single && cl.Allowed == float64(c.Limit):
			case in != cl.Permits || !tightLo || !tightHi ||
				(c.Kind == algorithms.SlidingWindow && (cl.Hi-cl.Lo >= slidingK(c)*w || cl.Allowed != float64(slidingK(c)*c.Limit))) ||
				(c.Kind == algorithms.FixedWindow && floorDiv(cl.Lo, w) != floorDiv(cl.Hi, w)):
				t.Fatalf("%s: closest %+v, but [Lo, Hi] holds %d permits", c, cl, in)
			}
		} else if got.Closest != (Closest{}) {
			t.Fatalf("%s: score 0 but closest %+v", c, got.Closest)
		}
	})
}

// TestApproachAlsoMatchesCheck: with two limits at once, the overall score is above 1 exactly
// when Check reports a definite violation of some limit, and each limit's score is its own.
func TestApproachAlsoMatchesCheck(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genContract(t, "")
		c.Also = []algorithms.Contract{genContract(t, "also")}
		log := genLog(t, 10)
		ap, err := ApproachOf(c, cloneLog(log))
		if err != nil {
			t.Fatalf("ApproachOf: %v", err)
		}
		rep, err := Check(c, cloneLog(log))
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		if (ap.Score > 1) != (rep.Definite() > 0) {
			t.Fatalf("%s: score %v; Check: %d definite", c, ap.Score, rep.Definite())
		}
		for i, one := range []algorithms.Contract{{Kind: c.Kind, Limit: c.Limit, Window: c.Window, Capacity: c.Capacity,
			RefillPermits: c.RefillPermits, RefillPer: c.RefillPer, Granularity: c.Granularity, Scope: c.Scope}, c.Also[0]} {
			if want := bruteApproach(one, log); !near(ap.Limits[i].Score, want) {
				t.Fatalf("%s: limit %d score %v; brute force %v", c, i, ap.Limits[i].Score, want)
			}
		}
		if m := max(ap.Limits[0].Score, ap.Limits[1].Score); ap.Score != m {
			t.Fatalf("Score %v is not the largest limit score %v", ap.Score, m)
		}
	})
}

// TestApproachFirstHitMatchesCheck: for first-hit-window limits, alone or beside another, the
// score is above 1 exactly when Check reports a definite violation, whatever the denied, unknown
// and failed requests around the admissions, with and without Log.Fresh.
func TestApproachFirstHitMatchesCheck(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := algorithms.Contract{Kind: algorithms.FirstHitWindow,
			Limit:       rapid.Int64Range(1, 5).Draw(t, "limit"),
			Window:      us(rapid.Int64Range(1, 20).Draw(t, "window")),
			Granularity: us(rapid.Int64Range(0, 2).Draw(t, "granularity")),
			Scope:       algorithms.Scope(rapid.IntRange(0, 2).Draw(t, "scope"))}
		if rapid.Bool().Draw(t, "also") {
			c.Also = []algorithms.Contract{genContract(t, "also")}
		}
		log := genLog(t, 12)
		log.Fresh = rapid.Bool().Draw(t, "fresh")
		ap, err := ApproachOf(c, cloneLog(log))
		if err != nil {
			t.Fatalf("ApproachOf: %v", err)
		}
		rep, err := Check(c, cloneLog(log))
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		if (ap.Score > 1) != (rep.Definite() > 0) {
			t.Fatalf("%s: score %v; Check: %d definite", c, ap.Score, rep.Definite())
		}
		if (ap.Limits[0].Score > 1) != (rep.Limits[0].Definite > 0) {
			t.Fatalf("%s: first-hit score %v; Check: %d definite", c, ap.Limits[0].Score, rep.Limits[0].Definite)
		}
	})
}

// quadraticApproach is the largest ratio of a token-bucket contract over the sets
// {lo ≥ A, hi ≤ B} for every pair of a Lo and a Hi of a scope's admissions (those sets hold the
// best ratio, see approacher.bucket), each with its own span, exact: for logs of hundreds.
func quadraticApproach(c algorithms.Contract, log *Log) *big.Rat {
	best := new(big.Rat)
	g := c.Granularity.Microseconds()
	per := c.RefillPer.Microseconds()
	for _, evs := range bruteScopes(c, log, Admitted) {
		type iv struct{ lo, hi, p int64 }
		ivs := make([]iv, len(evs))
		for i, e := range evs {
			ivs[i] = iv{e.Lo() - g, e.Hi() + g, int64(e.Permits)}
		}
		slices.SortFunc(ivs, func(a, b iv) int { return cmp.Compare(a.hi, b.hi) })
		for _, start := range ivs {
			var sum int64
			minLo, maxHi := int64(math.MaxInt64), int64(math.MinInt64)
			for i, x := range ivs {
				if x.lo >= start.lo {
					sum += x.p
					minLo, maxHi = min(minLo, x.lo), max(maxHi, x.hi)
				}
				if sum == 0 || (i+1 < len(ivs) && ivs[i+1].hi == x.hi) {
					continue
				}
				if r := big.NewRat(sum*per, c.Capacity*per+c.RefillPermits*(maxHi-minLo)); r.Cmp(best) > 0 {
					best = r
				}
			}
		}
	}
	return best
}

// TestApproachBucketWide: on token-bucket histories of hundreds of admissions, nested intervals
// included, Dinkelbach's method finds the exact largest ratio, and the threshold agrees with
// Check.
func TestApproachBucketWide(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := algorithms.Contract{
			Kind:          algorithms.TokenBucket,
			Capacity:      rapid.Int64Range(1, 40).Draw(t, "capacity"),
			RefillPermits: rapid.Int64Range(1, 10).Draw(t, "refill"),
			RefillPer:     us(rapid.Int64Range(1, 400).Draw(t, "per")),
			Granularity:   us(rapid.Int64Range(0, 3).Draw(t, "g")),
		}
		log := genWideLog(t, 250, 20)
		ap, err := ApproachOf(c, cloneLog(log))
		if err != nil {
			t.Fatalf("ApproachOf: %v", err)
		}
		if want := quadraticApproach(c, log); !near(ap.Score, want) {
			t.Fatalf("%s: score %v; quadratic %v", c, ap.Score, want)
		}
		rep, err := Check(c, cloneLog(log))
		if err != nil {
			t.Fatal(err)
		}
		if (ap.Score > 1) != (rep.Definite() > 0) {
			t.Fatalf("%s: score %v; Check: %d definite", c, ap.Score, rep.Definite())
		}
	})
}

// TestApproachCorrectLimiterAtMostOne: histories of exact reference limiters never score above
// 1, and a limiter that uses its whole allowance reaches exactly 1.
func TestApproachCorrectLimiterAtMostOne(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genScaledContract(t, "")
		maxGap := max(c.Window, c.RefillPer).Microseconds()/3 + 1
		h := genArrivals(t, rapid.IntRange(0, 200).Draw(t, "n"), 1_700_000_000_000_000, maxGap)
		h.decide(t, newRefLimiter(c), c.Granularity.Microseconds())
		ap, err := ApproachOf(c, h.log(t, rapid.SampledFrom([]int64{0, 1, maxGap}).Draw(t, "spread")))
		if err != nil {
			t.Fatalf("ApproachOf: %v", err)
		}
		if ap.Score > 1 {
			t.Fatalf("%s: a correct history scores %v; closest %+v", c, ap.Score, ap.Limits[0].Closest)
		}
	})
}

// TestApproachTable: scores of hand-made histories.
func TestApproachTable(t *testing.T) {
	ms := int64(1000)
	adm := func(lo, hi int64) Event { return mustEvent(lo, hi, 0, 0, 1, Admitted) }
	tests := []struct {
		name string
		c    algorithms.Contract
		ev   []Event
		want float64
	}{
		{"sliding: limit reached", algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 4, Window: time.Second},
			[]Event{adm(0, 0), adm(10*ms, 10*ms), adm(500*ms, 500*ms), adm(999*ms, 999*ms)}, 1},
		{"sliding: one over", algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 4, Window: time.Second},
			[]Event{adm(0, 0), adm(10*ms, 10*ms), adm(500*ms, 500*ms), adm(999*ms, 999*ms), adm(999*ms, 999*ms)}, 1.25},
		{"sliding: the window just passed", algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 4, Window: time.Second},
			[]Event{adm(0, 0), adm(10*ms, 10*ms), adm(500*ms, 500*ms), adm(999*ms, 999*ms), adm(1000*ms, 1000*ms)}, 1},
		{"sliding: wide intervals are not certain", algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 2, Window: time.Second},
			[]Event{adm(0, 600*ms), adm(300*ms, 900*ms), adm(500*ms, 1100*ms)}, 1},
		{"sliding: an interval wider than the window is in no set", algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 2, Window: time.Second},
			[]Event{adm(0, 3000*ms), adm(1050*ms, 1050*ms), adm(1100*ms, 1100*ms)}, 1},
		{"sliding: granularity widens", algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 1, Window: time.Second, Granularity: 400 * time.Millisecond},
			[]Event{adm(0, 0), adm(300*ms, 300*ms)}, 1},
		{"fixed: across a boundary", algorithms.Contract{Kind: algorithms.FixedWindow, Limit: 2, Window: time.Second},
			[]Event{adm(900*ms, 900*ms), adm(999*ms, 999*ms), adm(1000*ms, 1000*ms), adm(1001*ms, 1001*ms)}, 1},
		{"fixed: straddling is in no window", algorithms.Contract{Kind: algorithms.FixedWindow, Limit: 2, Window: time.Second},
			[]Event{adm(900*ms, 900*ms), adm(999*ms, 1001*ms), adm(1001*ms, 1001*ms)}, 0.5},
		{"fixed: three in one", algorithms.Contract{Kind: algorithms.FixedWindow, Limit: 2, Window: time.Second},
			[]Event{adm(1000*ms, 1000*ms), adm(1500*ms, 1500*ms), adm(1999*ms, 1999*ms)}, 1.5},
		{"bucket: a full drain", algorithms.Contract{Kind: algorithms.TokenBucket, Capacity: 3, RefillPermits: 1, RefillPer: time.Second},
			[]Event{adm(0, 0), adm(0, 0), adm(0, 0)}, 1},
		{"bucket: drain and one refill", algorithms.Contract{Kind: algorithms.TokenBucket, Capacity: 3, RefillPermits: 1, RefillPer: time.Second},
			[]Event{adm(0, 0), adm(0, 0), adm(0, 0), adm(1000*ms, 1000*ms)}, 1},
		{"bucket: refilled early", algorithms.Contract{Kind: algorithms.TokenBucket, Capacity: 3, RefillPermits: 1, RefillPer: time.Second},
			[]Event{adm(0, 0), adm(0, 0), adm(0, 0), adm(500*ms, 500*ms)}, 4.0 / 3.5},
		{"bucket: half the capacity", algorithms.Contract{Kind: algorithms.TokenBucket, Capacity: 4, RefillPermits: 1, RefillPer: time.Second},
			[]Event{adm(0, 0), adm(0, 0)}, 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &Log{Subjects: []string{"s"}, Clients: []string{"c"}, Base: 1_700_000_000_000_000, Events: tt.ev}
			ap, err := ApproachOf(tt.c, log)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(ap.Score-tt.want) > 1e-12 {
				t.Errorf("score %v; want %v (closest %+v)", ap.Score, tt.want, ap.Limits[0].Closest)
			}
		})
	}
}

// TestApproachErrors: what Check refuses, ApproachOf refuses too; no contract and no admission
// score 0.
func TestApproachErrors(t *testing.T) {
	log := &Log{Subjects: []string{"s"}, Clients: []string{"c"}, Events: []Event{mustEvent(0, 0, 0, 0, 1, Admitted)}}
	if _, err := ApproachOf(algorithms.Contract{Kind: "leaky-window", Limit: 1, Window: time.Second}, cloneLog(log)); err == nil {
		t.Error("ApproachOf(unknown kind) = nil error")
	}
	bad := cloneLog(log)
	bad.Events[0] = mustEvent(0, 0, 3, 0, 1, Admitted)
	if _, err := ApproachOf(algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 1, Window: time.Second}, bad); err == nil {
		t.Error("ApproachOf(subject out of range) = nil error")
	}
	ap, err := ApproachOf(algorithms.Contract{Kind: algorithms.NoContract}, cloneLog(log))
	if err != nil || ap.Score != 0 {
		t.Errorf("ApproachOf(none) = %+v, %v; want score 0", ap, err)
	}
	denied := &Log{Subjects: []string{"s"}, Clients: []string{"c"}, Events: []Event{mustEvent(0, 0, 0, 0, 1, Denied), mustEvent(0, 0, 0, 0, 1, Unknown)}}
	ap, err = ApproachOf(algorithms.Contract{Kind: algorithms.TokenBucket, Capacity: 1, RefillPermits: 1, RefillPer: time.Second}, denied)
	if err != nil || ap.Score != 0 || ap.Limits[0].Closest != (Closest{}) {
		t.Errorf("ApproachOf(no admission) = %+v, %v; want score 0", ap, err)
	}
}

// BenchmarkApproach scores a token-bucket history of 100,000 admissions in 10 subjects, and a
// sliding-window one: go test -run '^$' -bench Approach ./verify/
func BenchmarkApproach(b *testing.B) {
	log := &Log{Clients: []string{"c"}, Base: 1_700_000_000_000_000}
	for s := range 10 {
		log.Subjects = append(log.Subjects, fmt.Sprint("s", s))
	}
	for i := range int64(100_000) {
		lo := i * 100
		log.Events = append(log.Events, mustEvent(lo, lo+(i*7919)%300, uint32(i%10), 0, 1, Admitted))
	}
	for _, c := range []algorithms.Contract{
		{Kind: algorithms.TokenBucket, Capacity: 100, RefillPermits: 1000, RefillPer: time.Second},
		{Kind: algorithms.SlidingWindow, Limit: 100, Window: time.Second},
	} {
		b.Run(string(c.Kind), func(b *testing.B) {
			for b.Loop() {
				if _, err := ApproachOf(c, log); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
