package verify

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/limitbench/limitbench/internal/clock"
	"github.com/limitbench/limitbench/internal/load"
)

// StreamLog is the streaming admission log: the load.Aggregator that turns a run's outcomes
// into events as AdmissionLog does and verifies them as they come with a MeasurementStream,
// instead of keeping them, so that a run's memory follows its contract's windows rather than
// its length (the package doc, "Streaming", says what is kept and why).
//
// Run gives each worker shard a StreamLog made with Fresh; they share one core. A shard keeps
// up to streamBatch events and hands them to the core under its lock; a goroutine of the core
// orders them by Lo and advances the stream to a watermark below which no event can still
// come: the latest receive time seen, less Horizon (the longest a request may be in flight)
// and streamLag (how long a shard may hold an outcome), and no later than any shard's held
// events. An event that comes below the watermark anyway is Late: left out and counted in
// Dropped by Finish, so the verdict cannot pass. Advance sets a watermark the caller knows
// better (the load generator knows its oldest request in flight).
//
// The node watch's disruptions and the runner's injected faults go to Disrupt and Fault as they
// are seen, and AdvanceCuts says how far they are known (see MeasurementStream); after the run,
// Sections and BinLimits give the entry's figures. Warmup returns the aggregator of the run's
// warmup, whose events prime first-hit windows, accuracy and replay as Measurement's Warmup
// does.
//
// With Record, every event is also written to a temporary file, so that MarshalBinary (or
// WriteTo) gives the AdmissionLog encoding a segment's partial result carries; without it a
// StreamLog cannot be encoded. A StreamLog only merges with the StreamLogs of its own core.
type StreamLog struct {
	conv    *AdmissionLog // converts outcomes; its counts are this shard's
	core    *streamCore
	warmup  bool
	buf     []Event
	held    atomic.Int64 // the least Lo of buf (math.MaxInt64 when empty)
	maxRecv int64        // the latest Received of buf, µs from Origin
}

// StreamLogSettings are what a StreamLog verifies and how.
type StreamLogSettings struct {
	// Measurement holds the contract, reference model, Fresh and SpeedOnly (its logs, Start,
	// Disruptions and Faults unused: Start is Warmup after the run's start).
	Measurement Measurement
	// Warmup is the run's warmup (load.Plan.Warmup): the measured part starts after it.
	Warmup time.Duration
	// Subjects and Clients are the names the events' indices refer to.
	Subjects, Clients []string
	// Stream is the MeasurementStream's settings.
	Stream StreamSettings
	// Horizon is the longest a request may be in flight, from its send to its outcome (its
	// timeouts); 10 s when zero.
	Horizon time.Duration
	// Record keeps every event in a temporary file for the log's encoding (see StreamLog).
	Record bool
}

// streamBatch is how many events a shard holds before it hands them to the core.
const streamBatch = 256

// streamLag is how long a shard may hold an outcome it has not yet given to its StreamLog (a
// worker between a reply and the shard's lock), counted into the watermark.
const streamLag = time.Second

// streamCore is what a StreamLog's shards share: the stream, fed by one goroutine.
type streamCore struct {
	set     StreamLogSettings
	mu      sync.Mutex // the queue, the shards, the caller's watermark
	wake    *sync.Cond
	queue   []streamBatchOf
	msMu    sync.Mutex // the stream and the record
	maxRecv int64
	shards  []*StreamLog
	ms      *MeasurementStream
	err     error
	mark    int64    // the caller's watermark (Advance), µs from Origin; MinInt64: none
	record  [2]spill // with Record: the measured events, the warmup's
	n       [2]int64
	done    chan struct{}
	closed  bool
	late    int64
}

// streamBatchOf is one shard's events handed to the core.
type streamBatchOf struct {
	ev             []Event
	warmup         bool
	minLo, maxRecv int64
}

// NewStreamLog returns the streaming log of a run that starts at start, on the clock that
// sharedClock, server and clientClock select (as NewAdmissionLog).
func NewStreamLog(start time.Time, sharedClock bool, server *clock.Offset, clientClock bool, set StreamLogSettings) *StreamLog {
	if set.Horizon <= 0 {
		set.Horizon = 10 * time.Second
	}
	c := &streamCore{set: set, mark: math.MinInt64, maxRecv: math.MinInt64}
	c.record[0].dir, c.record[1].dir = set.Stream.SpillDir, set.Stream.SpillDir
	c.wake = sync.NewCond(&c.mu)
	l := &StreamLog{conv: NewAdmissionLog(start, sharedClock, server, clientClock), core: c}
	l.held.Store(math.MaxInt64)
	c.shards = append(c.shards, l)
	return l
}

