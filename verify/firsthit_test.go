package verify

import (
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/limitbench/limitbench/algorithms"
)

func firstHit(l int64, w time.Duration) algorithms.Contract {
	return algorithms.Contract{Kind: algorithms.FirstHitWindow, Limit: l, Window: w}
}

func denied(t int64) Event { return kind(adm(t), Denied) }

// TestCheckFirstHit: the three conditions of a definite violation, what a window begun before
// the log, an unknown outcome or a failed request leaves possible, and From.
func TestCheckFirstHit(t *testing.T) {
	const W = 10 * time.Microsecond
	withG := func(c algorithms.Contract, g time.Duration) algorithms.Contract { c.Granularity = g; return c }
	var sustained []Event
	for x := range int64(100) {
		sustained = append(sustained, adm(x))
	}
	tests := []struct {
		name                        string
		c                           algorithms.Contract
		fresh                       bool
		from                        int64
		events                      []Event
		definite, chained, possible int64
		worst                       Where // compared when Excess > 0
		couldHide                   bool
	}{
		{name: "fresh: two in the first window", c: firstHit(1, W), fresh: true,
			events:   []Event{adm(0), adm(9)},
			definite: 1, chained: 1, possible: 1, worst: Where{Subject: "a", Lo: 0, Hi: 9, Permits: 2, Allowed: 1, Excess: 1}},
		{name: "not fresh: a window begun before the log may end between them", c: firstHit(1, W),
			events: []Event{adm(0), adm(9)}, possible: 1},
		{name: "a denial opens the window that holds them", c: firstHit(1, W), fresh: true,
			events: []Event{denied(0), adm(5), adm(9)}, definite: 1, chained: 1, possible: 1},
		{name: "a denial opens a window that parts them", c: firstHit(1, W), fresh: true,
			events: []Event{adm(0), denied(10), adm(12), adm(21)}},
		{name: "after a gap of W the first request opens a window", c: firstHit(1, W),
			events: []Event{denied(0), adm(50), adm(55)}, definite: 1, chained: 1, possible: 1},
		{name: "an unknown outcome may open a window inside", c: firstHit(1, W),
			events: []Event{denied(0), kind(adm(20), Unknown), adm(50), adm(55)}, possible: 1, couldHide: true},
		{name: "a failed request may have opened a window inside", c: firstHit(1, W),
			events: []Event{denied(0), kind(span(41, 44), Failed), adm(50), adm(55)}, possible: 1},
		{name: "a failed request that cannot part them", c: firstHit(1, W),
			events: []Event{denied(0), kind(span(46, 49), Failed), adm(50), adm(55)}, definite: 1, chained: 1, possible: 1},
		{name: "one exact instant, whatever came before", c: firstHit(2, W),
			events:   []Event{adm(3), adm(3), adm(3)},
			definite: 1, possible: 1, worst: Where{Subject: "a", Lo: 3, Hi: 3, Permits: 3, Allowed: 2, Excess: 1}},
		{name: "one admission of more permits than L", c: firstHit(2, W),
			events:   []Event{permits(span(0, 5), 3)},
			definite: 1, possible: 1, worst: Where{Subject: "a", Lo: 0, Hi: 5, Permits: 3, Allowed: 2, Excess: 1}},
		{name: "sustained: over 2L + L·span/W", c: firstHit(3, W), events: sustained,
			definite: 94, chained: 2, possible: 97, worst: Where{Subject: "a", Lo: 0, Hi: 99, Permits: 100, Allowed: 33, Excess: 67}},
		{name: "granularity 1µs keeps them in the first window", c: withG(firstHit(1, W), time.Microsecond), fresh: true,
			events: []Event{adm(0), adm(5)}, definite: 1, chained: 1, possible: 1},
		{name: "granularity 5µs does not", c: withG(firstHit(1, W), 5*time.Microsecond), fresh: true,
			events: []Event{adm(0), adm(5)}, possible: 1},
		{name: "From: a violation before it is not reported", c: firstHit(1, W), fresh: true, from: 30,
			events: []Event{adm(0), adm(9), adm(30), denied(41), adm(45)}},
		{name: "From: the window that ends after it is", c: firstHit(1, W), fresh: true, from: 8,
			events: []Event{adm(0), adm(9)}, definite: 1, chained: 1, possible: 1},
		{name: "scopes apart", c: firstHit(1, W), fresh: true,
			events: []Event{adm(0), who(adm(5), 1, 0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := newLog(tt.events...)
			log.Fresh, log.From = tt.fresh, tt.from
			rep, err := Check(tt.c, log)
			if err != nil {
				t.Fatal(err)
			}
			l := rep.Limits[0]
			if l.Definite != tt.definite || l.Chained != tt.chained || l.Possible != tt.possible || l.UnknownCouldHide != tt.couldHide {
				t.Errorf("Check = definite %d chained %d possible %d could hide %v; want %d %d %d %v",
					l.Definite, l.Chained, l.Possible, l.UnknownCouldHide, tt.definite, tt.chained, tt.possible, tt.couldHide)
			}
			if tt.worst.Excess > 0 && l.Worst != tt.worst {
				t.Errorf("Worst = %+v; want %+v", l.Worst, tt.worst)
			}
		})
	}
}

// TestJudgeFirstHit: violations found only through the windows' openers (Chained) fail a clean
// run, but with dropped outcomes or mismatched decision times they only make it inconclusive;
// the others fail it regardless.
func TestJudgeFirstHit(t *testing.T) {
	c := firstHit(1, 10*time.Microsecond)
	chained := newLog(adm(0), adm(9))
	chained.Fresh = true
	// Subject a: two at one instant; subject b: two in its first window.
	robust := newLog(adm(0), adm(0), who(adm(0), 1, 0), who(adm(9), 1, 0))
	robust.Fresh = true
	tests := []struct {
		name   string
		log    *Log
		w      Warnings
		want   Verdict
		reason string
	}{
		{"chained, clean", chained, Warnings{}, Fail, "1 definite violations of first-hit-window(1, 10µs)"},
		{"chained, dropped", chained, Warnings{Dropped: 1}, Inconclusive, "follow from the requests that opened its windows"},
		{"chained, clock mismatch", chained, Warnings{ClockMismatch: 1}, Inconclusive, "1 mismatched decision times leave in doubt"},
		{"exact instant and chained, clean", robust, Warnings{}, Fail, "2 definite violations"},
		{"exact instant and chained, dropped", robust, Warnings{Dropped: 1}, Fail, "1 definite violations of first-hit-window(1, 10µs); worst: 2 permits over 1 allowed for subject \"a\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Check(c, cloneLog(tt.log))
			if err != nil {
				t.Fatal(err)
			}
			v := JudgeWith(rep, tt.w)
			if v.Verdict != tt.want || !strings.Contains(strings.Join(v.Reasons, "\n"), tt.reason) {
				t.Errorf("JudgeWith(%+v) = %+v; want %s with %q", tt.w, v, tt.want, tt.reason)
			}
		})
	}
}

