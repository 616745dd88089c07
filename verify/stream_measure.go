package verify

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/limitbench/limitbench/algorithms"
)

// MeasurementStream verifies one measurement as its requests are decided: the streaming
// counterpart of Measurement, whose Sections and BinLimits it gives at the end while it holds
// only what a later violation, epoch or figure can still need (the package doc, "Streaming").
// Events come through Add, relative to the Base it was made with, with Advance promising, as
// for Stream, that none of smaller Lo will follow; disruptions and injected faults come through
// Disrupt and Fault, with AdvanceCuts promising that none that begins earlier will follow. Not
// safe for concurrent use.
type MeasurementStream struct {
	m   Measurement // its Contract, Model, Start, Fresh and SpeedOnly
	set StreamSettings
	hdr Log // names and Base

	whole  *epochStream
	epochs []*epochStream // with Disruptions: the history's epochs, made as cuts appear

	released, stepped int64
	ready             int
	warmed            bool    // a warmup event came: accuracy counts from Start
	pend              reorder // measured events not yet released
	route             []Event // released measured events waiting for the cuts to be known past them
	routeAt           int     // the first of route not routed
	cutTo             int64   // no disruption or fault that begins before it will come
	routing           bool    // events go to epochs: the cuts are known past Start
	ds                []Disruption
	cuts              []Cut
	unplaced          int64
	late              int   // disruptions and faults that came after the cuts had passed them
	lateEvents        int64 // events that came after Advance had passed them
	fs                []InjectedFault
	back              map[int64]int64 // per acted Hi of a fault, the least hi of a request decided from it on
	errs              spill           // the measured unknown and failed outcomes, routed
	firstHit          bool

	mid      []midEvent // released events waiting for the frontier to pass their midpoint
	acc      *accuracyRun
	accLims  []limit
	replay   *replayRun
	noReplay bool // a warmup request without an exact decision time: replay is not possible
	bins     []*binCounter
}

// StreamSettings are a MeasurementStream's options.
type StreamSettings struct {
	// Disruptions says that the limiter's state may be lost during the measurement (a node
	// watch runs, or faults are injected): the epochs between losses are then checked as the
	// events come, alongside the history as one, which doubles the checking. Without it, a
	// disruption that loses the state cannot cut the history, and makes the verdict
	// inconclusive.
	Disruptions bool
	// BinWidths are the bin widths BinLimits will be asked for.
	BinWidths []time.Duration
	// SpillDir is where the temporary file of unknown and failed outcomes goes once more than
	// spillMem of them are kept ("": the system's temporary directory).
	SpillDir string
}

// midEvent is a released event waiting for mid order, and whether it is the warmup's.
type midEvent struct {
	e      Event
	warmup bool
}

// epochStream checks one history, the whole one or an epoch, as Measurement.check does: all
// limits over its measured events, and, for the first part of the history, each
// first-hit-window limit again over the warmup's events and its own (From at Start, Fresh as the
// measurement's), whose reports replace main's.
type epochStream struct {
	main *Stream
	fh   []*Stream
	fhAt []int
}

// NewMeasurementStream returns the streaming verification of the measurement m (its Log, Warmup,
// Disruptions and Faults unused: events, disruptions and faults come through the methods), whose
// event times are relative to base and whose subjects and clients have the given names.
func NewMeasurementStream(m Measurement, base int64, subjects, clients []string, set StreamSettings) (*MeasurementStream, error) {
	hdr := Log{Subjects: subjects, Clients: clients, Base: base}
	ms := &MeasurementStream{m: m, set: set, hdr: hdr, released: math.MinInt64, stepped: math.MinInt64,
		cutTo: math.MinInt64, errs: spill{dir: set.SpillDir}, noReplay: m.Model == nil}
	ms.pend.init()
	lims, err := flatten(m.Contract)
	if err != nil {
		return nil, fmt.Errorf("stream: %w", err)
	}
	ms.firstHit = HasFirstHit(m.Contract)
	ms.accLims = slices.DeleteFunc(lims, func(l limit) bool { return l.kind == algorithms.NoContract })
	if ms.whole, err = ms.newEpoch(true); err != nil {
		return nil, err
	}
	if set.Disruptions {
		e0, err := ms.newEpoch(true)
		if err != nil {
			return nil, err
		}
		ms.epochs = []*epochStream{e0}
	}
	for _, w := range set.BinWidths {
		ms.bins = append(ms.bins, &binCounter{w: w.Microseconds(), start: m.Start, last: map[uint64]int64{}})
	}
	if m.Model != nil {
		ms.replay = &replayRun{m: m.Model, log: &ms.hdr}
	}
	return ms, nil
}

// newEpoch returns the streams of one history: the first part of it (first) also checks its
// first-hit-window limits over the warmup.
func (ms *MeasurementStream) newEpoch(first bool) (*epochStream, error) {
	main, err := NewStream(ms.m.Contract, &ms.hdr)
	if err != nil {
		return nil, err
	}
	e := &epochStream{main: main}
	if !first {
		return e, nil
	}
	for i, lim := range main.lims {
		if lim.lim.kind != algorithms.FirstHitWindow {
			continue
		}
		primed := ms.hdr
		primed.From, primed.Fresh = ms.m.Start, ms.m.Fresh
		s, err := NewStream(lim.lim.c, &primed)
		if err != nil {
			return nil, err
		}
		e.fh, e.fhAt = append(e.fh, s), append(e.fhAt, i)
	}
	return e, nil
}

