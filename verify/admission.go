package verify

import (
	"fmt"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/clock"
	"github.com/limitbench/limitbench/internal/load"
)

// AdmissionLog is the aggregator (a load.Aggregator) that keeps, for the verifier, one compact
// Event (16 bytes) per outcome of a run; Log returns its events as the Log that Check reads.
// Event times are µs relative to Origin, the Log's Base; an outcome whose time is more than
// about six days from Origin (MinLo, MaxLo: a run that long, or a server clock that far off)
// does not fit an Event and is counted in Dropped, never silently lost.
//
// Which clock the event times are on depends on the algorithm and the server:
//   - With SharedClock (the server reads the harness's clock: a process or container on this
//     host), times are on that one clock. An event's interval is [Sent, Received] widened
//     outward to whole microseconds, and a server-clock decision (Decision.Clock == ClockServer
//     with a TimeMicros) is narrowed to the single microsecond TimeMicros, exactly the time the
//     script decided on, or, for a time known only to an interval (Decision.TimeSpanMicros),
//     to that interval when it is the narrower.
//   - With Server set (an external server whose offset was measured) and an algorithm that
//     decides on the server's clock (ClientClock false), times are on the server's clock, the
//     clock the algorithm's windows are aligned to: a server-clock decision is TimeMicros, and
//     any other event (an error, or a script that reports no time) is [Sent, Received] moved to
//     the server's clock, [Sent + Offset − Err, Received + Offset + Err]. Checking on the
//     harness's clock instead would be wrong: a fixed window aligned on the server's clock
//     straddles two windows aligned on the harness's, and a correct limiter would be flagged.
//   - Otherwise (a client-clock algorithm, whose times are the harness's clock plus each
//     client's skew, or a server without clock information) every event is [Sent, Received]
//     on the harness's clock and nothing is narrowed.
//
// A server time outside the event's interval by more than MismatchSlack is counted in
// Mismatched, and the event still uses the server time: the script's decisions are consistent
// with its own clock. Unknown outcomes keep [Sent, Received] (moved as above), where Received
// is when the harness gave up; the request may have run later, and the verifier treats Hi as
// open.
//
// Not safe for concurrent use; Merge per-worker logs at the end.
type AdmissionLog struct {
	// Origin is the harness time of run offset 0, in µs since the Unix epoch.
	Origin int64
	// SharedClock, Server and ClientClock select the clock, as described above.
	SharedClock bool
	Server      *clock.Offset
	ClientClock bool
	// OneClock puts every event on the server's clock, Server's, a client-clock algorithm's
	// too (SharedClock must be false): the generators of a segmented run each have a clock of
	// their own, and the server's is the one they share, so their logs merge into one history
	// only there. A client-clock decision is then [Sent, Received] moved to the server's clock
	// like an error, and never narrowed.
	OneClock bool
	// Narrowed counts events narrowed to the server's decision time.
	Narrowed uint64
	// Mismatched counts server decision times outside their event's interval by more than
	// MismatchSlack.
	Mismatched uint64
	// Dropped counts outcomes left out of the log because their times do not fit an
	// Event (see NewEvent): admissions among them would be missing from the check.
	Dropped uint64

	// Events are kept in chunks so that a growing log never copies what it holds.
	chunks [][]Event
	cur    []Event
	n      int
}

// logChunk is the number of events per chunk (64 KiB).
const logChunk = 4096

// MismatchSlack is how far outside its event's interval a server time may lie before it counts
// as a mismatch (clock steps, µs truncation).
const MismatchSlack = time.Millisecond

// NewAdmissionLog returns an empty log for a run that started at start; sharedClock, server and
// clientClock are as in AdmissionLog.
func NewAdmissionLog(start time.Time, sharedClock bool, server *clock.Offset, clientClock bool) *AdmissionLog {
	return &AdmissionLog{Origin: start.UnixMicro(), SharedClock: sharedClock, Server: server, ClientClock: clientClock}
}

