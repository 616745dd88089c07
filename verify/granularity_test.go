package verify

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/limitbench/limitbench/algorithms"
)

// This file tests sliding-window's definite conditions under a coarse granularity (2G ≥ W, so
// K = ⌊2G/W⌋ + 1 > 1; see the package doc): that they are sound against the contract itself,
// that a limiter which keeps its limits on a clock of whole seconds is never flagged, and that
// they prove the flaws of seed 004's published design (resource-consumer-published), whose
// contract has a granularity of 1 s equal to its window.

// safePlacement reports whether some placement of the admissions evs (one scope of log) at
// integer instants of their widened intervals keeps sliding-window contract c, by a depth-first
// search that drops a partial placement as soon as one of its windows holds more than L
// (adding admissions never empties a window). Integer instants suffice: flooring a placement
// that keeps the contract keeps it too (a window (t−W, t] of the floors holds the admissions of
// a real interval [a, a+W), itself inside a real window (a−ε, a+W−ε] for a small ε).
func safePlacement(c algorithms.Contract, log *Log, evs []Event) bool {
	g, w := c.Granularity.Microseconds(), c.Window.Microseconds()
	xs := make([]int64, 0, len(evs))
	ps := make([]int64, 0, len(evs))
	// ok reports whether the last admission placed keeps every window that contains it, or
	// starts just after it, within L: a window that was within L before only gains it.
	ok := func() bool {
		last := xs[len(xs)-1]
		for _, end := range xs {
			if end < last || end-w >= last {
				continue
			}
			var sum int64
			for i, x := range xs {
				if x > end-w && x <= end {
					sum += ps[i]
				}
			}
			if sum > c.Limit {
				return false
			}
		}
		return true
	}
	var place func(i int) bool
	place = func(i int) bool {
		if i == len(evs) {
			return true
		}
		e := evs[i]
		for x := log.Base + e.Lo() - g; x <= log.Base+e.Hi()+g; x++ {
			xs, ps = append(xs, x), append(ps, int64(e.Permits))
			good := ok() && place(i+1)
			xs, ps = xs[:len(xs)-1], ps[:len(ps)-1]
			if good {
				return true
			}
		}
		return false
	}
	return place(0)
}

// TestDefiniteSlidingIsEveryPlacement: whenever Check reports a definite violation of a
// sliding-window contract, some scope has no placement that keeps the contract, found by an
// exhaustive search over every placement: conditions (i) and (ii) never flag a history the
// contract allows, at any granularity, coarse ones (K up to 13) included. The search also
// counts the histories that every placement breaks but Check does not flag (the conditions are
// sufficient, not necessary); those are reported, not failed.
func TestDefiniteSlidingIsEveryPlacement(t *testing.T) {
	var flagged, coarse, missed, cases int
	rapid.Check(t, func(t *rapid.T) {
		c := algorithms.Contract{
			Kind:        algorithms.SlidingWindow,
			Limit:       rapid.Int64Range(1, 4).Draw(t, "limit"),
			Window:      us(rapid.Int64Range(1, 8).Draw(t, "window")),
			Granularity: us(rapid.Int64Range(0, 6).Draw(t, "granularity")),
		}
		log := &Log{Subjects: []string{"a"}, Clients: []string{"x"}, Base: genBase(t)}
		for i := range rapid.IntRange(1, 6).Draw(t, "events") {
			lo := rapid.Int64Range(0, 10).Draw(t, fmt.Sprint("lo", i))
			width := rapid.SampledFrom([]int64{0, 0, 0, 1, 3}).Draw(t, fmt.Sprint("width", i))
			permits := uint16(rapid.IntRange(1, 5).Draw(t, fmt.Sprint("permits", i)))
			log.Events = append(log.Events, mustEvent(lo, lo+width, 0, 0, permits, Admitted))
		}
		rep, err := Check(c, cloneLog(log))
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		safe := safePlacement(c, log, log.Events)
		cases++
		if rep.Limits[0].Definite > 0 {
			flagged++
			if slidingK(c) > 1 {
				coarse++
			}
			if safe {
				t.Fatalf("%s: definite violation %+v, but a placement keeps the contract", c, rep.Limits[0].Worst)
			}
		} else if !safe {
			missed++
		}
	})
	t.Logf("%d histories: %d flagged (%d with K > 1), %d broken by every placement but not flagged", cases, flagged, coarse, missed)
	if coarse == 0 {
		t.Errorf("no history with a coarse granularity was flagged: the test does not reach conditions (i) with K > 1")
	}
}

