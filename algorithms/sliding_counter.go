package algorithms

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// SlidingCounter is `sliding-counter`: the sliding window counter Cloudflare describes
// (scripts/sliding_counter.lua). One counter per subject and aligned window, a key named by the
// window's index, holds the permits admitted in it; a request is admitted when
// prev·(W − e)/W + cur + cost <= Limit, in exact integers, with cur and prev the counters of the
// server's current and previous windows and e the time into the current window. The limiter
// predicts the window from its clock and the server's offset (serverClock): a request that missed
// its window is sent again on a client, denied in a pipeline. The script reads TIME only when a
// counter is missing: when both exist, their expiries prove on Redis's clock that the server is in
// the predicted window, and e is the limiter's estimate of the server's time, which weighs prev
// and nothing else. Denials are not counted. Cost > 1 is supported.
//
// Its contract is fixed-window(Limit, Window), exactly (cur never passes Limit). As a sliding
// window it is approximate: the estimate assumes the previous window's permits were evenly spread.
type SlidingCounter struct{}

var _ Algorithm = (*SlidingCounter)(nil)

func init() { register(SlidingCounter{}) }

// Describe implements Algorithm.
func (SlidingCounter) Describe() Description {
	return Description{
		Name:           "sliding-counter",
		Script:         "sliding_counter.lua",
		Origin:         "Cloudflare's sliding window counter",
		Clock:          ClockServer,
		KeysPerSubject: 2, // the counters of the current and the previous window
		Memory:         "O(1)",
		Corrected: "exact integer comparison prev·(W−e) + (cur+n)·W <= L·W, denials not counted; " +
			"fixed-window(L, W) exactly, sliding-window(L, W) only approximately; counters named by " +
			"the window as Cloudflare's are, on the server's clock: TIME when a counter is missing, " +
			"else the counters' expiries prove the window",
		Cost: true,
	}
}

// Contract implements Algorithm: fixed-window(Limit, Window).
func (SlidingCounter) Contract(l Limit) (Contract, error) {
	if err := l.Validate(); err != nil {
		return Contract{}, err
	}
	return Contract{Kind: FixedWindow, Limit: l.Limit, Window: l.Window}, nil
}

