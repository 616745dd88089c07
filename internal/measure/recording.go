package measure

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/clock"
	"github.com/limitbench/limitbench/internal/faults"
	"github.com/limitbench/limitbench/internal/faults/watch"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// Recording is the aggregators one measurement feeds: latency histograms, the timeline and the
// errors by class of the measured part, the streaming verifier (Stream) and the admission logs
// of the measured part and of the warmup (Warmup is nil without one). A segment's partial result
// is a Recording encoded, and the merge of a segmented run merges the segments' Recordings
// (Merge) into the entry one unsegmented measurement would have given (Entry).
//
// A measurement verifies as it runs: Stream checks the admissions as they come and holds what a
// later violation can still include, so that its memory follows the contract's windows rather
// than the run's length. Log and Warmup then keep the whole history only up to KeepEvents (for
// the sections the stream does not give; Kept says whether they hold it). A measurement that
// needs its whole history (Measurement.WholeHistory) has no Stream: its logs keep every event
// and the whole-history checker verifies them after the run.
type Recording struct {
	Histograms  *load.Histograms
	Timeline    *load.Timeline
	Errors      *load.Errors
	Log, Warmup *verify.AdmissionLog
	Stream      *verify.StreamLog

	streamWarmup *verify.StreamLog
	kept         *history                  // the budget of Log and Warmup beside a Stream
	merged       *verify.MeasurementStream // a merge's stream (MergedStream)
}

// newRecording returns the aggregators of a measurement of p whose admission logs are on the
// clock sharedClock, server and clientClock say (see verify.AdmissionLog), streaming with set
// unless set is nil.
func newRecording(p load.Plan, sharedClock bool, server *clock.Offset, clientClock bool, set *verify.StreamLogSettings) *Recording {
	r := &Recording{
		Histograms: load.NewHistograms(p.MaxLatency),
		Timeline:   load.NewTimeline(p.Warmup, p.Bin, p.Duration),
		Errors:     load.NewErrors(),
		Log:        verify.NewAdmissionLog(time.Time{}, sharedClock, server, clientClock),
	}
	if p.Warmup > 0 {
		r.Warmup = verify.NewAdmissionLog(time.Time{}, sharedClock, server, clientClock)
	}
	if set != nil {
		r.Stream = verify.NewStreamLog(time.Time{}, sharedClock, server, clientClock, *set)
		r.streamWarmup = r.Stream.Warmup()
		r.kept = &history{}
	}
	return r
}

// Sinks returns the aggregators as load.Run takes them.
func (r *Recording) Sinks() load.Sinks {
	log := func(l *verify.AdmissionLog) load.Aggregator {
		if r.kept != nil {
			return &keptLog{log: l, h: r.kept}
		}
		return l
	}
	s := load.Sinks{Measured: []load.Aggregator{r.Histograms, r.Timeline, r.Errors, log(r.Log)}}
	if r.Stream != nil {
		s.Measured = append(s.Measured, r.Stream)
		s.Warmup = append(s.Warmup, r.streamWarmup)
	}
	if r.Warmup != nil {
		s.Warmup = append(s.Warmup, log(r.Warmup))
	}
	return s
}

// Kept reports whether Log and Warmup hold the whole history: always without a Stream, and
// with one when the run stayed within KeepEvents.
func (r *Recording) Kept() bool { return r.kept == nil || !r.kept.over.Load() }

// Close removes the stream's temporary files, if any.
func (r *Recording) Close() error {
	if r.merged != nil {
		return r.merged.Close()
	}
	if r.Stream == nil {
		return nil
	}
	return r.Stream.Close()
}

// MergedStream returns the stream that verifies the merged history of a segmented run, which
// Entry then takes the entry's sections from, as it takes a run's from Stream: the merge feeds
// it the segments' events in time order (Stream takes outcomes, a merge has events). m is what
// it verifies (its Start set; its logs unused) and base the Base of the events' times. kept says
// whether the logs the merge gives Entry hold the whole history, for the sections the stream
// does not give (the violation explorer, fairness, the window use); without them, Entry says
// they were left out, as for a run past KeepEvents.
func (r *Recording) MergedStream(m verify.Measurement, base int64, subjects, clients []string, kept bool) (*verify.MeasurementStream, error) {
	w := r.Timeline.Width
	ms, err := verify.NewMeasurementStream(m, base, subjects, clients, verify.StreamSettings{
		BinWidths: []time.Duration{time.Duration(binSpan(m.Contract, w)) * w}})
	if err != nil {
		return nil, err
	}
	r.merged, r.kept = ms, &history{}
	r.kept.over.Store(!kept)
	return ms, nil
}

// oneClock puts r's admission logs on the server's clock for every algorithm (see
// verify.AdmissionLog.OneClock). Only a Recording without a Stream has it.
func (r *Recording) oneClock() {
	r.Log.OneClock = true
	if r.Warmup != nil {
		r.Warmup.OneClock = true
	}
}

