package verify

import (
	"fmt"
	"math"

	"github.com/limitbench/limitbench/algorithms"
)

// InjectedFault is a fault a scenario asked for and the runner injected during a measurement: it
// acted over [Lo, Hi] and its effects are its own until Until (Hi plus the fault's recovery), µs
// since the Unix epoch on the log's clock. A fault that never started has Lo == Hi == Until == 0
// and Err saying why.
type InjectedFault struct {
	// Name describes it ("restart master at 2s"); Kind and Target as the scenario wrote them;
	// Nodes are the addresses it acted on.
	Name, Kind, Target string
	Nodes              []string
	Lo, Hi, Until      int64
	// Err is what went wrong injecting it; empty when it was carried out as planned.
	Err string
}

// started reports whether f was injected at all.
func (f InjectedFault) started() bool { return f.Until != 0 }

// overlaps reports whether f's window [Lo, Until] meets the span [lo, hi].
func (f InjectedFault) overlaps(lo, hi int64) bool { return f.started() && lo <= f.Until && hi >= f.Lo }

// owner returns the index in fs of the fault a definite violation v of a limit with contract c is
// attributed to, or −1: the latest fault that lost the state (its window meets a cut, lost[i])
// and began before v's window could end (v.At, plus c's window for a fixed window, which starts
// at At), else the first that lost the state. In a history whose epochs hold no violation, every
// definite violation holds admissions on both sides of a cut, or in one, so it is some loss's
// doing; a token bucket's can end long after the loss (the state refilled by the loss stays
// counted in every interval that reaches back across it).
func owner(v Violation, c algorithms.Contract, fs []InjectedFault, lost []bool) int {
	end := v.At
	if c.Kind == algorithms.FixedWindow {
		end += c.Window.Microseconds()
	}
	first, best := -1, -1
	for i, f := range fs {
		if !lost[i] {
			continue
		}
		if first < 0 {
			first = i
		}
		if f.Lo <= end && (best < 0 || f.Lo > fs[best].Lo) {
			best = i
		}
	}
	if best < 0 {
		return first
	}
	return best
}

// seen returns fs with each window stretched to the losses of the state it owns (cutOwner: a
// latency on the replication link is not stretched to the failover's loss): a cut that
// overlaps a fault's window but was seen to end after the fault ended (the node watch dates a
// restart by its polls) moves the fault's Hi to the cut's Hi and its Until as far, so that the
// recovery counts from when the loss was over. A cut that never ends (a promotion whose former
// master was never seen to step down) stretches nothing; JudgeFaults does not pass it.
func seen(fs []InjectedFault, cuts []Cut) []InjectedFault {
	out := append([]InjectedFault(nil), fs...)
	for i, f := range out {
		for _, c := range cuts {
			if cutOwner(fs, i, c) && c.Hi > f.Hi && c.Hi != math.MaxInt64 {
				out[i].Until += c.Hi - out[i].Hi
				out[i].Hi = c.Hi
			}
		}
	}
	return out
}

// losesState reports whether a fault of kind may take the limiter's state away by itself: a
// kill, a restart, a failover, an eviction (the kinds whose injections are disruptions that cut the history).
// A pause, a flush of the script cache, killed connections and the network faults do not: a
// latency on the replication link makes a failover lose more, but the failover loses it.
func losesState(kind string) bool {
	return kind == "kill" || kind == "restart" || kind == "failover" || kind == "evict"
}

// cutOwner reports whether the cut c is fault fs[i]'s: its window meets c, and it loses the state
// by itself or no fault of fs whose window meets c does (then every fault there shares it).
func cutOwner(fs []InjectedFault, i int, c Cut) bool {
	if !fs[i].overlaps(c.Lo, c.Hi) {
		return false
	}
	if losesState(fs[i].Kind) {
		return true
	}
	for _, f := range fs {
		if losesState(f.Kind) && f.overlaps(c.Lo, c.Hi) {
			return false
		}
	}
	return true
}

