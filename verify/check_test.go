package verify

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/algorithms"
)

// adm returns an admission of one permit for subject a, client x at instant t (µs).
func adm(t int64) Event { return mustEvent(t, t, 0, 0, 1, Admitted) }

// span returns an admission of one permit decided somewhere in [lo, hi].
func span(lo, hi int64) Event { return mustEvent(lo, hi, 0, 0, 1, Admitted) }

func kind(e Event, k Kind) Event { return mustEvent(e.Lo(), e.Hi(), e.Subject, e.Client, e.Permits, k) }

func permits(e Event, n uint16) Event { e.Permits = n; return e }

func who(e Event, subject uint32, client uint16) Event {
	e.Subject, e.Client = subject, client
	return e
}

func newLog(evs ...Event) *Log {
	return &Log{Subjects: []string{"a", "b"}, Clients: []string{"x", "y"}, Events: evs}
}

// atBase sets log's Base to base and returns it.
func atBase(base int64, log *Log) *Log { log.Base = base; return log }

func sliding(l int64, w time.Duration) algorithms.Contract {
	return algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: l, Window: w}
}

func fixed(l int64, w time.Duration) algorithms.Contract {
	return algorithms.Contract{Kind: algorithms.FixedWindow, Limit: l, Window: w}
}

func bucket(c, n int64, per time.Duration) algorithms.Contract {
	return algorithms.Contract{Kind: algorithms.TokenBucket, Capacity: c, RefillPermits: n, RefillPer: per}
}

func withG(c algorithms.Contract, g time.Duration) algorithms.Contract { c.Granularity = g; return c }

func withScope(c algorithms.Contract, s algorithms.Scope) algorithms.Contract { c.Scope = s; return c }

// counts is what the table tests compare.
type counts struct {
	Definite, Possible int64
	WorstExcess        int64
	Hide               bool
}

