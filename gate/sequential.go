package gate

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/limitbench/limitbench/result"
)

// SequentialRule names the procedure of Sequence in result.Sequential.Rule; doc.go specifies it.
const SequentialRule = "pocock-type alpha spending over the time budget, a look whenever the rounds have grown by half"

// Spent returns the level a sequential run has spent once the fraction t of its time budget has
// passed: Lan and DeMets' Pocock-type spending function α·ln(1 + (e − 1)·t) with α = Alpha; 0 for
// t ≤ 0 and Alpha for t ≥ 1.
func Spent(t float64) float64 {
	t = min(max(t, 0), 1)
	return Alpha * math.Log(1+(math.E-1)*t)
}

// Sequence is the sequential procedure of one topology of a `run --repeat auto` (doc.go,
// "Sequential rounds"): after every round from MinSamples on, Look says whether every gated
// figure can decide at its threshold, and at which level, spending Alpha over the time budget.
// A Sequence is used by one goroutine, for one topology; its zero value is not usable.
type Sequence struct {
	// Budget is the time the topology's rounds may take, from the start of its first round.
	Budget time.Duration
	// Baseline is the result the run will be gated against; nil: each look compares the run
	// with itself, and a figure can decide when its MDE is at most its threshold.
	Baseline *result.Result
	// Policy holds the thresholds.
	Policy Policy

	spent float64
	looks int
	next  int                       // the round of the next look (0: MinSamples)
	prev  result.SequentialTopology // the last look
}

// LookGrowth is how much the rounds grow from one look to the next: a look after MinSamples
// rounds, then after ⌈1.5·k⌉ rounds when the last was after k (6, 9, 14, 21, 32, ...), and after
// the last round the budget allows. The level a skipped round would have spent goes to the next
// look (the spending is over time), so fewer looks judge at wider levels: simulated with 5%
// noise (TestSequentialFalseAlarmsAndPower, 100 trials), +25% CPU is found in 97 trials after 20
// rounds on average, against 91 after 24 with a look after every round; 0 false alarms either way.
const LookGrowth = 1.5

// Look is called after every round: it judges the rounds of topology in current (every
// algorithm's repeats so far as samples) after rounds rounds, elapsed since the first began, the
// last one having taken round, when this round is one of the looks (LookGrowth). It returns the
// look, to be recorded in result.Sequential (after a round without a look, the last look with the
// rounds brought up to date), and whether to stop: every gated figure of the topology can decide,
// or the budget leaves no time for another round. An error (from Compare) stops the rounds too.
//
// The look's level is Spent(t) − (the level spent by the earlier looks), t = elapsed / Budget;
// a look after which no round fits in the budget (elapsed + round > Budget) is the last and
// takes all that is left, Alpha − spent. A metric row can decide when, compared at that level,
// its verdict is not Inconclusive (with a Baseline), or its MDE is at most its threshold
// (without). The reference and the verdict rows are not counted: more rounds change neither.
func (s *Sequence) Look(current *result.Result, topology string, rounds int, elapsed, round time.Duration) (result.SequentialTopology, bool, error) {
	t := elapsed.Seconds() / s.Budget.Seconds()
	last := t >= 1 || elapsed+round > s.Budget
	if !last && rounds < max(s.next, MinSamples) {
		// No look after this round: what the last look found, the rounds brought up to date.
		l := s.prev
		l.Topology, l.Rounds, l.ElapsedS = topology, rounds, math.Round(elapsed.Seconds()*1000)/1000
		return l, false, nil
	}
	s.looks++
	s.next = max(rounds+1, int(math.Ceil(float64(rounds)*LookGrowth)))
	level := Spent(t) - s.spent
	if last {
		level = Alpha - s.spent
	}
	look := result.SequentialTopology{Topology: topology, Rounds: rounds, Looks: s.looks,
		ElapsedS: math.Round(elapsed.Seconds()*1000) / 1000, Spent: s.spent, Level: level}
	s.spent += level

	cur := *current
	cur.Sequential = &result.Sequential{Topologies: []result.SequentialTopology{look}}
	base := s.Baseline
	if base == nil {
		base = &cur
	}
	rep, err := Compare(base, &cur, s.Policy)
	if err != nil {
		return look, true, err
	}
	for _, r := range rep.Rows {
		if r.Topology != topology || r.Metric == result.Verdict {
			continue
		}
		decided := r.MDE <= r.Threshold
		if s.Baseline != nil {
			decided = r.Verdict != Inconclusive
		}
		if !decided {
			look.Undecided = append(look.Undecided, fmt.Sprintf("%s %s (MDE %s > %s)", r.Algorithm, r.Metric,
				formatAmount(r, r.MDE), formatThreshold(r)))
		}
	}
	look.Decided = len(look.Undecided) == 0
	s.prev = look
	return look, last || look.Decided, nil
}

// sequentialNotes says how a sequential current run chose its rounds and at which level its rows
// are judged, per topology; none for a run of fixed repeats.
func sequentialNotes(seq *result.Sequential) []string {
	if seq == nil {
		return nil
	}
	var notes []string
	for _, t := range seq.Topologies {
		n := fmt.Sprintf("the current run chose its rounds on %s sequentially (--repeat auto, %s): %d rounds, %d looks; "+
			"its rows there are judged at the level of its last look, %s (%s%% intervals)",
			t.Topology, seq.Rule, t.Rounds, t.Looks, strconv.FormatFloat(t.Level, 'g', 3, 64), confidence(t.Level))
		if !t.Decided {
			n += "; its budget was spent before " + strings.Join(t.Undecided, ", ") + " could decide"
		}
		notes = append(notes, n)
	}
	return notes
}
