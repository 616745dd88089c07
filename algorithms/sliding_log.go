package algorithms

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// SlidingLog is `sliding-log`: seed 002 made atomic (scripts/sliding_log.lua). A list per subject
// holds the Redis TIME in µs of each of the last Limit admitted permits, newest first; a request
// for n permits is admitted when the entry at index Limit − n (the (Limit−n+1)-th newest) is
// missing or has left the window (t−W, t], which is exactly when the window holds at most
// Limit − n permits. Denials are not recorded. Memory grows with Limit. Cost > 1 is supported.
type SlidingLog struct{}

var _ Algorithm = (*SlidingLog)(nil)

func init() { register(SlidingLog{}) }

// Describe implements Algorithm.
func (SlidingLog) Describe() Description {
	return Description{
		Name:           "sliding-log",
		Script:         "sliding_log.lua",
		Origin:         "seed 002 (Go sliding window log on a sorted set), made atomic",
		Clock:          ClockServer,
		KeysPerSubject: 1,
		Memory:         "O(limit)",
		Corrected: "one script instead of four separate commands (atomic); denied requests not recorded; " +
			"server TIME in µs instead of the client's ms; the last L admission times in a list checked " +
			"with one LINDEX instead of a sorted set trimmed and counted on every call",
		Cost: true,
	}
}

// Contract implements Algorithm: sliding-window(Limit, Window).
func (SlidingLog) Contract(l Limit) (Contract, error) {
	if err := l.Validate(); err != nil {
		return Contract{}, err
	}
	return Contract{Kind: SlidingWindow, Limit: l.Limit, Window: l.Window}, nil
}

// Prepare implements Algorithm.
func (a SlidingLog) Prepare(ctx context.Context, c redis.UniversalClient, l Limit, prefix string) (Limiter, error) {
	s, err := prepareScript(ctx, a, c, l, prefix)
	if err != nil {
		return nil, err
	}
	return &slidingLogLimiter{script: s, fresh: isCluster(c), prefix: prefix, limit: l.Limit, windowUs: l.Window.Microseconds()}, nil
}

// Model implements Algorithm.
func (SlidingLog) Model(l Limit) Model { return newSlidingLogModel(l) }

type slidingLogLimiter struct {
	script   *script
	fresh    bool // prepared on a cluster client: see evalCmd
	prefix   string
	limit    int64
	windowUs int64
}

func (s *slidingLogLimiter) Keys(req Request) []string {
	return []string{subjectKey(s.prefix, "sl", req.Subject)}
}

// slidingLogCall is the Call of a slidingLogLimiter: the script's arguments are the key, L − 1
// and W, then the cost when it is not 1 or a fixed time follows, and the fixed time in tests.
type slidingLogCall struct {
	scriptCall
	s           *slidingLogLimiter
	key         argBuf
	cost, fixed int64
	one, n, at  *evalCmd // cost 1, cost n, and cost with a fixed time
}

func (s *slidingLogLimiter) NewCall() Call {
	c := &slidingLogCall{scriptCall: scriptCall{name: "sliding-log"}, s: s}
	keys := []*argBuf{&c.key}
	c.one = newEvalCmd(s.script, s.fresh, keys, s.limit-1, s.windowUs)
	c.n = newEvalCmd(s.script, s.fresh, keys, s.limit-1, s.windowUs, &c.cost)
	c.at = newEvalCmd(s.script, s.fresh, keys, s.limit-1, s.windowUs, &c.cost, &c.fixed)
	return c
}

func (c *slidingLogCall) Send(ctx context.Context, rc redis.Cmdable, req Request) {
	s := c.s
	cost, err := checkRequest("sliding-log", req, true)
	if err != nil {
		c.fail(err)
		return
	}
	if cost > s.limit {
		// Never admissible; still ask Redis so that the decision carries a time.
		cost = s.limit + 1
	}
	c.key.subjectKey(s.prefix, "sl", req.Subject)
	c.cost, c.fixed = cost, fixedMicros(req)
	e := c.one
	switch {
	case c.fixed != 0:
		e = c.at
	case cost != 1:
		e = c.n
	}
	c.send(ctx, rc, e)
}

func (c *slidingLogCall) Result() (Decision, error) {
	raw, err := c.reply()
	if err != nil {
		return Decision{}, err
	}
	return c.decoded(c.s.decode(raw, c.cost))
}

// decode decodes the reply of scripts/sliding_log.lua, "<allowed 0|1> <x> <s> <µs>", for a request
// of n = cost permits at time t:
//
//   - allowed: x is the list's length after the push, n <= x <= L + n; remaining max(0, L − x), a
//     lower bound (entries that have left the window are still counted until they are trimmed),
//     exact while every entry is in the window;
//   - denied, x > 0: x is the time of the entry at index L − n, inside the window (x > t − W); the
//     request fits once it has left, retry-after x + W − t µs (at least 1); remaining 0;
//   - denied, x = 0: n > L, never admissible; retry-after 0, remaining 0.
//
// Any other reply (an admission with a length below n or past L + n, a denial by an entry that
// had left the window, a denial with x = 0 for n <= L) is an error wrapping ErrBadReply, never an
// admission.
func (s *slidingLogLimiter) decode(raw any, cost int64) (Decision, error) {
	v, allowed, now, err := stateReply(raw, 4)
	if err != nil {
		return Decision{}, err
	}
	x := v[1]
	d := Decision{Allowed: allowed, TimeMicros: now, Clock: ClockServer}
	switch {
	case allowed && x >= cost && x <= s.limit+cost && cost <= s.limit:
		d.Remaining = max(0, s.limit-x)
	case !allowed && x == 0 && cost > s.limit:
	case !allowed && x > 0 && cost <= s.limit && x > now-s.windowUs:
		d.RetryAfter = time.Duration(max(1, x+s.windowUs-now)) * time.Microsecond
	default:
		return Decision{}, badReply(fmt.Sprintf("allowed=%v with %d, at %d µs (limit %d, window %d µs, cost %d)", allowed, x, now, s.limit, s.windowUs, cost), raw)
	}
	return d, nil
}