func TestCheckEdges(t *testing.T) {
	const W = 10 * time.Microsecond
	tests := []struct {
		name string
		c    algorithms.Contract
		log  *Log
		want counts
	}{
		{"sliding: exactly L in one window passes", sliding(3, W), newLog(adm(0), adm(5), adm(9)), counts{}},
		{"sliding: L at one instant passes", sliding(3, W), newLog(adm(4), adm(4), adm(4)), counts{}},
		{"sliding: L+1 within W-1 is definite", sliding(3, W), newLog(adm(0), adm(5), adm(8), adm(9)),
			counts{Definite: 1, Possible: 1, WorstExcess: 1}},
		{"sliding: L+1 spanning exactly W is no violation", sliding(3, W), newLog(adm(0), adm(1), adm(2), adm(10)), counts{}},
		{"sliding: L+2 at distinct instants ends two windows", sliding(3, W), newLog(adm(0), adm(1), adm(2), adm(3), adm(4)),
			counts{Definite: 2, Possible: 2, WorstExcess: 2}},
		{"sliding: an interval straddling the window edge is only possible", sliding(3, W),
			newLog(adm(5), adm(6), adm(7), span(0, 20)), counts{Possible: 1}},
		{"sliding: granularity widens L+1 at W-1 to only possible", withG(sliding(3, W), time.Microsecond),
			newLog(adm(0), adm(3), adm(6), adm(9)), counts{Possible: 1}},
		{"sliding: permits count", sliding(3, W), newLog(permits(adm(0), 2), permits(adm(9), 2)),
			counts{Definite: 1, Possible: 1, WorstExcess: 1}},
		{"sliding: subjects are apart", sliding(2, W), newLog(adm(0), adm(1), who(adm(2), 1, 0)), counts{}},
		{"sliding: per client", withScope(sliding(1, W), algorithms.PerClient),
			newLog(adm(0), who(adm(1), 0, 1), who(adm(2), 1, 0), who(adm(3), 1, 1)), counts{}},
		{"sliding: per consumer across subjects", withScope(sliding(1, W), algorithms.PerConsumer),
			newLog(adm(0), who(adm(1), 1, 0)), counts{Definite: 1, Possible: 1, WorstExcess: 1}},
		{"sliding: denied and failed do not count", sliding(1, W), newLog(adm(0), kind(adm(1), Denied), kind(adm(2), Failed)), counts{}},
		{"sliding: an unknown could hide a violation", sliding(2, W), newLog(adm(0), adm(1), kind(adm(2), Unknown)),
			counts{Hide: true}},
		{"sliding: an unknown may have run after the harness gave up", sliding(2, W),
			newLog(span(100, 100), adm(105), kind(span(0, 5), Unknown)), counts{Hide: true}},
		{"sliding: an unknown cannot have run before it was sent", sliding(2, W),
			newLog(adm(0), adm(1), kind(span(50, 51), Unknown)), counts{}},
		{"fixed: an unknown may have run in a later window", fixed(2, W),
			newLog(adm(20), adm(29), kind(span(3, 4), Unknown)), counts{Hide: true}},
		{"fixed: an unknown sent after the full window", fixed(2, W),
			newLog(adm(20), adm(29), kind(adm(30), Unknown)), counts{}},
		{"bucket: an unknown may have run after the harness gave up", bucket(2, 1, W),
			newLog(adm(50), adm(50), kind(span(0, 1), Unknown)), counts{Hide: true}},
		{"bucket: unknowns alone over capacity", bucket(2, 1, W),
			newLog(kind(adm(0), Unknown), kind(adm(40), Unknown), kind(adm(80), Unknown)), counts{Hide: true}},
		{"bucket: unknowns alone within capacity", bucket(2, 1, W),
			newLog(kind(adm(0), Unknown), kind(adm(40), Unknown)), counts{}},
		{"sliding: unknowns do not excuse a definite violation", sliding(1, W), newLog(adm(0), adm(1), kind(adm(2), Unknown)),
			counts{Definite: 1, Possible: 1, WorstExcess: 1}},

		{"fixed: exactly L in a window passes", fixed(2, W), newLog(adm(10), adm(19), adm(20)), counts{}},
		{"fixed: L+1 in a window is definite", fixed(2, W), newLog(adm(10), adm(15), adm(19)),
			counts{Definite: 1, Possible: 1, WorstExcess: 1}},
		{"fixed: L+1 across the boundary is no violation", fixed(2, W), newLog(adm(18), adm(19), adm(20)), counts{}},
		{"fixed: an interval straddling the boundary is only possible", fixed(2, W), newLog(adm(11), adm(12), span(18, 21)),
			counts{Possible: 1}},
		{"fixed: an interval over three windows", fixed(1, W), newLog(adm(5), span(8, 31), adm(35)), counts{Possible: 2}},
		{"fixed: negative times use floor", fixed(1, W), newLog(adm(-1), adm(0)), counts{}},

		{"bucket: exactly capacity at once passes", bucket(2, 1, W), newLog(adm(0), adm(0)), counts{}},
		{"bucket: capacity + 1 at once is definite", bucket(2, 1, W), newLog(adm(0), adm(0), adm(0)),
			counts{Definite: 1, Possible: 1, WorstExcess: 1}},
		{"bucket: exactly capacity + refill passes", bucket(2, 1, W), newLog(adm(0), adm(0), adm(10), adm(20)), counts{}},
		{"bucket: one before the refill is definite", bucket(2, 1, W), newLog(adm(0), adm(0), adm(9)),
			counts{Definite: 1, Possible: 1, WorstExcess: 1}},
		{"bucket: an interval reaching the refill is only possible", bucket(2, 1, W), newLog(adm(0), adm(0), span(9, 10)),
			counts{Possible: 1}},
		{"bucket: fractional rate, just enough refill", bucket(1, 3, 7*time.Microsecond), newLog(adm(0), adm(3), adm(6)),
			counts{}}, // 2 <= 1 + 9/7 over [0,3]; 3 <= 1 + 18/7 over [0,6]
		{"bucket: fractional rate, 1 µs short", bucket(1, 3, 7*time.Microsecond), newLog(adm(0), adm(2)),
			counts{Definite: 1, Possible: 1, WorstExcess: 1}}, // 7·2 > 7·1 + 3·2
		{"bucket: nested intervals use the segment tree", bucket(1, 1, W), newLog(span(0, 30), adm(5), adm(6)),
			counts{Definite: 1, Possible: 2, WorstExcess: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Check(tt.c, tt.log)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			l := rep.Limits[0]
			got := counts{Definite: l.Definite, Possible: l.Possible, WorstExcess: l.Worst.Excess, Hide: l.UnknownCouldHide}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Check(%s) counts (-want +got):\n%s", tt.c, diff)
			}
		})
	}
}

