package verify

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/clock"
)

func TestCuts(t *testing.T) {
	lost := func(lo, hi int64, node string) Disruption {
		return Disruption{Lo: lo, Hi: hi, Node: node, Kind: "restarted", What: fmt.Sprintf("%s restarted", node), StateLost: true}
	}
	pause := Disruption{Lo: 50, Hi: 60, Node: "a", Kind: "unreachable", What: "a stopped answering (timeout)"}
	promoted := Disruption{Lo: 300, Hi: 310, Node: "r", Kind: "promoted", What: "r was promoted", StateLost: true, Former: "m"}
	demoted := Disruption{Lo: 400, Hi: 420, Node: "m", Kind: "demoted", What: "m became a replica", Deposes: true}
	tests := []struct {
		name string
		ds   []Disruption
		from int64
		want []Cut
	}{
		{"nothing lost", []Disruption{pause}, 0, nil},
		{"one restart", []Disruption{pause, lost(100, 120, "a")}, 0, []Cut{{Lo: 100, Hi: 120, Disruptions: []Disruption{lost(100, 120, "a")}}}},
		{"before the verified part", []Disruption{lost(100, 120, "a")}, 121, nil},
		{"ends inside the verified part", []Disruption{lost(100, 120, "a")}, 120, []Cut{{Lo: 100, Hi: 120, Disruptions: []Disruption{lost(100, 120, "a")}}}},
		{"overlapping merge, in time order", []Disruption{lost(150, 200, "b"), lost(100, 160, "a"), lost(500, 510, "a")}, 0, []Cut{
			{Lo: 100, Hi: 200, Disruptions: []Disruption{lost(100, 160, "a"), lost(150, 200, "b")}},
			{Lo: 500, Hi: 510, Disruptions: []Disruption{lost(500, 510, "a")}}}},
		{"a promotion lasts until its former master is deposed", []Disruption{promoted, demoted}, 0,
			[]Cut{{Lo: 300, Hi: 420, Disruptions: []Disruption{promoted}}}},
		{"a promotion whose former master is never deposed lasts to the end", []Disruption{promoted}, 0,
			[]Cut{{Lo: 300, Hi: math.MaxInt64, Disruptions: []Disruption{promoted}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Cuts(tt.ds, tt.from)); diff != "" {
				t.Errorf("Cuts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSplit(t *testing.T) {
	log := &Log{Subjects: []string{"s"}, Clients: []string{"c"}, Base: 1000, Events: []Event{
		mustEvent(0, 10, 0, 0, 1, Admitted),   // [1000, 1010]: before the cut
		mustEvent(50, 99, 0, 0, 1, Admitted),  // [1050, 1099]: before
		mustEvent(90, 100, 0, 0, 1, Admitted), // meets the cut at 1100
		mustEvent(150, 150, 0, 0, 1, Admitted),
		mustEvent(200, 201, 0, 0, 1, Admitted), // ends on the cut's Hi: meets it
		mustEvent(202, 202, 0, 0, 1, Admitted), // after
		mustEvent(80, 5000, 0, 0, 1, Unknown),  // an unknown outcome goes by its Lo: before, and may run after
		mustEvent(300, 301, 0, 0, 1, Denied),   // denials and failures: only first-hit windows read them
		mustEvent(300, 301, 0, 0, 1, Failed),
	}}
	unknown := func(lo int64) Event { return mustEvent(lo, lo, 0, 0, 1, Unknown) }
	cuts := []Cut{{Lo: 1100, Hi: 1201}}
	for _, tt := range []struct {
		name  string
		split func(*Log, []Cut) ([]*Log, int64)
		want  [][]Event
	}{
		{"admissions and unknown outcomes", Split, [][]Event{{log.Events[0], log.Events[1], log.Events[6]}, {log.Events[5]}}},
		// What meets the cut may have run on either side, and an unknown outcome any time after
		// its Lo: an unknown outcome at its Lo in each epoch it may have run in.
		{"every request, for first-hit windows", SplitAll, [][]Event{
			{log.Events[0], log.Events[1], unknown(90), unknown(150), unknown(200), log.Events[6]},
			{unknown(90), unknown(150), unknown(200), log.Events[5], unknown(80), log.Events[7], log.Events[8]},
		}},
	} {
		epochs, unplaced := tt.split(log, cuts)
		if unplaced != 3 || len(epochs) != 2 {
			t.Fatalf("%s: %d epochs, %d unplaced; want 2 and 3", tt.name, len(epochs), unplaced)
		}
		for i, e := range epochs {
			if !slices.Equal(tt.want[i], e.Events) || e.Base != log.Base || len(e.Subjects) != 1 {
				t.Errorf("%s: epoch %d = %v (base %d); want %v", tt.name, i, e.Events, e.Base, tt.want[i])
			}
		}
	}
}

// restartHistory is one subject limited to 3 per 100 µs (sliding window), admitted by a
// correct limiter that forgot its state at a restart between 1200 and 1210: three admissions
// before, three right after, which together break the contract.
func restartHistory() (algorithms.Contract, *Log, []Disruption) {
	c := algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 3, Window: 100 * time.Microsecond}
	log := &Log{Subjects: []string{"s"}, Clients: []string{"c"}, Base: 1000}
	for _, at := range []int64{150, 160, 170, 220, 230, 240, 400} {
		log.Events = append(log.Events, mustEvent(at, at, 0, 0, 1, Admitted))
	}
	return c, log, []Disruption{{Lo: 1195, Hi: 1212, Node: "127.0.0.1:7000", Kind: "restarted", StateLost: true,
		What: "127.0.0.1:7000 restarted (run id a → b)"}}
}

// Issue 14, item 2: a correct limiter whose server restarted (state lost) was failed with
// definite violations that reach across the restart. Verified in epochs, it is inconclusive:
// no violation of its own, the ones across the restart attributed to it, the reason naming it.
func TestJudgeEpochsRestart(t *testing.T) {
	c, log, ds := restartHistory()
	whole, err := Check(c, cloneLog(log))
	if err != nil {
		t.Fatal(err)
	}
	if whole.Definite() == 0 {
		t.Fatal("the history as one has no definite violation: the test would prove nothing")
	}
	r, err := CheckEpochs(c, log, ds, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Definite() != 0 || r.Attributed != whole.Definite() || len(r.Epochs) != 2 || r.Unplaced != 0 {
		t.Fatalf("CheckEpochs: definite %d, attributed %d, %d epochs, %d unplaced; want 0, %d, 2, 0",
			r.Definite(), r.Attributed, len(r.Epochs), r.Unplaced, whole.Definite())
	}
	j := JudgeEpochs(r, Warnings{})
	if j.Verdict != Inconclusive || !strings.Contains(strings.Join(j.Reasons, "; "), "127.0.0.1:7000 restarted") ||
		!strings.Contains(strings.Join(j.Reasons, "; "), "attributed to it") {
		t.Errorf("JudgeEpochs = %+v; want inconclusive, naming the restart and the attributed violations", j)
	}
	if j := JudgeWith(whole, Warnings{}); j.Verdict != Fail {
		t.Errorf("JudgeWith(whole) = %v; the history as one must fail (this is what the epochs prevent)", j.Verdict)
	}

	// A fourth admission on the new state is the algorithm's own violation: fail.
	_, log, _ = restartHistory()
	log.Events = append(log.Events, mustEvent(250, 250, 0, 0, 1, Admitted))
	r, err = CheckEpochs(c, log, ds, 0)
	if err != nil {
		t.Fatal(err)
	}
	if j := JudgeEpochs(r, Warnings{}); j.Verdict != Fail || !strings.HasPrefix(j.Reasons[0], "after 127.0.0.1:7000 restarted") {
		t.Errorf("a violation within an epoch: JudgeEpochs = %+v; want fail, located after the restart", j)
	}

	// A loss of the state before the verified part does not cut it: the history is one.
	_, log, _ = restartHistory()
	r, err = CheckEpochs(c, log, ds, 1300)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Cuts) != 0 || JudgeEpochs(r, Warnings{}).Verdict != Fail {
		t.Errorf("a restart before the verified part: %d cuts; want none, and the history judged as one", len(r.Cuts))
	}
}

// TestCorrectLimiterCutByRestartsNeverFlagged: histories of an exact limiter (one or two limits,
// on a clock of the contract's granularity) or of a registered algorithm's reference model whose
// state is lost at restarts, or rolled back to an earlier instant (a failover to a lagging
// replica, an AOF that missed its last second), are never definite-flagged when the epochs are
// verified apart, however the intervals are widened, whatever is logged as unknown, and however
// wide the windows in which the watch saw each restart; the verdict is never fail, and never
// pass once a loss cuts the history. Zero false positives.
func TestCorrectLimiterCutByRestartsNeverFlagged(t *testing.T) {
	var models []algorithms.Algorithm
	for _, a := range algorithms.All() {
		if a.Model(algorithms.Limit{Limit: 1, Window: time.Second}) != nil {
			models = append(models, a)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		var c algorithms.Contract
		var fresh func() algorithms.Model
		g := int64(1)
		if i := rapid.IntRange(-2, len(models)-1).Draw(t, "model"); i == -2 {
			// The exact first-hit limiter: its windows start at denials too.
			l := algorithms.Limit{Limit: rapid.Int64Range(1, 6).Draw(t, "limit"),
				Window: time.Duration(rapid.Int64Range(1, 30).Draw(t, "window")) * time.Millisecond}
			c = algorithms.Contract{Kind: algorithms.FirstHitWindow, Limit: l.Limit, Window: l.Window}
			fresh = func() algorithms.Model { return algorithms.NewFirstHitModel(l) }
		} else if i < 0 {
			c = genScaledContract(t, "")
			if rapid.Bool().Draw(t, "two") {
				a := genScaledContract(t, "also")
				a.Granularity = c.Granularity
				c.Also = []algorithms.Contract{a}
			}
			fresh = func() algorithms.Model { return newRefLimiter(c) }
			g = c.Granularity.Microseconds()
		} else {
			a := models[i]
			l := algorithms.Limit{
				Limit:         rapid.Int64Range(1, 6).Draw(t, "limit"),
				Window:        time.Duration(rapid.Int64Range(1, 30).Draw(t, "window")) * time.Millisecond,
				Burst:         rapid.Int64Range(0, 8).Draw(t, "burst"),
				ConsumerLimit: rapid.Int64Range(0, 4).Draw(t, "consumer"),
			}
			var err error
			if c, err = a.Contract(l); err != nil {
				t.Fatalf("%s: Contract(%+v): %v", a.Describe().Name, l, err)
			}
			fresh = func() algorithms.Model { return a.Model(l) }
		}
		maxGap := max(c.Window, c.RefillPer).Microseconds()/3 + 1
		const origin = 1_700_000_000_000_000
		h := genArrivals(t, rapid.IntRange(1, 250).Draw(t, "n"), origin, maxGap)
		if rapid.Bool().Draw(t, "unit cost") {
			for i := range h.cost {
				h.cost[i] = 1
			}
		}
		end := h.t[len(h.t)-1]

		// The restarts: true instants in the run, each seen in a window around it.
		var restarts []int64
		var ds []Disruption
		for k := range rapid.IntRange(1, 3).Draw(t, "restarts") {
			s := rapid.Int64Range(origin, end+1).Draw(t, fmt.Sprint("at", k))
			restarts = append(restarts, s)
			seen := rapid.SampledFrom([]int64{0, 1, maxGap, 5 * maxGap}).Draw(t, fmt.Sprint("seen", k))
			lo := s - rapid.Int64Range(0, seen).Draw(t, fmt.Sprint("lo", k))
			hi := s + rapid.Int64Range(0, seen).Draw(t, fmt.Sprint("hi", k))
			ds = append(ds, Disruption{Lo: lo, Hi: hi, Node: "n", Kind: "restarted", What: fmt.Sprint("restart ", k), StateLost: true})
		}
		slices.Sort(restarts)
		rollback := rapid.Bool().Draw(t, "rollback")

		// The limiter decides on a clock of granularity g; at each restart a new state, empty or
		// the state the old one had at an earlier instant.
		h.x, h.admitted = nil, nil
		m := fresh()
		next := 0
		for i, ti := range h.t {
			for next < len(restarts) && restarts[next] <= ti {
				m = fresh()
				if rollback {
					// Replay into it what the old state held up to an earlier instant.
					back := restarts[next] - rapid.Int64Range(0, 3*maxGap).Draw(t, fmt.Sprint("back", next))
					from := int64(math.MinInt64)
					if next > 0 {
						from = restarts[next-1]
					}
					for j := range i {
						if h.t[j] >= from && h.t[j] < back && h.admitted[j] {
							m.Decide(h.subjects[h.subject[j]], h.clients[h.client[j]], h.cost[j], h.x[j])
						}
					}
				}
				next++
			}
			x := ti
			if g > 1 {
				x = floorDiv(ti, g) * g
			}
			h.x = append(h.x, x)
			h.admitted = append(h.admitted, m.Decide(h.subjects[h.subject[i]], h.clients[h.client[i]], h.cost[i], x))
		}
		spread := rapid.SampledFrom([]int64{0, 1, maxGap}).Draw(t, "spread")
		log := h.log(t, spread)
		r, err := CheckEpochs(c, log, ds, 0)
		if err != nil {
			t.Fatalf("CheckEpochs: %v", err)
		}
		if r.Definite() > 0 {
			for i, e := range r.Epochs {
				for _, l := range e.Limits {
					if l.Definite > 0 {
						t.Fatalf("%s: epoch %d of %d has %d definite violations in a correct history; worst %+v (cuts %+v)",
							l.Contract, i, len(r.Epochs), l.Definite, l.Worst, r.Cuts)
					}
				}
			}
		}
		j := JudgeEpochs(r, Warnings{})
		if j.Verdict == Fail || len(r.Cuts) > 0 && j.Verdict == Pass {
			t.Fatalf("JudgeEpochs = %+v with %d cuts; want never fail, and never pass across a cut", j, len(r.Cuts))
		}
	})
}

// TestSpan: a disruption seen between two run offsets is placed on the log's clock, widened by
// MismatchSlack and, on an external server's clock, moved by the offset and widened by its error.
func TestSpan(t *testing.T) {
	start := time.UnixMicro(1_700_000_000_000_000)
	slack := MismatchSlack.Microseconds()
	shared := NewAdmissionLog(start, true, nil, false)
	if lo, hi := shared.Span(100*time.Millisecond, 200*time.Millisecond+500); lo != start.UnixMicro()+100_000-slack ||
		hi != start.UnixMicro()+200_001+1+slack {
		t.Errorf("shared clock: Span = [%d, %d]", lo-start.UnixMicro(), hi-start.UnixMicro())
	}
	server := NewAdmissionLog(start, false, &clock.Offset{Offset: 5 * time.Millisecond, Err: 300 * time.Microsecond}, false)
	if lo, hi := server.Span(100*time.Millisecond, 200*time.Millisecond); lo != start.UnixMicro()+100_000-slack+4700 ||
		hi != start.UnixMicro()+200_000+1+slack+5300 {
		t.Errorf("server clock: Span = [%d, %d]", lo-start.UnixMicro(), hi-start.UnixMicro())
	}
}

// TestSectionsWithDisruptions: a measurement whose server restarted reports the epochs'
// violations as its own (none), the ones across the restart apart, the restart with its times
// from the start of the measured part, an inconclusive verdict, and no replay note (the
// reference model keeps the state the server lost).
func TestSectionsWithDisruptions(t *testing.T) {
	c, log, ds := restartHistory()
	m := Measurement{Contract: c, Model: nil, Log: log, Start: 1100, Disruptions: ds}
	v, _ := m.Sections()
	want := []DisruptionReport{{Node: "127.0.0.1:7000", Kind: "restarted", What: "127.0.0.1:7000 restarted (run id a → b)",
		FromS: 0.0001, ToS: 0.0001, StateLost: true}}
	if v.Verdict != Inconclusive || v.DefiniteViolations != 0 || v.AttributedViolations == 0 || v.Epochs != 2 ||
		v.WorstExcess != 0 || len(v.ViolationTimesS) != 0 {
		t.Errorf("Sections: %+v; want inconclusive, no definite violation of its own, the attributed ones counted, 2 epochs", v)
	}
	if diff := cmp.Diff(want, v.Disruptions, cmpopts.EquateApprox(0, 0.001)); diff != "" {
		t.Errorf("disruptions (-want +got):\n%s", diff)
	}
}
