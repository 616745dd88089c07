package algorithms

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// FixedWindowCounter is `fixed-window`: seed 001 corrected. It admits at most Limit permits in
// every window [kW, (k+1)W) of Unix time on the server's clock (scripts/fixed_window.lua): the
// public first-hit window, one counter per subject that the script INCRBYs, with the expiry set
// on the window's first call from Redis TIME to the end of the window, so that Redis's clock ends
// the count. The limiter admits when the count is at most Limit; a denied cost above 1 that found
// room in the window is taken back (any other denial found the window full, so leaving it changes
// no decision and saves a command). Cost > 1 is supported. Only a window's first call reports its
// decision time; the others are known to the interval they were sent and answered in.
type FixedWindowCounter struct{}

var _ Algorithm = (*FixedWindowCounter)(nil)

func init() { register(FixedWindowCounter{}) }

// Describe implements Algorithm.
func (FixedWindowCounter) Describe() Description {
	return Description{
		Name:           "fixed-window",
		Script:         "fixed_window.lua",
		Origin:         "seed 001 (Spring WebFlux fixed window), corrected",
		Clock:          ClockServer,
		KeysPerSubject: 1,
		Memory:         "O(1)",
		Corrected: "server TIME instead of the client's minute; any window W; expiry set once per " +
			"window, to the window's end on the server's clock, instead of refreshed per admission; " +
			"check and count in one script, admitted only if the whole cost fits",
		Cost: true,
	}
}

// Contract implements Algorithm: fixed-window(Limit, Window).
func (FixedWindowCounter) Contract(l Limit) (Contract, error) {
	if err := l.Validate(); err != nil {
		return Contract{}, err
	}
	return Contract{Kind: FixedWindow, Limit: l.Limit, Window: l.Window}, nil
}

// Prepare implements Algorithm.
func (a FixedWindowCounter) Prepare(ctx context.Context, c redis.UniversalClient, l Limit, prefix string) (Limiter, error) {
	s, err := prepareScript(ctx, a, c, l, prefix)
	if err != nil {
		return nil, err
	}
	return &fixedWindowLimiter{script: s, fresh: isCluster(c), prefix: prefix, limit: l.Limit, windowUs: l.Window.Microseconds()}, nil
}

// Model implements Algorithm.
func (FixedWindowCounter) Model(l Limit) Model { return newFixedWindowModel(l) }

type fixedWindowLimiter struct {
	script   *script
	fresh    bool // prepared on a cluster client: see evalCmd
	prefix   string
	limit    int64
	windowUs int64
}

// key builds in a the subject's counter, prefix + "fw:{" + subject + "}", or, for a request with
// a FixedTime (tests), the counter of that time's window k, with ":" + k in base 36 after it: a
// fixed time does not move Redis's clock, so the script's expiry cannot end its window.
func (f *fixedWindowLimiter) key(a *argBuf, subject string, fixed int64) *argBuf {
	if fixed != 0 {
		return a.windowKey(f.prefix, "fw", subject, floorDiv(fixed, f.windowUs))
	}
	return a.subjectKey(f.prefix, "fw", subject)
}

// Keys implements Limiter.
func (f *fixedWindowLimiter) Keys(req Request) []string {
	var b argBuf
	return []string{f.key(&b, req.Subject, fixedMicros(req)).String()}
}

// fixedWindowCall is the Call of a fixedWindowLimiter: the script's arguments are the counter and
// W in ms, then the cost and the limit when the cost is not 1 or a fixed time follows, and the
// fixed time in tests.
type fixedWindowCall struct {
	scriptCall
	f           *fixedWindowLimiter
	key         argBuf
	cost, fixed int64
	one, n, at  *evalCmd // cost 1, cost n, and cost with a fixed time
}

// NewCall implements Limiter.
func (f *fixedWindowLimiter) NewCall() Call {
	c := &fixedWindowCall{scriptCall: scriptCall{name: "fixed-window"}, f: f}
	keys := []*argBuf{&c.key}
	w := f.windowUs / 1000
	c.one = newEvalCmd(f.script, f.fresh, keys, w)
	c.n = newEvalCmd(f.script, f.fresh, keys, w, &c.cost, f.limit)
	c.at = newEvalCmd(f.script, f.fresh, keys, w, &c.cost, f.limit, &c.fixed)
	return c
}

func (c *fixedWindowCall) Send(ctx context.Context, rc redis.Cmdable, req Request) {
	cost, err := checkRequest("fixed-window", req, true)
	if err != nil {
		c.fail(err)
		return
	}
	c.cost, c.fixed = cost, fixedMicros(req)
	c.f.key(&c.key, req.Subject, c.fixed)
	e := c.one
	switch {
	case c.fixed != 0:
		e = c.at
	case cost != 1:
		e = c.n
	}
	c.send(ctx, rc, e)
}

func (c *fixedWindowCall) Result() (Decision, error) {
	raw, err := c.reply()
	if err != nil {
		return Decision{}, err
	}
	return c.decoded(c.f.decode(raw, c.cost, c.fixed))
}

// decode decodes the reply of scripts/fixed_window.lua for a request of cost permits with the
// fixed time fixed in µs (0: none): the count with the request's cost in it, which admits when it
// is at most L (remaining L − count), and otherwise denies (remaining max(0, L − count + cost)).
// The reply is
//
//   - an integer count above the cost, on all but a window's first call: the decision time is
//     not reported (zero), unless it is the fixed time;
//   - the string "<count> <s> <µs>" with count = cost, on a window's first call: the decision time
//     is that TIME, on the server's clock (the fixed time, when there is one).
//
// A denial's retry-after is the time left in the window when the decision time is known and the
// cost fits in a window, else zero (unknown, or never). Any other reply (a count below the cost,
// an integer count equal to it, a string count other than the cost, a time that is not a positive
// time or not the fixed time) is an error wrapping ErrBadReply, never an admission.
func (f *fixedWindowLimiter) decode(raw any, cost, fixed int64) (Decision, error) {
	var d Decision
	var count int64
	switch v := raw.(type) {
	case int64:
		if v <= cost {
			return Decision{}, badReply(fmt.Sprintf("count %d without a time for cost %d, want a count above the cost (a window's first call replies with its time)", v, cost), raw)
		}
		count = v
		if fixed != 0 {
			d.TimeMicros, d.Clock = fixed, ClockServer
		}
	default:
		fs, err := replyFields(raw, 3)
		if err != nil {
			return Decision{}, err
		}
		now, err := timeMicros(fs[1], fs[2], raw)
		if err != nil {
			return Decision{}, err
		}
		if fs[0] != cost {
			return Decision{}, badReply(fmt.Sprintf("count %d on a window's first call for cost %d, want the cost", fs[0], cost), raw)
		}
		if fixed != 0 && now != fixed {
			return Decision{}, badReply(fmt.Sprintf("time %d µs for the fixed time %d µs", now, fixed), raw)
		}
		count, d.TimeMicros, d.Clock = fs[0], now, ClockServer
	}
	switch {
	case count <= f.limit:
		d.Allowed, d.Remaining = true, f.limit-count
	default:
		d.Remaining = max(0, f.limit-count+cost)
		if d.TimeMicros != 0 && cost <= f.limit {
			d.RetryAfter = time.Duration((floorDiv(d.TimeMicros, f.windowUs)+1)*f.windowUs-d.TimeMicros) * time.Microsecond
		}
	}
	return d, nil
}
