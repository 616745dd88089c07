package verify

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/limitbench/limitbench/algorithms"
)

// routeEvents gives the released measured events whose decision time is known to lie before
// the cut frontier to their epoch (as Split does, or SplitAll with a first-hit-window limit), to
// the faults' figures and to the kept errors, then advances the epochs: no event of Lo below
// the next waiting one, or F, will come to them.
func (ms *MeasurementStream) routeEvents(F int64) {
	cutTo := ms.cutsKnown()
	if ms.set.Disruptions && !ms.routing {
		// Until the cuts are known past Start, a promotion's loss may still end before Start
		// and leave no cut (Cuts ignores it): no event is routed, no epoch made.
		if F != posInf && cutTo <= ms.m.Start-ms.hdr.Base {
			return
		}
		ms.routing = true
		ms.syncEpochs()
	}
	for ; ms.routeAt < len(ms.route); ms.routeAt++ {
		e := ms.route[ms.routeAt]
		hi := e.Hi()
		if e.Kind() == Unknown {
			hi = e.Lo()
		}
		if F != posInf && hi >= cutTo {
			break
		}
		ms.routeOne(e)
	}
	if ms.routeAt > len(ms.route)/2 {
		ms.route = append(ms.route[:0], ms.route[ms.routeAt:]...)
		ms.routeAt = 0
	}
	t := F
	if ms.routeAt < len(ms.route) {
		t = min(t, ms.route[ms.routeAt].Lo())
	}
	for _, ep := range ms.epochs {
		ep.advance(t)
	}
}

// syncEpochs makes an epoch for each cut that has none (cuts only grow once routing started:
// a disruption still to come begins after the cut frontier, itself past Start). An unknown
// outcome already routed may have run in the new epochs (SplitAll).
func (ms *MeasurementStream) syncEpochs() {
	for len(ms.epochs) <= len(ms.cuts) {
		e, err := ms.newEpoch(false)
		if err != nil {
			return // the contract was checked when the stream was made
		}
		if ms.firstHit {
			_ = ms.errs.each(func(u Event) {
				if u.Kind() == Unknown {
					c, _ := NewEvent(u.Lo(), u.Lo(), u.Subject, u.Client, u.Permits, Unknown)
					e.add(c, false)
				}
			})
		}
		ms.epochs = append(ms.epochs, e)
	}
}

// cutsKnown returns the cut frontier: AdvanceCuts' promise with Disruptions; without, there
// are no epochs to wait for, and the events' frontier serves (a fault must then come before
// Advance passes its Hi).
func (ms *MeasurementStream) cutsKnown() int64 {
	if ms.set.Disruptions {
		return ms.cutTo
	}
	return ms.released
}

// routeOne routes one measured event.
func (ms *MeasurementStream) routeOne(e Event) {
	base := ms.hdr.Base
	lo, hi, k := base+e.Lo(), base+e.Hi(), e.Kind()
	switch k {
	case Unknown:
		hi = lo
		ms.errs.add(e)
	case Failed:
		ms.errs.add(e)
	default:
		for end, b := range ms.back {
			if lo >= end {
				ms.back[end] = min(b, hi)
			}
		}
	}
	if len(ms.epochs) == 0 || (!ms.firstHit && k != Admitted && k != Unknown) {
		return
	}
	cuts := ms.cuts
	i, _ := slices.BinarySearchFunc(cuts, lo, func(c Cut, t int64) int {
		if c.Hi < t {
			return -1
		}
		return 1
	})
	last := i
	if i < len(cuts) && hi >= cuts[i].Lo {
		if k == Admitted || k == Unknown {
			ms.unplaced++
		}
		for last < len(cuts) && hi >= cuts[last].Lo {
			last++
		}
	} else {
		ms.epochs[i].add(e, false)
		i++
	}
	if !ms.firstHit {
		return
	}
	if k == Unknown {
		last = len(cuts)
	}
	for j := i; j <= last && j < len(ms.epochs); j++ {
		c, _ := NewEvent(e.Lo(), e.Lo(), e.Subject, e.Client, e.Permits, Unknown)
		ms.epochs[j].add(c, false)
	}
}