// TestCheckWhere: the worst violation names its scope, span, permits and allowance.
func TestCheckWhere(t *testing.T) {
	tests := []struct {
		name string
		c    algorithms.Contract
		log  *Log
		want Where
	}{
		{"sliding", sliding(2, 10*time.Microsecond), newLog(who(adm(100), 1, 0), who(adm(103), 1, 0), who(span(104, 105), 1, 1)),
			Where{Subject: "b", Lo: 100, Hi: 105, Permits: 3, Allowed: 2, Excess: 1}},
		{"fixed per consumer", withScope(fixed(1, 10*time.Microsecond), algorithms.PerConsumer),
			newLog(who(adm(21), 0, 1), who(adm(28), 1, 1)),
			Where{Client: "y", Lo: 21, Hi: 28, Permits: 2, Allowed: 1, Excess: 1}},
		{"bucket per client with granularity", withScope(withG(bucket(1, 1, 10*time.Microsecond), time.Microsecond), algorithms.PerClient),
			newLog(adm(50), adm(50), adm(51)),
			Where{Subject: "a", Client: "x", Lo: 49, Hi: 52, Permits: 3, Allowed: 1, Excess: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Check(tt.c, tt.log)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if diff := cmp.Diff(tt.want, rep.Limits[0].Worst); diff != "" {
				t.Errorf("Worst (-want +got):\n%s", diff)
			}
			v := rep.Limits[0].Violations
			if len(v) == 0 || v[0].Subject != tt.want.Subject || v[0].Client != tt.want.Client {
				t.Errorf("Violations = %+v; want the scope of %+v", v, tt.want)
			}
		})
	}
}

// TestCheckTwoLimits: the limits of c.Also are checked on their own scopes and reported apart.
func TestCheckTwoLimits(t *testing.T) {
	c := sliding(3, 10*time.Microsecond)
	c.Also = []algorithms.Contract{withScope(sliding(1, 10*time.Microsecond), algorithms.PerClient)}
	// Subject a: 3 admissions (keeps 3), but client x has 2 of them (breaks 1 per client).
	log := newLog(adm(0), adm(1), who(adm(2), 0, 1), who(adm(30), 1, 0))
	rep, err := Check(c, log)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if len(rep.Limits) != 2 {
		t.Fatalf("len(Limits) = %d; want 2", len(rep.Limits))
	}
	if rep.Limits[0].Definite != 0 || rep.Limits[1].Definite != 1 {
		t.Errorf("Definite = %d, %d; want 0, 1", rep.Limits[0].Definite, rep.Limits[1].Definite)
	}
	if rep.Limits[1].Contract.Scope != algorithms.PerClient || rep.Limits[0].Contract.Also != nil {
		t.Errorf("Contracts = %v, %v; want the main one without Also, then the per-client one", rep.Limits[0].Contract, rep.Limits[1].Contract)
	}
	if rep.Limits[0].Scopes != 2 || rep.Limits[1].Scopes != 3 {
		t.Errorf("Scopes = %d, %d; want 2, 3", rep.Limits[0].Scopes, rep.Limits[1].Scopes)
	}
	if rep.Definite() != 1 || rep.Admitted != 4 || rep.AdmittedPermits != 4 {
		t.Errorf("Definite() = %d, Admitted = %d, AdmittedPermits = %d; want 1, 4, 4", rep.Definite(), rep.Admitted, rep.AdmittedPermits)
	}
}

