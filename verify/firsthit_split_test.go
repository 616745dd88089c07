package verify

import (
	"cmp"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/limitbench/limitbench/algorithms"
)

// checkN runs prop with rapid until at least n cases have passed (a fifth of that with
// -short): each rapid.Check runs -rapid.checks cases from a fresh seed. It returns the cases run.
func checkN(t *testing.T, n int, prop func(*rapid.T)) int {
	t.Helper()
	if testing.Short() {
		n /= 5
	}
	var passed atomic.Int64
	for int(passed.Load()) < n && !t.Failed() {
		rapid.Check(t, func(rt *rapid.T) {
			prop(rt)
			passed.Add(1)
		})
	}
	t.Logf("%d cases (-rapid.checks %s each round)", passed.Load(), flag.Lookup("rapid.checks").Value)
	return int(passed.Load())
}

// expiryLimiter decides requests as a first-hit script on Redis does, on a clock of ticks of g
// µs (Redis's milliseconds, scaled down for the brute force): a key created at the tick m of its
// first request lives while the clock reads at most m + W/g (Redis expires a key once now > its
// expiry), and counts the permits it admitted (GET, then INCRBY on admission). With pttlZero it
// has the flaw of issue 29: the script denies by returning the key's PTTL and the caller admits
// when the reply is 0, so a request that reaches a full window in the key's last tick (PTTL 0)
// is admitted and not counted.
type expiryLimiter struct {
	limit, ticks, g int64
	pttlZero        bool
	keys            map[string][2]int64 // the tick it was created at, its count
}

func newExpiryLimiter(c algorithms.Contract, g int64, pttlZero bool) *expiryLimiter {
	return &expiryLimiter{limit: c.Limit, ticks: c.Window.Microseconds() / g, g: g, pttlZero: pttlZero, keys: map[string][2]int64{}}
}

func (r *expiryLimiter) Decide(subject, _ string, cost, t int64) bool {
	now := floorDiv(t, r.g)
	k, ok := r.keys[subject]
	if !ok || now > k[0]+r.ticks {
		k = [2]int64{now, 0}
	}
	defer func() { r.keys[subject] = k }()
	if k[1]+cost <= r.limit {
		k[1] += cost
		return true
	}
	return r.pttlZero && now == k[0]+r.ticks
}

// expiry returns the first µs of the last tick of subject's key: a request then reaches the
// key at PTTL 0.
func (r *expiryLimiter) expiry(subject string) int64 { return (r.keys[subject][0] + r.ticks) * r.g }

// flawHistory is a history of bursts against an expiryLimiter: from a fresh start, or after a
// quiet spell longer than W that follows an earlier request, each of windows windows takes
// L single-permit requests within its first quarter, a few more before it ends, and one request
// in its key's last tick (a client retrying after the PTTL it was told), after which the next
// window's burst begins. Unless small (at most 6 requests, one window, for the brute force),
// another subject's requests are mixed in. It returns the true times and decisions, as
// trueHistory.
func flawHistory(t *rapid.T, c algorithms.Contract, lim *expiryLimiter, windows int, small bool) *trueHistory {
	W, L := c.Window.Microseconds(), c.Limit
	h := &trueHistory{subjects: []string{"s", "other"}, clients: []string{"c0", "c1"}, base: 1_700_000_000_000_000}
	add := func(t int64, subject int) {
		h.t = append(h.t, t)
		h.subject, h.client, h.cost = append(h.subject, subject), append(h.client, len(h.t)%2), append(h.cost, 1)
	}
	now := h.base + rapid.Int64Range(0, W).Draw(t, "start")
	quiet := rapid.Bool().Draw(t, "quiet")
	if quiet {
		add(now, 0)
		now += W + 2*lim.g + rapid.Int64Range(1, W).Draw(t, "gap")
	}
	for k := range windows {
		open := now
		for i := range L {
			now = open + rapid.Int64Range(0, W/4).Draw(t, fmt.Sprintf("burst%d.%d", k, i))
			add(now, 0)
			if !small && rapid.Bool().Draw(t, fmt.Sprintf("noise%d.%d", k, i)) {
				add(now+rapid.Int64Range(0, W).Draw(t, fmt.Sprintf("at%d.%d", k, i)), 1)
			}
			h.sortAndDecide(lim)
		}
		more := 2
		if small {
			more = int(2 - c.Limit) // at most 6 requests for the brute force
			if quiet {
				more--
			}
		}
		for i := range rapid.IntRange(0, max(more, 0)).Draw(t, fmt.Sprintf("more%d", k)) {
			add(open+W/4+rapid.Int64Range(0, W/2).Draw(t, fmt.Sprintf("late%d.%d", k, i)), 0)
		}
		h.sortAndDecide(lim)
		retry := lim.expiry("s") + rapid.Int64Range(0, lim.g-1).Draw(t, fmt.Sprintf("retry%d", k))
		add(retry, 0)
		now = (retry/lim.g+1)*lim.g + rapid.Int64Range(0, W/8).Draw(t, fmt.Sprintf("next%d", k))
	}
	for i := range L {
		add(now+rapid.Int64Range(0, W/4).Draw(t, fmt.Sprintf("last%d", i)), 0)
	}
	h.sortAndDecide(lim)
	return h
}

