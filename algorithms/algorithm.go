// Package algorithms holds the rate limiters limitbench runs: the Algorithm interface, one Go file
// per algorithm beside its Lua script in package scripts, the registry (All, Lookup), defensive
// reply decoding, a pure-Go reference model per family that the verifier replays, the contracts
// they promise (Contract, with its text form and its allowance per span), the Limit they are
// configured with, and custom scripts: the spec (CustomSpec), the one template engine of their keys
// and arguments (template.go) and the rules that read their replies (reply_rule.go).
//
// An Algorithm is stateless and safe for concurrent use. Prepare binds it to one Limit and one key
// prefix on one Redis and returns a Limiter, which is also safe for concurrent use. A Limiter's
// Calls send its requests: each Call builds its commands once and sends them again with what
// varies replaced, so that a load generator keeping one Call per request in flight spends its CPU
// on Redis's requests, not on building them (see Call); Do is the one-off form.
package algorithms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"
)

// Errors returned by this package; compare with errors.Is.
var (
	// ErrBadReply means Redis answered with a reply of the wrong shape or type. The wrapping
	// error carries the raw reply. A bad reply is never an admission.
	ErrBadReply = errors.New("unexpected reply")
	// ErrBadLimit means a Limit cannot be used with an algorithm.
	ErrBadLimit = errors.New("invalid limit")
	// ErrCostUnsupported means the algorithm's design cannot charge more than one permit.
	ErrCostUnsupported = errors.New("cost > 1 not supported")
	// ErrUnknownAlgorithm is returned by Lookup for a name that is not registered.
	ErrUnknownAlgorithm = errors.New("unknown algorithm")
	// ErrBadKey means a key prefix (at Prepare) or a subject (at Do) would break the {hash tag}
	// that keeps the keys of one subject in one cluster slot; see CheckPrefix and CheckSubject.
	ErrBadKey = errors.New("invalid key")
)

// Limit is the configuration one limiter is given. The zero value is invalid; see Validate.
type Limit struct {
	// Limit is the number of permits per Window (> 0).
	Limit int64
	// Window is the length of the window, and for token buckets the time in which Limit permits
	// refill (> 0, whole milliseconds).
	Window time.Duration
	// Burst is the token-bucket / GCRA capacity. Zero means Limit.
	Burst int64
	// ConsumerLimit is the per-consumer limit of the two-level resource-consumer algorithms.
	// Zero means Limit.
	ConsumerLimit int64
}

// limitJSON is Limit's form in result.json's settings: the window in seconds, and burst and
// consumer_limit as they apply (Limit when left at zero).
type limitJSON struct {
	Limit         int64   `json:"limit"`
	WindowS       float64 `json:"window_s"`
	Burst         int64   `json:"burst"`
	ConsumerLimit int64   `json:"consumer_limit"`
}

