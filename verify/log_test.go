package verify

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"pgregory.net/rapid"
)

// The admission log holds one Event per request, denials included: issue 4 allows 32 bytes per
// admission held, and at twice the limit there is a denial beside every admission.
func TestEventSize(t *testing.T) {
	if got := unsafe.Sizeof(Event{}); got != 16 {
		t.Errorf("unsafe.Sizeof(Event{}) = %d; want 16", got)
	}
}

// genEventTimes draws lo in [MinLo, MaxLo] and hi >= lo with a width of any magnitude up to
// MaxWidth (each unit of the width code about as likely), near the bounds now and then.
func genEventTimes(t *rapid.T, label string) (lo, hi int64) {
	lo = rapid.OneOf(
		rapid.Int64Range(MinLo, MaxLo),
		rapid.Int64Range(-100, 100),
		rapid.SampledFrom([]int64{MinLo, MinLo + 1, MaxLo - 1, MaxLo}),
	).Draw(t, label+"lo")
	bits := rapid.IntRange(0, 50).Draw(t, label+"bits")
	w := rapid.Int64Range(0, min(MaxWidth, int64(1)<<bits)).Draw(t, label+"width")
	if rapid.IntRange(0, 9).Draw(t, label+"edge") == 0 {
		w = rapid.SampledFrom([]int64{1<<20 - 1, 1 << 20, 1<<20 + 1, 1<<30 - 1024, 1<<30 - 1023, 1 << 30, MaxWidth}).Draw(t, label+"edgewidth")
	}
	return lo, lo + w
}

// TestEventEncoding: an event keeps its subject, client, permits, kind and Lo exactly; its Hi is
// never before the hi given, later by less than a 1024th of the width and less than 2^30 µs, and
// exact below 2^20 µs; a wider hi never gives an earlier Hi; the packed order is (Lo, Hi, Kind)
// order; Shift moves Lo and Hi alike.
func TestEventEncoding(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lo, hi := genEventTimes(t, "")
		k := Kind(rapid.IntRange(int(Admitted), int(Failed)).Draw(t, "kind"))
		sub, cli, per := rapid.Uint32().Draw(t, "subject"), rapid.Uint16().Draw(t, "client"), rapid.Uint16().Draw(t, "permits")
		e, err := NewEvent(lo, hi, sub, cli, per, k)
		if err != nil {
			t.Fatalf("NewEvent(%d, %d): %v", lo, hi, err)
		}
		if e.Lo() != lo || e.Kind() != k || e.Subject != sub || e.Client != cli || e.Permits != per {
			t.Fatalf("NewEvent(%d, %d, %d, %d, %d, %s) = %v", lo, hi, sub, cli, per, k, e)
		}
		w, up := hi-lo, e.Hi()-hi
		switch {
		case up < 0:
			t.Fatalf("width %d: Hi %d before hi %d", w, e.Hi(), hi)
		case w < 1<<20 && up != 0:
			t.Fatalf("width %d < 2^20: Hi %d; want exactly %d", w, e.Hi(), hi)
		case up > 0 && (up > w>>10 || up >= 1<<30):
			t.Fatalf("width %d: Hi %d is %d µs late; want under w/1024 and 2^30", w, e.Hi(), up)
		}

		// Another event, often at the same Lo, for the order.
		lo2, hi2 := genEventTimes(t, "other")
		if rapid.Bool().Draw(t, "sameLo") {
			lo2, hi2 = lo, lo+(hi2-lo2)
		}
		k2 := Kind(rapid.IntRange(int(Admitted), int(Failed)).Draw(t, "kind2"))
		f := mustEvent(lo2, hi2, 0, 0, 1, k2)
		want := cmp.Or(cmp.Compare(e.Lo(), f.Lo()), cmp.Compare(e.Hi(), f.Hi()), cmp.Compare(e.Kind(), f.Kind()))
		if got := cmpTime(&e, &f); got != want {
			t.Fatalf("cmpTime(%v, %v) = %d; want %d, the (Lo, Hi, Kind) order", e, f, got, want)
		}
		if lo2 == lo && hi2 >= hi && f.Hi() < e.Hi() {
			t.Fatalf("hi %d <= %d, but Hi %d > %d", hi, hi2, e.Hi(), f.Hi())
		}

		d := rapid.Int64Range(MinLo-lo, MaxLo-lo).Draw(t, "shift")
		s, err := e.Shift(d)
		if err != nil {
			t.Fatalf("%v.Shift(%d): %v", e, d, err)
		}
		if s.Lo() != e.Lo()+d || s.Hi() != e.Hi()+d || s.Kind() != k || s.Subject != sub || s.Client != cli || s.Permits != per {
			t.Fatalf("%v.Shift(%d) = %v", e, d, s)
		}
	})
}

