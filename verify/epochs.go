package verify

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/limitbench/limitbench/algorithms"
)

// Disruption is something that happened to Redis during a measurement that the algorithm did
// not cause: a restart, a promotion, a flush or a pause seen by the node watch (or, later, a
// fault injected on purpose). It happened at some instant of [Lo, Hi], µs since the Unix epoch
// on the clock of the log it goes with (AdmissionLog.Span converts the harness's times).
//
// A disruption with StateLost may have taken the limiter's state away (a master restarted
// without its data, a flush, a replica promoted without the last writes): the admissions after
// it were decided on a state that does not hold the admissions before it, so a correct limiter
// can admit, across it, more than its contract allows. The verifier cuts the history there
// (CheckEpochs) and verifies each side apart.
type Disruption struct {
	// Lo and Hi bound when it happened, µs since the Unix epoch on the log's clock.
	Lo, Hi int64
	// Node is the host:port of the node it happened to.
	Node string
	// Kind names it in one word or two ("restarted", "promoted", "flushed", "unreachable").
	Kind string
	// What says what happened in words, for reasons and reports.
	What string
	// StateLost: the limiter's state on Node may be gone or rolled back (see above).
	StateLost bool
	// Former, on a promotion, is the master the promoted replica followed. Until Former is
	// seen to stop acting as a master (a later disruption of Former with Deposes), clients may
	// have been admitted by either, each on its own state: the state is unsettled from Lo until
	// then, and to the end of the log when that is never seen.
	Former string
	// Deposes: the node stopped acting as a master here (demoted, unreachable, restarted), or
	// answered the load for the last time here: only the load touches the limiter's keys, so the
	// node's state no longer decides anything after it.
	Deposes bool
}

// Cut is a span of time, µs since the Unix epoch on a log's clock, in which the limiter's state
// may have been lost: one disruption with StateLost, or several whose spans overlap. An
// admission in it may have been decided on either side of the loss, so no epoch holds it.
type Cut struct {
	Lo, Hi int64
	// Disruptions are the disruptions it is made of, in order.
	Disruptions []Disruption
}

// What describes the cut in words: its disruptions' What, joined.
func (c Cut) What() string {
	parts := make([]string, len(c.Disruptions))
	for i, d := range c.Disruptions {
		parts[i] = d.What
	}
	return strings.Join(parts, ", then ")
}

// Cuts returns the cuts that the disruptions of ds with StateLost make, in time order, after
// from (µs since the Unix epoch: a loss that ended before the verified part began does not
// concern it). A promotion lasts until its former master is deposed (see Disruption.Former), or
// to math.MaxInt64. Disruptions whose spans overlap or touch make one cut.
func Cuts(ds []Disruption, from int64) []Cut {
	var spans []Cut
	for i, d := range ds {
		if !d.StateLost {
			continue
		}
		hi := d.Hi
		if d.Former != "" {
			hi = math.MaxInt64
			for j, e := range ds {
				if j != i && e.Node == d.Former && e.Deposes && e.Hi >= d.Lo {
					hi = max(d.Hi, min(hi, e.Hi))
				}
			}
		}
		if hi < from {
			continue
		}
		spans = append(spans, Cut{Lo: d.Lo, Hi: hi, Disruptions: []Disruption{d}})
	}
	slices.SortStableFunc(spans, func(a, b Cut) int { return cmp.Compare(a.Lo, b.Lo) })
	var out []Cut
	for _, s := range spans {
		if n := len(out); n > 0 && s.Lo <= out[n-1].Hi {
			out[n-1].Hi = max(out[n-1].Hi, s.Hi)
			out[n-1].Disruptions = append(out[n-1].Disruptions, s.Disruptions...)
			continue
		}
		out = append(out, s)
	}
	return out
}

// Split returns the epochs of log between the cuts (in time order, as Cuts returns them):
// len(cuts)+1 logs sharing log's names and Base, epoch i holding the admissions and unknown
// outcomes whose [Lo, Hi] lies strictly between cut i−1's Hi and cut i's Lo (an unknown
// outcome, which may have run any time after it was sent, goes with the epoch its Lo is in),
// and the number of admissions and unknown outcomes it left out because they meet a cut.
// Denials and failures are left out: only first-hit windows read them (see SplitAll). log is
// not changed.
//
// Every event of an epoch was decided strictly between two losses of the state, on a state that
// held the epoch's earlier admissions: a correct limiter keeps its contract over each epoch
// alone.
func Split(log *Log, cuts []Cut) (epochs []*Log, unplaced int64) {
	return split(log, cuts, false)
}