// Merge merges o's aggregators into r's: both must be of one plan, and keep their whole
// histories (a segment's do).
func (r *Recording) Merge(o *Recording) error {
	errs := []error{r.Histograms.Merge(o.Histograms), r.Timeline.Merge(o.Timeline), r.Errors.Merge(o.Errors), r.Log.Merge(o.Log)}
	switch {
	case r.Warmup != nil && o.Warmup != nil:
		errs = append(errs, r.Warmup.Merge(o.Warmup))
	case (r.Warmup == nil) != (o.Warmup == nil):
		errs = append(errs, fmt.Errorf("%w: one recording has a warmup log, another none", load.ErrMismatch))
	}
	return errors.Join(errs...)
}

// Verification returns what the verifier needs of the measurement res recorded in r, for an
// algorithm with contract and model: its logs (empty when they were not kept), warnings and
// start; the disruptions are the caller's (see disruptions).
func (r *Recording) Verification(res *load.Result, contract algorithms.Contract, model algorithms.Model) verify.Measurement {
	if !r.Kept() { // let go of what the logs held before the budget was spent
		r.Log = r.Log.Fresh().(*verify.AdmissionLog)
		if r.Warmup != nil {
			r.Warmup = r.Warmup.Fresh().(*verify.AdmissionLog)
		}
	}
	m := verify.Measurement{
		Contract: contract, Model: model,
		Log: r.Log.Log(res.Subjects, res.Clients),
		Warnings: verify.Warnings{Behind: res.Behind, Canceled: res.Canceled, ClockMismatch: res.Counts.ClockMismatch,
			Dropped: res.Counts.Dropped},
		Start: r.Log.Micros(res.Plan.Warmup),
	}
	if r.Warmup != nil {
		m.Warmup = r.Warmup.Log(res.Subjects, res.Clients)
	}
	return m
}

// disruptions returns the node watch's events as the verifier takes them: on the admission log's
// clock, described in words with when they were seen (seconds from the start of the measured
// part of res), each with what it means for the limiter's state (faults.Event.StateLost,
// Deposes; a promotion's former master). With sv (Sentinel: when the load last read a reply from
// each master), each promotion is followed by its former master's last answer to the load, or
// the promotion's start when that came before: a disruption that deposes the former master
// there, since from then on only the new master decided the load's requests. The promotion's cut
// then ends when the load is served by the new master alone, not when the node watch sees the
// former master demoted, which on Sentinel can be seconds later.
func (r *Recording) disruptions(events []faults.Event, res *load.Result, sv *served) []verify.Disruption {
	var out []verify.Disruption
	measured := res.Start.Add(res.Plan.Warmup)
	for _, e := range events {
		after, at := e.After.Sub(res.Start), e.At.Sub(res.Start)
		if e.After.IsZero() {
			// Any time since the watch began, before the load: from the load's start (every
			// request of the log was sent after it), or At when that is earlier.
			after = min(0, at)
		}
		lo, hi := r.Log.Span(after, at)
		d := verify.Disruption{Lo: lo, Hi: hi, Node: e.Node, Kind: string(e.Kind), StateLost: e.StateLost(), Deposes: e.Deposes(),
			What: fmt.Sprintf("%s (seen at %.3fs)", e.Describe(), e.At.Sub(measured).Seconds())}
		if e.Kind == watch.EventPromoted {
			d.Former = e.From
		}
		out = append(out, d)
		if e.Kind == watch.EventPromoted && e.From != "" && sv != nil {
			out = append(out, r.lastServed(sv, e, res, after))
		}
	}
	return out
}

// lastServed is the disruption that deposes promotion e's former master when the load last read
// a reply from it (sv), or at the promotion's start, after (time since res.Start), when that is
// later: no request of the load was decided by the former master after it.
func (r *Recording) lastServed(sv *served, e faults.Event, res *load.Result, after time.Duration) verify.Disruption {
	measured := res.Start.Add(res.Plan.Warmup)
	x := after
	what := fmt.Sprintf("%s answered none of the load's requests after the promotion began", e.From)
	if last, ok := sv.last(e.From); ok && last.Sub(res.Start) > after {
		x = last.Sub(res.Start)
		what = fmt.Sprintf("%s answered the load for the last time at %.3fs", e.From, last.Sub(measured).Seconds())
	}
	lo, hi := r.Log.Span(x, x)
	return verify.Disruption{Lo: lo, Hi: hi, Node: e.From, Kind: "last-served", What: what, Deposes: true}
}