// TestCheckViolationsCapped: the violation list is capped, and nothing is dropped silently.
func TestCheckViolationsCapped(t *testing.T) {
	log := newLog()
	for i := range 3 * MaxViolations {
		log.Events = append(log.Events, adm(int64(i)))
	}
	rep, err := Check(sliding(1, 2*time.Microsecond), log)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	l := rep.Limits[0]
	if int64(len(l.Violations))+l.ViolationsDropped != l.Definite || len(l.Violations) != MaxViolations {
		t.Errorf("%d listed + %d dropped, Definite %d; want %d listed and the rest dropped", len(l.Violations), l.ViolationsDropped, l.Definite, MaxViolations)
	}
}

func TestCheckErrors(t *testing.T) {
	tests := []struct {
		name string
		c    algorithms.Contract
		log  *Log
		want error
		msg  string
	}{
		{"zero limit", sliding(0, time.Second), newLog(), ErrBadContract, "limit 0"},
		{"zero window", fixed(1, 0), newLog(), ErrBadContract, "window"},
		{"zero rate", bucket(1, 0, time.Second), newLog(), ErrBadContract, "refill"},
		{"bad also", algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 1, Window: time.Second,
			Also: []algorithms.Contract{{Kind: "leaky"}}}, newLog(), ErrBadContract, "contract.Also[0]"},
		{"negative granularity", withG(sliding(1, time.Second), -1), newLog(), ErrBadContract, "granularity"},
		{"subject out of range", sliding(1, time.Second), newLog(who(adm(1), 7, 0)), ErrBadLog, "subject 7"},
		{"zero permits", sliding(1, time.Second), newLog(permits(adm(1), 0)), ErrBadLog, "zero permits"},
		{"client out of range", sliding(1, time.Second), newLog(who(adm(1), 0, 2)), ErrBadLog, "client 2"},
		{"base out of range", sliding(1, time.Second), &Log{Base: MaxBase + 1}, ErrBadLog, "Base"},
		{"overflow", bucket(1, 1<<40, time.Microsecond), newLog(adm(0), adm(1<<30)), ErrOverflow, "overflow"},
		{"sliding window of 1.5µs", sliding(1, 1500*time.Nanosecond), newLog(), ErrBadContract, "not a whole number of microseconds"},
		{"fixed window of 1s + 1ns", fixed(1, time.Second+1), newLog(), ErrBadContract, "not a whole number of microseconds"},
		{"refill permits overflow", bucket(1, 1<<62, time.Second), newLog(), ErrBadContract, "too many permits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Check(tt.c, tt.log)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Check = %v; want %v mentioning %q", err, tt.want, tt.msg)
			}
		})
	}
}

// Regression: a refill period that is not a whole number of µs was rounded up, which lowered the
// rate and so the allowance. token-bucket(2, 1 per 1.5µs) allows 2 + (2/3)·3 = 4 permits over
// [0, 3]; with the period rounded up to 2µs it allowed 3.5, and a correct history was flagged.
func TestCheckRefillPeriodIsExact(t *testing.T) {
	c := bucket(2, 1, 1500*time.Nanosecond)
	rep, err := Check(c, newLog(adm(0), adm(0), adm(2), adm(3)))
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if l := rep.Limits[0]; l.Definite != 0 || l.Possible != 0 {
		t.Errorf("Check(%s) = definite %d, possible %d; want none", c, l.Definite, l.Possible)
	}
	// One more permit at 3 is over even the exact allowance.
	rep, err = Check(c, newLog(adm(0), adm(0), adm(2), adm(3), adm(3)))
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if l := rep.Limits[0]; l.Definite == 0 || l.Worst.Excess != 1 {
		t.Errorf("Check(%s) = definite %d, worst excess %d; want a definite violation by 1", c, l.Definite, l.Worst.Excess)
	}
}