// TestNewEventBounds: the extreme times fit; one µs beyond does not, nor a bad kind or Lo > Hi;
// each error wraps ErrBadLog.
func TestNewEventBounds(t *testing.T) {
	for _, tt := range []struct {
		lo, hi int64
		k      Kind
		msg    string // "" when it fits
	}{
		{MinLo, MinLo, Admitted, ""},
		{MaxLo, MaxLo, Failed, ""},
		{MaxLo, MaxLo + MaxWidth, Unknown, ""},
		{0, 0, Denied, ""},
		{MinLo - 1, MinLo, Admitted, "outside"},
		{MaxLo + 1, MaxLo + 1, Admitted, "outside"},
		{0, MaxWidth + 1, Admitted, "width"},
		{5, 4, Admitted, "Lo 5 > Hi 4"},
		{0, 0, 0, "unknown kind"},
		{0, 0, Failed + 1, "unknown kind"},
	} {
		e, err := NewEvent(tt.lo, tt.hi, 1, 2, 3, tt.k)
		switch {
		case tt.msg == "" && err != nil:
			t.Errorf("NewEvent(%d, %d, %s) = %v; want it to fit", tt.lo, tt.hi, tt.k, err)
		case tt.msg == "" && (e.Lo() != tt.lo || e.Hi() != tt.hi || e.Kind() != tt.k):
			t.Errorf("NewEvent(%d, %d, %s) = %v", tt.lo, tt.hi, tt.k, e)
		case tt.msg != "" && (!errors.Is(err, ErrBadLog) || !strings.Contains(err.Error(), tt.msg)):
			t.Errorf("NewEvent(%d, %d, %s) = %v, %v; want ErrBadLog mentioning %q", tt.lo, tt.hi, tt.k, e, err, tt.msg)
		}
	}
	e := mustEvent(MaxLo-5, MaxLo, 0, 0, 1, Admitted)
	for _, d := range []int64{6, MinLo - 1 - (MaxLo - 5)} {
		if _, err := e.Shift(d); !errors.Is(err, ErrBadLog) {
			t.Errorf("%v.Shift(%d) = %v; want ErrBadLog", e, d, err)
		}
	}
	if s, err := e.Shift(5); err != nil || s.Lo() != MaxLo {
		t.Errorf("%v.Shift(5) = %v, %v; want Lo %d", e, s, err, int64(MaxLo))
	}
}

// TestFixedWindowAlignedOnTheEpoch: fixed-window's windows are [kW, (k+1)W) of Unix time, not of
// times relative to Log.Base. With Base ≡ 3 (mod 10), relative times 8, 9, 10 are 11, 12, 13 µs
// past a multiple of 10 µs: one window, a violation of fixed-window(2, 10µs) that relative
// alignment would split; and relative 5, 6, 7 are 8, 9, 10: two windows, a correct history that
// relative alignment would flag. Check, its unknown-outcome sweep and Accuracy's ideal limiter
// all align on the epoch, and the times reported are absolute.
func TestFixedWindowAlignedOnTheEpoch(t *testing.T) {
	const base = 1_700_000_000_000_003
	c := fixed(2, 10*time.Microsecond)

	over := atBase(base, newLog(adm(8), adm(9), adm(10)))
	rep, err := Check(c, over)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	l := rep.Limits[0]
	wantWhere := Where{Subject: "a", Lo: base + 8, Hi: base + 10, Permits: 3, Allowed: 2, Excess: 1}
	if l.Definite != 1 || l.Worst != wantWhere || len(l.Violations) != 1 || l.Violations[0].At != base+7 {
		t.Errorf("Check(%s) of 3 admissions in window [%d, %d): definite %d, worst %+v, violations %+v; want 1, %+v, at %d",
			c, base+7, base+17, l.Definite, l.Worst, l.Violations, wantWhere, base+7)
	}

	ok := atBase(base, newLog(adm(5), adm(6), adm(7)))
	rep, err = Check(c, cloneLog(ok))
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if l := rep.Limits[0]; l.Definite != 0 || l.Possible != 0 {
		t.Errorf("Check(%s) of 2 + 1 admissions across a window edge: definite %d, possible %d; want none", c, l.Definite, l.Possible)
	}

	// Two admissions fill window [base+7, base+17); an unknown outcome sent at relative 10 can
	// join them.
	hide := atBase(base, newLog(adm(8), adm(9), kind(adm(10), Unknown)))
	rep, err = Check(c, hide)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if l := rep.Limits[0]; l.Definite != 0 || l.UnknownExcess != 1 {
		t.Errorf("Check(%s) with an unknown outcome: definite %d, UnknownExcess %d; want 0, 1", c, l.Definite, l.UnknownExcess)
	}

	acc, err := Accuracy(c, ok, 10*time.Microsecond)
	if err != nil {
		t.Fatalf("Accuracy: %v", err)
	}
	wantSeries := []AccuracyBin{
		{Start: base - 3, Offered: 2, Admitted: 2, Ideal: 2, MaxRatio: 1},
		{Start: base + 7, Offered: 1, Admitted: 1, Ideal: 1, MaxRatio: 1.5},
	}
	if acc.IdealAllowed != 3 || acc.FalseDenials != 0 || fmt.Sprint(acc.Series) != fmt.Sprint(wantSeries) {
		t.Errorf("Accuracy: ideal %d, false denials %d, series %+v; want 3, 0, %+v", acc.IdealAllowed, acc.FalseDenials, acc.Series, wantSeries)
	}
}