// Warmup returns the aggregator of the run's warmup, on l's core.
func (l *StreamLog) Warmup() *StreamLog { return l.fresh(true) }

// fresh returns an empty StreamLog on l's core, the warmup's when warmup.
func (l *StreamLog) fresh(warmup bool) *StreamLog {
	c := l.conv
	f := &StreamLog{conv: &AdmissionLog{Origin: c.Origin, SharedClock: c.SharedClock, Server: c.Server,
		ClientClock: c.ClientClock, OneClock: c.OneClock}, core: l.core, warmup: warmup}
	f.held.Store(math.MaxInt64)
	l.core.mu.Lock()
	l.core.shards = append(l.core.shards, f)
	l.core.mu.Unlock()
	return f
}

var (
	_ load.Aggregator = (*StreamLog)(nil)
	_ load.Starter    = (*StreamLog)(nil)
)

// Fresh implements load.Aggregator: an empty StreamLog on the same core.
func (l *StreamLog) Fresh() load.Aggregator { return l.fresh(l.warmup) }

// Start implements load.Starter: the events' Origin is start.
func (l *StreamLog) Start(start time.Time) { l.conv.Start(start) }

// ensure makes the stream and starts the goroutine that feeds it, on the first batch, when
// every shard's Origin is set (c.mu held).
func (c *streamCore) ensure() {
	if c.done != nil {
		return
	}
	conv := c.shards[0].conv
	m := c.set.Measurement
	m.Start = conv.Micros(c.set.Warmup)
	c.ms, c.err = NewMeasurementStream(m, conv.Origin, c.set.Subjects, c.set.Clients, c.set.Stream)
	c.done = make(chan struct{})
	go c.run()
}

// Add implements load.Aggregator.
func (l *StreamLog) Add(o *load.Outcome) {
	e, ok := l.conv.event(o)
	if !ok {
		return
	}
	if lo := e.Lo(); lo < l.held.Load() {
		l.held.Store(lo) // before the event is held: the core may read it at any time
	}
	l.buf = append(l.buf, e)
	l.maxRecv = max(l.maxRecv, int64(o.Received/time.Microsecond))
	// A warmup's shard hands over every event: once the warmup is over it gets no more, and
	// the events it held would hold the watermark at the warmup until Finish.
	if len(l.buf) >= streamBatch || l.warmup {
		l.flush()
	}
}

// flush hands l's events to the core.
func (l *StreamLog) flush() {
	if len(l.buf) == 0 {
		return
	}
	c := l.core
	c.mu.Lock()
	c.ensure()
	c.queue = append(c.queue, streamBatchOf{ev: l.buf, warmup: l.warmup, minLo: l.held.Load(), maxRecv: l.maxRecv})
	l.held.Store(math.MaxInt64)
	c.wake.Signal()
	c.mu.Unlock()
	l.buf = make([]Event, 0, streamBatch)
}

// run feeds the stream the batches the shards hand over, until Finish: it takes them under mu,
// so that a shard never waits for the stream, and feeds them under msMu.
func (c *streamCore) run() {
	defer close(c.done)
	for {
		c.mu.Lock()
		for len(c.queue) == 0 && !c.closed {
			c.wake.Wait()
		}
		q, closed := c.queue, c.closed
		c.queue = nil
		c.mu.Unlock()
		c.msMu.Lock()
		c.feed(q)
		c.msMu.Unlock()
		if closed {
			return
		}
	}
}

// feed gives the stream a few batches and advances it to the watermark (msMu held).
func (c *streamCore) feed(q []streamBatchOf) {
	var maxRecv int64 = math.MinInt64
	for _, b := range q {
		for _, e := range b.ev {
			c.give(e, b.warmup)
		}
		maxRecv = max(maxRecv, b.maxRecv)
	}
	c.maxRecv = max(c.maxRecv, maxRecv)
	if c.maxRecv == math.MinInt64 || c.ms == nil {
		return
	}
	c.mu.Lock()
	w := c.watermark()
	c.mu.Unlock()
	c.ms.Advance(w)
}

