package algorithms

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redisson is the rate limiter of Redisson's RRateLimiter with RateType.OVERALL (seed 000): a
// config hash, a counter of available permits and a sorted set of grants scored by the caller's
// clock in ms, all in scripts/redisson.lua. It is a published design, reproduced with its flaw:
// the caller's clock decides which grants have expired, so clients with skewed clocks return
// permits early and the limiter over-admits. Its contract, sliding-window(Limit, Window) per
// subject with 1 ms granularity, holds when every client's clock is right. The article's packing
// of grants (a 4-byte float of a random id) is kept too: a rare collision of two grants loses
// their permits for good, which lowers admissions and never raises them.
//
// Request.Cost up to Limit is supported; a larger cost is denied with retry-after 0 (Redisson
// raises an error instead). Request.ClientTime is the time sent (time.Now() when zero).
type Redisson struct{}

// RedissonPerClient is Redisson's RRateLimiter with RateType.PER_CLIENT (seed 000): the same
// script, with the counter and the grants kept per client id (Request.Client), so each
// (subject, client) pair has its own sliding-window(Limit, Window). It has Redisson's clock flaw.
type RedissonPerClient struct{}

var (
	_ Algorithm = (*Redisson)(nil)
	_ Algorithm = (*RedissonPerClient)(nil)
)

func init() {
	register(Redisson{})
	register(RedissonPerClient{})
}

const redissonFlaw = "the caller's clock (ms) decides which grants have expired: a client ahead " +
	"by d returns permits d early and one behind records grants that expire d early, so skewed " +
	"clients over-admit (up to the whole rate per window); grants are packed as a 4-byte float of " +
	"a random id, so two can collide and their permits leak for good (fewer admissions); keys never expire"

// Describe implements Algorithm.
func (Redisson) Describe() Description {
	return Description{
		Name:           "redisson",
		Script:         "redisson.lua",
		Origin:         "seed 000 (Redisson RRateLimiter, RateType.OVERALL), as published",
		Clock:          ClockClient,
		KeysPerSubject: 3,
		Memory:         "O(limit)",
		Flaw:           redissonFlaw,
		Cost:           true,
	}
}

// Contract implements Algorithm: sliding-window(Limit, Window) per subject, on the caller's clock
// in whole ms.
func (Redisson) Contract(l Limit) (Contract, error) { return redissonContract(l, PerSubject) }

// Prepare implements Algorithm.
func (a Redisson) Prepare(ctx context.Context, c redis.UniversalClient, l Limit, prefix string) (Limiter, error) {
	return prepareRedisson(ctx, a, c, l, prefix, false)
}

// Model implements Algorithm. It returns nil: Redisson is a published design, and with skewed
// clients (the case that matters) its decisions depend on the order in which differently skewed
// times reach the server, which no replay on sorted decision times reproduces. Without skew it
// decides like a sliding log on the caller's ms; redisson_test.go checks that.
func (Redisson) Model(Limit) Model { return nil }

// Describe implements Algorithm.
func (RedissonPerClient) Describe() Description {
	return Description{
		Name:           "redisson-per-client",
		Script:         "redisson.lua",
		Origin:         "seed 000 (Redisson RRateLimiter, RateType.PER_CLIENT), as published",
		Clock:          ClockClient,
		KeysPerSubject: 3, // config hash + counter and grants of each client
		Memory:         "O(limit) per client",
		Flaw:           redissonFlaw,
		Cost:           true,
	}
}

// Contract implements Algorithm: sliding-window(Limit, Window) per (subject, client), on the
// caller's clock in whole ms.
func (RedissonPerClient) Contract(l Limit) (Contract, error) { return redissonContract(l, PerClient) }

// Prepare implements Algorithm.
func (a RedissonPerClient) Prepare(ctx context.Context, c redis.UniversalClient, l Limit, prefix string) (Limiter, error) {
	return prepareRedisson(ctx, a, c, l, prefix, true)
}

// Model implements Algorithm; nil, as for Redisson.
func (RedissonPerClient) Model(Limit) Model { return nil }

func redissonContract(l Limit, scope Scope) (Contract, error) {
	if err := l.Validate(); err != nil {
		return Contract{}, err
	}
	return Contract{
		Kind:        SlidingWindow,
		Limit:       l.Limit,
		Window:      l.Window,
		Granularity: time.Millisecond,
		Scope:       scope,
	}, nil
}

