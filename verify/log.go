package verify

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/limitbench/limitbench/algorithms"
)

// Errors returned by this package; compare with errors.Is.
var (
	// ErrBadLog means an event cannot be made (NewEvent, Event.Shift: Lo > Hi, a time out of
	// range, an unknown kind) or a log cannot be used (a Base out of range, an index out of
	// range, zero permits on an admission).
	ErrBadLog = errors.New("invalid admission log")
	// ErrBadContract means a contract cannot be checked: a non-positive limit, window, capacity or
	// rate, a window that is not a whole number of µs, a negative granularity, or an unknown kind
	// or scope.
	ErrBadContract = errors.New("invalid contract")
	// ErrOverflow means a token-bucket check would overflow int64: the rate times the span of the
	// log, or the permits times the rate's denominator, exceed 2^61.
	ErrOverflow = errors.New("token-bucket arithmetic would overflow")
)

// Kind is what the log knows about one request's outcome.
type Kind uint8

// Kinds of Event.
const (
	// Admitted: the limiter allowed the request.
	Admitted Kind = iota + 1
	// Denied: the limiter refused the request.
	Denied
	// Unknown: the request timed out or was lost; it may or may not have been admitted.
	Unknown
	// Failed: an error known not to have admitted anything (the script did not run, or
	// answered with an error). first-hit-window takes it as possibly run within [Lo, Hi]: a
	// script that failed half way may have opened a window (see the package doc).
	Failed
)