// sortAndDecide orders h's requests by time (stably) and decides them all again with a fresh
// copy of lim's settings, leaving lim in the state of the last: the bursts are drawn knowing
// where the keys expire.
func (h *trueHistory) sortAndDecide(lim *expiryLimiter) {
	for i := 1; i < len(h.t); i++ {
		for j := i; j > 0 && h.t[j] < h.t[j-1]; j-- {
			h.t[j], h.t[j-1] = h.t[j-1], h.t[j]
			h.subject[j], h.subject[j-1] = h.subject[j-1], h.subject[j]
			h.client[j], h.client[j-1] = h.client[j-1], h.client[j]
			h.cost[j], h.cost[j-1] = h.cost[j-1], h.cost[j]
		}
	}
	lim.keys = map[string][2]int64{}
	h.x, h.admitted = h.x[:0], h.admitted[:0]
	for i, t := range h.t {
		h.x = append(h.x, t)
		h.admitted = append(h.admitted, lim.Decide(h.subjects[h.subject[i]], "", h.cost[i], t))
	}
}

// flawContract draws first-hit-window(L, W) with granularity g, a tick of the limiter's clock:
// for the brute force g = 1 µs and W of 6 to 12 ticks; else g = 1 ms and W of 20 ms to 1 s.
func flawContract(t *rapid.T, small bool) (algorithms.Contract, int64) {
	c := algorithms.Contract{Kind: algorithms.FirstHitWindow, Limit: rapid.Int64Range(1, 2).Draw(t, "limit")}
	g := int64(1000)
	if small {
		g = 1
		c.Window = us(rapid.Int64Range(6, 12).Draw(t, "ticks"))
	} else {
		c.Limit = rapid.Int64Range(1, 12).Draw(t, "limit")
		c.Window = time.Duration(rapid.SampledFrom([]int64{20, 100, 1000}).Draw(t, "window_ms")) * time.Millisecond
	}
	c.Granularity = us(g)
	return c, g
}

// exactLog logs h with every decision at its exact time, as a server clock shared with the
// harness gives it, Fresh unless the history begins with a quiet spell.
func (h *trueHistory) exactLogFresh(fresh bool) *Log {
	log := h.exactLog()
	log.Fresh = fresh
	return log
}

// TestFirstHitPTTLZeroFlagged (issue 29): histories of a first-hit script with the PTTL-0 flaw,
// whose windows each take their L permits early and one more in the key's last millisecond
// (then the next window's L), are definite violations: in every world the extra admission is
// either its window's (L+1)-th permit or opens the next window, which then holds L + 1. Check
// finds them by condition (d) and the verdict is fail; on histories small enough, the brute
// force over every world agrees that they are definite. The same schedules through the script
// without the flaw are never flagged.
func TestFirstHitPTTLZeroFlagged(t *testing.T) {
	checkN(t, 2000, func(t *rapid.T) {
		small := rapid.Bool().Draw(t, "small")
		c, g := flawContract(t, small)
		windows := 1
		if !small {
			windows = rapid.IntRange(1, 4).Draw(t, "windows")
		}
		h := flawHistory(t, c, newExpiryLimiter(c, g, true), windows, small)
		fresh := h.t[1]-h.t[0] <= c.Window.Microseconds()+2*g // no quiet spell
		log := h.exactLogFresh(fresh)
		rep, err := Check(c, cloneLog(log))
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		if l := rep.Limits[0]; l.Definite == 0 {
			t.Fatalf("%s G %s fresh %v: the PTTL-0 flaw's history was not flagged (possible %d); events %v", c, c.Granularity, fresh, l.Possible, log.Events)
		}
		if v := JudgeWith(rep, Warnings{}); v.Verdict != Fail {
			t.Fatalf("JudgeWith = %+v; want fail", v)
		}
		if small {
			if definite, _ := fhWorldsTruth(c, log); !definite {
				t.Fatalf("%s: the brute force finds a world that keeps the contract; events %v", c, log.Events)
			}
		}
		correct := flawHistory(t, c, newExpiryLimiter(c, g, false), windows, small)
		rep, err = Check(c, correct.exactLogFresh(fresh))
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		if l := rep.Limits[0]; l.Definite > 0 {
			t.Fatalf("%s: the correct script's history was flagged: %d definite, worst %+v", c, l.Definite, l.Worst)
		}
	})
}

