package verify

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/limitbench/limitbench/algorithms"
)

// TestFirstHitMatchesLiteral: on small random histories of every kind of request, Check finds
// for first-hit-window exactly what the package doc's conditions, written out by enumeration,
// find: definite, chained and possible violations, the worst excesses, and UnknownExcess, with
// and without Fresh and From.
func TestFirstHitMatchesLiteral(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genFirstHit(t, "")
		c.Limit = rapid.Int64Range(1, 4).Draw(t, "limit")
		c.Window = us(rapid.Int64Range(1, 25).Draw(t, "window"))
		c.Granularity = us(rapid.Int64Range(0, 2).Draw(t, "g"))
		log := genLog(t, 12)
		log.Fresh = rapid.Bool().Draw(t, "fresh")
		if rapid.Bool().Draw(t, "from") {
			log.From = log.Base + rapid.Int64Range(1, 60).Draw(t, "at")
		}
		rep, err := Check(c, cloneLog(log))
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		got, want := rep.Limits[0], fhLiteral(c, log)
		if got.Definite != want.definite || got.Chained != want.chained || got.Possible != want.possible ||
			got.Worst.Excess != want.worstDef || got.WorstUnchained.Excess != want.worstFree ||
			got.WorstPossible.Excess != want.worstPoss || got.UnknownExcess != want.unknownExcess {
			t.Fatalf("%s G %s scope %s fresh %v base %d from %d, events %v:\nCheck = definite %d chained %d possible %d worst %d/%d/%d unknown %d; "+
				"literal = definite %d chained %d possible %d worst %d/%d/%d unknown %d",
				c, c.Granularity, c.Scope, log.Fresh, log.Base, log.From, log.Events, got.Definite, got.Chained, got.Possible, got.Worst.Excess, got.WorstUnchained.Excess,
				got.WorstPossible.Excess, got.UnknownExcess, want.definite, want.chained, want.possible, want.worstDef,
				want.worstFree, want.worstPoss, want.unknownExcess)
		}
		if got.Definite != int64(len(got.Violations)) {
			t.Fatalf("%d definite violations but %d listed", got.Definite, len(got.Violations))
		}
		if got.UnknownCouldHide != (got.UnknownExcess > 0) {
			t.Fatalf("UnknownCouldHide = %v with UnknownExcess %d", got.UnknownCouldHide, got.UnknownExcess)
		}
		for _, wh := range []Where{got.Worst, got.WorstUnchained, got.WorstPossible} {
			if wh.Excess > 0 && (wh.Permits-wh.Allowed != wh.Excess || wh.Lo > wh.Hi) {
				t.Fatalf("Where %+v is inconsistent", wh)
			}
		}
	})
}

// TestFirstHitSoundOverEveryWorld checks Check against the contract itself, over every world of
// small histories (every subset of the unknown and failed requests that reached the limiter,
// every real placement of every decision, every window open at the start): a definite violation
// is one in every world, and every world's violation is reported as possible. On the histories
// where no request's time or outcome is in doubt (exact times, no granularity, no unknown or
// failed request, a fresh limiter), there is one world, and Check is exact.
func TestFirstHitSoundOverEveryWorld(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genFirstHit(t, "")
		log := genFirstHitLog(t, 6)
		rep, err := Check(c, cloneLog(log))
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		got := rep.Limits[0]
		definite, possible := fhWorldsTruth(c, log)
		if got.Definite > 0 && !definite {
			t.Fatalf("%s: %d definite violations (worst %+v), but a world keeps the contract", c, got.Definite, got.Worst)
		}
		if possible && got.Possible == 0 {
			t.Fatalf("%s: a world violates the contract, but no possible violation was reported", c)
		}
		certain := log.Fresh && c.Granularity == 0
		for _, e := range log.Events {
			certain = certain && e.Lo() == e.Hi() && (e.Kind() == Admitted || e.Kind() == Denied)
		}
		if certain && ((got.Definite > 0) != definite || (got.Possible > 0) != possible) {
			t.Fatalf("%s, one world: Check = definite %d possible %d; the world: definite %v possible %v",
				c, got.Definite, got.Possible, definite, possible)
		}
	})
}