// publishedRC is seed 004's design as resource_consumer_published.lua runs it, for the tests:
// sorted sets scored by whole seconds of the clock, entries scored at or before now_s − W_s
// removed (W_s the window rounded up to whole seconds), the resource refused only when its
// count equals its limit, the consumer when its count before adding is at its limit, and an
// admission adds cost entries to both. Member collisions and the million-entry guard are left
// out. It implements algorithms.Model.
type publishedRC struct {
	rlimit, climit, ws int64
	resource           map[string][]int64 // scores (seconds), one per permit
	consumer           map[string][]int64
}

func newPublishedRC(l algorithms.Limit) *publishedRC {
	return &publishedRC{rlimit: l.Limit, climit: l.Consumer(), ws: int64((l.Window + time.Second - 1) / time.Second),
		resource: map[string][]int64{}, consumer: map[string][]int64{}}
}

// Decide implements algorithms.Model.
func (m *publishedRC) Decide(subject, client string, cost, t int64) bool {
	sec := floorDiv(t, 1_000_000)
	keep := func(s []int64) []int64 {
		return slices.DeleteFunc(s, func(x int64) bool { return x <= sec-m.ws })
	}
	r := keep(m.resource[subject])
	m.resource[subject] = r
	if int64(len(r)) == m.rlimit {
		return false
	}
	ck := subject + "\x00" + client
	cs := keep(m.consumer[ck])
	m.consumer[ck] = cs
	if int64(len(cs)) >= m.climit {
		return false
	}
	for range cost {
		m.resource[subject] = append(m.resource[subject], sec)
		m.consumer[ck] = append(m.consumer[ck], sec)
	}
	return true
}

// coarseHistory is a schedule of requests at true times (µs since the Unix epoch), the times a
// limiter read (within 1 s of them), and the limiter's decisions.
type coarseHistory struct {
	subjects, clients []string
	t, x              []int64
	subject, client   []int
	cost              []int64
	admitted          []bool
}

// add appends a request for subject s from client c at true time t.
func (h *coarseHistory) add(t int64, s, c int, cost int64) {
	h.t = append(h.t, t)
	h.subject, h.client, h.cost = append(h.subject, s), append(h.client, c), append(h.cost, cost)
}

// decide runs m over h in time order at the readings of a clock of whole seconds: t rounded
// down (as TIME's seconds are), up, or to the nearest second, one mode for the whole history.
func (h *coarseHistory) decide(m algorithms.Model, mode int) {
	const sec = 1_000_000
	idx := make([]int, len(h.t))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(h.t[a], h.t[b]) })
	h.x, h.admitted = make([]int64, len(h.t)), make([]bool, len(h.t))
	for _, i := range idx {
		x := floorDiv(h.t[i], sec) * sec
		switch {
		case mode == 1 && x != h.t[i]:
			x += sec
		case mode == 2:
			x = floorDiv(h.t[i]+sec/2, sec) * sec
		}
		h.x[i] = x
		h.admitted[i] = m.Decide(h.subjects[h.subject[i]], h.clients[h.client[i]], h.cost[i], x)
	}
}

// log returns h's admission log as a server-clock algorithm's decisions are logged: each at the
// exact true time (µs), or within spread µs around it.
func (h *coarseHistory) log(t *rapid.T, base, spread int64) *Log {
	log := &Log{Subjects: h.subjects, Clients: h.clients, Base: base}
	for i, ti := range h.t {
		lo, hi := ti-base, ti-base
		if spread > 0 {
			lo -= rapid.Int64Range(0, spread).Draw(t, fmt.Sprint("lo", i))
			hi += rapid.Int64Range(0, spread).Draw(t, fmt.Sprint("hi", i))
		}
		k := Denied
		if h.admitted[i] {
			k = Admitted
		}
		log.Events = append(log.Events, mustEvent(lo, hi, uint32(h.subject[i]), uint16(h.client[i]), uint16(h.cost[i]), k))
	}
	return log
}