// FaultReport is what one injected fault did to one measurement, in a result entry: its times in
// seconds from the start of the measured part.
type FaultReport struct {
	Name   string   `json:"name"`
	Kind   string   `json:"kind"`
	Target string   `json:"target"`
	Nodes  []string `json:"nodes,omitempty"`
	// FromS and ToS are when it acted; UntilS the end of its window (ToS plus its recovery).
	// All three are 0 when it never started.
	FromS  float64 `json:"from_s"`
	ToS    float64 `json:"to_s"`
	UntilS float64 `json:"until_s"`
	// Error says what went wrong injecting it.
	Error string `json:"error,omitempty"`
	// StateLost: the limiter's state may have been lost in its window (a cut of the history: a
	// restart, kill or failover it injected, or a loss the node watch saw); StateLoss says how,
	// in words. With persistence a restart may keep the state: the excess then shows it.
	StateLost bool   `json:"state_lost,omitempty"`
	StateLoss string `json:"state_loss,omitempty"`
	// Violations counts the definite violations of the history as one attributed to the fault
	// (it lost the state and they reach across the loss; see owner); Excess is, summed over the
	// contract's limits, the largest excess among them: permits admitted beyond the contract
	// because of the fault. Both count only what the checker listed (at most MaxViolations per
	// limit); Omitted counts the violations it did not list, which may hold more.
	Violations int64 `json:"violations"`
	Excess     int64 `json:"excess"`
	Omitted    int64 `json:"omitted,omitempty"`
	// Unknown and Failed count the requests sent in its window whose outcome is unknown
	// (timed out after sending: never counted as admissions) or that failed.
	Unknown int64 `json:"unknown"`
	Failed  int64 `json:"failed"`
	// NoScript counts the requests in its window that met a NOSCRIPT error (filled in by the
	// runner, which sees the errors).
	NoScript int64 `json:"noscript,omitempty"`
	// BackAfterS is the time from the fault's end until a request sent at or after its end
	// was decided (admitted or denied): how long Redis took to answer again. -1 when none was.
	BackAfterS float64 `json:"back_after_s"`
}

// faultLog is what the fault judgement reads from the measured history besides its check: the
// outcomes in flight in a fault's window and how soon requests were decided after it
// (Log.inFault), and the errors outside every fault's window (Log.outside). A Log scans its
// events; a MeasurementStream keeps what it needs as they come.
type faultLog interface {
	inFault(f InjectedFault, end int64) (unknown, failed int64, backS float64)
	outside(fs []InjectedFault, k1, k2 Kind) int64
}

var _ faultLog = (*Log)(nil)

// faultReports returns what each fault of fs did to the history checked in er (log holds the
// measured history, start the measured part's beginning).
func faultReports(fs []InjectedFault, er EpochReport, log faultLog, start int64) []FaultReport {
	acted := fs
	fs = seen(fs, er.Cuts)
	out := make([]FaultReport, len(fs))
	lost := make([]bool, len(fs))
	for i, f := range fs {
		r := FaultReport{Name: f.Name, Kind: f.Kind, Target: f.Target, Nodes: f.Nodes, Error: f.Err, BackAfterS: -1}
		if f.started() {
			r.FromS, r.ToS, r.UntilS = round3(float64(f.Lo-start)/1e6), round3(float64(f.Hi-start)/1e6), round3(float64(f.Until-start)/1e6)
			for _, c := range er.Cuts {
				if cutOwner(fs, i, c) {
					if r.StateLost {
						r.StateLoss += "; "
					}
					r.StateLost, lost[i] = true, true
					r.StateLoss += c.What()
				}
			}
			r.Unknown, r.Failed, r.BackAfterS = log.inFault(f, acted[i].Hi)
		}
		out[i] = r
	}
	for _, l := range er.Whole.Limits {
		worst := make([]int64, len(fs))
		for _, v := range l.Violations {
			if i := owner(v, l.Contract, fs, lost); i >= 0 {
				out[i].Violations++
				worst[i] = max(worst[i], v.Excess)
			}
		}
		for i := range out {
			out[i].Excess += worst[i]
			if lost[i] {
				out[i].Omitted += l.ViolationsDropped
			}
		}
	}
	return out
}

// inFault returns the unknown and failed outcomes of log in flight in f's window (sent before
// its end, not answered before it began: a request the fault cut short was often sent just
// before it), and the time from end (when the fault was done) until a request sent at or
// after it was decided (−1 when none was), in seconds.
func (log *Log) inFault(f InjectedFault, end int64) (unknown, failed int64, backS float64) {
	back := int64(math.MaxInt64)
	if log != nil {
		for _, e := range log.Events {
			lo, hi := log.Base+e.Lo(), log.Base+e.Hi()
			switch k := e.Kind(); {
			case k == Unknown && f.overlaps(lo, hi):
				unknown++
			case k == Failed && f.overlaps(lo, hi):
				failed++
			case (k == Admitted || k == Denied) && lo >= end:
				back = min(back, hi)
			}
		}
	}
	if back == math.MaxInt64 {
		return unknown, failed, -1
	}
	return unknown, failed, round3(float64(back-end) / 1e6)
}