// midStep gives the events of midpoint below F, in mid order (sortByMid), to the accuracy, the
// replay and the bin counters; it waits until the warmup is over (F past Start), when it is
// known whether accuracy counts from Start.
func (ms *MeasurementStream) midStep(F int64) {
	if F != posInf && F <= ms.m.Start-ms.hdr.Base {
		return
	}
	if ms.acc == nil {
		from := int64(0)
		if ms.warmed {
			from = ms.m.Start
		}
		ms.acc = newAccuracyRun(ms.accLims, ms.hdr.Base, from, 0)
	}
	n := 0
	for i := range ms.mid {
		if F == posInf || mid(&ms.mid[i].e) < F {
			ms.mid[i], ms.mid[n] = ms.mid[n], ms.mid[i]
			n++
		}
	}
	ready := ms.mid[:n]
	slices.SortFunc(ready, func(a, b midEvent) int { return cmpMid(&a.e, &b.e) })
	for i := range ready {
		ms.midTake(&ready[i])
	}
	ms.mid = append(ms.mid[:0], ms.mid[n:]...)
}

// midTake gives one event, the next in mid order, to the mid-order figures.
func (ms *MeasurementStream) midTake(x *midEvent) {
	e := &x.e
	k := e.Kind()
	if k != Admitted && k != Denied {
		ms.acc.rep.Excluded++
	} else if len(ms.accLims) > 0 {
		ms.acc.take(e)
	}
	if ms.replay != nil {
		switch {
		case k != Admitted && k != Denied:
			ms.replay.rep.Excluded++
		case e.width() != 0:
			ms.replay.rep.Inexact++
		default:
			ms.replay.take(e)
		}
	}
	if !x.warmup {
		for _, b := range ms.bins {
			b.take(ms.m.Contract.Scope, ms.hdr.Base, e)
		}
	}
}

// binCounter counts, for bins of width w µs from start (µs since the Unix epoch), the scopes
// offered a request in each, by the request's midpoint, as Measurement.BinLimits does: taken in
// mid order, a scope counts in a bin at its first request there.
type binCounter struct {
	w, start int64
	counts   []int64
	last     map[uint64]int64 // per scope, 1 + the last bin it counted in
}

func (c *binCounter) take(sc algorithms.Scope, base int64, e *Event) {
	i := (base + e.Lo() + (e.Hi()-e.Lo())/2 - c.start) / c.w
	if i < 0 || c.w <= 0 {
		return
	}
	k := uint64(e.Subject)
	if sc == algorithms.PerClient {
		k = k<<16 | uint64(e.Client)
	} else if sc == algorithms.PerConsumer {
		k = uint64(e.Client)
	}
	if c.last[k] == i+1 {
		return
	}
	c.last[k] = i + 1
	for int64(len(c.counts)) <= i {
		c.counts = append(c.counts, 0)
	}
	c.counts[i]++
}

// finish releases, routes and checks everything left.
func (ms *MeasurementStream) finish() {
	if ms.released == posInf {
		return
	}
	ms.whole.advance(posInf)
	ms.pend.release(posInf, ms.take)
	ms.released = posInf
	ms.routeEvents(posInf)
	ms.midStep(posInf)
}

// Retained returns the number of events the measurement holds in memory: its streams' (whole
// and epochs), those waiting for release, for their epoch and for mid order, and the unknown
// and failed outcomes kept in memory for the fault figures (beyond a cap they go to a
// temporary file: Spilled).
func (ms *MeasurementStream) Retained() int64 {
	n := ms.whole.retained() + int64(len(ms.route)-ms.routeAt+len(ms.mid)+len(ms.errs.mem))
	n += ms.pend.size()
	for _, e := range ms.epochs {
		n += e.retained()
	}
	return n
}

func (e *epochStream) retained() int64 {
	n := e.main.Retained()
	for _, s := range e.fh {
		n += s.Retained()
	}
	return n
}

// Spilled returns the unknown and failed outcomes kept in the temporary file rather than in
// memory.
func (ms *MeasurementStream) Spilled() int64 { return ms.errs.spilled() }

// Late returns the events that came after Advance had passed their Lo: left out, as dropped
// outcomes are (StreamLog counts them in Dropped).
func (ms *MeasurementStream) Late() int64 { return ms.lateEvents }