// genCoarseLimit draws a limit of whole seconds or not, with or without a consumer limit.
func genCoarseLimit(t *rapid.T) algorithms.Limit {
	return algorithms.Limit{
		Limit:         rapid.Int64Range(1, 8).Draw(t, "limit"),
		ConsumerLimit: rapid.Int64Range(0, 5).Draw(t, "consumer"),
		Window: rapid.SampledFrom([]time.Duration{time.Second, time.Second, 2 * time.Second,
			1500 * time.Millisecond, 300 * time.Millisecond}).Draw(t, "window"),
	}
}

// genCoarseTraffic draws about n requests over a few seconds from origin, in bursts of 1 to 12
// (at one instant, or 1 µs, 100 µs or 20 ms apart) that start anywhere or within 3 ms of a whole
// second (where a clock of whole seconds turns over), from up to 6 clients on 2 subjects, costs
// 1 to 3.
func genCoarseTraffic(t *rapid.T, origin int64, n int) *coarseHistory {
	h := &coarseHistory{subjects: []string{"s0", "s1"}, clients: []string{"c0", "c1", "c2", "c3", "c4", "c5"}}
	for i := 0; i < n; {
		at := origin + rapid.Int64Range(0, 4_000_000).Draw(t, fmt.Sprint("at", i))
		if rapid.Bool().Draw(t, fmt.Sprint("tick", i)) {
			// Within 3 ms of a whole second.
			at = floorDiv(at, 1_000_000)*1_000_000 + rapid.Int64Range(-3000, 3000).Draw(t, fmt.Sprint("near", i))
		}
		s := rapid.IntRange(0, 1).Draw(t, fmt.Sprint("s", i))
		size := rapid.IntRange(1, 12).Draw(t, fmt.Sprint("size", i))
		step := rapid.SampledFrom([]int64{0, 1, 100, 20_000}).Draw(t, fmt.Sprint("step", i))
		for j := range size {
			h.add(at+int64(j)*step, s, rapid.IntRange(0, 5).Draw(t, fmt.Sprint("c", i, ".", j)),
				int64(rapid.SampledFrom([]int{1, 1, 1, 2, 3}).Draw(t, fmt.Sprint("cost", i, ".", j))))
		}
		i += size
	}
	return h
}

// TestCoarseClockLimiterNeverFlagged: a limiter that keeps resource-consumer's two limits
// exactly (the corrected algorithm's reference model) but reads a clock of whole seconds
// (rounded down as TIME's seconds are, up, or to the nearest) is never flagged against the
// contract resource-consumer-published declares (granularity 1 s), whatever the schedule,
// however the times are logged; and ApproachOf never scores it above 1.
func TestCoarseClockLimiterNeverFlagged(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := genCoarseLimit(t)
		c, err := algorithms.ResourceConsumerPublished{}.Contract(l)
		if err != nil {
			t.Fatalf("Contract: %v", err)
		}
		const origin = 1_700_000_000_000_000
		h := genCoarseTraffic(t, origin, rapid.IntRange(0, 200).Draw(t, "n"))
		h.decide(algorithms.ResourceConsumer{}.Model(l), rapid.IntRange(0, 2).Draw(t, "rounding"))
		spread := rapid.SampledFrom([]int64{0, 0, 1, 1000, 300_000}).Draw(t, "spread")
		log := h.log(t, origin-rapid.Int64Range(0, 1<<20).Draw(t, "base"), spread)
		rep, err := Check(c, cloneLog(log))
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		for _, lr := range rep.Limits {
			if lr.Definite > 0 {
				t.Fatalf("%s: %d definite violations by a correct limiter on whole seconds; worst %+v", lr.Contract, lr.Definite, lr.Worst)
			}
		}
		if v := Judge(rep, false); v.Verdict == Fail {
			t.Fatalf("Judge = %+v", v)
		}
		ap, err := ApproachOf(c, cloneLog(log))
		if err != nil {
			t.Fatalf("ApproachOf: %v", err)
		}
		if ap.Score > 1 {
			t.Fatalf("%s: a correct limiter on whole seconds scores %v; %+v", c, ap.Score, ap.Limits)
		}
	})
}