// Prepare implements Algorithm. Limit·Window in µs must stay below 2^53 so that the script's
// comparison is exact.
func (a SlidingCounter) Prepare(ctx context.Context, c redis.UniversalClient, l Limit, prefix string) (Limiter, error) {
	w := l.Window.Microseconds()
	s, err := prepareScript(ctx, a, c, l, prefix, func() error {
		if l.Limit > maxExact/(2*w) {
			return fmt.Errorf("%w: limit %d × window %s needs more than 53 bits", ErrBadLimit, l.Limit, l.Window)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &slidingCounterLimiter{script: s, fresh: isCluster(c), prefix: prefix, limit: l.Limit, windowUs: w}, nil
}

// Model implements Algorithm.
func (SlidingCounter) Model(l Limit) Model { return newSlidingCounterModel(l) }

type slidingCounterLimiter struct {
	script   *script
	fresh    bool // prepared on a cluster client: see evalCmd
	prefix   string
	limit    int64
	windowUs int64
	windows  serverClock
}

// key is the counter of window k: prefix + "sc:{" + subject + "}:" + k in base 36.
func (s *slidingCounterLimiter) key(subject string, k int64) string {
	var b argBuf
	return b.windowKey(s.prefix, "sc", subject, k).String()
}

// Keys implements Limiter: the counters of the window req is predicted to be decided in (that of
// its FixedTime, when it has one) and of the window before it.
func (s *slidingCounterLimiter) Keys(req Request) []string {
	k := s.windows.predict(req, s.windowUs)
	return []string{s.key(req.Subject, k), s.key(req.Subject, k-1)}
}

// slidingCounterCall is the Call of a slidingCounterLimiter: the script's arguments are the
// counters of windows k and k − 1, W − e (the estimated µs left in window k), W, (L − n)·W, n, kW
// and (k + 1)W in µs (16 digits for every time from 2001 to 2286, as the script compares them),
// the new counter's expiry (k + 2)·W − 1 in ms, and the fixed time in tests.
type slidingCounterCall struct {
	scriptCall
	s                    *slidingCounterLimiter
	subject              string
	cur, prev            argBuf
	left, start, end     int64
	budget, cost, expiry int64
	now, at              *evalCmd // without and with a fixed time
	// k is the window the request was last sent for, at sentAt (µs, local clock), with left
	// = W − e from the server time estimated then; fixed is its FixedTime in µs (0: none); req,
	// ctx and rc are what Result needs to send it again.
	k, sentAt, fixed int64
	req              Request
	ctx              context.Context
	rc               redis.Cmdable
}

// NewCall implements Limiter.
func (s *slidingCounterLimiter) NewCall() Call {
	c := &slidingCounterCall{scriptCall: scriptCall{name: "sliding-counter"}, s: s}
	keys := []*argBuf{&c.cur, &c.prev}
	c.now = newEvalCmd(s.script, s.fresh, keys, &c.left, s.windowUs, &c.budget, &c.cost, &c.start, &c.end, &c.expiry)
	c.at = newEvalCmd(s.script, s.fresh, keys, &c.left, s.windowUs, &c.budget, &c.cost, &c.start, &c.end, &c.expiry, &c.fixed)
	return c
}

func (c *slidingCounterCall) Send(ctx context.Context, rc redis.Cmdable, req Request) {
	s := c.s
	cost, err := checkRequest("sliding-counter", req, true)
	if err != nil {
		c.fail(err)
		return
	}
	if cost > s.limit {
		// Never admissible (and (cur + cost)·W stays exact); still ask Redis so that the decision
		// carries a time.
		cost = s.limit + 1
	}
	c.subject, c.cost = req.Subject, cost
	c.budget = (s.limit - cost) * s.windowUs
	c.fixed = fixedMicros(req)
	if c.fixed != 0 && (c.fixed < minMicros || c.fixed >= maxMicros) {
		c.fail(fmt.Errorf("sliding-counter: fixed time %d µs is outside [%d, %d)", c.fixed, int64(minMicros), int64(maxMicros)))
		return
	}
	c.ctx, c.rc, c.req = ctx, rc, req
	c.sentAt = time.Now().UnixMicro()
	t := s.windows.now(req, c.sentAt)
	c.sendFor(floorDiv(t, s.windowUs), t)
}

// sendFor sends the request for window k, in which the server's time is estimated to be t (its
// fixed time, when it has one): t only sets W − e, which is kept between 1 and W when t is not
// in window k.
func (c *slidingCounterCall) sendFor(k, t int64) {
	s := c.s
	c.k = k
	c.cur.windowKey(s.prefix, "sc", c.subject, k)
	c.prev.windowKey(s.prefix, "sc", c.subject, k-1)
	c.start, c.end, c.expiry = k*s.windowUs, (k+1)*s.windowUs, (k+2)*s.windowUs/1000-1
	c.left = min(max(c.end-t, 1), s.windowUs)
	e := c.now
	if c.fixed != 0 {
		e = c.at
	}
	c.send(c.ctx, c.rc, e)
}

// Result decodes the reply. A reply that missed its window (the server's TIME is in another) is
// sent again for the window the server reported, up to serverWindowTries times, on a client; in a
// pipeline, which has no second round trip, the decision decode returned for the miss stands (a
// denial). Every reply on the server's clock updates the offset. With a FixedTime the window is
// exact, so a miss is an error wrapping ErrBadReply.
func (c *slidingCounterCall) Result() (Decision, error) {
	s := c.s
	for try := 1; ; try++ {
		raw, err := c.reply()
		if err != nil {
			return Decision{}, err
		}
		d, missed, err := s.decode(raw, c.k, c.left, c.cost)
		if err != nil {
			return Decision{}, fmt.Errorf("%s: %w", c.name, err)
		}
		if c.fixed == 0 && d.TimeMicros != 0 {
			// The server read TIME between the send and now: take the midpoint.
			s.windows.observe(d.TimeMicros, c.sentAt)
		}
		if c.fixed != 0 && d.TimeMicros != c.fixed {
			return Decision{}, fmt.Errorf("%s: %w", c.name, badReply(fmt.Sprintf("decided at %d µs for the fixed time %d µs", d.TimeMicros, c.fixed), raw))
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
		c.sentAt = time.Now().UnixMicro()
		c.sendFor(floorDiv(d.TimeMicros, s.windowUs), s.windows.now(c.req, c.sentAt))
	}
}

// decode decodes the reply of scripts/sliding_counter.lua for a request of n = cost permits sent
// for window k with left = W − e as the limiter estimated it:
//
//   - "<allowed 0|1> <cur> <prev>": both counters existed, so the server was in window k (their
//     expiries prove it on Redis's clock); decided on e = W − left, with no time;
//   - "<allowed 0|1|2> <cur> <prev> <t>": decided at t (µs, the server's TIME), e = t − kW;
//   - "<t>": admitted at t with no counter before it (cur = prev = 0).
//
// With the budget B = L·W − prev·(W − e):
//
//   - 2 with cur = prev = 0, t outside window k: the request missed its window, nothing was
//     written; missed is true and the decision a denial with remaining 0 and retry-after 0;
//   - 1 (admitted, (cur + n)·W <= B): remaining ⌊(B − (cur + n)·W)/W⌋;
//   - 0 (denied, (cur + n)·W > B): remaining max(0, ⌊(B − cur·W)/W⌋); retry-after, for n <= L,
//     until the estimate admits n: in this window (cur + n <= L) at W − ⌊(L − cur − n)·W/prev⌋,
//     else in the next one, where cur becomes prev, at W − e + W − ⌊(L − n)·W/cur⌋ (W − e when
//     cur = 0), at least 1 µs; 0 for n > L (never).
//
// Any other reply (counters past L, a decision the counters contradict, a time outside the
// window, another number of fields) is an error wrapping ErrBadReply, never an admission.
func (s *slidingCounterLimiter) decode(raw any, k, left, cost int64) (Decision, bool, error) {
	str, ok := raw.(string)
	if !ok {
		return Decision{}, false, badReply("want a string of 1, 3 or 4 integers", raw)
	}
	n := 4
	switch strings.Count(str, " ") {
	case 0:
		n = 1
	case 2:
		n = 3
	}
	v, err := splitFields(str, n, raw)
	if err != nil {
		return Decision{}, false, err
	}
	w, l := s.windowUs, s.limit
	var d Decision
	var allowed, cur, prev, e int64
	switch n {
	case 1:
		allowed, d.TimeMicros = 1, v[0]
	case 3:
		allowed, cur, prev, e = v[0], v[1], v[2], w-left
	default:
		allowed, cur, prev, d.TimeMicros = v[0], v[1], v[2], v[3]
	}
	inside := true
	if d.TimeMicros != 0 {
		d.Clock, e = ClockServer, d.TimeMicros-k*w
		inside = e >= 0 && e < w
	} else if n != 3 {
		return Decision{}, false, badReply("a time of 0 µs", raw)
	}
	if n != 3 && allowed == 2 && cur == 0 && prev == 0 && !inside {
		return d, true, nil
	}
	if allowed > 1 || !inside || cur > l || prev > l || e < 0 || e >= w {
		return Decision{}, false, badReply(fmt.Sprintf("allowed=%d with cur %d, prev %d at %d µs into window %d (limit %d, window %d µs, cost %d)", allowed, cur, prev, e, k, l, w, cost), raw)
	}
	budget := l*w - prev*(w-e)
	fits := cur+cost <= l && (cur+cost)*w <= budget
	if (allowed == 1) != fits {
		return Decision{}, false, badReply(fmt.Sprintf("allowed=%d with cur %d, prev %d at %d µs into window %d, which the counters contradict (limit %d, cost %d)", allowed, cur, prev, e, k, l, cost), raw)
	}
	if fits {
		d.Allowed, d.Remaining = true, (budget-(cur+cost)*w)/w
		return d, false, nil
	}
	d.Remaining = max(0, floorDiv(budget-cur*w, w))
	if cost <= l {
		var retry int64
		if cur+cost <= l {
			retry = w - (l-cur-cost)*w/prev - e
		} else {
			retry = w - e
			if cur > 0 {
				retry += w - (l-cost)*w/cur
			}
		}
		d.RetryAfter = time.Duration(max(retry, 1)) * time.Microsecond
	}
	return d, false, nil
}

// windowKey builds prefix + tag + ":{" + subject + "}:" + k in base 36 in a and returns a: the
// key of window k (sliding-counter's counters; fixed-window's with a fixed time).
func (a *argBuf) windowKey(prefix, tag, subject string, k int64) *argBuf {
	a.subjectKey(prefix, tag, subject)
	a.b = strconv.AppendInt(append(a.b, ':'), k, 36)
	return a
}

// serverWindowTries is how many times a request on a client is sent for the window the server
// reported before it is denied: a window boundary passed in flight each time.
const serverWindowTries = 3

// minMicros and maxMicros bound the times sliding_counter.lua compares as 16-digit strings:
// 2001-09-09 to 2286-11-20.
const (
	minMicros = 1_000_000_000_000_000
	maxMicros = 10_000_000_000_000_000
)