// prepareRedisson prepares a, either variant of Redisson's limiter (perClient: PER_CLIENT).
func prepareRedisson(ctx context.Context, a Algorithm, c redis.UniversalClient, l Limit, prefix string, perClient bool) (Limiter, error) {
	s, err := prepareScript(ctx, a, c, l, prefix, func() error {
		if l.Limit >= maxExact {
			return fmt.Errorf("%w: limit must be < 2^53, got %d", ErrBadLimit, l.Limit)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	typ := "0"
	if perClient {
		typ = "1"
	}
	return &redissonLimiter{
		name:      a.Describe().Name,
		script:    s,
		fresh:     isCluster(c),
		prefix:    prefix,
		rate:      l.Limit,
		interval:  l.Window.Milliseconds(),
		typ:       typ,
		perClient: perClient,
	}, nil
}

// redissonLimiter is a prepared Redisson or RedissonPerClient.
type redissonLimiter struct {
	name      string
	script    *script
	fresh     bool // prepared on a cluster client: see evalCmd
	prefix    string
	rate      int64
	interval  int64 // ms
	typ       string
	perClient bool
	// id returns each grant's random id; nil means randomID. Tests set it to make ids (and so
	// the article's float collisions, see scripts/redisson.lua) reproducible.
	id func() int64
}

// randomID is a grant id as Redisson draws it: ThreadLocalRandom.current().nextLong(), any signed
// 64-bit value. It is safe for concurrent use.
func randomID() int64 { return int64(rand.Uint64()) }

// Keys implements Limiter: the config hash, then the counter and the grants set ("{name}:value",
// "{name}:permits"), suffixed with ":" + Request.Client for PER_CLIENT. The subject is the hash
// tag.
func (r *redissonLimiter) Keys(req Request) []string {
	base := subjectKey(r.prefix, r.name, req.Subject)
	if r.perClient {
		return []string{base, base + ":value:" + req.Client, base + ":permits:" + req.Client}
	}
	return []string{base, base + ":value", base + ":permits"}
}

// redissonCall is the Call of a redissonLimiter: the script's arguments are the config hash, the
// counter and the grants set, the rate, the interval in ms, the type, the cost, the client's time
// in ms and the grant's id.
type redissonCall struct {
	scriptCall
	r                      *redissonLimiter
	config, value, permits argBuf
	cost, ms, id           int64
	cmd                    *evalCmd
}

// NewCall implements Limiter.
func (r *redissonLimiter) NewCall() Call {
	c := &redissonCall{scriptCall: scriptCall{name: r.name}, r: r}
	c.cmd = newEvalCmd(r.script, r.fresh, []*argBuf{&c.config, &c.value, &c.permits}, r.rate, r.interval, r.typ, &c.cost, &c.ms, &c.id)
	return c
}

// Send implements Call. The grant's id is a random signed 64-bit integer sent in decimal, which
// the script packs as a 4-byte float, as the article's Redisson does (scripts/redisson.lua says
// what that costs).
func (c *redissonCall) Send(ctx context.Context, rc redis.Cmdable, req Request) {
	r := c.r
	cost, err := checkRequest(r.name, req, true)
	if err != nil {
		c.fail(err)
		return
	}
	next := r.id
	if next == nil {
		next = randomID
	}
	c.config.subjectKey(r.prefix, r.name, req.Subject)
	c.value.subjectKey(r.prefix, r.name, req.Subject).b = append(c.value.b, ":value"...)
	c.permits.subjectKey(r.prefix, r.name, req.Subject).b = append(c.permits.b, ":permits"...)
	if r.perClient {
		c.value.b = append(append(c.value.b, ':'), req.Client...)
		c.permits.b = append(append(c.permits.b, ':'), req.Client...)
	}
	c.cost, c.ms, c.id = cost, clientTime(req).UnixMilli(), next()
	c.send(ctx, rc, c.cmd)
}

func (c *redissonCall) Result() (Decision, error) {
	raw, err := c.reply()
	if err != nil {
		return Decision{}, err
	}
	return c.decoded(decodeDecision(raw, ClockClient))
}