// give hands one event to the stream (and the record).
func (c *streamCore) give(e Event, warmup bool) {
	if c.set.Record {
		k := 0
		if warmup {
			k = 1
		}
		c.record[k].add(e)
		c.n[k]++
	}
	if c.ms != nil {
		c.ms.Add(e, warmup)
	}
}

// watermark returns the Lo below which no event can still come: the latest receive time seen
// less the horizon and the shards' lag, moved to the log's clock with a decision's slack, or
// the caller's Advance when it set one; no later than any event a shard holds or handed over
// and the stream has not yet taken (mu held).
func (c *streamCore) watermark() int64 {
	conv := c.shards[0].conv
	w := c.mark
	if w == math.MinInt64 {
		w = c.maxRecv - (c.set.Horizon + streamLag + MismatchSlack).Microseconds() - 1
		if conv.onServerClock() {
			w += min(0, floorMicros(conv.Server.Offset-conv.Server.Err))
		}
	}
	for _, s := range c.shards {
		w = min(w, s.held.Load())
	}
	for _, b := range c.queue {
		w = min(w, b.minLo)
	}
	return w
}

// Advance sets the watermark: every outcome still to come was sent at or after run offset d
// (from the run's start). It replaces the one Horizon gives.
func (l *StreamLog) Advance(d time.Duration) {
	c := l.core
	c.mu.Lock()
	defer c.mu.Unlock()
	w := int64(d/time.Microsecond) - MismatchSlack.Microseconds() - 1
	if conv := l.conv; conv.onServerClock() {
		w += min(0, floorMicros(conv.Server.Offset-conv.Server.Err))
	}
	c.mark = max(c.mark, w)
}

// Disrupt gives the stream a disruption (see MeasurementStream.Disrupt); safe to call during
// the run.
func (l *StreamLog) Disrupt(d Disruption) { l.locked(func(ms *MeasurementStream) { ms.Disrupt(d) }) }

// Fault gives the stream an injected fault (see MeasurementStream.Fault); safe during the run.
func (l *StreamLog) Fault(f InjectedFault) { l.locked(func(ms *MeasurementStream) { ms.Fault(f) }) }

// AdvanceCuts promises that every disruption or fault still to come begins at or after t (µs
// since the Unix epoch on the log's clock; see MeasurementStream.AdvanceCuts).
func (l *StreamLog) AdvanceCuts(t int64) {
	l.locked(func(ms *MeasurementStream) { ms.AdvanceCuts(t) })
}

// DefiniteSoFar returns the definite violations the stream has found so far, over the events it
// has checked of the measured part taken as one history (a first-hit window with the warmup's
// requests, as its Sections do); 0 before the stream has started. It only grows while the load
// runs, and is safe to call from any goroutine, for live figures. The measurement's own count,
// known at its end, may be lower: a loss of the limiter's state seen then attributes the
// violations that reach across it to the loss.
func (l *StreamLog) DefiniteSoFar() int64 {
	c := l.core
	c.mu.Lock()
	started := c.done != nil
	c.mu.Unlock()
	if !started {
		return 0
	}
	c.msMu.Lock()
	defer c.msMu.Unlock()
	if c.ms == nil {
		return 0
	}
	return c.ms.whole.definiteSoFar()
}

func (l *StreamLog) locked(f func(ms *MeasurementStream)) {
	c := l.core
	c.mu.Lock()
	c.ensure()
	c.mu.Unlock()
	c.msMu.Lock()
	defer c.msMu.Unlock()
	if c.ms != nil {
		f(c.ms)
	}
}

// Merge implements load.Aggregator: other, a StreamLog of the same core, hands over its events
// and counts; one of another core returns an error wrapping load.ErrMismatch.
func (l *StreamLog) Merge(other load.Aggregator) error {
	o, ok := other.(*StreamLog)
	if !ok || o.core != l.core {
		return fmt.Errorf("%w: merge %T into a stream log of another run", load.ErrMismatch, other)
	}
	o.flush()
	l.conv.Narrowed += o.conv.Narrowed
	l.conv.Mismatched += o.conv.Mismatched
	l.conv.Dropped += o.conv.Dropped
	o.conv.Narrowed, o.conv.Mismatched, o.conv.Dropped = 0, 0, 0
	return nil
}