// TestFirstHitCorrectNeverFlaggedOverEveryWorld: random histories of correct first-hit limiters
// (the exact reference model on a clock of the contract's granularity, and Redis's PEXPIRE
// script on ticks of it), logged with intervals widened around the true times and some outcomes
// unknown or failed, are never flagged, and the brute force over every world agrees that some
// world keeps the contract (the true one). At least 20,000 cases.
func TestFirstHitCorrectNeverFlaggedOverEveryWorld(t *testing.T) {
	checkN(t, 20_000, func(t *rapid.T) {
		c := algorithms.Contract{Kind: algorithms.FirstHitWindow, Limit: rapid.Int64Range(1, 3).Draw(t, "limit"),
			Window: us(rapid.Int64Range(2, 12).Draw(t, "window")), Granularity: us(rapid.Int64Range(0, 2).Draw(t, "g"))}
		var m algorithms.Model = algorithms.NewFirstHitModel(algorithms.Limit{Limit: c.Limit, Window: c.Window})
		if c.Granularity > 0 && rapid.Bool().Draw(t, "redis") {
			g := c.Granularity.Microseconds()
			c.Window = us(g * rapid.Int64Range(2, 6).Draw(t, "ticks"))
			m = newExpiryLimiter(c, g, false)
		}
		h := genArrivals(t, rapid.IntRange(1, 6).Draw(t, "n"), 1_700_000_000_000_000, c.Window.Microseconds()/2+1)
		for i := range h.subject {
			h.subject[i] = 0 // one scope: the brute force's cost grows with its size
		}
		h.decide(t, m, c.Granularity.Microseconds())
		log := h.log(t, rapid.SampledFrom([]int64{0, 1, 3}).Draw(t, "spread"))
		log.Fresh = rapid.Bool().Draw(t, "fresh")
		rep, err := Check(c, cloneLog(log))
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		if l := rep.Limits[0]; l.Definite > 0 {
			t.Fatalf("%s G %s fresh %v: %d definite violations of a correct limiter; worst %+v; events %v",
				c, c.Granularity, log.Fresh, l.Definite, l.Worst, log.Events)
		}
		if definite, _ := fhWorldsTruth(c, log); definite {
			t.Fatalf("%s: the brute force finds no world that keeps the contract in a correct limiter's history %v", c, log.Events)
		}
	})
}

// TestCheckFirstHitSplit: the case split of issue 29 at the smallest scale, and what condition
// (d) does not claim.
func TestCheckFirstHitSplit(t *testing.T) {
	const W = 10 * time.Microsecond
	c := withG(firstHit(1, W), time.Microsecond)
	tests := []struct {
		name              string
		fresh             bool
		from              int64
		events            []Event
		definite, chained int64
		worst             Where
	}{
		// Window 1 opens at 0 (±1); the extra admission at 10 (±1) is its second permit, or
		// opens window 2, which then holds 12 too: two windows, three permits.
		{name: "the extra admission in either window", fresh: true, events: []Event{adm(0), adm(10), adm(12)},
			definite: 1, chained: 1, worst: Where{Subject: "a", Lo: -1, Hi: 13, Permits: 3, Allowed: 2, Excess: 1}},
		{name: "the next window's permit too late for it", fresh: true, events: []Event{adm(0), adm(10), adm(22)}},
		{name: "not fresh: the first window's start is unknown", events: []Event{adm(0), adm(10), adm(12)}},
		{name: "after a quiet spell", events: []Event{denied(-20), adm(0), adm(10), adm(12)},
			definite: 1, chained: 1, worst: Where{Subject: "a", Lo: -1, Hi: 13, Permits: 3, Allowed: 2, Excess: 1}},
		{name: "From after the windows it needs", fresh: true, from: 11, events: []Event{adm(0), adm(10), adm(12)}},
		// Every boundary adds one: (d) finds the ends 13 and 23 alone, (b) 25, 35 and 37 too.
		{name: "each boundary again", fresh: true,
			events:   []Event{adm(0), adm(10), adm(12), adm(22), adm(24), adm(34), adm(36)},
			definite: 5, chained: 2, worst: Where{Subject: "a", Lo: -1, Hi: 37, Permits: 7, Allowed: 4, Excess: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := newLog(tt.events...)
			log.Fresh, log.From = tt.fresh, tt.from
			definite, _ := fhWorldsTruth(c, cloneLog(log))
			rep, err := Check(c, log)
			if err != nil {
				t.Fatal(err)
			}
			l := rep.Limits[0]
			if l.Definite != tt.definite || l.Chained != tt.chained {
				t.Errorf("Check = definite %d chained %d; want %d %d (every world violates: %v)", l.Definite, l.Chained, tt.definite, tt.chained, definite)
			}
			if l.Definite > 0 && !definite {
				t.Errorf("a world keeps the contract, yet %d definite violations", l.Definite)
			}
			if tt.worst.Excess > 0 && l.Worst != tt.worst {
				t.Errorf("Worst = %+v; want %+v", l.Worst, tt.worst)
			}
		})
	}
}

