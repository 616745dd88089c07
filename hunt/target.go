package hunt

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/scenarios"
	"github.com/limitbench/limitbench/verify"
)

// ErrBadTarget means a Target or Bounds cannot be hunted (no contract, a limit without a window
// or rate, bounds out of range).
var ErrBadTarget = errors.New("cannot hunt")

// FirstHitWindow is the contract kind of windows that start at the first request after the
// previous window ended: first-hit-window(L, W). The first-hit family keys on it.
const FirstHitWindow algorithms.ContractKind = "first-hit-window"

// Target is what a hunt attacks: one algorithm's contract and what the algorithm declares about
// itself. The zero value is not a target; build one with TargetOf or fill every field.
type Target struct {
	// Algorithm is the algorithm's name, for reports.
	Algorithm string
	// Contract is the contract it promises, Also included.
	Contract algorithms.Contract
	// Clock is where its decision times come from (algorithms.Description.Clock).
	Clock algorithms.Clock
	// Cost reports whether a request may ask for more than one permit.
	Cost bool
	// Skews are the clock offsets clients may have (a scenario's clock_skew offsets): families
	// give clients offsets from this list only, and only when Clock is ClockClient. Empty: every
	// client's clock is the harness's. A hunt never invents a skew the scenario did not allow.
	Skews []time.Duration
}

// TargetOf returns the Target of algorithm a under limit l, with the clock offsets the scenario
// allows (nil for none).
func TargetOf(a algorithms.Algorithm, l algorithms.Limit, skews []time.Duration) (Target, error) {
	d := a.Describe()
	c, err := a.Contract(l)
	if err != nil {
		return Target{}, fmt.Errorf("hunt %s: %w", d.Name, err)
	}
	t := Target{Algorithm: d.Name, Contract: c, Clock: d.Clock, Cost: d.Cost, Skews: slices.Clone(skews)}
	if err := t.Validate(); err != nil {
		return Target{}, err
	}
	return t, nil
}

// Validate reports whether t can be hunted: a contract that verify.ApproachOf can score (so
// not none, and of a kind the verifier knows) whose limits all have their parameters, and clock
// offsets within ±24h.
func (t Target) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w %s: %s", ErrBadTarget, t.Algorithm, fmt.Sprintf(format, args...)))
	}
	if t.Contract.Kind == algorithms.NoContract || t.Contract.Kind == "" {
		bad("no contract to break")
	} else if _, err := verify.ApproachOf(t.Contract, &verify.Log{}); err != nil {
		// A contract the verifier cannot score (a kind it does not know yet) cannot guide a
		// search: say so before any trial runs.
		bad("%v", err)
	}
	for _, a := range t.aims() {
		if a.allow <= 0 || a.window <= 0 {
			bad("contract %s has no allowance or window", a.c)
		}
	}
	for _, s := range t.Skews {
		if s < -24*time.Hour || s > 24*time.Hour {
			bad("clock offset %s is outside ±24h", s)
		}
	}
	return errors.Join(errs...)
}

// skewed reports whether families give clients clock offsets: a client-clock algorithm and some
// non-zero offset allowed.
func (t Target) skewed() bool {
	if t.Clock != algorithms.ClockClient {
		return false
	}
	for _, s := range t.Skews {
		if s != 0 {
			return true
		}
	}
	return false
}

// aim is one limit of a target, in the terms families use: the permits it allows in one window
// (L, or the capacity C), the window (W, or the time C permits take to refill), the time one
// permit takes to refill, its rate, and its granularity.
type aim struct {
	c      algorithms.Contract
	kind   algorithms.ContractKind
	scope  algorithms.Scope
	allow  int64
	window time.Duration
	unit   time.Duration // W/L, or RefillPer/RefillPermits
	gran   time.Duration
}

// rate returns the limit's permits per second.
func (a aim) rate() float64 { return 1 / a.unit.Seconds() }

// aims returns the limits of t's contract, the main one first, then its Also, depth first.
func (t Target) aims() []aim {
	var out []aim
	var walk func(c algorithms.Contract)
	walk = func(c algorithms.Contract) {
		one := c
		one.Also = nil
		a := aim{c: one, kind: c.Kind, scope: c.Scope, gran: c.Granularity}
		switch c.Kind {
		case algorithms.TokenBucket:
			a.allow = c.Capacity
			if c.RefillPermits > 0 {
				a.unit = c.RefillPer / time.Duration(c.RefillPermits)
				a.window = time.Duration(c.Capacity) * a.unit
			}
		case algorithms.NoContract:
		default: // sliding, fixed, first-hit and any later window kind
			a.allow, a.window = c.Limit, c.Window
			if c.Limit > 0 {
				a.unit = c.Window / time.Duration(c.Limit)
			}
		}
		if a.unit <= 0 {
			a.unit = time.Microsecond
		}
		if c.Kind != algorithms.NoContract {
			out = append(out, a)
		}
		for _, x := range c.Also {
			walk(x)
		}
	}
	walk(t.Contract)
	return out
}