// TestAccuracyFirstHit: the ideal first-hit limiter opens a window at any request after the
// last one ended, and the algorithm's own windows give the false denials and the window ratio.
func TestAccuracyFirstHit(t *testing.T) {
	c := firstHit(2, 10*time.Microsecond)
	// The algorithm admits 0, 1, 2 (one too many), denies 10 (which fits: a new window begins at
	// 10) and 11, and admits 25 and 26 after a denial at 20 opened [20, 30).
	log := newLog(adm(0), adm(1), adm(2), denied(10), denied(11), denied(20), adm(25), adm(26))
	rep, err := Accuracy(c, log, 10*time.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	// Ideal: 0, 1 | 10, 11 | 20 denied? no: [20, 30) opened by 20, which fits: 20, 25 | 26 denied.
	if rep.Offered != 8 || rep.Admitted != 5 || rep.IdealAllowed != 6 || rep.FalseDenials != 3 || rep.MaxWindowRatio != 1.5 {
		t.Errorf("Accuracy = %+v; want offered 8, admitted 5, ideal 6, false denials 3, max window ratio 1.5", rep)
	}
}

// TestAccuracyAndReplayOfFirstHitModel: the reference model's decisions, at exact times, are
// what the ideal limiter decides (efficiency 1, no false denial, no window over L) and what a
// fresh model replays; one decision flipped is found.
func TestAccuracyAndReplayOfFirstHitModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := firstHitContract(t)
		c.Granularity = 0
		h := genArrivals(t, rapid.IntRange(1, 300).Draw(t, "n"), 1_700_000_000_000_000, c.Window.Microseconds()/2+1)
		l := algorithms.Limit{Limit: c.Limit, Window: c.Window}
		h.decide(t, algorithms.NewFirstHitModel(l), 1)
		log := &Log{Subjects: h.subjects, Clients: h.clients, Base: h.base}
		for i, x := range h.t {
			k := Denied
			if h.admitted[i] {
				k = Admitted
			}
			log.Events = append(log.Events, mustEvent(x-h.base, x-h.base, uint32(h.subject[i]), uint16(h.client[i]), uint16(h.cost[i]), k))
		}
		acc, err := Accuracy(c, cloneLog(log), time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if acc.Admitted != acc.IdealAllowed || acc.FalseDenials != 0 || acc.MaxWindowRatio > 1 {
			t.Fatalf("Accuracy = %+v; want the ideal's decisions", acc)
		}
		rr, err := Replay(algorithms.NewFirstHitModel(l), cloneLog(log))
		if err != nil || rr.Differ != 0 || rr.Replayed != int64(len(h.t)) {
			t.Fatalf("Replay = %+v, %v; want every decision replayed, none differing", rr, err)
		}
		i := rapid.IntRange(0, len(h.t)-1).Draw(t, "flip")
		e := log.Events[i]
		k := Admitted
		if e.Kind() == Admitted {
			k = Denied
		}
		log.Events[i] = mustEvent(e.Lo(), e.Hi(), e.Subject, e.Client, e.Permits, k)
		if rr, err := Replay(algorithms.NewFirstHitModel(l), log); err != nil || rr.Differ == 0 {
			t.Fatalf("Replay with decision %d flipped = %+v, %v; want a difference", i, rr, err)
		}
	})
}

// TestSectionsFirstHitWarmup: a warmup request sent before the measured part and decided as
// late as 13 µs into it may have opened the window [12, 22), which parts the admissions at 15
// and 22. Checked alone, the measured part (a denial at 0 opening a window that ends by 10,
// then nothing until 15) has a definite violation; Sections checks a first-hit-window limit on
// the warmup and the measured part together, and finds none. Fresh keys change nothing here:
// the window at 0 ends by 10 either way.
func TestSectionsFirstHitWarmup(t *testing.T) {
	c := firstHit(1, 10*time.Microsecond)
	measured := func() *Log { return newLog(denied(0), adm(15), adm(22)) }
	if v := Summarize(c, measured(), Warnings{}, 0); v.Verdict != Fail {
		t.Fatalf("Summarize of the measured part alone = %+v; want fail", v)
	}
	for _, fresh := range []bool{false, true} {
		m := Measurement{Contract: c, Log: measured(), Warmup: newLog(kind(span(-5, 13), Denied)), Start: 0, Fresh: fresh}
		v, _ := m.Sections()
		if v.Verdict != Pass || v.DefiniteViolations != 0 {
			t.Errorf("fresh %v: Sections = %+v; want pass", fresh, v)
		}
	}
	// Without the straggler the warmup changes nothing: the violation stands.
	m := Measurement{Contract: c, Log: measured(), Warmup: newLog(denied(-30)), Start: 0}
	if v, _ := m.Sections(); v.Verdict != Fail {
		t.Errorf("Sections with a warmup decided before the measured part = %+v; want fail", v)
	}
}
