package algorithms

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ContractKind names a safety property.
type ContractKind string

const (
	// SlidingWindow(L, W): every half-open interval (t−W, t] holds at most L permits.
	SlidingWindow ContractKind = "sliding-window"
	// FixedWindow(L, W): every aligned window [kW, (k+1)W) of Unix time holds at most L permits.
	FixedWindow ContractKind = "fixed-window"
	// FirstHitWindow(L, W): windows begin at the first request (admitted or not) that reaches the
	// limiter after the previous window ended, and last W; each holds at most L permits. It is
	// the contract of INCR with an expiry set on the first request (a key that expires W after
	// the first hit). Windows are counted per Scope, like every contract.
	FirstHitWindow ContractKind = "first-hit-window"
	// TokenBucket(C, r): every closed interval [t1, t2] holds at most C + r·(t2 − t1) permits,
	// where r = RefillPermits / RefillPer.
	TokenBucket ContractKind = "token-bucket"
	// NoContract: benchmark only; nothing is verified.
	NoContract ContractKind = "none"
)

// Scope says what one contract instance is counted over.
type Scope uint8

const (
	// PerSubject counts every admission of one subject together.
	PerSubject Scope = iota
	// PerClient counts each (subject, client) pair on its own.
	PerClient
	// PerConsumer counts each client (consumer) on its own, across subjects.
	PerConsumer
)

func (s Scope) String() string {
	switch s {
	case PerSubject:
		return "subject"
	case PerClient:
		return "subject+client"
	case PerConsumer:
		return "consumer"
	}
	return "unknown"
}

// Contract is a safety property with its parameters. Times are in microseconds of Unix time in the
// verifier; here they are durations.
type Contract struct {
	Kind ContractKind
	// Limit and Window parameterise sliding-window, fixed-window and first-hit-window.
	Limit  int64
	Window time.Duration
	// Capacity, RefillPermits and RefillPer parameterise token-bucket: rate = RefillPermits/RefillPer.
	Capacity      int64
	RefillPermits int64
	RefillPer     time.Duration
	// Granularity is the clock resolution the algorithm is known to have (for example 1s for a
	// script that keys on whole seconds). The verifier widens decision times by it; nothing else is
	// added silently.
	Granularity time.Duration
	// Scope is what the contract is counted over.
	Scope Scope
	// Also lists further contracts that must hold at the same time (two limits at once).
	Also []Contract
}

// String renders c as in DESIGN.md, for example "sliding-window(100, 1s)".
func (c Contract) String() string {
	var s string
	switch c.Kind {
	case SlidingWindow, FixedWindow, FirstHitWindow:
		s = fmt.Sprintf("%s(%d, %s)", c.Kind, c.Limit, c.Window)
	case TokenBucket:
		s = fmt.Sprintf("%s(%d, %d/%s)", c.Kind, c.Capacity, c.RefillPermits, c.RefillPer)
	default:
		s = string(c.Kind)
	}
	if c.Scope != PerSubject {
		s += " per " + c.Scope.String()
	}
	for _, a := range c.Also {
		s += " and " + a.String()
	}
	return s
}

// Allowance returns what c allows one scope over a span d in the steady state, in permits: L·d/W
// for sliding-window, fixed-window and first-hit-window (whose windows of W hold L each, however
// they fall), RefillPermits·d/RefillPer for token-bucket (its capacity C aside, which a full
// bucket adds once), 0 for no contract. Further contracts (Also) are not counted.
func (c Contract) Allowance(d time.Duration) float64 {
	switch c.Kind {
	case SlidingWindow, FixedWindow, FirstHitWindow:
		return float64(c.Limit) * d.Seconds() / c.Window.Seconds()
	case TokenBucket:
		return float64(c.RefillPermits) * d.Seconds() / c.RefillPer.Seconds()
	}
	return 0
}

// ErrBadContractText means a contract's text does not parse (see ParseContract).
var ErrBadContractText = errors.New("invalid contract text")

// ParseContract parses what Contract.String renders: "sliding-window(100, 1s)",
// "fixed-window(L, W)", "first-hit-window(L, W)", "token-bucket(C, P/per)" or "none", each optionally followed by
// " per subject+client" or " per consumer", joined by " and " for further contracts (Also).
// Granularity, which String does not render, is zero. Errors wrap ErrBadContractText.
func ParseContract(s string) (Contract, error) {
	parts := strings.Split(s, " and ")
	c, err := parseOneContract(parts[0])
	if err != nil {
		return Contract{}, fmt.Errorf("%w: %q: %w", ErrBadContractText, s, err)
	}
	for _, p := range parts[1:] {
		a, err := parseOneContract(p)
		if err != nil {
			return Contract{}, fmt.Errorf("%w: %q: %w", ErrBadContractText, s, err)
		}
		c.Also = append(c.Also, a)
	}
	return c, nil
}

func parseOneContract(s string) (Contract, error) {
	var c Contract
	if head, scope, ok := strings.Cut(s, " per "); ok {
		switch scope {
		case PerClient.String():
			c.Scope = PerClient
		case PerConsumer.String():
			c.Scope = PerConsumer
		default:
			return c, fmt.Errorf("unknown scope %q", scope)
		}
		s = head
	}
	kind, params, hasParams := strings.Cut(s, "(")
	c.Kind = ContractKind(kind)
	if !hasParams {
		if c.Kind == SlidingWindow || c.Kind == FixedWindow || c.Kind == FirstHitWindow || c.Kind == TokenBucket {
			return c, fmt.Errorf("%s without parameters", kind)
		}
		return c, nil
	}
	params, ok := strings.CutSuffix(params, ")")
	first, second, found := strings.Cut(params, ", ")
	if !ok || !found {
		return c, fmt.Errorf("parameters %q", params)
	}
	n, err := strconv.ParseInt(first, 10, 64)
	if err != nil {
		return c, err
	}
	switch c.Kind {
	case SlidingWindow, FixedWindow, FirstHitWindow:
		c.Limit = n
		c.Window, err = time.ParseDuration(second)
	case TokenBucket:
		c.Capacity = n
		permits, per, found := strings.Cut(second, "/")
		if !found {
			return c, fmt.Errorf("refill %q", second)
		}
		if c.RefillPermits, err = strconv.ParseInt(permits, 10, 64); err == nil {
			c.RefillPer, err = time.ParseDuration(per)
		}
	default:
		return c, fmt.Errorf("%s takes no parameters", kind)
	}
	return c, err
}