// TestRoundedWidthAtTheWindowEdge: sliding-window(1, W) kept exactly, at the edge: admissions at
// t0 and t0 + W, the second logged as [t0 + W − 2^20 − 1, t0 + W], a width that is rounded up
// to 2^20 + 1024 µs. The span of the pair is then W + 1023, only a possible violation; rounded
// down (to 2^20) it would be W − 1, a definite one, and a correct limiter would fail.
func TestRoundedWidthAtTheWindowEdge(t *testing.T) {
	const W = 1 << 21
	const t0 = 5_000_000
	b := mustEvent(t0+W-1<<20-1, t0+W, 0, 0, 1, Admitted)
	if b.Hi() != t0+W+1023 {
		t.Fatalf("Hi = %d; want %d, the width rounded up to 2^20 + 1024", b.Hi(), t0+W+1023)
	}
	rep, err := Check(sliding(1, W*time.Microsecond), atBase(1_700_000_000_000_000, newLog(adm(t0), b)))
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if l := rep.Limits[0]; l.Definite != 0 || l.Possible != 1 {
		t.Errorf("definite %d, possible %d; want 0, 1", l.Definite, l.Possible)
	}
}

// TestWidenedCorrectHistoryNeverFlagged: a correct limiter's history whose intervals are all
// wider than 2^20 µs, so that every width is rounded up (see Event), is never flagged definite:
// the rounding only widens. Some true times are at an end of their interval, where a rounding
// the wrong way would leave them out.
func TestWidenedCorrectHistoryNeverFlagged(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genScaledContract(t, "")
		maxGap := max(c.Window, c.RefillPer).Microseconds()/3 + 1
		h := genArrivals(t, rapid.IntRange(1, 200).Draw(t, "n"), 1_700_000_000_000_000, maxGap)
		h.decide(t, newRefLimiter(c), c.Granularity.Microseconds())
		spread := rapid.SampledFrom([]int64{1 << 20, 1 << 26, 1 << 31}).Draw(t, "spread")
		log := &Log{Subjects: h.subjects, Clients: h.clients, Base: h.base}
		rounded := 0
		for i, ti := range h.t {
			w := spread + rapid.Int64Range(0, spread).Draw(t, fmt.Sprint("w", i))
			var lo int64
			switch rapid.IntRange(0, 2).Draw(t, fmt.Sprint("at", i)) {
			case 0: // the true time at Lo
				lo = ti - h.base
			case 1: // at Hi
				lo = ti - h.base - w
			default:
				lo = ti - h.base - rapid.Int64Range(0, w).Draw(t, fmt.Sprint("lo", i))
			}
			hi := lo + w
			k := Denied
			if h.admitted[i] {
				k = Admitted
			}
			e := mustEvent(lo, hi, uint32(h.subject[i]), uint16(h.client[i]), uint16(h.cost[i]), k)
			if e.Hi() != hi {
				rounded++
			}
			log.Events = append(log.Events, e)
		}
		rep, err := Check(c, log)
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		if d := rep.Definite(); d > 0 {
			t.Fatalf("%s: %d definite violations in a correct history (%d of %d widths rounded up); worst %+v",
				c, d, rounded, len(h.t), rep.Limits[0].Worst)
		}
	})
}
