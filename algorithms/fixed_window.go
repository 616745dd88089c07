package algorithms

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// FixedWindowCounter is `fixed-window`: seed 001 corrected. It admits at most Limit permits in
// every window [kW, (k+1)W) of Unix time on the server's clock (scripts/fixed_window.lua). One
// counter per subject and window, a key named by the window's index k: the limiter predicts k
// from its clock and the offset of the server's last reported TIME, and the script counts the
// request only when TIME is in that window (INCRBY, and PEXPIREAT at the window's end when the
// counter is new); a request that missed its window (a boundary passed in flight) is sent again
// for the window the server reported, on a client, or denied in a pipeline. The limiter admits
// when the count is at most Limit; a denied cost above 1 is taken back (a denial of cost 1 means
// the window is full, so leaving it changes no decision and saves a command). Cost > 1 is
// supported.
type FixedWindowCounter struct{}

var _ Algorithm = (*FixedWindowCounter)(nil)

func init() { register(FixedWindowCounter{}) }

// Describe implements Algorithm.
func (FixedWindowCounter) Describe() Description {
	return Description{
		Name:           "fixed-window",
		Origin:         "seed 001 (Spring WebFlux fixed window), corrected",
		Clock:          ClockServer,
		KeysPerSubject: 1,
		Memory:         "O(1)",
		Corrected: "server TIME instead of the client's minute; any window W; expiry set once per " +
			"window instead of refreshed per admission; check and count in one script, admitted only if the whole cost fits; " +
			"one counter per window in a key named by the window, checked against TIME, instead of a hash of window fields",
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
	if _, err := a.Contract(l); err != nil {
		return nil, fmt.Errorf("fixed-window: %w", err)
	}
	if err := CheckPrefix(prefix); err != nil {
		return nil, fmt.Errorf("fixed-window: %w", err)
	}
	s, err := loadScript(ctx, c, "fixed_window.lua")
	if err != nil {
		return nil, fmt.Errorf("fixed-window: %w", err)
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
	windows  serverWindows
}

// key is the counter of window k: prefix + "fw:{" + subject + "}:" + k in base 36 (short, since
// Redis keeps the name in memory).
func (f *fixedWindowLimiter) key(subject string, k int64) string {
	var b argBuf
	return b.windowKey(f.prefix, "fw", subject, k).String()
}

// Keys implements Limiter: the counter of the window req is predicted to be decided in (that of
// its FixedTime, when it has one).
func (f *fixedWindowLimiter) Keys(req Request) []string {
	return []string{f.key(req.Subject, f.windows.predict(req, f.windowUs))}
}

// fixedWindowCall is the Call of a fixedWindowLimiter: the script's arguments are the window's
// counter, its start and end in µs (both 16 digits for every time from 2001 to 2286, as the
// script compares them), then the cost and the limit when the cost is not 1 or a fixed time
// follows, and the fixed time in tests.
type fixedWindowCall struct {
	windowCall
	f          *fixedWindowLimiter
	subject    string
	key        argBuf
	start, end int64
	cost       int64
	one, n, at *evalCmd // cost 1, cost n, and cost with a fixed time
}

// NewCall implements Limiter.
func (f *fixedWindowLimiter) NewCall() Call {
	c := &fixedWindowCall{windowCall: windowCall{scriptCall: scriptCall{name: "fixed-window"}, windows: &f.windows, w: f.windowUs}, f: f}
	keys := []*argBuf{&c.key}
	c.one = newEvalCmd(f.script, f.fresh, keys, &c.start, &c.end)
	c.n = newEvalCmd(f.script, f.fresh, keys, &c.start, &c.end, &c.cost, f.limit)
	c.at = newEvalCmd(f.script, f.fresh, keys, &c.start, &c.end, &c.cost, f.limit, &c.fixed)
	return c
}

func (c *fixedWindowCall) Send(ctx context.Context, rc redis.Cmdable, req Request) {
	cost, err := checkRequest("fixed-window", req, true)
	if err != nil {
		c.fail(err)
		return
	}
	c.subject, c.cost = req.Subject, cost
	c.begin(ctx, rc, req, c)
}

// sendFor implements windowSender.
func (c *fixedWindowCall) sendFor(k int64) {
	f := c.f
	c.key.windowKey(f.prefix, "fw", c.subject, k)
	c.start, c.end = k*f.windowUs, (k+1)*f.windowUs
	e := c.one
	switch {
	case c.fixed != 0:
		e = c.at
	case c.cost != 1:
		e = c.n
	}
	c.send(c.ctx, c.rc, e)
}

// decodeFor implements windowSender.
func (c *fixedWindowCall) decodeFor(raw any, k int64) (Decision, bool, error) {
	return c.f.decode(raw, k, c.cost)
}

func (c *fixedWindowCall) Result() (Decision, error) { return c.result(c) }

// windowKey builds prefix + tag + ":{" + subject + "}:" + k in base 36 in a and returns a: the
// key of window k of the window-keyed scripts.
func (a *argBuf) windowKey(prefix, tag, subject string, k int64) *argBuf {
	a.subjectKey(prefix, tag, subject)
	a.b = strconv.AppendInt(append(a.b, ':'), k, 36)
	return a
}

// serverWindows predicts in which aligned window [kW, (k+1)W) of the server's clock a request
// will be decided, for the scripts whose keys are named by the window (fixed-window,
// sliding-counter): a script reads TIME and refuses, writing nothing, a request whose window is
// not the server's. Its zero value predicts from the local clock. It is safe for concurrent use.
type serverWindows struct {
	// offset is the server's clock minus this process's, in µs, as the last reply showed it (the
	// server's TIME minus the midpoint of the local times the request was sent and its reply read
	// at).
	offset atomic.Int64
}

// serverWindowTries is how many times a request on a client is sent for the window the server
// reported before it is denied: a window boundary passed in flight each time.
const serverWindowTries = 3

// minMicros and maxMicros bound the times the window scripts compare as 16-digit strings:
// 2001-09-09 to 2286-11-20.
const (
	minMicros = 1_000_000_000_000_000
	maxMicros = 10_000_000_000_000_000
)

// predict returns the index of the window of w µs that req is predicted to be decided in: that of
// its FixedTime (tests), else of the local time plus the server's offset.
func (s *serverWindows) predict(req Request, w int64) int64 {
	if fixed := fixedMicros(req); fixed != 0 {
		return floorDiv(fixed, w)
	}
	return floorDiv(time.Now().UnixMicro()+s.offset.Load(), w)
}

// windowSender is the part of the window-keyed scripts' Calls that differs: how a request is
// sent for a window and how its reply is read.
type windowSender interface {
	// sendFor sends the request for window k (with windowCall's fixed time when it has one).
	sendFor(k int64)
	// decodeFor decodes raw, the reply of the request sent for window k; missed says the
	// server's TIME was in another window, so nothing was counted.
	decodeFor(raw any, k int64) (d Decision, missed bool, err error)
}

// windowCall is what the Calls of the window-keyed scripts share: the window the request was sent
// for, when, and what Result needs to send it again.
type windowCall struct {
	scriptCall
	windows *serverWindows
	w       int64 // the window, µs
	// k is the window the request was last sent for, at sentAt (µs, local clock); fixed is its
	// FixedTime in µs (0: none).
	k, sentAt, fixed int64
	ctx              context.Context
	rc               redis.Cmdable
}

// begin sends req with s for its predicted window (see result).
func (c *windowCall) begin(ctx context.Context, rc redis.Cmdable, req Request, s windowSender) {
	c.fixed = fixedMicros(req)
	if c.fixed != 0 && (c.fixed < minMicros || c.fixed >= maxMicros) {
		c.fail(fmt.Errorf("%s: fixed time %d µs is outside [%d, %d)", c.name, c.fixed, int64(minMicros), int64(maxMicros)))
		return
	}
	c.ctx, c.rc = ctx, rc
	c.k = c.windows.predict(req, c.w)
	c.sentAt = time.Now().UnixMicro()
	s.sendFor(c.k)
}

// result decodes the reply with s. A reply that missed its window (the server's TIME is in
// another) is sent again for the window the server reported, up to serverWindowTries times, on a
// client; in a pipeline, which has no second round trip, the decision decodeFor returned for the
// miss stands (a denial). Every reply on the server's clock updates the offset. With a FixedTime
// the window is exact, so a miss is an error wrapping ErrBadReply.
func (c *windowCall) result(s windowSender) (Decision, error) {
	for try := 1; ; try++ {
		raw, err := c.reply()
		if err != nil {
			return Decision{}, err
		}
		d, missed, err := s.decodeFor(raw, c.k)
		if err != nil {
			return Decision{}, fmt.Errorf("%s: %w", c.name, err)
		}
		if c.fixed == 0 {
			// The server read TIME between the send and now: take the midpoint.
			c.windows.offset.Store(d.TimeMicros - (c.sentAt+time.Now().UnixMicro())/2)
		}
		_, pipelined := c.rc.(redis.Pipeliner)
		switch {
		case !missed:
			return d, nil
		case c.fixed != 0:
			return Decision{}, fmt.Errorf("%s: %w", c.name, badReply(fmt.Sprintf("fixed time %d µs outside the window %d it is in", c.fixed, c.k), raw))
		case pipelined || try == serverWindowTries:
			return d, nil
		}
		c.k = floorDiv(d.TimeMicros, c.w)
		c.sentAt = time.Now().UnixMicro()
		s.sendFor(c.k)
	}
}

// decode decodes the reply of scripts/fixed_window.lua, "<count> <s> <µs>", for a request of cost
// permits sent for window k, decided at time t:
//
//   - count 0, t outside window k: the request missed its window and nothing was written; missed
//     is true and the decision a denial with remaining 0 and retry-after 0 (ask again now);
//   - count >= cost, t in window k: allowed when count <= L, remaining L − count; else denied with
//     remaining max(0, L − count + cost) and retry-after (k+1)·W − t µs until the window ends, or 0
//     when cost > L (it never fits).
//
// Any other reply (a count below the cost, a count in a window the time is not in, a miss for a
// time inside the window) is an error wrapping ErrBadReply, never an admission.
func (f *fixedWindowLimiter) decode(raw any, k, cost int64) (d Decision, missed bool, err error) {
	v, err := replyFields(raw, 3)
	if err != nil {
		return Decision{}, false, err
	}
	now, err := timeMicros(v[1], v[2], raw)
	if err != nil {
		return Decision{}, false, err
	}
	count, inside := v[0], floorDiv(now, f.windowUs) == k
	d = Decision{TimeMicros: now, Clock: ClockServer}
	switch {
	case count == 0 && !inside:
		return d, true, nil
	case count >= cost && inside && count <= f.limit:
		d.Allowed, d.Remaining = true, f.limit-count
	case count >= cost && inside:
		d.Remaining = max(0, f.limit-count+cost)
		if cost <= f.limit {
			d.RetryAfter = time.Duration((k+1)*f.windowUs-now) * time.Microsecond
		}
	default:
		return Decision{}, false, badReply(fmt.Sprintf("count %d for window %d at a time in window %d (limit %d, cost %d)", count, k, floorDiv(now, f.windowUs), f.limit, cost), raw)
	}
	return d, false, nil
}