// Finish implements load.Aggregator: every shard's events go to the stream, which is then
// checked to the end; it returns this log's counts, the Late events in Dropped (on the first
// call). Sections and BinLimits may follow.
func (l *StreamLog) Finish() load.Counts {
	c := l.core
	for _, s := range c.shards {
		s.flush()
	}
	c.mu.Lock()
	c.ensure()
	first := !c.closed
	c.closed = true
	c.wake.Signal()
	c.mu.Unlock()
	<-c.done
	counts := load.Counts{Dropped: l.conv.Dropped, Narrowed: l.conv.Narrowed, ClockMismatch: l.conv.Mismatched}
	if first && c.ms != nil {
		c.msMu.Lock()
		c.ms.finish()
		c.late = c.ms.Late()
		c.msMu.Unlock()
		counts.Dropped += uint64(c.late)
	}
	return counts
}

// Sections returns the entry's verification and accuracy sections (MeasurementStream.Sections)
// after Finish, or an inconclusive verification that says why the stream could not be made.
func (l *StreamLog) Sections(w Warnings) (Summary, AccuracySummary) {
	c := l.core
	if c.ms == nil {
		why := "no outcome was recorded"
		if c.err != nil {
			why = "cannot verify: " + c.err.Error()
		}
		return Summary{Verdict: Inconclusive, Reasons: []string{why}}, AccuracySummary{}
	}
	return c.ms.Sections(w)
}

// BinLimits is MeasurementStream.BinLimits, after Finish.
func (l *StreamLog) BinLimits(bin time.Duration, bins int) []float64 {
	if l.core.ms == nil {
		return nil
	}
	return l.core.ms.BinLimits(bin, bins)
}

// Retained returns the events the stream holds in memory now (MeasurementStream.Retained): 0
// before the first batch. Safe to call during the run.
func (l *StreamLog) Retained() int64 {
	c := l.core
	c.mu.Lock()
	ms := c.ms
	c.mu.Unlock()
	if ms == nil {
		return 0
	}
	c.msMu.Lock()
	defer c.msMu.Unlock()
	return ms.Retained()
}

// Spilled returns the events kept in temporary files rather than in memory: the stream's
// unknown and failed outcomes past its cap (and, with Record, the record, all of whose events
// past the cap are on disk).
func (l *StreamLog) Spilled() int64 {
	var n int64
	if l.core.ms != nil {
		n = l.core.ms.Spilled()
	}
	return n + l.core.record[0].spilled() + l.core.record[1].spilled()
}

// ErrNotRecorded means a StreamLog without Record was asked for its encoding.
var ErrNotRecorded = errors.New("the stream log did not record its events")

// MarshalBinary returns the AdmissionLog encoding of every event recorded (with Record), after
// Finish; it holds them all in memory at once: WriteTo streams the same bytes.
func (l *StreamLog) MarshalBinary() ([]byte, error) {
	var b bytesWriter
	if _, err := l.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.b, nil
}

// WriteTo writes the AdmissionLog encoding of the events l's kind recorded, measured or warmup
// (see MarshalBinary), to w.
func (l *StreamLog) WriteTo(w io.Writer) (int64, error) {
	c := l.core
	if !c.set.Record {
		return 0, fmt.Errorf("stream log: %w", ErrNotRecorded)
	}
	k := 0
	if l.warmup {
		k = 1
	}
	enc := load.NewEncoder(admissionLogKind, admissionLogVersion)
	l.conv.encodeHead(enc, c.n[k])
	bw := bufio.NewWriter(w)
	n, _ := bw.Write(enc.Encoding())
	total := int64(n)
	var buf [eventSize]byte
	err := c.record[k].each(func(e Event) {
		putEvent(buf[:], e)
		m, _ := bw.Write(buf[:])
		total += int64(m)
	})
	return total, errors.Join(err, bw.Flush())
}

// Close removes the stream's temporary files.
func (l *StreamLog) Close() error {
	c := l.core
	var err error
	if c.ms != nil {
		err = c.ms.Close()
	}
	return errors.Join(err, c.record[0].close(), c.record[1].close())
}

// UnmarshalBinary implements encoding.BinaryUnmarshaler by refusing: a StreamLog's encoding is
// an AdmissionLog's; decode it into one (the whole-history checker merges segments).
func (l *StreamLog) UnmarshalBinary([]byte) error {
	return fmt.Errorf("%w: a stream log's encoding is an admission log's: decode it into an AdmissionLog", load.ErrEncoding)
}

// bytesWriter is an io.Writer into a byte slice.
type bytesWriter struct{ b []byte }

func (w *bytesWriter) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }
