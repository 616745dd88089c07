package algorithms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Wait is the `WAIT numreplicas timeout` a Call can follow each request with (WaitCall): Redis
// answers it once Replicas replicas have acknowledged every write the connection made before it,
// or when Timeout passes, with the number that did. The zero value (Replicas 0) sends no WAIT.
//
// WAIT makes no write safe by itself: a request has run, and decided, before its WAIT is read. What
// it buys is that an admission whose WAIT came back with Replicas acknowledgements is on that many
// replicas, so a failover that promotes one of them keeps it; what it costs is the replication
// round trip on every request's latency (the cost a report shows beside the over-admission saved).
type Wait struct {
	// Replicas is WAIT's numreplicas (0: no WAIT; at most MaxWaitReplicas).
	Replicas int
	// Timeout is WAIT's timeout, whole milliseconds in (0, MaxWaitTimeout]; 0 means DefaultWaitTimeout.
	// (WAIT's own 0, wait forever, is never sent: a replica that is gone would stop the load.)
	Timeout time.Duration
	// DenyShort makes a caller that fails closed: an admission whose WAIT came back short (fewer
	// than Replicas acknowledged it in time, or no answer) is taken as a denial, since a failover
	// could lose it. The permit stays spent on the server (WAIT undoes nothing), so this can only
	// lower admissions. false (the default) takes the decision as the script made it, as WAIT
	// alone does.
	DenyShort bool
}

// Bounds and default of Wait.
const (
	// MaxWaitReplicas is the most replicas a WAIT may ask for: the most a topology limitbench
	// starts has per master.
	MaxWaitReplicas = 5
	// DefaultWaitTimeout is Wait.Timeout's default: 100 ms. A healthy replica acknowledges within a
	// round trip of the replication link (WAIT makes the master ask at once, with REPLCONF GETACK),
	// well under a millisecond on one machine and a few on a LAN, so a healthy setup never reaches
	// it; and it is as long as the load's lateness budget (load.DefaultLateAfter), so that while a
	// replica is missing (the seconds after a failover before the old master rejoins as a replica)
	// each request is held for a bounded, visible time rather than stalling its client.
	DefaultWaitTimeout = 100 * time.Millisecond
	// MaxWaitTimeout bounds Wait.Timeout: 2 s, below the 3 s read timeout of the load's clients
	// (go-redis's default), so that a WAIT that times out is an answer (fewer replicas), never a
	// lost reply that would make its request's outcome unknown.
	MaxWaitTimeout = 2 * time.Second
)

// ErrBadWait means a Wait cannot be used; Wait.Validate wraps every problem with it.
var ErrBadWait = errors.New("invalid wait")

// Enabled reports whether w sends a WAIT (Replicas > 0).
func (w Wait) Enabled() bool { return w.Replicas > 0 }

// EffectiveTimeout returns Timeout, or DefaultWaitTimeout when it is zero.
func (w Wait) EffectiveTimeout() time.Duration {
	if w.Timeout == 0 {
		return DefaultWaitTimeout
	}
	return w.Timeout
}

// Validate reports every problem with w at once, each wrapped with ErrBadWait.
func (w Wait) Validate() error {
	var errs []error
	if w.Replicas < 0 || w.Replicas > MaxWaitReplicas {
		errs = append(errs, fmt.Errorf("%w: replicas must be between 0 and %d, got %d", ErrBadWait, MaxWaitReplicas, w.Replicas))
	}
	if err := CheckWaitTimeout(w.Timeout); err != nil {
		errs = append(errs, err)
	}
	if w.DenyShort && w.Replicas == 0 {
		errs = append(errs, fmt.Errorf("%w: deny_short needs replicas > 0", ErrBadWait))
	}
	return errors.Join(errs...)
}

// CheckWaitTimeout reports whether d can be a Wait's Timeout: 0 (the default), or whole
// milliseconds in (0, MaxWaitTimeout]. The error wraps ErrBadWait.
func CheckWaitTimeout(d time.Duration) error {
	switch {
	case d < 0:
		return fmt.Errorf("%w: timeout must be > 0, got %s", ErrBadWait, d)
	case d%time.Millisecond != 0:
		return fmt.Errorf("%w: timeout must be whole milliseconds, got %s", ErrBadWait, d)
	case d > MaxWaitTimeout:
		return fmt.Errorf("%w: timeout must be at most %s (below the clients' read timeout), got %s", ErrBadWait, MaxWaitTimeout, d)
	}
	return nil
}

// ErrWaitUnroutable is WaitCall's WAIT error on a Cmdable where the WAIT cannot be sent on the
// connection that runs the request: a go-redis autopipeliner (it spreads the requests of all its
// callers over its connections) or a pipeline of a cluster client (it routes a WAIT, which has no
// key, to any master). Load plans refuse those combinations before anything is sent.
var ErrWaitUnroutable = errors.New("WAIT cannot follow the request on its connection")

// ErrNotSent means a request was not sent, so it did not run: WaitCall could not find the node to
// send it to.
var ErrNotSent = errors.New("request not sent")

// WaitCall is a Call that follows each request of its inner Call with WAIT (see Wait), in the same
// round trip and on the same connection, since WAIT waits for the writes of its own connection:
//
//   - on a pipeline (Send queues, Exec sends), the request and then its WAIT are queued on it;
//   - on a single server's client or connection (a Sentinel failover client included), the two
//     are sent as a pipeline of two on it (on a client the pipeline takes one connection of the
//     pool for both);
//   - on a cluster client, as a pipeline of two on the client of the master that holds the
//     request's first key (ClusterClient.MasterForKey: the slot of its {hash tag}), so that the
//     WAIT goes to the node that ran the request. A MOVED or ASK reply, or a node that does not
//     answer, is the request's error (the pipeline does not follow redirects, as the load's
//     clients, which have MaxRedirects -1, do not either), and the cluster client is told to
//     reload its slot map (ReloadState) so that the next request goes to the new owner.
//
// Since the inner request is always sent in a pipeline, it behaves as in a pipeline: a NOSCRIPT is
// the request's error (and the script is loaded again for the next; see Call.Send), and the
// window-keyed script (sliding-counter) does not send a request again when a window boundary
// passed in flight: it stays a denial. A request that cannot be sent (a bad subject or
// cost) is not sent; its WAIT still is (it returns at once: the connection wrote nothing new). A
// request whose node the cluster client cannot name is not sent, and its error wraps ErrNotSent.
//
// Result is the inner Call's; Acked reads the WAIT. A WaitCall, like every Call, is not safe for
// concurrent use.
type WaitCall struct {
	inner Call
	lim   Limiter
	w     Wait
	ms    int64
	cmd   *redis.IntCmd
	// pipe is the pipeline of pipeOn, the client or connection last sent on (reused while it is
	// the same).
	pipe   redis.Pipeliner
	pipeOn redis.Cmdable
	// err is the error of the last WAIT that could not be sent (ErrWaitUnroutable, or the cluster
	// client could not name the key's master); sent says one was queued or sent.
	err  error
	sent bool
}

var _ Call = (*WaitCall)(nil)

// NewWaitCall returns a Call that sends the requests of lim, each followed by w's WAIT (see
// WaitCall). w must have passed Validate and be Enabled.
func NewWaitCall(lim Limiter, w Wait) *WaitCall {
	return &WaitCall{inner: lim.NewCall(), lim: lim, w: w, ms: w.EffectiveTimeout().Milliseconds()}
}

// Send sends req and its WAIT on c (see WaitCall).
func (c *WaitCall) Send(ctx context.Context, rc redis.Cmdable, req Request) {
	c.err, c.sent = nil, false
	c.cmd = redis.NewIntCmd(ctx, "wait", c.w.Replicas, c.ms)
	switch rc := rc.(type) {
	case *redis.AutoPipeliner:
		c.inner.Send(ctx, rc, req)
		c.err = fmt.Errorf("%w: an autopipeliner mixes the requests of every caller on its connections", ErrWaitUnroutable)
		return
	case redis.Pipeliner:
		c.inner.Send(ctx, rc, req)
		c.sent = true
		_ = rc.Process(ctx, c.cmd) // queued: the command carries its error after Exec
		return
	case *redis.ClusterClient:
		keys := c.lim.Keys(req)
		if len(keys) == 0 {
			c.inner.Send(ctx, rc, req)
			c.err = fmt.Errorf("%w: a request without keys has no node", ErrWaitUnroutable)
			return
		}
		node, err := rc.MasterForKey(ctx, keys[0])
		if err != nil {
			// The request is not sent either: its error is the routing's.
			c.err = fmt.Errorf("%w: no master for key %q: %w", ErrNotSent, keys[0], err)
			c.inner = &failedCall{inner: c.inner, err: c.err}
			return
		}
		if err := c.exec(ctx, node, req); err != nil {
			// A MOVED reply (the slot has a new master: a failover), or a node gone.
			rc.ReloadState(ctx)
		}
		return
	}
	_ = c.exec(ctx, rc, req) // every command carries its own error
}