// onServerClock reports whether the log's times are on an external server's clock.
func (l *AdmissionLog) onServerClock() bool {
	return !l.SharedClock && l.Server != nil && (!l.ClientClock || l.OneClock)
}

// Shift returns how many µs a harness time is moved by on the log's clock: the server's offset,
// rounded down, when the log is on an external server's clock; else 0. Figures that place log
// times on the run's timeline (violation times, bins) subtract it; it is off by under 1 µs and
// by the offset's error, which only matters for where a mark is drawn.
func (l *AdmissionLog) Shift() int64 {
	if !l.onServerClock() {
		return 0
	}
	return floorMicros(l.Server.Offset)
}

// Micros returns the time of run offset d (from the run's start, Origin) on the log's clock, in
// µs since the Unix epoch: where the measured part starts is Micros(load.Plan.Warmup).
func (l *AdmissionLog) Micros(d time.Duration) int64 {
	return l.Origin + int64(d/time.Microsecond) + l.Shift()
}

// Span returns the span [lo, hi] on the log's clock, µs since the Unix epoch, of something that
// happened after run offset after and at or before run offset at (offsets from the run's start,
// Origin, on the harness's clock, as load.Outcome times are): a Disruption's Lo and Hi. It is
// widened outward to whole µs, by MismatchSlack on each side (the server's clock, which dates
// the admissions of a server-clock algorithm, may step or lag the harness's by that much before
// a decision counts as mismatched), and, on an external server's clock, by the offset's error.
func (l *AdmissionLog) Span(after, at time.Duration) (lo, hi int64) {
	lo = l.Origin + floorMicros(after) - MismatchSlack.Microseconds()
	hi = l.Origin + ceilMicros(at) + 1 + MismatchSlack.Microseconds()
	if l.onServerClock() {
		lo += floorMicros(l.Server.Offset - l.Server.Err)
		hi += ceilMicros(l.Server.Offset + l.Server.Err)
	}
	return lo, hi
}

// ceilMicros returns d in microseconds, rounded up.
func ceilMicros(d time.Duration) int64 {
	us := int64(d / time.Microsecond) // truncates toward zero: already up for d < 0
	if d%time.Microsecond > 0 {
		us++
	}
	return us
}

// floorMicros returns d in microseconds, rounded down.
func floorMicros(d time.Duration) int64 {
	us := int64(d / time.Microsecond)
	if d%time.Microsecond < 0 {
		us--
	}
	return us
}

// Add appends the event of o, or counts it in Dropped when its times do not fit an Event.
func (l *AdmissionLog) Add(o *load.Outcome) {
	e, ok := l.event(o)
	if !ok {
		return
	}
	if len(l.cur) == cap(l.cur) {
		if l.cur != nil {
			l.chunks = append(l.chunks, l.cur)
		}
		l.cur = make([]Event, 0, logChunk)
	}
	l.cur = append(l.cur, e)
	l.n++
}

// event returns the event of o on the log's clock, counting it in Narrowed or Mismatched; when
// its times do not fit an Event it counts it in Dropped and returns false.
func (l *AdmissionLog) event(o *load.Outcome) (Event, bool) {
	// Times relative to Origin. Origin is start truncated to a microsecond, so start+Received
	// can exceed Origin+ceil(Received) by under 1 µs: +1 keeps the true time inside.
	lo, hi := int64(o.Sent/time.Microsecond), ceilMicros(o.Received)+1
	// A client-clock decision is on the harness's clock whatever the plan says.
	server := l.onServerClock() && (l.OneClock || !(o.Class == load.ClassOK && o.Decision.Clock == algorithms.ClockClient))
	if server {
		lo += floorMicros(l.Server.Offset - l.Server.Err)
		hi += ceilMicros(l.Server.Offset + l.Server.Err)
	}
	var k Kind
	switch o.Class {
	case load.ClassOK:
		k = Denied
		if o.Decision.Allowed {
			k = Admitted
		}
		if d := o.Decision; d.Clock == algorithms.ClockServer && d.TimeMicros > 0 && (l.SharedClock || server) {
			lo, hi = l.narrow(lo, hi, d.TimeMicros-l.Origin, d.TimeSpanMicros)
		}
	case load.ClassFailed:
		k = Failed
	default:
		k = Unknown
	}
	e, err := NewEvent(lo, hi, o.Subject, o.Client, o.Cost, k)
	if err != nil {
		l.Dropped++
		return Event{}, false
	}
	return e, true
}