// TestFirstHitWorldsBruteForce checks the brute force over worlds itself on histories whose
// answer is known.
func TestFirstHitWorldsBruteForce(t *testing.T) {
	c := algorithms.Contract{Kind: algorithms.FirstHitWindow, Limit: 1, Window: us(10)}
	tests := []struct {
		name               string
		fresh              bool
		events             []Event
		definite, possible bool
	}{
		{"one window", true, []Event{adm(0), adm(9)}, true, true},
		{"two windows", true, []Event{adm(0), adm(10)}, false, false},
		{"a denial opens the window", true, []Event{kind(adm(0), Denied), adm(5), adm(10)}, false, false},
		{"the denial's window holds both", true, []Event{kind(adm(1), Denied), adm(5), adm(10)}, true, true},
		{"a window may be open at the start", false, []Event{adm(0), adm(9)}, false, true},
		{"chained exact windows", false, []Event{adm(0), adm(10), adm(20), kind(adm(30), Denied), adm(35), adm(39)}, true, true},
		{"an interval lets a window start late", true, []Event{span(0, 1), adm(10)}, false, true},
		// Strict constraints only real instants meet: the first request at 0.6 and a window
		// [0.6, 10.6) holding 10.3, or at 0.2 with 10.3 opening a new window.
		{"real instants", true, []Event{span(0, 1), kind(span(10, 11), Denied), adm(10)}, false, true},
		{"a window over the limit", true, []Event{adm(0), adm(12), adm(21)}, true, true},
		{"an unknown outcome may open a window", true, []Event{adm(0), kind(adm(5), Unknown), adm(12), adm(21)}, false, true},
		{"a failed request may have run", true, []Event{adm(0), kind(span(10, 11), Failed), adm(12), adm(21)}, false, true},
		{"a failed request inside a window changes nothing", true, []Event{adm(0), kind(span(8, 9), Failed), adm(12), adm(21)}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := newLog(tt.events...)
			log.Fresh = tt.fresh
			d, p := fhWorldsTruth(c, log)
			if d != tt.definite || p != tt.possible {
				t.Errorf("fhWorldsTruth = definite %v possible %v; want %v %v", d, p, tt.definite, tt.possible)
			}
		})
	}
}

// TestFirstHitUnknownCouldHide: whatever happened to the unknown outcomes (not run, or run at
// any instant from their Lo on, denied or admitted), if the history they leave has a definite
// violation, Check of the history with them unknown reports a definite violation or says that
// unknown outcomes could hide one.
func TestFirstHitUnknownCouldHide(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genFirstHit(t, "")
		c.Limit = rapid.Int64Range(1, 4).Draw(t, "limit")
		c.Window = us(rapid.Int64Range(1, 25).Draw(t, "window"))
		log := genLog(t, 10)
		log.Fresh = rapid.Bool().Draw(t, "fresh")
		orig, err := Check(c, cloneLog(log))
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		fixed := cloneLog(log)
		fixed.Events = fixed.Events[:0]
		for i, e := range log.Events {
			if e.Kind() != Unknown {
				fixed.Events = append(fixed.Events, e)
				continue
			}
			fate := rapid.SampledFrom([]Kind{Failed, Denied, Admitted}).Draw(t, fmt.Sprint("fate", i))
			if fate == Failed {
				continue // it never ran
			}
			x := e.Lo() + rapid.Int64Range(0, 70).Draw(t, fmt.Sprint("x", i))
			fixed.Events = append(fixed.Events, mustEvent(x, x, e.Subject, e.Client, e.Permits, fate))
		}
		after, err := Check(c, fixed)
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		o, a := orig.Limits[0], after.Limits[0]
		if a.Definite > 0 && o.Definite == 0 && !o.UnknownCouldHide {
			t.Fatalf("%s: the unknown outcomes' fates make %d definite violations (worst %+v), but Check said they could hide none",
				c, a.Definite, a.Worst)
		}
	})
}

