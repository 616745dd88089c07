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
	// ErrBadLog means an event of the log cannot be used: Lo > Hi, an index out of range, an
	// unknown kind, or zero permits on an admission.
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
	// Failed: an error known not to have admitted anything (the script did not run).
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

// Event is one request as the verifier holds it, in 32 bytes.
type Event struct {
	// Lo and Hi bound the instant of the decision, in µs since the Unix epoch: it happened
	// somewhere in [Lo, Hi] (Lo == Hi when the exact time is known). For an Unknown event only
	// Lo is a bound: Hi is when the harness gave up, and the request may have run later.
	Lo, Hi int64
	// Subject indexes Log.Subjects.
	Subject uint32
	// Client indexes Log.Clients.
	Client uint16
	// Permits is the cost of the request (>= 1 for Admitted and Unknown events).
	Permits uint16
	Kind    Kind
}

// Log is the admission log of one algorithm's run: every request it was sent, with the names its
// indices refer to. Events may be in any order; Check, Accuracy and Replay reorder them in place.
type Log struct {
	Subjects []string
	Clients  []string
	Events   []Event
	// From, when non-zero, is a time in µs since the Unix epoch before which events only prime
	// state: Accuracy feeds them to the ideal limiter (so it starts the counted part in the state
	// the algorithm was left in by a warmup) but counts nothing before From. Check ignores From:
	// give it only the events to verify.
	From int64
}

// validate reports the first problems of l (at most 5, and how many more), each wrapped with
// ErrBadLog.
func (l *Log) validate() error {
	var errs []error
	more := 0
	for i := range l.Events {
		e := &l.Events[i]
		var msg string
		switch {
		case e.Lo > e.Hi:
			msg = fmt.Sprintf("Lo %d > Hi %d", e.Lo, e.Hi)
		case int(e.Subject) >= len(l.Subjects):
			msg = fmt.Sprintf("subject %d out of range (%d subjects)", e.Subject, len(l.Subjects))
		case int(e.Client) >= len(l.Clients):
			msg = fmt.Sprintf("client %d out of range (%d clients)", e.Client, len(l.Clients))
		case e.Kind < Admitted || e.Kind > Failed:
			msg = fmt.Sprintf("unknown kind %d", e.Kind)
		case e.Permits == 0 && (e.Kind == Admitted || e.Kind == Unknown):
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
	l, w  int64 // sliding and fixed windows: limit, window µs
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
	case algorithms.SlidingWindow, algorithms.FixedWindow:
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

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