// TestCheckGranularityRoundsUp: a granularity that is not a whole number of µs widens intervals
// by the next whole µs (the safe direction): two admissions 2µs apart under sliding-window(1, 3µs)
// are definite exactly, but with a granularity of 1ns only possible.
func TestCheckGranularityRoundsUp(t *testing.T) {
	for _, tt := range []struct {
		g        time.Duration
		definite int64
	}{{0, 1}, {time.Nanosecond, 0}} {
		c := withG(sliding(1, 3*time.Microsecond), tt.g)
		rep, err := Check(c, newLog(adm(0), adm(2)))
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		if l := rep.Limits[0]; l.Definite != tt.definite || l.Possible != 1 {
			t.Errorf("Check(%s, granularity %s) = definite %d, possible %d; want %d, 1", c, tt.g, l.Definite, l.Possible, tt.definite)
		}
	}
}

// Regression: unknown outcomes were placed at [send, timeout], but a timed-out request may have
// run later; the verifier said unknowns could not hide a violation when one placed later could.
// UnknownExcess is the worst such excess, wherever after its send each unknown is placed.
func TestCheckUnknownHiIsOpen(t *testing.T) {
	const W = 10 * time.Microsecond
	tests := []struct {
		name string
		c    algorithms.Contract
		log  *Log
		want int64
	}{
		// Both unknowns join the full window [100, 109].
		{"sliding", sliding(2, W), newLog(adm(100), adm(109), kind(span(0, 5), Unknown), kind(span(90, 95), Unknown)), 2},
		// Granularity 2 widens the admissions to [98, 102] and [103, 107]: a window of 20 holding
		// both ends by 117, and an unknown joins a window ending at b only if its Lo + 2 ≤ b, so
		// the one sent at 95 can join them and the one sent at 116 cannot.
		{"sliding with granularity", withG(sliding(2, 2*W), 2*time.Microsecond),
			newLog(adm(100), adm(105), kind(span(116, 118), Unknown), kind(span(95, 96), Unknown)), 1},
		// Aligned window [20, 30) holds 2; the unknown sent at 3 can run in it.
		{"fixed", fixed(2, W), newLog(adm(20), adm(29), kind(span(3, 4), Unknown)), 1},
		// The bucket is empty at 50 (2 taken); the unknown at 50 too is one over.
		{"bucket", bucket(2, 1, W), newLog(adm(50), adm(50), kind(span(0, 1), Unknown)), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Check(tt.c, tt.log)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			l := rep.Limits[0]
			if l.Definite != 0 || l.UnknownExcess != tt.want || !l.UnknownCouldHide {
				t.Errorf("Check(%s) = definite %d, UnknownExcess %d, UnknownCouldHide %v; want 0, %d, true",
					tt.c, l.Definite, l.UnknownExcess, l.UnknownCouldHide, tt.want)
			}
			if v := Judge(rep, false); v.Verdict != Inconclusive {
				t.Errorf("Judge = %+v; want inconclusive", v)
			}
		})
	}
}

func TestCheckNoContract(t *testing.T) {
	rep, err := Check(algorithms.Contract{Kind: algorithms.NoContract}, newLog(adm(0), adm(0)))
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if rep.Definite() != 0 || rep.Admitted != 2 {
		t.Errorf("Definite() = %d, Admitted = %d; want 0, 2", rep.Definite(), rep.Admitted)
	}
	if v := Judge(rep, false); v.Verdict != Inconclusive {
		t.Errorf("Judge = %+v; want inconclusive", v)
	}
}