func (k Kind) String() string {
	switch k {
	case Admitted:
		return "admitted"
	case Denied:
		return "denied"
	case Unknown:
		return "unknown"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Event is one request as the verifier holds it, in 16 bytes: its decision time as an interval
// [Lo, Hi] in µs relative to Log.Base, its kind, subject, client and permits. Build one with
// NewEvent; the zero Event is an admission of zero permits at MinLo, which Check refuses.
//
// The decision happened somewhere in [Base + Lo, Base + Hi] (Lo == Hi when the exact time is
// known). For an Unknown event only Lo is a bound: Hi is when the harness gave up, and the request
// may have run later.
//
// Lo is exact and must lie in [MinLo, MaxLo] (±6.36 days around Base). The width Hi − Lo is
// stored in 22 bits as a mantissa m of 20 bits and a unit u of 2 bits, width = m·2^(10u) µs,
// rounded up to the next value of that form: exact below 2^20 µs (about 1.05 s), then in steps
// of 2^10 µs (1.024 ms) up to about 2^30 µs (18 minutes), of 2^20 µs (1.05 s) up to about 2^40
// µs (12.7 days), and of 2^30 µs up to MaxWidth. So Hi is never earlier than the hi given to
// NewEvent, and less than one step later. That is a
// deliberate, safe widening: a wider interval can turn a definite violation into a possible one,
// never the reverse, and a width of 0 stays exact (Lo == Hi), which Replay relies on.
//
// Events compare with ==. Ordering events by their packed times orders them by Lo, then Hi, then
// Kind, which is how Check sorts them.
type Event struct {
	// t packs the times and the kind: bits 63..24 hold Lo + 2^39 (unsigned, so t orders by Lo),
	// bits 23..2 the width code u<<20 | m, bits 1..0 Kind − 1.
	t uint64
	// Subject indexes Log.Subjects.
	Subject uint32
	// Client indexes Log.Clients.
	Client uint16
	// Permits is the cost of the request (>= 1 for Admitted and Unknown events).
	Permits uint16
}

// Bounds of an Event's times, in µs: Lo − Log.Base lies in [MinLo, MaxLo], and Hi − Lo is at
// most MaxWidth (about 35.7 years).
const (
	MinLo    = -1 << (loBits - 1)
	MaxLo    = 1<<(loBits-1) - 1
	MaxWidth = (1<<mantBits - 1) << (unitBits * 3)
)

const (
	loBits    = 40          // bits of Lo + 2^39
	loShift   = 64 - loBits // where they start in t
	codeShift = 2           // where the width code starts in t
	mantBits  = 20          // bits of the width's mantissa
	unitBits  = 10          // each width unit is 2^unitBits times the one below
	mantMask  = 1<<mantBits - 1
	kindMask  = 1<<codeShift - 1
	unitMask  = 3 << (codeShift + mantBits) // the width's unit in t
	loMask    = 1<<64 - 1<<loShift
)

// NewEvent returns the event of a request decided somewhere in [lo, hi], µs relative to the
// Base of the Log it goes into, with the width hi − lo rounded up as Event describes. It returns
// an error wrapping ErrBadLog when lo > hi, lo is outside [MinLo, MaxLo], hi − lo exceeds
// MaxWidth, or k is not a Kind.
func NewEvent(lo, hi int64, subject uint32, client uint16, permits uint16, k Kind) (Event, error) {
	switch {
	case lo > hi:
		return Event{}, fmt.Errorf("%w: Lo %d > Hi %d", ErrBadLog, lo, hi)
	case lo < MinLo || lo > MaxLo:
		return Event{}, fmt.Errorf("%w: Lo %d µs from the base is outside [%d, %d]", ErrBadLog, lo, int64(MinLo), int64(MaxLo))
	case hi-lo > MaxWidth:
		return Event{}, fmt.Errorf("%w: width %d µs is over %d", ErrBadLog, hi-lo, int64(MaxWidth))
	case k < Admitted || k > Failed:
		return Event{}, fmt.Errorf("%w: unknown kind %d", ErrBadLog, k)
	}
	return Event{
		t:       uint64(lo-MinLo)<<loShift | widthCode(uint64(hi-lo))<<codeShift | uint64(k-Admitted),
		Subject: subject,
		Client:  client,
		Permits: permits,
	}, nil
}

// widthCode returns the code u<<mantBits | m of the smallest width m·2^(unitBits·u) >= w, with
// the smallest such u; w <= MaxWidth. Codes of larger widths compare larger.
func widthCode(w uint64) uint64 {
	for u := uint64(0); ; u++ {
		step := unitBits * u
		if m := (w + 1<<step - 1) >> step; m <= mantMask {
			return u<<mantBits | m
		}
	}
}

// Lo returns the earliest instant of e's decision, in µs relative to Log.Base.
func (e Event) Lo() int64 { return int64(e.t>>loShift) + MinLo }

// Hi returns the latest instant of e's decision, in µs relative to Log.Base: Lo plus the width,
// rounded up as Event describes.
func (e Event) Hi() int64 { return e.Lo() + e.width() }

// width returns Hi − Lo.
func (e Event) width() int64 {
	c := e.t >> codeShift
	return int64((c & mantMask) << (unitBits * ((c >> mantBits) & 3)))
}

// hiNarrow returns Hi − MinLo of an event whose width code has unit 0 (a width below 2^20 µs),
// without the unit's shift.
func (e *Event) hiNarrow() uint64 { return e.t>>loShift + e.t>>codeShift&mantMask }

// Kind returns what is known of the request's outcome.
func (e Event) Kind() Kind { return Kind(e.t&kindMask) + Admitted }

// Shift returns e moved by d µs: Lo and Hi plus d, for a log whose Base is d µs earlier. It
// returns an error wrapping ErrBadLog when the new Lo is outside [MinLo, MaxLo].
func (e Event) Shift(d int64) (Event, error) {
	lo := e.Lo()
	if d < MinLo-lo || d > MaxLo-lo {
		return Event{}, fmt.Errorf("%w: Lo %d + %d µs is outside [%d, %d]", ErrBadLog, lo, d, int64(MinLo), int64(MaxLo))
	}
	e.t = e.t&^loMask | uint64(lo+d-MinLo)<<loShift
	return e, nil
}

// String renders e as "admitted [lo, hi] subject 3 client 2 permits 1", times relative.
func (e Event) String() string {
	return fmt.Sprintf("%s [%d, %d] subject %d client %d permits %d", e.Kind(), e.Lo(), e.Hi(), e.Subject, e.Client, e.Permits)
}

// MaxBase bounds Log.Base: |Base| <= MaxBase, so absolute times never overflow int64.
const MaxBase = 1 << 62

// Log is the admission log of one algorithm's run: every request it was sent, with the names its
// indices refer to. Events may be in any order; Check, Accuracy and Replay reorder them in place.
type Log struct {
	Subjects []string
	Clients  []string
	// Base is the time, in µs since the Unix epoch, that the times of Events are relative to
	// (|Base| <= MaxBase). Every time the package reports (Where, Violation.At, AccuracyBin.Start,
	// ReplayDiff.At) is absolute, Base added, and fixed-window's windows are aligned on the Unix
	// epoch, not on Base.
	Base   int64
	Events []Event
	// From, when non-zero, is a time in µs since the Unix epoch (absolute, not relative to Base)
	// before which events only prime state: Accuracy feeds them to the ideal limiter (so it
	// starts the counted part in the state the algorithm was left in by a warmup) but counts
	// nothing before From. Check ignores From (give it only the events to verify), except for
	// first-hit-window, whose windows depend on every request before: it takes every event
	// into the windows and reports only violations that end at or after From.
	From int64
	// Fresh says that the limiter held no state for any scope before the log's first event
	// (every key it uses was new: a run on a key prefix of its own, warmup included). Only
	// first-hit-window uses it: its first window then starts at the first request that reached
	// the limiter; without it, a window may already be open when the log starts, begun at any
	// earlier instant.
	Fresh bool
}

// validate reports the first problems of l (at most 5, and how many more), each wrapped with
// ErrBadLog: a Base out of range, an index out of range, or zero permits on an admission or an
// unknown outcome. (NewEvent has checked the rest.)
func (l *Log) validate() error {
	var errs []error
	if l.Base < -MaxBase || l.Base > MaxBase {
		errs = append(errs, fmt.Errorf("%w: Base %d is outside ±2^62", ErrBadLog, l.Base))
	}
	more := 0
	for i := range l.Events {
		e := &l.Events[i]
		var msg string
		switch {
		case int(e.Subject) >= len(l.Subjects):
			msg = fmt.Sprintf("subject %d out of range (%d subjects)", e.Subject, len(l.Subjects))
		case int(e.Client) >= len(l.Clients):
			msg = fmt.Sprintf("client %d out of range (%d clients)", e.Client, len(l.Clients))
		case e.Permits == 0 && (e.Kind() == Admitted || e.Kind() == Unknown):
			msg = "zero permits"
		default:
			continue
		}
		if len(errs) == 5 {
			more++
			continue
		}
		errs = append(errs, fmt.Errorf("%w: event %d: %s", ErrBadLog, i, msg))
	}
	if more > 0 {
		errs = append(errs, fmt.Errorf("%w: and %d more bad events", ErrBadLog, more))
	}
	return errors.Join(errs...)
}

// micros converts d to whole µs, rounding up. It is used only where a coarser value is the safe
// one: a granularity (a wider interval can only turn definite violations into possible ones) and
// an accuracy bin width. Windows and refill periods are never rounded (see newLimit).
func micros(d time.Duration) int64 {
	us := int64(d / time.Microsecond)
	if d%time.Microsecond > 0 {
		us++
	}
	return us
}

// limit is one contract (without Also) in µs, ready to check.
type limit struct {
	c     algorithms.Contract
	kind  algorithms.ContractKind
	scope algorithms.Scope
	l, w  int64 // sliding, fixed and first-hit windows: limit, window µs
	cap   int64 // token bucket: capacity
	p, q  int64 // token bucket: rate p/q permits per µs, exact and reduced
	g     int64 // granularity µs
}

// flatten validates c and returns it and its Also contracts, depth first, in order.
func flatten(c algorithms.Contract) ([]limit, error) {
	var out []limit
	var errs []error
	var walk func(c algorithms.Contract, path string)
	walk = func(c algorithms.Contract, path string) {
		lim, err := newLimit(c)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
		} else {
			out = append(out, lim)
		}
		for i, a := range c.Also {
			walk(a, fmt.Sprintf("%s.Also[%d]", path, i))
		}
	}
	walk(c, "contract")
	return out, errors.Join(errs...)
}

// newLimit validates one contract (its Also ignored) and converts it to µs. Nothing that sets
// the allowance is rounded: a window must be a whole number of µs (the log's unit; rounding it
// either way would move the aligned windows of fixed-window, and rounding up would shrink the
// allowance), and a token bucket's rate is kept exactly as the fraction
// RefillPermits·1000 / RefillPer in ns, reduced, so a refill period of any length is exact. The
// granularity is rounded up to whole µs, which only widens intervals.
func newLimit(c algorithms.Contract) (limit, error) {
	one := c
	one.Also = nil
	lim := limit{c: one, kind: c.Kind, scope: c.Scope, g: micros(c.Granularity)}
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s: %s", ErrBadContract, one, fmt.Sprintf(format, args...)))
	}
	if c.Granularity < 0 {
		bad("granularity %s < 0", c.Granularity)
	}
	if c.Scope > algorithms.PerConsumer {
		bad("unknown scope %d", c.Scope)
	}
	switch c.Kind {
	case algorithms.SlidingWindow, algorithms.FixedWindow, algorithms.FirstHitWindow:
		lim.l, lim.w = c.Limit, int64(c.Window/time.Microsecond)
		if c.Limit <= 0 {
			bad("limit %d <= 0", c.Limit)
		}
		switch {
		case c.Window <= 0:
			bad("window %s <= 0", c.Window)
		case c.Window%time.Microsecond != 0:
			bad("window %s is not a whole number of microseconds (the admission log's unit); "+
				"rounding it would move or shrink the windows", c.Window)
		}
	case algorithms.TokenBucket:
		lim.cap = c.Capacity
		if c.Capacity <= 0 {
			bad("capacity %d <= 0", c.Capacity)
		}
		switch {
		case c.RefillPermits <= 0 || c.RefillPer <= 0:
			bad("refill %d per %s is not a positive rate", c.RefillPermits, c.RefillPer)
		case c.RefillPermits > math.MaxInt64/1000:
			bad("refill %d per %s: too many permits", c.RefillPermits, c.RefillPer)
		default:
			// r = RefillPermits / RefillPer permits per ns = RefillPermits·1000 / RefillPer per µs.
			p, q := c.RefillPermits*1000, int64(c.RefillPer)
			d := gcd(p, q)
			lim.p, lim.q = p/d, q/d
		}
	case algorithms.NoContract:
	default:
		bad("unknown kind %q", c.Kind)
	}
	return lim, errors.Join(errs...)
}