// period returns the length of the cycle at whose boundaries t's allowance turns over or its
// clock ticks, for schedules of span: the fixed window; else the granularity when the contract
// states one of at least span/100 (a clock of whole seconds; a finer one ticks too often to aim
// at); else the window, or for a token bucket the refill period (a bucket or window kept in
// whole intervals of the epoch turns over there).
func (t Target) period(span time.Duration) time.Duration {
	c := t.Contract
	switch {
	case c.Kind == algorithms.FixedWindow:
		return c.Window
	case c.Granularity > 0 && c.Granularity >= span/100:
		return c.Granularity
	case c.Kind == algorithms.TokenBucket:
		return c.RefillPer
	}
	return c.Window
}

// Bounds limit the size of the schedules a hunt generates. Zero fields take the defaults.
type Bounds struct {
	// Span is the latest offset a row may have (default 2 s): one trial lasts about that long.
	Span time.Duration
	// Rows is the most rows (default 4000).
	Rows int
	// Clients is the most clients (default 64, at most trace.MaxClients).
	Clients int
	// Subjects is the most subjects (default 4).
	Subjects int
	// Faults are the kinds of fault a schedule may place (trace.Fault; scenarios.NemesisKinds
	// names them) and ClockJump (trace.Jump), at most MaxFaults of each a schedule; none by
	// default: no schedule places a fault, and the search draws exactly what it draws without
	// them.
	Faults []string
}

// MaxFaults is the most faults one schedule places.
const MaxFaults = 2

// Defaults of Bounds.
const (
	DefaultSpan     = 2 * time.Second
	DefaultRows     = 4000
	DefaultClients  = 64
	DefaultSubjects = 4
)

func (b Bounds) withDefaults() Bounds {
	if b.Span == 0 {
		b.Span = DefaultSpan
	}
	if b.Rows == 0 {
		b.Rows = DefaultRows
	}
	if b.Clients == 0 {
		b.Clients = DefaultClients
	}
	if b.Subjects == 0 {
		b.Subjects = DefaultSubjects
	}
	return b
}

// Validate reports every problem with b at once.
func (b Bounds) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: bounds: %s", ErrBadTarget, fmt.Sprintf(format, args...)))
	}
	if b.Span < 0 || b.Span > time.Hour {
		bad("span %s is outside [1ms, 1h]", b.Span)
	} else if b.Span > 0 && b.Span < time.Millisecond {
		bad("span %s is outside [1ms, 1h]", b.Span)
	}
	if b.Rows < 0 || b.Rows > 1_000_000 {
		bad("rows %d is outside [1, 1000000]", b.Rows)
	}
	if b.Clients < 0 || b.Clients > 65535 {
		bad("clients %d is outside [1, 65535]", b.Clients)
	}
	if b.Subjects < 0 || b.Subjects > 1000 {
		bad("subjects %d is outside [1, 1000]", b.Subjects)
	}
	for _, k := range b.Faults {
		if k != ClockJump && !slices.Contains(scenarios.NemesisKinds, scenarios.FaultKind(k)) {
			bad("fault kind %q is not one a schedule may place (%s, %s)", k, scenarios.NemesisNames(), ClockJump)
		}
	}
	return errors.Join(errs...)
}

// FrameOf returns where every schedule of a hunt of t within b starts on the Unix clock: time
// zero is Lead = min(P, b.Span)/2 before a multiple of t's period P, so boundaries fall at
// offsets Lead, Lead + P, ... and the first one has room on both sides. As a scenario's
// arrival.align it is {Every: P, Offset: P − Lead}. P is the fixed window of a fixed-window
// contract; else the contract's granularity when it is at least b.Span/100 (a clock of whole
// seconds); else the window, or a token bucket's refill period.
func FrameOf(t Target, b Bounds) arrival.Align {
	b = b.withDefaults()
	p := t.period(b.Span)
	if p <= 0 {
		return arrival.Align{}
	}
	lead := min(p, b.Span) / 2
	if lead <= 0 {
		return arrival.Align{Every: p}
	}
	return arrival.Align{Every: p, Offset: p - lead}
}

// maxBoundaries is the most boundaries families aim at in one schedule.
const maxBoundaries = 64

// boundaries returns the first maxBoundaries offsets in [0, span] at which a period of the
// frame f begins.
func boundaries(f arrival.Align, span time.Duration) []time.Duration {
	if f.Every <= 0 {
		return nil
	}
	var out []time.Duration
	for at := (f.Every - f.Offset) % f.Every; at <= span && len(out) < maxBoundaries; at += f.Every {
		out = append(out, at)
	}
	return out
}