// TestJudgeWith: the rules of JudgeWith for each warning.
func TestJudgeWith(t *testing.T) {
	const W = 10 * time.Microsecond
	clean := newLog(adm(0), adm(1))
	// 4 permits where 1 is allowed: excess 3.
	over := newLog(adm(0), adm(1), adm(2), adm(3))
	// The same with one admission of 2 permits: excess 4, MaxPermits 2.
	heavy := newLog(adm(0), adm(1), adm(2), permits(adm(3), 2))
	tests := []struct {
		name   string
		c      algorithms.Contract
		log    *Log
		w      Warnings
		want   Verdict
		reason string
	}{
		{"clean pass", sliding(2, W), clean, Warnings{}, Pass, ""},
		{"canceled pass stays pass, with a note", sliding(2, W), clean, Warnings{Canceled: true}, Pass, "canceled"},
		{"canceled fail stays fail", sliding(1, W), over, Warnings{Canceled: true}, Fail, "canceled"},
		{"dropped makes a pass inconclusive", sliding(2, W), clean, Warnings{Dropped: 1}, Inconclusive, "1 outcomes were dropped"},
		{"dropped never excuses a violation", sliding(1, W), over, Warnings{Dropped: 100}, Fail, "definite"},
		{"clock mismatch makes a pass inconclusive", sliding(2, W), clean, Warnings{ClockMismatch: 1}, Inconclusive, "inconsistent with the harness clock"},
		{"a mismatch could account for a small excess", sliding(1, W), over, Warnings{ClockMismatch: 3}, Inconclusive, "could account for an excess of 3"},
		{"an excess beyond what the mismatches explain fails", sliding(1, W), over, Warnings{ClockMismatch: 2}, Fail, "definite"},
		{"mismatches count the largest permits", sliding(1, W), heavy, Warnings{ClockMismatch: 2}, Inconclusive, "could account for an excess of 4"},
		{"mismatches count the largest permits, excess beyond", sliding(1, W), heavy, Warnings{ClockMismatch: 1}, Fail, "definite"},
		{"behind", sliding(2, W), clean, Warnings{Behind: true}, Inconclusive, "fell behind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Check(tt.c, cloneLog(tt.log))
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			v := JudgeWith(rep, tt.w)
			if v.Verdict != tt.want || !strings.Contains(strings.Join(v.Reasons, "\n"), tt.reason) {
				t.Errorf("JudgeWith(%+v) = %+v; want %s with %q", tt.w, v, tt.want, tt.reason)
			}
			if tt.want == Pass && tt.reason == "" && len(v.Reasons) != 0 {
				t.Errorf("JudgeWith = %+v; want no reasons for a clean pass", v)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	const W = 10 * time.Microsecond
	tests := []struct {
		name   string
		c      algorithms.Contract
		log    *Log
		behind bool
		want   Verdict
		reason string
	}{
		{"pass", sliding(2, W), newLog(adm(0), adm(1)), false, Pass, ""},
		{"possible only passes", sliding(2, W), newLog(adm(0), adm(1), span(5, 50)), false, Pass, ""},
		{"definite fails", sliding(1, W), atBase(1_700_000_000_000_000, newLog(adm(0), adm(1))), false, Fail,
			`1 definite violations of sliding-window(1, 10µs); worst: 2 permits over 1 allowed for subject "a" in [2023-11-14T22:13:20.000000Z, 2023-11-14T22:13:20.000001Z]`},
		{"definite fails even behind schedule", sliding(1, W), newLog(adm(0), adm(1)), true, Fail, "definite"},
		{"no admissions", sliding(1, W), newLog(kind(adm(0), Denied)), false, Inconclusive, "no request was admitted"},
		{"behind schedule", sliding(1, W), newLog(adm(0)), true, Inconclusive, "fell behind"},
		{"unknowns could hide", sliding(1, W), newLog(adm(0), kind(adm(1), Unknown)), false, Inconclusive, "unknown outcomes could hide"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Check(tt.c, tt.log)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			v := Judge(rep, tt.behind)
			if v.Verdict != tt.want || !strings.Contains(strings.Join(v.Reasons, "\n"), tt.reason) {
				t.Errorf("Judge = %+v; want %s with %q", v, tt.want, tt.reason)
			}
			if tt.want == Pass && len(v.Reasons) != 0 {
				t.Errorf("Judge = %+v; want no reasons for a pass", v)
			}
		})
	}
}