// issue29History is the run of issue 29 as a model: first-hit-window(10, 1s) on a 1 ms clock,
// open-loop Poisson arrivals at rate per second for seconds from 8 clients, and, when retry,
// one denied client in 20 sends again after the PTTL it was told (a 0 means admitted), as the
// caller of such a script may. Decision times are exact (a server clock shared with the
// harness), and the log is Fresh (a run on its own key prefix).
func issue29History(lim *expiryLimiter, rate float64, seconds int64, retry bool) *Log {
	rng := rand.New(rand.NewPCG(29, uint64(rate)))
	const origin = 1_700_000_000_000_000
	log := &Log{Subjects: []string{"key"}, Clients: []string{"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"}, Base: origin, Fresh: true}
	type req struct {
		t      int64
		client uint16
	}
	var queue []req // retries, in time order
	t := float64(origin)
	end := origin + seconds*1_000_000
	for {
		next := int64(t)
		if len(queue) > 0 && queue[0].t <= next {
			next = queue[0].t
		}
		if next >= end {
			return log
		}
		r := req{t: next, client: uint16(rng.IntN(8))}
		if len(queue) > 0 && queue[0].t == next {
			r, queue = queue[0], queue[1:]
		} else {
			t += rng.ExpFloat64() * 1e6 / rate
		}
		k := Denied
		if lim.Decide("key", "", 1, r.t) {
			k = Admitted
		} else if retry && rng.IntN(20) == 0 {
			// PTTL: the key's expiry tick (m + W) minus now, in whole ms.
			at := lim.expiry("key")
			i, _ := slices.BinarySearchFunc(queue, at, func(x req, t int64) int { return cmp.Compare(x.t, t) })
			queue = slices.Insert(queue, i, req{t: at + rng.Int64N(lim.g), client: r.client})
		}
		log.Events = append(log.Events, mustEvent(r.t-origin, r.t-origin, 0, r.client, 1, k))
	}
}

// TestFirstHitIssue29 (issue 29): the PTTL-0 first-hit script of issue 29, at 30/s with its
// callers retrying after the PTTL they were told and at 2,000/s open loop, over-admits by a
// permit at almost every window's end; limitbench passed it. It is now a definite violation,
// and the same schedules through the script without the flaw are never flagged.
func TestFirstHitIssue29(t *testing.T) {
	c := algorithms.Contract{Kind: algorithms.FirstHitWindow, Limit: 10, Window: time.Second, Granularity: time.Millisecond}
	for _, tt := range []struct {
		name    string
		rate    float64
		seconds int64
		retry   bool
	}{
		{"30/s, retrying after the PTTL", 30, 30, true},
		{"2000/s", 2000, 5, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			flawed := newExpiryLimiter(c, 1000, true)
			log := issue29History(flawed, tt.rate, tt.seconds, tt.retry)
			acc, err := Accuracy(c, cloneLog(log), time.Second)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Check(c, log)
			if err != nil {
				t.Fatal(err)
			}
			l := rep.Limits[0]
			t.Logf("admitted %d, ideal %d, worst window %.2f; definite %d (chained %d), possible %d, worst %+v",
				acc.Admitted, acc.IdealAllowed, acc.MaxWindowRatio, l.Definite, l.Chained, l.Possible, l.Worst)
			if l.Definite == 0 || JudgeWith(rep, Warnings{}).Verdict != Fail {
				t.Fatalf("the flawed script's run is not a definite violation: %+v", l)
			}
			rep, err = Check(c, issue29History(newExpiryLimiter(c, 1000, false), tt.rate, tt.seconds, tt.retry))
			if err != nil {
				t.Fatal(err)
			}
			if l := rep.Limits[0]; l.Definite > 0 {
				t.Fatalf("the correct script was flagged: %d definite, worst %+v", l.Definite, l.Worst)
			}
		})
	}
}