// windows returns K = ⌊2G/W⌋ + 1 for a sliding-window limit: the fewest back-to-back windows of
// W that the admissions of a set must be counted over once their times are widened by G on each
// side (a widened set spans at least 2G ≥ (K−1)·W, and K·W > 2G). Sliding-window's condition (i)
// (see the package doc) takes the sets that span less than K·W and allows them K·L; both are
// returned, K·W at most 2^62 µs (longer than any set can span: Lo lies within ±2^39 µs of Base
// and widths are at most MaxWidth, about 2^50 µs; the sweeps subtract K·W from such times) and K·L saturated at math.MaxInt64 (which no set
// reaches). K is 1, and the pair (W, L), when 2G < W.
func (lim *limit) windows() (k, kw, kl int64) {
	k = 2*lim.g/lim.w + 1
	return k, min(satMul(k, lim.w), 1<<62), satMul(k, lim.l)
}

// satMul returns a·b for a, b ≥ 0, or math.MaxInt64 when that overflows.
func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// SubjectsDecided counts the distinct subjects of l's admitted or denied requests.
func (l *Log) SubjectsDecided() int {
	seen := make([]bool, len(l.Subjects))
	n := 0
	for _, e := range l.Events {
		if k := e.Kind(); (k == Admitted || k == Denied) && int(e.Subject) < len(seen) && !seen[e.Subject] {
			seen[e.Subject] = true
			n++
		}
	}
	return n
}