// narrow returns the interval [t, t + span] of the server's decision time (span > 0: a time a
// script wrote with fewer digits than it had, known only to that interval), counting one far
// outside [lo, hi]. When the server's interval is wider than [lo, hi], which also holds the
// decision, [lo, hi] is kept: either interval is sound, and the narrower one finds more. Times
// are relative to Origin.
func (l *AdmissionLog) narrow(lo, hi, t, span int64) (int64, int64) {
	slack := MismatchSlack.Microseconds()
	if t+span < lo-slack || t > hi+slack {
		l.Mismatched++
	} else if span > hi-lo {
		return lo, hi
	}
	l.Narrowed++
	return t, t + span
}

// shift adds d µs to the times of l's events (for an Origin d µs earlier), dropping, and
// counting, those that no longer fit.
func (l *AdmissionLog) shift(d int64) {
	move := func(c []Event) []Event {
		n := 0
		for _, e := range c {
			if s, err := e.Shift(d); err == nil {
				c[n] = s
				n++
			}
		}
		l.Dropped += uint64(len(c) - n)
		l.n -= len(c) - n
		return c[:n]
	}
	for i, c := range l.chunks {
		l.chunks[i] = move(c)
	}
	l.cur = move(l.cur)
	l.Origin -= d
}

// Len returns the number of events.
func (l *AdmissionLog) Len() int { return l.n }

// Log returns l's events as a Log with Base = Origin and the names its indices refer to.
func (l *AdmissionLog) Log(subjects, clients []string) *Log {
	return &Log{Subjects: subjects, Clients: clients, Base: l.Origin, Events: l.Events()}
}

// Events returns every event in one new slice: l's own in order, then those of each merged log.
// Their times are relative to Origin. The slice is allocated once, at its final size, while the
// chunks are still held: at that moment the log takes twice its size.
func (l *AdmissionLog) Events() []Event {
	out := make([]Event, 0, l.n)
	for _, c := range l.chunks {
		out = append(out, c...)
	}
	return append(out, l.cur...)
}

var (
	_ load.Aggregator = (*AdmissionLog)(nil)
	_ load.Starter    = (*AdmissionLog)(nil)
)

// Start implements Starter: the log's Origin becomes start.
func (l *AdmissionLog) Start(start time.Time) { l.Origin = start.UnixMicro() }

// Fresh implements Aggregator: an empty log on the same clock.
func (l *AdmissionLog) Fresh() load.Aggregator {
	return &AdmissionLog{Origin: l.Origin, SharedClock: l.SharedClock, Server: l.Server, ClientClock: l.ClientClock, OneClock: l.OneClock}
}

// Finish implements Aggregator: Dropped, Narrowed and Mismatched (as ClockMismatch).
func (l *AdmissionLog) Finish() load.Counts {
	return load.Counts{Dropped: l.Dropped, Narrowed: l.Narrowed, ClockMismatch: l.Mismatched}
}