// firstHitContract draws first-hit-window(L, W) with W of 1 µs to 30 ms and a granularity.
func firstHitContract(t *rapid.T) algorithms.Contract {
	return algorithms.Contract{
		Kind:        algorithms.FirstHitWindow,
		Limit:       rapid.Int64Range(1, 6).Draw(t, "limit"),
		Window:      rapid.SampledFrom([]time.Duration{time.Microsecond, 7 * time.Microsecond, time.Millisecond, 30 * time.Millisecond}).Draw(t, "window"),
		Granularity: time.Duration(rapid.SampledFrom([]int64{0, 0, 1, 1000}).Draw(t, "g")) * time.Microsecond,
	}
}

// modelHistory is a history decided by the exact first-hit reference model on a clock of the
// contract's granularity (see trueHistory.decide), logged with intervals widened around the
// true times by up to spread µs and some outcomes unknown or failed.
func modelHistory(t *rapid.T, c algorithms.Contract, n int, spread int64) (*trueHistory, *Log) {
	maxGap := c.Window.Microseconds()/2 + 1
	h := genArrivals(t, n, 1_700_000_000_000_000, maxGap)
	h.decide(t, algorithms.NewFirstHitModel(algorithms.Limit{Limit: c.Limit, Window: c.Window}), c.Granularity.Microseconds())
	log := h.log(t, spread)
	log.Fresh = rapid.Bool().Draw(t, "fresh")
	if rapid.Bool().Draw(t, "from") && n > 0 {
		// A warmup: the events before From only open windows.
		log.From = h.t[rapid.IntRange(0, n-1).Draw(t, "cut")]
	}
	return &h, log
}

// TestFirstHitModelNeverFlagged: histories of the exact first-hit reference model, deciding on a
// clock of the contract's granularity, are never flagged, however the intervals are widened
// around the true times, whatever is logged as unknown or failed, with or without Fresh and a
// warmup before From.
func TestFirstHitModelNeverFlagged(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := firstHitContract(t)
		maxGap := c.Window.Microseconds()/2 + 1
		spread := rapid.SampledFrom([]int64{0, 1, maxGap, 10 * maxGap}).Draw(t, "spread")
		_, log := modelHistory(t, c, rapid.IntRange(0, 300).Draw(t, "n"), spread)
		rep, err := Check(c, log)
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		if l := rep.Limits[0]; l.Definite > 0 {
			t.Fatalf("%s (fresh %v): %d definite violations in the model's history; worst %+v", c, log.Fresh, l.Definite, l.Worst)
		}
		if v := Judge(rep, false); v.Verdict == Fail {
			t.Fatalf("Judge = %+v", v)
		}
	})
}

// redisFirstHit decides requests as INCRBY with PEXPIRE on the first hit does in Redis: the key
// is created at the millisecond m = ⌊t/1000⌋ of its first request and lives while Redis's
// millisecond clock is at most m + W (Redis expires a key once now > its expiry), so a window
// lasts W plus up to a millisecond; every request adds its cost to the count, and is admitted
// while the count is at most L.
type redisFirstHit struct {
	limit, windowMs int64
	keys            map[string][2]int64 // created (ms), count
}

func (r *redisFirstHit) Decide(subject, _ string, cost, t int64) bool {
	now := floorDiv(t, 1000)
	k, ok := r.keys[subject]
	if !ok || now > k[0]+r.windowMs {
		k = [2]int64{now, 0}
	}
	k[1] += cost
	r.keys[subject] = k
	return k[1] <= r.limit
}

// TestFirstHitRedisExpiry: histories of INCRBY + PEXPIRE as Redis runs it (a key lives through
// its expiry's millisecond) are never flagged under first-hit-window(L, W) with a granularity
// of 1 ms, however widened; TestFirstHitRedisNeedsGranularity shows one that is flagged
// without it.
func TestFirstHitRedisExpiry(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := algorithms.Contract{
			Kind:        algorithms.FirstHitWindow,
			Limit:       rapid.Int64Range(1, 6).Draw(t, "limit"),
			Window:      time.Duration(rapid.Int64Range(1, 20).Draw(t, "window_ms")) * time.Millisecond,
			Granularity: time.Millisecond,
		}
		maxGap := c.Window.Microseconds()/2 + 1
		h := genArrivals(t, rapid.IntRange(0, 300).Draw(t, "n"), 1_700_000_000_000_000, maxGap)
		h.decide(t, &redisFirstHit{limit: c.Limit, windowMs: c.Window.Milliseconds(), keys: map[string][2]int64{}}, 1)
		log := h.log(t, rapid.SampledFrom([]int64{0, 100, maxGap}).Draw(t, "spread"))
		log.Fresh = rapid.Bool().Draw(t, "fresh")
		rep, err := Check(c, log)
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		if l := rep.Limits[0]; l.Definite > 0 {
			t.Fatalf("%s: %d definite violations in Redis's history; worst %+v", c, l.Definite, l.Worst)
		}
	})
}

// TestFirstHitRedisNeedsGranularity: a key created at 100 µs (millisecond 0) with W = 1 ms
// still exists at 1.5 ms, so the second request counts in the first window; the key expires at
// 2 ms and the third and fourth requests fill a new window. As first-hit-window(1, 1ms) at the
// exact µs the second request opens [1500, 2500), which holds two admissions: a definite
// violation that a granularity of 1 ms (Redis's clock) explains.
func TestFirstHitRedisNeedsGranularity(t *testing.T) {
	r := &redisFirstHit{limit: 2, windowMs: 1, keys: map[string][2]int64{}}
	var evs []Event
	for _, x := range []int64{100, 1500, 2000, 2100} {
		k := Denied
		if r.Decide("s", "", 1, x) {
			k = Admitted
		}
		evs = append(evs, mustEvent(x, x, 0, 0, 1, k))
	}
	c := algorithms.Contract{Kind: algorithms.FirstHitWindow, Limit: 2, Window: time.Millisecond}
	for _, g := range []time.Duration{0, time.Millisecond} {
		c.Granularity = g
		log := newLog(evs...)
		log.Fresh = true
		rep, err := Check(c, log)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := rep.Limits[0].Definite > 0, g == 0; got != want {
			t.Errorf("%s granularity %s: definite %d (%v); want %v", c, g, rep.Limits[0].Definite, evs, want)
		}
	}
}

// plantHistory is a correct history whose unknown outcomes are logged as what they were, for
// plants that a late unknown outcome could split.
func plantHistory(t *rapid.T, c algorithms.Contract, unknowns bool) (*trueHistory, *Log) {
	h, log := modelHistory(t, c, rapid.IntRange(0, 100).Draw(t, "n"), rapid.SampledFrom([]int64{0, 50}).Draw(t, "spread"))
	log.From = 0
	if !unknowns {
		for i, e := range log.Events {
			if e.Kind() == Unknown {
				k := Denied
				if h.admitted[i] {
					k = Admitted
				}
				log.Events[i] = mustEvent(e.Lo(), e.Hi(), e.Subject, e.Client, e.Permits, k)
			}
		}
	}
	return h, log
}

// TestFirstHitPlantedViolationFound: L+1 permits planted inside W − 1 − 2G µs are a definite
// violation found and failed, when the window they are in is known: after a quiet gap longer
// than W (no unknown outcome before it that could open a window inside), or at the start of a
// fresh log; and more than 2L + L·2G/W at one instant anywhere, even with unknown outcomes.
func TestFirstHitPlantedViolationFound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := firstHitContract(t)
		W, G := c.Window.Microseconds(), c.Granularity.Microseconds()
		room := W - 1 - 2*G
		if room < 0 {
			t.Skip("granularity too coarse for the window: no definite violation is possible")
		}
		where := rapid.SampledFrom([]string{"after a gap", "fresh start", "over 2L + L·2G/W"}).Draw(t, "where")
		h, log := plantHistory(t, c, where != "after a gap")
		end := int64(1_700_000_000_000_000)
		if len(h.t) > 0 {
			end = h.t[len(h.t)-1] + 50 // the largest spread
		}
		var start int64
		n := c.Limit + 1
		sub := uint32(rapid.IntRange(0, 2).Draw(t, "subject"))
		switch where {
		case "after a gap":
			// A request before the gap: without one, a window may have begun before the log.
			log.Events = append(log.Events, mustEvent(end-log.Base, end-log.Base, sub, 0, 1, Denied))
			start = end + G + W + G + rapid.Int64Range(1, 3*W).Draw(t, "gap")
		case "fresh start":
			start = 1_700_000_000_000_000 - 100 - room - G - 2*W
			log.Fresh = true
		case "over 2L + L·2G/W":
			// At one instant, widened to 2G: condition (b) needs W·n > 2LW + L·2G.
			start = 1_700_000_000_000_000 + rapid.Int64Range(0, end-1_700_000_000_000_000).Draw(t, "at")
			n = (2*c.Limit*W+2*c.Limit*G)/W + 1
			room = 0
		}
		for i := range n {
			lo := start + rapid.Int64Range(0, room).Draw(t, fmt.Sprint("plo", i))
			hi := lo + exactWidth(rapid.Int64Range(0, start+room-lo).Draw(t, fmt.Sprint("phi", i)))
			log.Events = append(log.Events, mustEvent(lo-log.Base, hi-log.Base, sub, 0, 1, Admitted))
		}
		rep, err := Check(c, log)
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		if rep.Limits[0].Definite == 0 {
			t.Fatalf("%s: planted violation (%s, %d permits from %d in %d µs) not found", c, where, n, start, room)
		}
		if v := JudgeWith(rep, Warnings{Behind: rapid.Bool().Draw(t, "behind")}); v.Verdict != Fail {
			t.Fatalf("JudgeWith = %+v; want fail", v)
		}
	})
}

// TestFirstHitPlantedSustainedViolationFound: a rate sustained above L/W among correct
// requests, unknown outcomes included, is a definite violation once it beats the allowance of
// condition (b), 2L + L·span/W: n admissions every d < W/L µs (jitter J) break it when
// W·n > 2LW + L·((n−1)·d + J + 2G).
func TestFirstHitPlantedSustainedViolationFound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := firstHitContract(t)
		W, G, L := c.Window.Microseconds(), c.Granularity.Microseconds(), c.Limit
		d := W / (L * rapid.Int64Range(2, 4).Draw(t, "speed"))
		if d == 0 {
			t.Skip("window too short for a rate above L/W in whole µs")
		}
		_, log := plantHistory(t, c, true)
		jitter := rapid.Int64Range(0, d).Draw(t, "jitter")
		n := (2*L*W+L*(jitter+2*G-d))/(W-L*d) + 1
		if W*n <= 2*L*W+L*((n-1)*d+jitter+2*G) {
			t.Fatalf("%d admissions every %d µs do not break the allowance", n, d)
		}
		if n > 2000 {
			t.Skip("too many admissions to plant")
		}
		start := int64(1_700_000_000_000_000) + rapid.Int64Range(0, 100*W).Draw(t, "at")
		for i := range n {
			a := rapid.Int64Range(0, jitter).Draw(t, fmt.Sprint("a", i))
			lo := start + i*d + a
			hi := lo + exactWidth(rapid.Int64Range(0, jitter-a).Draw(t, fmt.Sprint("b", i)))
			log.Events = append(log.Events, mustEvent(lo-log.Base, hi-log.Base, 1, 0, 1, Admitted))
		}
		rep, err := Check(c, log)
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		l := rep.Limits[0]
		if l.Definite == 0 || l.Definite == l.Chained {
			t.Fatalf("%s: sustained violation (%d every %d µs, jitter %d) not found by condition (b): definite %d chained %d",
				c, n, d, jitter, l.Definite, l.Chained)
		}
		// Found without the chain, it fails even with dropped outcomes.
		if v := JudgeWith(rep, Warnings{Dropped: 3}); v.Verdict != Fail {
			t.Fatalf("JudgeWith = %+v; want fail", v)
		}
	})
}

// printTime writes t (µs since the epoch) as a script computes and prints it: in unit, as a
// float64 from TIME's seconds and microseconds, with format ("%.14g" is Lua's tostring).
func printTime(t int64, unit time.Duration, format string) string {
	sec, usec := float64(t/1_000_000), float64(t%1_000_000)
	var v float64
	switch unit {
	case time.Second:
		v = sec + usec/1e6
	case time.Millisecond:
		v = sec*1e3 + usec/1e3
	default:
		v = sec*1e6 + usec
	}
	return fmt.Sprintf(format, v)
}