// Entry builds the result entry of one measurement of algorithm name on topo recorded in r:
// load's counts, rates, latency and timeline of res, the verifier's sections (the stream's, or
// vm's for a Recording without one) and the contract's limit per bin, and the server's cost srv
// (nil when not measured); custom marks a scenario's own script. The sections that need the
// whole history (the excerpt, fairness, the window use) come from vm's logs when r kept them;
// otherwise the entry says they were left out (result.WarningHistoryLeftOut).
func (r *Recording) Entry(name, topo string, res *load.Result, vm verify.Measurement, custom bool, srv *result.Server) result.Entry {
	e := result.NewEntry(name, topo, res)
	e.Custom = custom
	if srv != nil {
		e.Server = *srv
	}
	// Encoding a histogram we built cannot fail short of a bug; the entry then simply has no
	// histogram, and the report says so.
	_ = e.SetHistograms(r.Histograms.Latency(), r.Histograms.Service())
	e.ErrorClasses = r.Errors.Classes(res.Plan.Warmup)
	series := r.Timeline.Series()
	e.Timeline = result.Timeline{Series: series}
	n := len(series.Offered)
	if r.merged != nil {
		for _, d := range vm.Disruptions {
			r.merged.Disrupt(d)
		}
		e.Verification, e.Accuracy = r.merged.Sections(vm.Warnings)
		e.Timeline.Limit = binLimits(vm.Contract, r.merged.BinLimits, r.Timeline.Width, n)
	} else if r.streamed(vm) {
		for _, d := range vm.Disruptions { // the stream does not cut its history: a loss makes it inconclusive
			r.Stream.Disrupt(d)
		}
		e.Verification, e.Accuracy = r.Stream.Sections(vm.Warnings)
		e.Timeline.Limit = binLimits(vm.Contract, r.Stream.BinLimits, r.Timeline.Width, n)
	} else {
		e.Verification, e.Accuracy = vm.Sections()
		e.Timeline.Limit = binLimits(vm.Contract, vm.BinLimits, r.Timeline.Width, n)
	}
	if !r.Kept() {
		e.Warnings = append(e.Warnings, result.Warning{Kind: result.WarningHistoryLeftOut, Message: fmt.Sprintf(
			"verified as it ran; it made more than %d decisions, more than limitbench keeps in memory, so the violation explorer, "+
				"fairness, the window use and the server's bytes per key were left out", KeepEvents)})
		return e
	}
	// The report's violation explorer and fairness section; a log Check refuses has no excerpt,
	// and the verification above says why.
	e.Excerpt, _ = verify.NewExcerpt(vm.Contract, vm.Log, vm.Start, 0)
	e.Fairness = verify.NewFairness(vm.Contract, vm.Log, vm.Start)
	e.Timeline.Use = verify.NewWindowUse(vm.Contract, vm.Log, vm.Warmup, vm.Start, r.Timeline.Width, n)
	return e
}

// streamed reports whether the entry's sections are the stream's: r has one, and unless r kept
// the whole history of a measurement with disruptions or injected faults, which the
// whole-history checker cuts into epochs.
func (r *Recording) streamed(vm verify.Measurement) bool {
	return r.Stream != nil && !(r.Kept() && (len(vm.Disruptions) > 0 || len(vm.Faults) > 0))
}

// Windows returns the windows of c and of the contracts it holds at the same time (Also): a
// window's length, a token bucket's refill period (the time its Limit permits refill in); none
// for NoContract. A measurement's timeline bin is no wider than the narrowest (load.BinFor).
func Windows(c algorithms.Contract) []time.Duration {
	var out []time.Duration
	switch c.Kind {
	case algorithms.SlidingWindow, algorithms.FixedWindow, algorithms.FirstHitWindow:
		out = append(out, c.Window)
	case algorithms.TokenBucket:
		out = append(out, c.RefillPer)
	}
	for _, a := range c.Also {
		out = append(out, Windows(a)...)
	}
	return out
}

// binLimits returns the contract c's limit for each of n timeline bins of width bin (limits:
// verify.Measurement.BinLimits or the stream's: its steady allowance times the scopes offered
// requests), with the scopes counted over spans of k whole bins about as long as the contract's
// narrowest window (k = ⌊window / bin⌋, at least 1: binSpan), each bin taking 1/k of its span's
// limit. Bins much finer than the window (load.BinFor) would otherwise make the limit line jump
// with the subjects that happened to send within each bin; so it shows the contract's rate for
// the subjects in play around it. nil without a contract.
func binLimits(c algorithms.Contract, limits func(time.Duration, int) []float64, bin time.Duration, n int) []float64 {
	k := binSpan(c, bin)
	spans := limits(time.Duration(k)*bin, (n+k-1)/k)
	if spans == nil {
		return nil
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = result.Round3(spans[i/k] / float64(k))
	}
	return out
}

// binSpan is the number of timeline bins of width bin that binLimits counts scopes over for
// contract c.
func binSpan(c algorithms.Contract, bin time.Duration) int {
	k := 1
	if ws := Windows(c); len(ws) > 0 && bin > 0 {
		k = max(1, int(slices.Min(ws)/bin))
	}
	return k
}