// JudgeFaults is JudgeEpochs for a measurement that injected the faults fs on purpose, whose
// reports (faultReports) are reps; log is the measured log. Without a fault that started it is
// JudgeEpochs. With some:
//
//   - fail when the history, or an epoch between losses of the state, has a definite violation
//     the warnings cannot explain, whether or not it is in a fault's window: a correct limiter
//     keeps its contract wherever its state held (a pause, a slow or broken link never make
//     one break it);
//   - JudgeEpochs's verdict (inconclusive) when the state was lost where no fault was injected
//     (a cut that meets no fault's window);
//   - inconclusive when a loss of the state never ends (a promotion whose former master was
//     never seen to step down: the rest of the history is in no epoch), for JudgeWith's other reasons (a schedule that fell behind, clock
//     mismatches, dropped outcomes), and when unknown outcomes could hide a violation and some
//     of them were sent outside every fault's window;
//   - pass otherwise, with notes: each fault that lost the state and the violations attributed
//     to it, and unknown outcomes (all sent in the faults' windows, counted in their reports)
//     that could hide a violation. The fault the scenario asked for happened; what it cost is
//     its report's Excess, judged by the scenario's thresholds (fault_excess), not the verdict.
//
// A pass therefore means that every definite violation holds admissions decided on both sides of
// (or during) a loss of the state that an injected fault caused (no epoch has one), and that
// every outcome the verifier could not see was a request sent in a fault's window. Each such
// violation is attributed to a fault (owner) and counted in its report.
func JudgeFaults(r EpochReport, w Warnings, log *Log, fs []InjectedFault, reps []FaultReport) Judgement {
	return judgeFaults(r, w, log, fs, reps)
}

// judgeFaults is JudgeFaults with log any faultLog.
func judgeFaults(r EpochReport, w Warnings, log faultLog, fs []InjectedFault, reps []FaultReport) Judgement {
	anyStarted := false
	for _, f := range fs {
		anyStarted = anyStarted || f.started()
	}
	if !anyStarted {
		return JudgeEpochs(r, w)
	}
	fs = seen(fs, r.Cuts)
	for _, c := range r.Cuts {
		injected := false
		for _, f := range fs {
			injected = injected || f.overlaps(c.Lo, c.Hi)
		}
		if !injected {
			return JudgeEpochs(r, w)
		}
	}
	var unsettled []string
	for _, c := range r.Cuts {
		if c.Hi == math.MaxInt64 {
			unsettled = append(unsettled, "the limiter's state stayed unsettled to the end of the measurement: "+c.What()+
				" (the former master was never seen to stop acting as one, so clients may have been admitted by either)")
		}
	}
	parts := []Report{r.Whole}
	if len(r.Cuts) > 0 {
		parts = r.Epochs
	}
	faultsUnknown := log.outside(fs, Unknown, Unknown) == 0
	var fail, unsure, notes []string
	for i, p := range parts {
		where := ""
		if len(r.Cuts) > 0 {
			where = epochName(r.Cuts, i) + ": "
		}
		if faultsUnknown {
			p.Limits = append([]LimitReport(nil), p.Limits...)
			for k := range p.Limits {
				if l := &p.Limits[k]; l.UnknownCouldHide {
					notes = append(notes, fmt.Sprintf("note: %sunknown outcomes, all sent in the faults' windows, could hide a violation of %s (up to %d permits over the limit, had they been admitted)",
						where, l.Contract, l.UnknownExcess))
					l.UnknownCouldHide = false
				}
			}
		}
		f, u := violations(p, w)
		for _, s := range f {
			fail = append(fail, where+s)
		}
		for _, s := range u {
			unsure = append(unsure, where+s)
		}
	}
	if len(fail) > 0 {
		return Judgement{Verdict: Fail, Reasons: append(fail, canceledNote(w)...)}
	}
	unsure = append(append(unsure, unsettled...), support(r.Whole, w)...)
	for _, rep := range reps {
		if rep.StateLost {
			notes = append(notes, fmt.Sprintf("note: state lost by the injected fault %s (%s): %d definite %s attributed to it, excess %d",
				rep.Name, rep.StateLoss, rep.Violations, plural(rep.Violations, "violation", "violations"), rep.Excess))
		}
	}
	if len(unsure) > 0 {
		return Judgement{Verdict: Inconclusive, Reasons: append(append(unsure, notes...), canceledNote(w)...)}
	}
	return Judgement{Verdict: Pass, Reasons: append(notes, canceledNote(w)...)}
}

// outside counts the events of log of kind k1 or k2 in flight outside every window of fs (see
// inFault).
func (log *Log) outside(fs []InjectedFault, k1, k2 Kind) int64 {
	if log == nil {
		return 0
	}
	var n int64
	for _, e := range log.Events {
		if k := e.Kind(); k != k1 && k != k2 {
			continue
		}
		lo, hi := log.Base+e.Lo(), log.Base+e.Hi()
		in := false
		for _, f := range fs {
			in = in || f.overlaps(lo, hi)
		}
		if !in {
			n++
		}
	}
	return n
}