// TestCoarseClockFlawFound: the published design's counting flaw, planted after random traffic
// on a subject of its own, is always proven. Within one whole second (two, for a window of 2 s)
// L − 1 consumers take a permit each and one more takes 2, so the resource's count jumps from
// L − 1 to L + 1 and is never equal to L again; then m ≥ 2L new consumers are admitted too: L +
// 1 + m > 3L permits (> 2L for 2 s) within less than a second, condition (i) with K = 3 (K = 2).
// The verdict is fail, Worst names the burst with its allowance K·L, and ApproachOf scores it
// above 1. The same traffic through the corrected model has no violation.
func TestCoarseClockFlawFound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := genCoarseLimit(t)
		l.Window = rapid.SampledFrom([]time.Duration{time.Second, 2 * time.Second}).Draw(t, "window")
		c, err := algorithms.ResourceConsumerPublished{}.Contract(l)
		if err != nil {
			t.Fatalf("Contract: %v", err)
		}
		const origin = 1_700_000_000_000_000
		h := genCoarseTraffic(t, origin, rapid.IntRange(0, 100).Draw(t, "n"))
		// The planted burst, on subject "hot" (its own), from consumers of its own.
		h.subjects = append(h.subjects, "hot")
		hot := len(h.subjects) - 1
		sec := origin + 1_000_000*rapid.Int64Range(1, 5).Draw(t, "second")
		at := sec + rapid.Int64Range(0, 50_000).Draw(t, "start")
		step := rapid.Int64Range(0, 10_000).Draw(t, "step")
		m := int(2*l.Limit) + rapid.IntRange(0, 3).Draw(t, "more")
		var n int
		next := func(cost int64) {
			h.clients = append(h.clients, fmt.Sprint("hot", n))
			h.add(at+int64(n)*step, hot, len(h.clients)-1, cost)
			n++
		}
		for range l.Limit - 1 {
			next(1)
		}
		next(2)
		for range m {
			next(1)
		}
		if span := int64(n-1) * step; span >= 950_000 {
			t.Fatalf("the burst spans %d µs; the test needs it within one second", span)
		}
		h.decide(newPublishedRC(l), 0) // TIME's seconds, rounded down
		for i, s := range h.subject {
			if s == hot && !h.admitted[i] {
				t.Fatalf("the published design denied request %d of the burst", i)
			}
		}
		spread := rapid.SampledFrom([]int64{0, 0, 1, 1000}).Draw(t, "spread")
		log := h.log(t, origin-rapid.Int64Range(0, 1<<20).Draw(t, "base"), spread)
		rep, err := Check(c, cloneLog(log))
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		res := rep.Limits[0]
		k := int64(3)
		if l.Window == 2*time.Second {
			k = 2
		}
		// Condition (i) over the whole burst: its permits over K·L. (The random traffic may
		// break the contract too, the flaw being the design's, so only hot's are looked at.)
		want := l.Limit + 1 + int64(m) - k*l.Limit
		var got int64
		for _, v := range res.Violations {
			if v.Subject == "hot" {
				got = max(got, v.Excess)
			}
		}
		if got < want || res.Worst.Excess < want {
			t.Fatalf("%s: resource limit %+v; want a definite violation on hot by %d permits over %d", c, res, want, k*l.Limit)
		}
		if v := Judge(rep, false); v.Verdict != Fail {
			t.Fatalf("Judge = %+v; want fail", v)
		}
		ap, err := ApproachOf(c, cloneLog(log))
		if err != nil {
			t.Fatalf("ApproachOf: %v", err)
		}
		if ap.Score <= 1 || ap.Limits[0].Score <= 1 {
			t.Fatalf("%s: the flaw scores %v (resource %v); want above 1", c, ap.Score, ap.Limits[0].Score)
		}

		// The corrected limiter, on the same clock and traffic, keeps the contract.
		h.decide(algorithms.ResourceConsumer{}.Model(l), 0)
		rep, err = Check(c, h.log(t, origin, 0))
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		if rep.Definite() > 0 {
			t.Fatalf("%s: the corrected model is flagged: %+v", c, rep.Limits)
		}
	})
}

// TestCoarseClockTable: what the contract of resource-consumer-published (granularity 1 s,
// window 1 s, K = 3) lets Check prove, on hand-made histories of exact decision times.
func TestCoarseClockTable(t *testing.T) {
	const sec = int64(1_000_000)
	l := algorithms.Limit{Limit: 5, ConsumerLimit: 3, Window: time.Second}
	c, err := algorithms.ResourceConsumerPublished{}.Contract(l)
	if err != nil {
		t.Fatal(err)
	}
	at := func(t, permits int64, subject uint32, client uint16) Event {
		return mustEvent(t, t, subject, client, uint16(permits), Admitted)
	}
	// burst returns n admissions of one permit each from distinct clients, from t on, step µs
	// apart.
	burst := func(t, step int64, n int) []Event {
		var out []Event
		for i := range n {
			out = append(out, at(t+int64(i)*step, 1, 0, uint16(i)))
		}
		return out
	}
	tests := []struct {
		name string
		ev   []Event
		// definite violations of the resource and of the consumer limit; the worst excess of
		// each, and the score
		resource, consumer int64
		excess             [2]int64
		score              float64
	}{
		{"2L across a tick: what a clock of whole seconds allows", append(burst(sec-1000, 100, 5), burst(sec+1000, 100, 5)...),
			0, 0, [2]int64{}, 10.0 / 15},
		{"3L at one instant: still allowed (L at t−1s, t, t+1s)", burst(sec/2, 0, 15), 0, 0, [2]int64{}, 1},
		{"3L + 1 within a second", burst(sec/2, 60_000, 16), 1, 0, [2]int64{1}, 16.0 / 15},
		{"3L + 1 over a second and more: not proven", burst(0, 70_000, 16), 0, 0, [2]int64{}, 15.0 / 15},
		{"one admission of L + 1", []Event{at(0, 6, 0, 0)}, 1, 1, [2]int64{1, 3}, 2},
		{"one admission of L: the consumer's limit 3 is broken", []Event{at(0, 5, 0, 0)}, 0, 1, [2]int64{0, 2}, 5.0 / 3},
		{"the == check jumped, then 11 more consumers", append(append(burst(0, 1000, 4), at(5000, 2, 0, 10)), burst(6000, 1000, 11)...),
			2, 0, [2]int64{2}, 17.0 / 15}, // sets of 16 and 17 permits end at 15 ms and 16 ms
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clients := make([]string, 32)
			for i := range clients {
				clients[i] = fmt.Sprint("c", i)
			}
			log := &Log{Subjects: []string{"s"}, Clients: clients, Base: 1_700_000_000 * sec, Events: tt.ev}
			rep, err := Check(c, cloneLog(log))
			if err != nil {
				t.Fatal(err)
			}
			r, cons := rep.Limits[0], rep.Limits[1]
			if r.Definite != tt.resource || cons.Definite != tt.consumer || r.Worst.Excess != tt.excess[0] || cons.Worst.Excess != tt.excess[1] {
				t.Errorf("resource: %d definite, worst %+v; consumer: %d definite, worst %+v; want %d and %d, excess %v",
					r.Definite, r.Worst, cons.Definite, cons.Worst, tt.resource, tt.consumer, tt.excess)
			}
			ap, err := ApproachOf(c, cloneLog(log))
			if err != nil {
				t.Fatal(err)
			}
			if diff := ap.Score - tt.score; diff > 1e-12 || diff < -1e-12 {
				t.Errorf("score %v; want %v (%+v)", ap.Score, tt.score, ap.Limits)
			}
		})
	}
}