// Merge implements Aggregator: it moves the events of other, a log on the same clock, to l
// (without copying them); other must not be used afterwards. When the logs' Origins differ,
// other's events are moved to l's in place, and one that no longer fits is counted in Dropped.
//
// Two logs are on the same clock when both are on the harness's (SharedClock and ClientClock
// equal) or both on an external server's: then their offsets may differ, as those of two
// generators measuring one server do, since every event of either is already on the server's
// clock. Shift is l's.
func (l *AdmissionLog) Merge(other load.Aggregator) error {
	o, ok := other.(*AdmissionLog)
	if !ok || o.SharedClock != l.SharedClock || o.ClientClock != l.ClientClock || o.OneClock != l.OneClock ||
		o.onServerClock() != l.onServerClock() {
		return fmt.Errorf("%w: merge %T into an admission log on another clock", load.ErrMismatch, other)
	}
	if d := o.Origin - l.Origin; d != 0 {
		o.shift(d)
	}
	if len(l.cur) > 0 {
		l.chunks = append(l.chunks, l.cur)
	}
	l.chunks = append(l.chunks, o.chunks...)
	l.cur = o.cur
	l.n += o.n
	l.Narrowed += o.Narrowed
	l.Mismatched += o.Mismatched
	l.Dropped += o.Dropped
	*o = AdmissionLog{}
	return nil
}

// The encoding of an AdmissionLog (see load.Encoder).
const admissionLogKind, admissionLogVersion = "lbal", 1

// eventSize is the size of an encoded Event: t, Subject, Client and Permits, little-endian.
const eventSize = 16

// MarshalBinary encodes l: Origin, its clock (SharedClock, ClientClock and the server's offset
// and error in ns, when set), Narrowed, Mismatched, Dropped, then every event as its 16 bytes
// (the packed times and kind, subject, client, permits, little-endian), in the order Events
// returns them.
func (l *AdmissionLog) MarshalBinary() ([]byte, error) {
	e := load.NewEncoder(admissionLogKind, admissionLogVersion)
	l.encodeHead(e, int64(l.n))
	e.Grow(eventSize * l.n)
	var buf [eventSize]byte
	put := func(events []Event) {
		for _, ev := range events {
			putEvent(buf[:], ev)
			e.Raw(buf[:])
		}
	}
	for _, c := range l.chunks {
		put(c)
	}
	put(l.cur)
	return e.Encoding(), nil
}

// encodeHead encodes what MarshalBinary writes before the events, for n events.
func (l *AdmissionLog) encodeHead(e *load.Encoder, n int64) {
	e.Varint(l.Origin)
	flags := l.flags()
	e.Uvarint(flags)
	if l.Server != nil {
		e.Varint(int64(l.Server.Offset))
		e.Varint(int64(l.Server.Err))
	}
	e.Uvarint(l.Narrowed)
	e.Uvarint(l.Mismatched)
	e.Uvarint(l.Dropped)
	e.Uvarint(uint64(n))
}

// UnmarshalBinary decodes what MarshalBinary encoded into l, replacing what l held. Errors wrap
// load.ErrEncoding.
func (l *AdmissionLog) UnmarshalBinary(b []byte) error {
	return load.Decode(l, b, admissionLogKind, admissionLogVersion, func(d *load.Decoder) (AdmissionLog, error) {
		out := AdmissionLog{Origin: d.Varint()}
		flags := d.Uvarint()
		if flags&^15 != 0 {
			return out, d.Errorf("unknown clock flags %#x", flags)
		}
		out.SharedClock, out.ClientClock, out.OneClock = flags&1 != 0, flags&2 != 0, flags&8 != 0
		if flags&4 != 0 {
			out.Server = &clock.Offset{Offset: time.Duration(d.Varint()), Err: time.Duration(d.Varint())}
		}
		out.Narrowed, out.Mismatched, out.Dropped = d.Uvarint(), d.Uvarint(), d.Uvarint()
		n := d.Count(eventSize)
		raw := d.Raw(uint64(n) * eventSize)
		if len(raw) < n*eventSize {
			return out, nil // Decode reports the truncation
		}
		out.cur, out.n = make([]Event, n), n
		for i := range out.cur {
			out.cur[i] = getEvent(raw[i*eventSize:])
		}
		return out, nil
	})
}