// TestFloatTimeWidening: a correct history whose decision times are known only as a script
// printed them (Lua's tostring keeps 14 significant digits: "1.7955344972883e+15" µs), each
// widened to the interval its digits allow (algorithms.ParseTime), never has a definite
// violation, for every contract kind.
func TestFloatTimeWidening(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var c algorithms.Contract
		var m algorithms.Model
		switch kind := rapid.SampledFrom([]algorithms.ContractKind{algorithms.SlidingWindow, algorithms.FixedWindow,
			algorithms.TokenBucket, algorithms.FirstHitWindow}).Draw(t, "kind"); kind {
		case algorithms.FirstHitWindow:
			c = firstHitContract(t)
			c.Window *= time.Duration(rapid.SampledFrom([]int64{1, 100}).Draw(t, "scale"))
			c.Granularity = 0
			m = algorithms.NewFirstHitModel(algorithms.Limit{Limit: c.Limit, Window: c.Window})
		default:
			c = genScaledContract(t, "")
			for c.Kind != kind {
				c = genScaledContract(t, "again")
			}
			c.Granularity, c.Scope = 0, algorithms.PerSubject
			m = newRefLimiter(c)
		}
		maxGap := max(c.Window, c.RefillPer).Microseconds()/3 + 1
		h := genArrivals(t, rapid.IntRange(0, 200).Draw(t, "n"), 1_795_534_497_000_000, maxGap)
		h.decide(t, m, 1)
		unit := rapid.SampledFrom([]time.Duration{time.Microsecond, time.Millisecond, time.Second}).Draw(t, "unit")
		format := rapid.SampledFrom([]string{"%.14g", "%.14g", "%.17g", "%.6f", "%.3f", "%.9f"}).Draw(t, "format")
		log := &Log{Subjects: h.subjects, Clients: h.clients, Base: h.base, Fresh: true}
		for i, x := range h.x {
			text := printTime(x, unit, format)
			lo, hi, err := algorithms.ParseTime(text, unit)
			if err != nil || lo > x || x > hi {
				t.Fatalf("ParseTime(%q, %s) = [%d, %d], %v; want an interval holding %d", text, unit, lo, hi, err, x)
			}
			k := Denied
			if h.admitted[i] {
				k = Admitted
			}
			log.Events = append(log.Events, mustEvent(lo-log.Base, hi-log.Base, uint32(h.subject[i]), uint16(h.client[i]), uint16(h.cost[i]), k))
		}
		rep, err := Check(c, log)
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		if l := rep.Limits[0]; l.Definite > 0 {
			t.Fatalf("%s, times printed %s in %s: %d definite violations; worst %+v", c, format, unit, l.Definite, l.Worst)
		}
	})
}

// TestFirstHitWithOtherLimits: a first-hit-window limit among others (Also) is checked as if
// it were alone, and so are the others, whatever the order: its check sorts the unknown, denied
// and failed requests, which the others' checks also use.
func TestFirstHitWithOtherLimits(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cs := make([]algorithms.Contract, rapid.IntRange(2, 4).Draw(t, "limits"))
		for i := range cs {
			if rapid.Bool().Draw(t, fmt.Sprint("firsthit", i)) {
				cs[i] = genFirstHit(t, fmt.Sprint(i))
				cs[i].Window *= 10
			} else {
				cs[i] = genContract(t, fmt.Sprint(i))
			}
			cs[i].Limit *= 4
			cs[i].Capacity *= 4
		}
		log := genWideLog(t, 400, rapid.Int64Range(1, 3).Draw(t, "step"))
		log.Fresh = rapid.Bool().Draw(t, "fresh")
		all := cs[0]
		all.Also = cs[1:]
		rep, err := Check(all, cloneLog(log))
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		for i, c := range cs {
			alone, err := Check(c, cloneLog(log))
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if diff := cmp.Diff(alone.Limits[0], rep.Limits[i]); diff != "" {
				t.Fatalf("limit %d, %s: (-alone +with the others)\n%s", i, c, diff)
			}
		}
	})
}

// TestFirstHitExactWhenCertain: with one world (exact times, no granularity, a fresh log,
// every request admitted or denied), the windows are known, and Check reports a definite and
// a possible violation exactly when one of them holds more than L permits, on logs of hundreds
// of requests.
func TestFirstHitExactWhenCertain(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := firstHitContract(t)
		c.Granularity = 0
		n := rapid.IntRange(1, 400).Draw(t, "n")
		log := &Log{Subjects: []string{"s"}, Clients: []string{"c"}, Base: genBase(t), Fresh: true}
		var now int64
		for i := range n {
			now += rapid.Int64Range(0, c.Window.Microseconds()/3+1).Draw(t, fmt.Sprint("gap", i))
			k := rapid.SampledFrom([]Kind{Admitted, Admitted, Denied}).Draw(t, fmt.Sprint("kind", i))
			log.Events = append(log.Events, mustEvent(now, now, 0, 0, uint16(rapid.IntRange(1, 3).Draw(t, fmt.Sprint("p", i))), k))
		}
		// The windows, by the contract's definition.
		over := false
		var start, used int64
		for i, e := range log.Events {
			if i == 0 || e.Lo() >= start+c.Window.Microseconds() {
				start, used = e.Lo(), 0
			}
			if e.Kind() == Admitted {
				used += int64(e.Permits)
				over = over || used > c.Limit
			}
		}
		rep, err := Check(c, cloneLog(log))
		if err != nil {
			t.Fatal(err)
		}
		if l := rep.Limits[0]; (l.Definite > 0) != over || (l.Possible > 0) != over {
			t.Fatalf("%s: a window over the limit: %v; Check = definite %d possible %d", c, over, l.Definite, l.Possible)
		}
	})
}

// TestFirstHitCompleteness measures how many of the definite violations over every world
// Check's sufficient conditions find, and how many of its possible violations some world
// has, on 500 small random histories of every kind of request (fixed seed), and fails if
// either falls well below what it was when the conditions were written (0.95 and 0.99).
func TestFirstHitCompleteness(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 3))
	var truthDef, foundDef, foundPos, truePos int
	for range 500 {
		c := algorithms.Contract{Kind: algorithms.FirstHitWindow, Limit: 1 + rng.Int64N(3), Window: us(1 + rng.Int64N(12)),
			Granularity: us(rng.Int64N(2))}
		log := &Log{Subjects: []string{"a"}, Clients: []string{"x"}, Fresh: rng.IntN(2) == 0}
		maybe := 0
		for range 3 + rng.IntN(4) {
			lo := rng.Int64N(41)
			width := []int64{0, 0, 0, 1, 2, 4, 9}[rng.IntN(7)]
			k := []Kind{Admitted, Admitted, Admitted, Denied, Denied, Unknown, Failed}[rng.IntN(7)]
			if k == Unknown || k == Failed {
				if maybe == 2 {
					k = Denied
				}
				maybe++
			}
			log.Events = append(log.Events, mustEvent(lo, lo+width, 0, 0, uint16(1+rng.IntN(2)), k))
		}
		rep, err := Check(c, cloneLog(log))
		if err != nil {
			t.Fatal(err)
		}
		definite, possible := fhWorldsTruth(c, log)
		l := rep.Limits[0]
		if definite {
			truthDef++
			if l.Definite > 0 {
				foundDef++
			}
		}
		if l.Possible > 0 {
			foundPos++
			if possible {
				truePos++
			}
		}
	}
	def, pos := float64(foundDef)/float64(truthDef), float64(truePos)/float64(foundPos)
	t.Logf("definite: %d of %d found (%.2f); possible: %d of %d reported have a violating world (%.2f)",
		foundDef, truthDef, def, truePos, foundPos, pos)
	if def < 0.9 || pos < 0.97 {
		t.Errorf("completeness fell: definite %.2f (was 0.95), possible %.2f (was 0.99)", def, pos)
	}
}