func (e *epochStream) add(ev Event, warmup bool) {
	if !warmup {
		e.main.Add(ev)
	}
	for _, s := range e.fh {
		s.Add(ev)
	}
}

func (e *epochStream) advance(t int64) {
	e.main.Advance(t)
	for _, s := range e.fh {
		s.Advance(t)
	}
}

// definiteSoFar is the definite violations e's streams have found so far, each first-hit-window
// limit's from its stream over the warmup too (as finish takes them).
func (e *epochStream) definiteSoFar() int64 {
	var n int64
	for i, sl := range e.main.lims {
		if k := slices.Index(e.fhAt, i); k >= 0 {
			n += e.fh[k].lims[0].definite
			continue
		}
		n += sl.definite
	}
	return n
}

// finish returns the history's report, as Measurement.check gives it.
func (e *epochStream) finish() (Report, error) {
	rep, err := e.main.Finish()
	if err != nil {
		return Report{}, err
	}
	for k, s := range e.fh {
		one, err := s.Finish()
		if err != nil {
			return Report{}, err
		}
		rep.Limits[e.fhAt[k]] = one.Limits[0]
	}
	return rep, nil
}

// Add takes the event of one request of the measured part, or of the warmup when warmup.
func (ms *MeasurementStream) Add(e Event, warmup bool) {
	if e.Lo() < ms.released {
		ms.lateEvents++ // as a Stream's Late event: left out
		return
	}
	ms.warmed = ms.warmed || warmup
	if warmup {
		if k := e.Kind(); e.width() != 0 || (k != Admitted && k != Denied) {
			ms.noReplay = true // Measurement.replay's rule
		}
		ms.whole.add(e, true)
		if len(ms.epochs) > 0 {
			ms.epochs[0].add(e, true)
		}
		ms.midAdd(e, true)
		return
	}
	ms.whole.add(e, false)
	ms.pend.add(e)
}

// midAdd keeps e for the mid-order figures (accuracy, replay, bin limits).
func (ms *MeasurementStream) midAdd(e Event, warmup bool) {
	ms.mid = append(ms.mid, midEvent{e, warmup})
}

// Advance promises that every event added from now on has Lo ≥ t (relative µs).
func (ms *MeasurementStream) Advance(t int64) {
	if t <= ms.released {
		return
	}
	ms.whole.advance(t)
	ms.ready += ms.pend.release(t, ms.take)
	ms.released = t
	if ms.ready >= streamChunk || ms.stepped == math.MinInt64 || t-ms.stepped >= ms.whole.main.span() {
		ms.step()
	}
}

// take receives released measured events, in no order.
func (ms *MeasurementStream) take(ev []Event) {
	slices.SortFunc(ev, func(a, b Event) int { return cmpTime(&a, &b) })
	for _, e := range ev {
		ms.route = append(ms.route, e)
		ms.midAdd(e, false)
	}
}

// step routes what the cuts allow and runs the mid-order figures up to the frontier.
func (ms *MeasurementStream) step() {
	ms.ready, ms.stepped = 0, ms.released
	ms.routeEvents(ms.released)
	ms.midStep(ms.released)
}

// Disrupt takes a disruption seen by the node watch (on the events' clock, µs since the Unix
// epoch). One that may lose the state (or ends such a loss, Deposes) and begins before what
// AdvanceCuts has promised is late: it cannot cut what was already put in epochs, and makes the
// verdict inconclusive; so does one that loses the state when the settings did not expect
// Disruptions.
func (ms *MeasurementStream) Disrupt(d Disruption) {
	ms.ds = append(ms.ds, d)
	if !d.StateLost && !d.Deposes { // it cuts nothing, nor ends a cut
		return
	}
	if d.Lo-ms.hdr.Base < ms.cutTo || (d.StateLost && !ms.set.Disruptions) {
		ms.late++ // epochs past it already filled, or none to cut: Sections says so
	}
	if !ms.set.Disruptions {
		return
	}
	ms.cuts = Cuts(ms.ds, ms.m.Start)
	if ms.routing {
		ms.syncEpochs()
	}
}

// Fault takes a fault the runner injected (on the events' clock), once its Hi is known. One
// whose Hi is before what AdvanceCuts has promised (without Disruptions, before what Advance has
// passed) is late, as a disruption: the first decision after it may have gone by.
func (ms *MeasurementStream) Fault(f InjectedFault) {
	if f.started() && f.Hi-ms.hdr.Base < ms.cutsKnown() {
		ms.late++
	}
	ms.fs = append(ms.fs, f)
	if ms.back == nil {
		ms.back = map[int64]int64{}
	}
	if _, ok := ms.back[f.Hi]; !ok {
		ms.back[f.Hi] = math.MaxInt64
	}
}

// AdvanceCuts promises that every disruption or fault given from now on begins at or after t
// (µs since the Unix epoch): the events before it can be put in their epochs.
func (ms *MeasurementStream) AdvanceCuts(t int64) {
	if t-ms.hdr.Base > ms.cutTo {
		ms.cutTo = t - ms.hdr.Base
		ms.routeEvents(ms.released)
	}
}