// SplitAll is Split for a contract with a first-hit-window limit, whose windows start at any
// request that reached the limiter: epoch i also holds the denials and failures strictly
// between the cuts, and every event that may also have run in a later epoch (an unknown
// outcome, or any event that meets a cut) is added to each epoch it may have run in as an
// unknown outcome at its Lo, which may or may not have reached that epoch's state. Unknown
// outcomes never make a violation, so the copies only widen what an epoch allows.
func SplitAll(log *Log, cuts []Cut) (epochs []*Log, unplaced int64) {
	return split(log, cuts, true)
}

// split is Split, or SplitAll when all.
func split(log *Log, cuts []Cut, all bool) (epochs []*Log, unplaced int64) {
	epochs = make([]*Log, len(cuts)+1)
	for i := range epochs {
		epochs[i] = &Log{Subjects: log.Subjects, Clients: log.Clients, Base: log.Base}
	}
	for _, e := range log.Events {
		k := e.Kind()
		if !all && k != Admitted && k != Unknown {
			continue
		}
		lo, hi := log.Base+e.Lo(), log.Base+e.Hi()
		if k == Unknown {
			hi = lo
		}
		// The first cut that does not end before lo.
		i, _ := slices.BinarySearchFunc(cuts, lo, func(c Cut, t int64) int {
			if c.Hi < t {
				return -1
			}
			return 1
		})
		last := i // the last epoch e may have run in
		if i < len(cuts) && hi >= cuts[i].Lo {
			if k == Admitted || k == Unknown {
				unplaced++
			}
			for last < len(cuts) && hi >= cuts[last].Lo {
				last++
			}
		} else {
			epochs[i].Events = append(epochs[i].Events, e)
			i++ // it is in epoch i as it is
		}
		if !all {
			continue
		}
		if k == Unknown {
			last = len(cuts)
		}
		for j := i; j <= last && j < len(epochs); j++ {
			u, _ := NewEvent(e.Lo(), e.Lo(), e.Subject, e.Client, e.Permits, Unknown)
			epochs[j].Events = append(epochs[j].Events, u)
		}
	}
	return epochs, unplaced
}

// EpochReport is the check of a history cut where the limiter's state may have been lost.
type EpochReport struct {
	// Whole is the check of the history as one, as Check gives it.
	Whole Report
	// Cuts are where it was cut, in time order; empty when nothing lost the state (then
	// Epochs is nil and Whole is the verdict's).
	Cuts []Cut
	// Epochs holds the check of each part between the cuts (len(Cuts)+1), in time order.
	Epochs []Report
	// Unplaced counts the admissions and unknown outcomes during a cut, which no epoch holds.
	Unplaced int64
	// Attributed counts the definite violations of Whole that no epoch shows by itself: windows
	// that reach across a loss of the state, the disruption's doing, not the algorithm's.
	Attributed int64
}

// Definite returns the definite violations of the epochs (of Whole when there are no cuts):
// the algorithm's own.
func (r *EpochReport) Definite() int64 {
	if len(r.Cuts) == 0 {
		return r.Whole.Definite()
	}
	var n int64
	for i := range r.Epochs {
		n += r.Epochs[i].Definite()
	}
	return n
}

// CheckEpochs checks log against c as Check does, and when the disruptions ds cut it (Cuts, from
// from on) also each epoch apart (Split). A definite violation within an epoch holds whatever
// happened at the cuts; one of the whole history that no epoch shows reaches across a loss of
// the state and is counted in Attributed. Cutting can only remove violations, never make one,
// so verifying epochs apart never flags a limiter the whole history does not. Like Check it
// reorders log.Events.
func CheckEpochs(c algorithms.Contract, log *Log, ds []Disruption, from int64) (EpochReport, error) {
	return checkEpochs(c, log, ds, from, plainCheck(c))
}

// epochCheck checks one history: the whole one or an epoch, first when it is the whole history
// or its first epoch (the part that follows what came before the log, such as a warmup).
type epochCheck func(log *Log, first bool) (Report, error)