// Sections returns the measurement's verification and accuracy sections, as
// Measurement.Sections does for the same history with the warnings w, its disruptions and
// faults those given to Disrupt and Fault. It ends the stream.
func (ms *MeasurementStream) Sections(w Warnings) (Summary, AccuracySummary) {
	ms.finish()
	m := ms.m
	m.Warnings, m.Disruptions, m.Faults = w, ms.ds, ms.fs
	v := newSummary(m.Contract, m.Start, ms.ds)
	er, err := ms.epochReport()
	v = v.judged(er, err, w, m.Start, ms.ds, ms.fs, ms)
	if ms.late > 0 {
		v.Reasons = append(v.Reasons, fmt.Sprintf("%d losses of the state or injected faults were reported after the checker had passed them: its epochs and fault figures may be wrong", ms.late))
		if v.Verdict == Pass {
			v.Verdict = Inconclusive
		}
	}
	if m.Contract.Kind == algorithms.NoContract {
		return m.sections(v, true, nil, nil, "")
	}
	r, err := ms.acc.report()
	defer ms.Close()
	return m.sections(v, true, &r, err, ms.replayNote())
}

// Close removes the stream's temporary file, if it wrote one (Sections does too).
func (ms *MeasurementStream) Close() error { return ms.errs.close() }

// epochReport finishes the streams and returns the history's check in epochs, as checkEpochs.
func (ms *MeasurementStream) epochReport() (EpochReport, error) {
	var r EpochReport
	whole, err := ms.whole.finish()
	if err != nil {
		return r, err
	}
	r.Whole, r.Cuts = whole, ms.cuts
	if len(ms.cuts) == 0 {
		return r, nil
	}
	var inEpochs int64
	for _, e := range ms.epochs {
		rep, err := e.finish()
		if err != nil {
			return r, err
		}
		inEpochs += rep.Definite()
		r.Epochs = append(r.Epochs, rep)
	}
	r.Unplaced = ms.unplaced
	r.Attributed = max(0, whole.Definite()-inEpochs)
	return r, nil
}

// replayNote is Measurement.replay's note.
func (ms *MeasurementStream) replayNote() string {
	if ms.replay == nil || ms.noReplay || len(Cuts(ms.ds, math.MinInt64)) > 0 {
		return ""
	}
	if rr := ms.replay.rep; rr.Differ > 0 {
		return fmt.Sprintf("note: %d of %d decisions replayed through the reference model differ", rr.Differ, rr.Replayed)
	}
	return ""
}

// BinLimits is Measurement.BinLimits, for a bin width given in StreamSettings.BinWidths (nil for
// another). It ends the stream.
func (ms *MeasurementStream) BinLimits(bin time.Duration, bins int) []float64 {
	if ms.m.Contract.Kind == algorithms.NoContract || bins == 0 {
		return nil
	}
	ms.finish()
	for _, c := range ms.bins {
		if c.w != bin.Microseconds() {
			continue
		}
		per := ms.m.Contract.Allowance(bin)
		limits := make([]float64, bins)
		for i := range limits {
			if i < len(c.counts) {
				limits[i] = round3(per * float64(c.counts[i]))
			}
		}
		return limits
	}
	return nil
}

var _ faultLog = (*MeasurementStream)(nil)

// inFault is Log.inFault over the measured history: the kept unknown and failed outcomes, and
// the first decision after end, followed as the events came.
func (ms *MeasurementStream) inFault(f InjectedFault, end int64) (unknown, failed int64, backS float64) {
	base := ms.hdr.Base
	_ = ms.errs.each(func(e Event) {
		if !f.overlaps(base+e.Lo(), base+e.Hi()) {
			return
		}
		if e.Kind() == Unknown {
			unknown++
		} else {
			failed++
		}
	})
	back, ok := ms.back[end]
	if !ok || back == math.MaxInt64 {
		return unknown, failed, -1
	}
	return unknown, failed, round3(float64(back-end) / 1e6)
}

// outside is Log.outside over the kept unknown and failed outcomes.
func (ms *MeasurementStream) outside(fs []InjectedFault, k1, k2 Kind) int64 {
	var n int64
	base := ms.hdr.Base
	_ = ms.errs.each(func(e Event) {
		if k := e.Kind(); k != k1 && k != k2 {
			return
		}
		in := false
		for _, f := range fs {
			in = in || f.overlaps(base+e.Lo(), base+e.Hi())
		}
		if !in {
			n++
		}
	})
	return n
}
