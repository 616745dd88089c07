package algorithms

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// SlidingLogPublished is `sliding-log-published`: seed 002 as written. No script: for every
// request the client sends ZREMRANGEBYSCORE key 0 (now−W), ZADD key now <random id>, ZCARD key and
// EXPIRE key W+1m as four separate commands (on a client each runs at once, in order; on a
// pipeline they are queued in order), with now the caller's clock (Request.ClientTime;
// time.Now() when zero) in whole milliseconds. The request is allowed when the count, which
// includes this request, is at most Limit.
//
// Flaws kept on purpose: the steps are not atomic, so concurrent requests see each other's
// entries; denied requests are added too, so a client that keeps calling above the limit keeps its
// own window full and is denied for ever (admissions collapse far below the limit); the time is
// the client's. Cost > 1 is not supported. Retry-after is not reported (zero).
type SlidingLogPublished struct{}

var _ Algorithm = (*SlidingLogPublished)(nil)

func init() { register(SlidingLogPublished{}) }

// Describe implements Algorithm.
func (SlidingLogPublished) Describe() Description {
	return Description{
		Name:           "sliding-log-published",
		Commands:       []string{"zremrangebyscore", "zadd", "zcard", "expire"},
		Origin:         "seed 002 (Go sliding window log on a sorted set), as written",
		Clock:          ClockClient,
		KeysPerSubject: 1,
		Memory:         "O(limit)",
		Flaw: "four separate commands, not atomic; denied requests are recorded too, so admissions " +
			"collapse under overload; the client's clock in ms",
		Cost: false,
	}
}

// Contract implements Algorithm: sliding-window(Limit, Window) at 1 ms granularity.
func (SlidingLogPublished) Contract(l Limit) (Contract, error) {
	if err := l.Validate(); err != nil {
		return Contract{}, err
	}
	return Contract{Kind: SlidingWindow, Limit: l.Limit, Window: l.Window, Granularity: time.Millisecond}, nil
}

// Prepare implements Algorithm. There is no script to load.
func (a SlidingLogPublished) Prepare(_ context.Context, _ redis.UniversalClient, l Limit, prefix string) (Limiter, error) {
	if _, err := a.Contract(l); err != nil {
		return nil, fmt.Errorf("sliding-log-published: %w", err)
	}
	if err := CheckPrefix(prefix); err != nil {
		return nil, fmt.Errorf("sliding-log-published: %w", err)
	}
	return &slidingLogPublishedLimiter{prefix: prefix, limit: l.Limit, window: l.Window}, nil
}

// Model implements Algorithm: nil, the published variants have no reference model.
func (SlidingLogPublished) Model(Limit) Model { return nil }

type slidingLogPublishedLimiter struct {
	prefix string
	limit  int64
	window time.Duration
}

func (s *slidingLogPublishedLimiter) Keys(req Request) []string {
	return []string{subjectKey(s.prefix, "slp", req.Subject)}
}

// slidingLogPublishedCall is the Call of a slidingLogPublishedLimiter. The article sends four
// plain commands, not a script; they are built for each request.
type slidingLogPublishedCall struct {
	s    *slidingLogPublishedLimiter
	err  error
	now  int64 // ms
	cmds [4]redis.Cmder
	card *redis.IntCmd
}

// NewCall implements Limiter.
func (s *slidingLogPublishedLimiter) NewCall() Call { return &slidingLogPublishedCall{s: s} }

func (c *slidingLogPublishedCall) Send(ctx context.Context, rc redis.Cmdable, req Request) {
	s := c.s
	if _, c.err = checkRequest("sliding-log-published", req, false); c.err != nil {
		return
	}
	key := s.Keys(req)[0]
	c.now = clientTime(req).UnixMilli()
	windowStart := c.now - s.window.Milliseconds()
	// The article's uuid(): any unique member will do.
	member := strconv.FormatInt(c.now, 10) + "-" + strconv.FormatUint(rand.Uint64(), 16)
	rem := rc.ZRemRangeByScore(ctx, key, "0", strconv.FormatInt(windowStart, 10))
	add := rc.ZAdd(ctx, key, redis.Z{Score: float64(c.now), Member: member})
	c.card = rc.ZCard(ctx, key)
	exp := rc.Expire(ctx, key, s.window+time.Minute)
	c.cmds = [4]redis.Cmder{rem, add, c.card, exp}
}

func (c *slidingLogPublishedCall) Result() (Decision, error) {
	if c.err != nil {
		return Decision{}, c.err
	}
	for _, cmd := range c.cmds {
		if err := cmd.Err(); err != nil {
			return Decision{}, fmt.Errorf("sliding-log-published: %s: %w", cmd.Name(), err)
		}
	}
	n := c.card.Val()
	return Decision{
		Allowed:    n <= c.s.limit,
		Remaining:  max(0, c.s.limit-n),
		TimeMicros: c.now * 1000,
		Clock:      ClockClient,
	}, nil
}