// MarshalJSON writes l as result.json's settings.limit: {limit, window_s, burst,
// consumer_limit}, with Burst and ConsumerLimit as they apply (Capacity, Consumer).
func (l Limit) MarshalJSON() ([]byte, error) {
	return json.Marshal(limitJSON{Limit: l.Limit, WindowS: l.Window.Seconds(), Burst: l.Capacity(), ConsumerLimit: l.Consumer()})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (l *Limit) UnmarshalJSON(b []byte) error {
	var w limitJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*l = Limit{Limit: w.Limit, Window: time.Duration(math.Round(w.WindowS * float64(time.Second))), Burst: w.Burst,
		ConsumerLimit: w.ConsumerLimit}
	return nil
}

// Validate reports every problem with l at once, each wrapped with ErrBadLimit.
func (l Limit) Validate() error {
	var errs []error
	if l.Limit <= 0 {
		errs = append(errs, fmt.Errorf("%w: limit must be > 0, got %d", ErrBadLimit, l.Limit))
	}
	if l.Window <= 0 {
		errs = append(errs, fmt.Errorf("%w: window must be > 0, got %s", ErrBadLimit, l.Window))
	} else if l.Window%time.Millisecond != 0 {
		errs = append(errs, fmt.Errorf("%w: window must be whole milliseconds, got %s", ErrBadLimit, l.Window))
	}
	if l.Burst < 0 {
		errs = append(errs, fmt.Errorf("%w: burst must be >= 0, got %d", ErrBadLimit, l.Burst))
	}
	if l.ConsumerLimit < 0 {
		errs = append(errs, fmt.Errorf("%w: consumer_limit must be >= 0, got %d", ErrBadLimit, l.ConsumerLimit))
	}
	return errors.Join(errs...)
}

// Capacity returns the token-bucket capacity: Burst, or Limit when Burst is zero.
func (l Limit) Capacity() int64 {
	if l.Burst > 0 {
		return l.Burst
	}
	return l.Limit
}

// Consumer returns the per-consumer limit: ConsumerLimit, or Limit when it is zero.
func (l Limit) Consumer() int64 {
	if l.ConsumerLimit > 0 {
		return l.ConsumerLimit
	}
	return l.Limit
}

// RatePerSecond returns the refill rate Limit/Window in permits per second.
func (l Limit) RatePerSecond() float64 { return float64(l.Limit) / l.Window.Seconds() }

// Clock says where the time a decision used came from.
type Clock uint8

const (
	// ClockServer: the script read Redis TIME.
	ClockServer Clock = iota + 1
	// ClockClient: the caller passed its own (possibly skewed) time.
	ClockClient
)

func (c Clock) String() string {
	switch c {
	case ClockServer:
		return "server"
	case ClockClient:
		return "client"
	}
	return "unknown"
}

// Request is one call of a limiter for one subject.
type Request struct {
	// Subject is the limited thing (a user, an IP, a resource); it becomes the key's hash tag.
	Subject string
	// Client identifies the caller; per-client algorithms key on it and the resource-consumer
	// algorithms use it as the consumer.
	Client string
	// Cost is the number of permits asked for (>= 1). Algorithms whose design charges one permit
	// return ErrCostUnsupported for more.
	Cost int64
	// ClientTime is the caller's clock, skew included. Client-clock algorithms send it; server-clock
	// algorithms ignore it.
	ClientTime time.Time
	// FixedTime, for tests only: when non-zero, server-clock scripts use it instead of Redis TIME.
	FixedTime time.Time
}

// Decision is the decoded reply of one request.
type Decision struct {
	Allowed bool
	// Remaining permits after this decision, as the algorithm reports them (may be approximate).
	Remaining int64
	// RetryAfter is how long until a denied request could be admitted, rounded up; zero when allowed
	// or when the algorithm cannot say.
	RetryAfter time.Duration
	// TimeMicros is the time, in microseconds since the Unix epoch, at which the decision was taken,
	// as the algorithm saw it (see Clock). Zero when the algorithm does not report it.
	TimeMicros int64
	// TimeSpanMicros, when > 0, says the decision time is known only to an interval: it lay in
	// [TimeMicros, TimeMicros + TimeSpanMicros] (a time a script wrote with fewer digits than it
	// had; see ReplyTime). Zero means exactly TimeMicros.
	TimeSpanMicros int64
	// Clock is the source of TimeMicros.
	Clock Clock
}

// Pending is the decision on one request sent by Do, to be read once the request has run: at
// once on a client, after Exec on a pipeline.
type Pending func() (Decision, error)

// Limiter is an Algorithm prepared for one Limit and key prefix. It is safe for concurrent use;
// the Calls it makes are not.
type Limiter interface {
	// Keys returns the Redis keys one request touches, all sharing one hash tag.
	Keys(req Request) []string
	// NewCall returns a Call that sends this limiter's requests one at a time.
	NewCall() Call
}

// Call sends the requests of one Limiter, one at a time, and decodes their replies. It builds its
// commands and their argument lists once and replaces only what varies from request to request,
// so that against a single server (a client, a connection of it, or a pipeline on either) a
// request allocates nothing but what go-redis allocates to read its reply. Against a cluster and
// through an autopipeliner it makes a command per request: go-redis keeps a command's cluster slot
// on the command, and an autopipeliner may still hold a command it has run.
//
// A Call is not safe for concurrent use, and holds one request at a time: a load generator keeps
// one Call per request it has in flight (a pipeline of depth d needs d Calls).
type Call interface {
	// Send sends req on c, the client the limiter was prepared on or a connection, pipeline or
	// autopipeliner of it: at once on a client or connection, at Exec on a pipeline. On a client,
	// connection or autopipeliner, a script the server has lost (NOSCRIPT: its script cache was
	// flushed, or it restarted) is sent again with EVAL, as (*redis.Script).Run does; a pipeline
	// sends a bare EVALSHA, the NOSCRIPT is the request's error, and Result loads the script again
	// on every master so that the requests after it find it. A request that cannot be sent (a bad
	// subject or cost) is not sent, and its error is Result's.
	Send(ctx context.Context, c redis.Cmdable, req Request)
	// Result returns the decision on the request Send sent last: on a client or connection once
	// Send has returned, on a pipeline once Exec has. An error reply, a failed request and a reply
	// that cannot be decoded are errors (a reply of the wrong shape or values wraps ErrBadReply),
	// never an admission. Some algorithms send a request again from Result (fixed-window and
	// sliding-counter, when a window boundary passed in flight on a client), so it may take a
	// round trip. Call it once for each Send.
	Result() (Decision, error)
}

// PendingCall returns a Call that sends each request with do and reads the Pending do returned:
// for a Limiter that has no commands to reuse (a test's, say), at the price of what do allocates.
func PendingCall(do func(ctx context.Context, c redis.Cmdable, req Request) Pending) Call {
	return &pendingCall{do: do}
}

type pendingCall struct {
	do      func(ctx context.Context, c redis.Cmdable, req Request) Pending
	pending Pending
}

func (c *pendingCall) Send(ctx context.Context, rc redis.Cmdable, req Request) {
	c.pending = c.do(ctx, rc, req)
}

func (c *pendingCall) Result() (Decision, error) { return c.pending() }

// Do sends req on c with a Call of its own (see Call) and returns the pending decision: for a
// request now and then (tests, setting up); a load generator keeps its Calls, since Do makes a
// Call per request.
func Do(ctx context.Context, lim Limiter, c redis.Cmdable, req Request) Pending {
	call := lim.NewCall()
	call.Send(ctx, c, req)
	return call.Result
}

// Description is what `limitbench list` shows of an algorithm.
type Description struct {
	Name   string
	Origin string // which seed article or library it comes from
	// Script is the file of package scripts whose Lua a built-in algorithm runs (Prepare loads it
	// from this name); "" for one that sends plain commands, and for a custom script.
	Script string
	// Commands are the Redis commands, in ACL form ("zadd"), that the algorithm sends itself,
	// outside a script: a published design of plain commands. See Commands for all it needs.
	Commands []string
	Clock    Clock
	// KeysPerSubject is how many Redis keys one limited subject uses.
	KeysPerSubject int
	// Memory is the growth of state per subject: "O(1)" or "O(limit)".
	Memory string
	// Flaw is the known defect of a *-published variant; empty for corrected algorithms.
	Flaw string
	// Corrected says, for corrected variants, what was changed from the article and why.
	Corrected string
	// Cost reports whether Request.Cost > 1 is supported.
	Cost bool
}

// Algorithm is one rate limiter design. Implementations are stateless.
type Algorithm interface {
	Describe() Description
	// Contract returns the safety property the algorithm promises for l.
	Contract(l Limit) (Contract, error)
	// Prepare validates l, loads the scripts on every master of c and does any one-time setup.
	// prefix is put in front of every key the limiter uses.
	Prepare(ctx context.Context, c redis.UniversalClient, l Limit, prefix string) (Limiter, error)
	// Model returns a fresh reference model that makes the decisions the algorithm's script makes
	// for the same decision times, or nil for algorithms without one (the *-published variants).
	Model(l Limit) Model
}

// Model is a pure-Go reference implementation of one algorithm family. It is not safe for
// concurrent use.
type Model interface {
	// Decide returns whether a request of cost permits from client for subject at tMicros (µs since
	// the Unix epoch) is admitted, and records it. Decision times must not decrease.
	Decide(subject, client string, cost int64, tMicros int64) bool
}