// plainCheck is the epochCheck of Check against c.
func plainCheck(c algorithms.Contract) epochCheck {
	return func(log *Log, _ bool) (Report, error) { return Check(c, log) }
}

// checkEpochs is CheckEpochs with check for each history.
func checkEpochs(c algorithms.Contract, log *Log, ds []Disruption, from int64, check epochCheck) (EpochReport, error) {
	cuts := Cuts(ds, from)
	var r EpochReport
	var epochs []*Log
	if len(cuts) > 0 {
		// Split before Check reorders the events (it does not need them in order).
		if HasFirstHit(c) {
			epochs, r.Unplaced = SplitAll(log, cuts)
		} else {
			epochs, r.Unplaced = Split(log, cuts)
		}
	}
	whole, err := check(log, true)
	if err != nil {
		return r, err
	}
	r.Whole, r.Cuts = whole, cuts
	if len(cuts) == 0 {
		return r, nil
	}
	var inEpochs int64
	for i, e := range epochs {
		rep, err := check(e, i == 0)
		if err != nil {
			return r, err
		}
		inEpochs += rep.Definite()
		r.Epochs = append(r.Epochs, rep)
	}
	r.Attributed = max(0, whole.Definite()-inEpochs)
	return r, nil
}

// JudgeEpochs returns the verdict on a history checked in epochs, with the warnings w: without
// cuts, JudgeWith(r.Whole, w). With cuts:
//
//   - fail when an epoch has a definite violation that the warnings cannot explain (as
//     JudgeWith decides it for that epoch alone): it happened between two losses of the state,
//     where a correct limiter keeps its contract;
//   - inconclusive otherwise, always: the contract could not be checked across the cuts, and a
//     reason names each cut and the violations attributed to it; the other reasons of
//     JudgeWith (no admission, the schedule fell behind, unknown outcomes that could hide a
//     violation in an epoch, clock mismatches, dropped outcomes) are added as they apply.
//
// It never fails a history that JudgeWith(r.Whole, w) passes, and never passes one: a loss of
// the state is never a pass.
func JudgeEpochs(r EpochReport, w Warnings) Judgement {
	if len(r.Cuts) == 0 {
		return JudgeWith(r.Whole, w)
	}
	var fail, unsure []string
	for i := range r.Epochs {
		f, u := violations(r.Epochs[i], w)
		where := epochName(r.Cuts, i)
		for _, s := range f {
			fail = append(fail, where+": "+s)
		}
		for _, s := range u {
			unsure = append(unsure, where+": "+s)
		}
	}
	if len(fail) > 0 {
		return Judgement{Verdict: Fail, Reasons: append(fail, canceledNote(w)...)}
	}
	for _, c := range r.Cuts {
		unsure = append(unsure, "the limiter's state may have been lost: "+c.What()+"; each side was verified apart")
	}
	if r.Attributed > 0 {
		unsure = append(unsure, fmt.Sprintf("%d definite %s of the history as one reach across the loss of the state and are attributed to it, not to the algorithm",
			r.Attributed, plural(r.Attributed, "violation", "violations")))
	}
	if r.Unplaced > 0 {
		unsure = append(unsure, fmt.Sprintf("%d admissions or unknown outcomes were decided while the state was being lost and are checked in no epoch", r.Unplaced))
	}
	unsure = append(unsure, support(r.Whole, w)...)
	return Judgement{Verdict: Inconclusive, Reasons: append(unsure, canceledNote(w)...)}
}

// epochName names epoch i of the epochs between cuts, for reasons.
func epochName(cuts []Cut, i int) string {
	switch {
	case i == 0:
		return "before " + cuts[0].What()
	case i == len(cuts):
		return "after " + cuts[i-1].What()
	}
	return "between " + cuts[i-1].What() + " and " + cuts[i].What()
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// HasFirstHit reports whether c or one of its Also is a first-hit-window limit: its windows start
// at a key's first request after the last one ended, so a history missing a request may place them
// elsewhere.
func HasFirstHit(c algorithms.Contract) bool {
	if c.Kind == algorithms.FirstHitWindow {
		return true
	}
	return slices.ContainsFunc(c.Also, HasFirstHit)
}