// exec sends req and its WAIT as one pipeline on rc, and returns the first error of either.
func (c *WaitCall) exec(ctx context.Context, rc redis.Cmdable, req Request) error {
	if c.pipe == nil || c.pipeOn != rc {
		c.pipe, c.pipeOn = rc.Pipeline(), rc
	}
	c.inner.Send(ctx, c.pipe, req)
	c.sent = true
	_ = c.pipe.Process(ctx, c.cmd)
	_, err := c.pipe.Exec(ctx) // every command also carries its own error
	return err
}

// Result returns the decision on the request Send sent last (see Call.Result).
func (c *WaitCall) Result() (Decision, error) {
	d, err := c.inner.Result()
	if f, ok := c.inner.(*failedCall); ok {
		c.inner = f.inner
	}
	return d, err
}

// Acked returns what the WAIT after the request Send sent last answered: the number of replicas
// that acknowledged the connection's writes by then (fewer than Wait.Replicas when its timeout
// passed), or the error that kept it from answering (the connection failed, the server refused
// it, or it could not be sent on the request's connection: ErrWaitUnroutable). Call it after
// Result.
func (c *WaitCall) Acked() (int64, error) {
	if c.err != nil {
		return 0, c.err
	}
	if !c.sent {
		return 0, errors.New("no WAIT was sent")
	}
	return c.cmd.Result()
}

// Short reports whether the WAIT after the last request fell short: fewer replicas than asked
// acknowledged it in time, or it got no answer (Acked).
func (c *WaitCall) Short() bool {
	n, err := c.Acked()
	return err != nil || n < int64(c.w.Replicas)
}

// failedCall is a Call whose request was not sent, because err kept it from being sent.
type failedCall struct {
	inner Call
	err   error
}

func (f *failedCall) Send(context.Context, redis.Cmdable, Request) {}

func (f *failedCall) Result() (Decision, error) { return Decision{}, f.err }

// waitJSON is Wait's form in result.json: the replicas, the timeout in milliseconds as it
// applies (EffectiveTimeout) and, when set, deny_short.
type waitJSON struct {
	Replicas  int   `json:"replicas"`
	TimeoutMS int64 `json:"timeout_ms"`
	DenyShort bool  `json:"deny_short,omitempty"`
}

// MarshalJSON writes w as {replicas, timeout_ms, deny_short}, the timeout as it applies
// (EffectiveTimeout), deny_short left out when false.
func (w Wait) MarshalJSON() ([]byte, error) {
	return json.Marshal(waitJSON{Replicas: w.Replicas, TimeoutMS: w.EffectiveTimeout().Milliseconds(), DenyShort: w.DenyShort})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (w *Wait) UnmarshalJSON(b []byte) error {
	var v waitJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*w = Wait{Replicas: v.Replicas, Timeout: time.Duration(v.TimeoutMS) * time.Millisecond, DenyShort: v.DenyShort}
	return nil
}

// String returns w as "WAIT 1 100" (the command as sent), or "" when it is not Enabled.
func (w Wait) String() string {
	if !w.Enabled() {
		return ""
	}
	return fmt.Sprintf("WAIT %d %d", w.Replicas, w.EffectiveTimeout().Milliseconds())
}

// Apply returns d as a caller that sent w's WAIT decides, given whether the WAIT came back
// short: d itself, except that with DenyShort an admission whose WAIT was short becomes a
// denial (remaining 0, retry-after 0: ask again now), its decision time kept.
func (w Wait) Apply(d Decision, short bool) Decision {
	if w.DenyShort && short && d.Allowed {
		d.Allowed, d.Remaining, d.RetryAfter = false, 0, 0
	}
	return d
}
