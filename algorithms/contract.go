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

// String renders c as in DESIGN.md, for example "sliding-window(100, 1s)", with the clock
// granularity as a last parameter when it is not zero: "fixed-window(10, 1s, granularity 1ms)".
// A pass that holds only thanks to a granularity so shows it wherever the contract is printed.
func (c Contract) String() string {
	var s string
	g := ""
	if c.Granularity != 0 {
		g = ", granularity " + c.Granularity.String()
	}
	switch c.Kind {
	case SlidingWindow, FixedWindow, FirstHitWindow:
		s = fmt.Sprintf("%s(%d, %s%s)", c.Kind, c.Limit, c.Window, g)
	case TokenBucket:
		s = fmt.Sprintf("%s(%d, %d/%s%s)", c.Kind, c.Capacity, c.RefillPermits, c.RefillPer, g)
	default:
		s = string(c.Kind)
		if g != "" {
			s += "(" + g[2:] + ")"
		}
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
// "fixed-window(L, W)", "first-hit-window(L, W)", "token-bucket(C, P/per)" or "none", each with
// an optional last parameter "granularity D" and optionally followed by " per subject+client" or
// " per consumer", joined by " and " for further contracts (Also). Errors wrap
// ErrBadContractText.
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
	if !ok {
		return c, fmt.Errorf("parameters %q", params)
	}
	if i := strings.LastIndex(params, "granularity "); i >= 0 && (i == 0 || strings.HasSuffix(params[:i], ", ")) {
		g, err := time.ParseDuration(params[i+len("granularity "):])
		if err != nil {
			return c, fmt.Errorf("granularity: %w", err)
		}
		c.Granularity = g
		params = strings.TrimSuffix(params[:i], ", ")
		if params == "" {
			if c.Kind == SlidingWindow || c.Kind == FixedWindow || c.Kind == FirstHitWindow || c.Kind == TokenBucket {
				return c, fmt.Errorf("%s without parameters", kind)
			}
			return c, nil
		}
	}
	first, second, found := strings.Cut(params, ", ")
	if !found {
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

// contractNumberFields are the contract fields a custom script may write as templates.
var contractNumberFields = []string{"limit", "window", "capacity", "rate", "per"}

// FillContract sets c's field (limit, window, capacity, rate or per, as a scenario names them)
// from the template tmpl expanded for l: "{{limit}}", "{{burst}}", "{{limit * 2}}" for the counts,
// "{{window_ms}}ms" for the durations (a duration needs its unit). A template may use only what
// is constant for a limit (limit, window_ms, window_s, burst, rate, numbers); anything that
// changes per request is an error, and so is a value that does not read as the field's type or
// is not positive.
func FillContract(c *Contract, field, tmpl string, l Limit) error {
	t, err := parseTemplate(tmpl)
	if err != nil {
		return err
	}
	if t.uses(tSubject, tTag, tClient, tCost, tNowMS, tNowS, tNowUS, tNowSFloat, tUUID, tPrefix) {
		return fmt.Errorf("%q changes per request; a contract number may use limit, window_ms, window_s, burst, rate and whole numbers", tmpl)
	}
	bt, err := t.bind(limitBindings(l, ""))
	if err != nil {
		return fmt.Errorf("%w with limit %d per %s", err, l.Limit, l.Window)
	}
	text, _ := bt.literal()
	switch field {
	case "limit", "capacity", "rate":
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil || n <= 0 {
			return fmt.Errorf("%q gives %q, not a whole number > 0", tmpl, text)
		}
		switch field {
		case "limit":
			c.Limit = n
		case "capacity":
			c.Capacity = n
		default:
			c.RefillPermits = n
		}
	case "window", "per":
		d, err := time.ParseDuration(text)
		if err != nil || d <= 0 {
			hint := ""
			if _, ierr := strconv.ParseInt(text, 10, 64); ierr == nil {
				hint = ` (a duration needs its unit, as in "{{window_ms}}ms")`
			}
			return fmt.Errorf("%q gives %q, not a duration > 0%s", tmpl, text, hint)
		}
		if field == "window" {
			c.Window = d
		} else {
			c.RefillPer = d
		}
	default:
		return fmt.Errorf("%s cannot be a template (the templated numbers are %s)", field, strings.Join(contractNumberFields, ", "))
	}
	return nil
}

// LimitNote says how c's numbers differ from the limit l a scenario gives, or "" when they
// agree (or c is none): for a window contract its limit or window, for a token bucket its
// capacity (against l.Capacity()) or its rate (against l.Limit per l.Window). A contract may
// legitimately be looser or stricter than the limit the script is given; the note makes a typo
// visible.
func (c Contract) LimitNote(l Limit) string {
	var diffs []string
	switch c.Kind {
	case SlidingWindow, FixedWindow, FirstHitWindow:
		if c.Limit != l.Limit {
			diffs = append(diffs, fmt.Sprintf("limit %d where the scenario's limit is %d", c.Limit, l.Limit))
		}
		if c.Window != l.Window {
			diffs = append(diffs, fmt.Sprintf("window %s where the scenario's window is %s", c.Window, l.Window))
		}
	case TokenBucket:
		if c.Capacity != l.Capacity() {
			diffs = append(diffs, fmt.Sprintf("capacity %d where the scenario's burst is %d", c.Capacity, l.Capacity()))
		}
		// RefillPermits/RefillPer = Limit/Window, compared in integers (ns).
		if c.RefillPer <= 0 || float64(c.RefillPermits)*float64(l.Window) != float64(l.Limit)*float64(c.RefillPer) {
			diffs = append(diffs, fmt.Sprintf("rate %d/%s where the scenario's is %d/%s", c.RefillPermits, c.RefillPer, l.Limit, l.Window))
		}
	default:
		return ""
	}
	if len(diffs) == 0 {
		return ""
	}
	return fmt.Sprintf("note: the contract %s differs from the scenario's limit: %s; the script is verified against its contract",
		c, strings.Join(diffs, ", "))
}
