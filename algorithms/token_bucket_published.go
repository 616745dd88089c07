package algorithms

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// TokenBucketPublished is `token-bucket-published`: seed 003 as written
// (scripts/token_bucket_published.lua). Two keys per subject (tokens, time of the last visit); the
// caller's clock (Request.ClientTime; time.Now() when zero) in whole seconds; rate Limit/Window
// tokens per second, capacity Capacity(); the caller's time is stored even when it is older than
// the stored one; both keys get a fixed 60 s TTL. Cost > 1 is supported (the article's
// requested tokens).
type TokenBucketPublished struct{}

var _ Algorithm = (*TokenBucketPublished)(nil)

func init() { register(TokenBucketPublished{}) }

// Describe implements Algorithm.
func (TokenBucketPublished) Describe() Description {
	return Description{
		Name:           "token-bucket-published",
		Script:         "token_bucket_published.lua",
		Origin:         "seed 003 (Jedis token bucket in Lua), as written",
		Clock:          ClockClient,
		KeysPerSubject: 2,
		Memory:         "O(1)",
		Flaw: "the client's time in whole seconds; an older client time is stored and rewinds the bucket " +
			"(refilled twice); floating-point tokens; fixed 60 s TTL",
		Cost: true,
	}
}

// Contract implements Algorithm: token-bucket(Capacity(), Limit per Window) at 1 s granularity.
func (TokenBucketPublished) Contract(l Limit) (Contract, error) {
	if err := l.Validate(); err != nil {
		return Contract{}, err
	}
	return Contract{Kind: TokenBucket, Capacity: l.Capacity(), RefillPermits: l.Limit, RefillPer: l.Window,
		Granularity: time.Second}, nil
}

// Prepare implements Algorithm.
func (a TokenBucketPublished) Prepare(ctx context.Context, c redis.UniversalClient, l Limit, prefix string) (Limiter, error) {
	s, err := prepareScript(ctx, a, c, l, prefix)
	if err != nil {
		return nil, err
	}
	return &tokenBucketPublishedLimiter{
		script:   s,
		fresh:    isCluster(c),
		prefix:   prefix,
		rate:     strconv.FormatFloat(l.RatePerSecond(), 'g', -1, 64),
		capacity: l.Capacity(),
	}, nil
}

// Model implements Algorithm: nil, the published variants have no reference model.
func (TokenBucketPublished) Model(Limit) Model { return nil }

type tokenBucketPublishedLimiter struct {
	script   *script
	fresh    bool // prepared on a cluster client: see evalCmd
	prefix   string
	rate     string // tokens per second, decimal
	capacity int64
}

func (t *tokenBucketPublishedLimiter) Keys(req Request) []string {
	base := subjectKey(t.prefix, "tbp", req.Subject)
	return []string{base + ":tokens", base + ":ts"}
}

// tokenBucketPublishedCall is the Call of a tokenBucketPublishedLimiter: the script's arguments
// are the two keys, the rate, the capacity, the client's time in seconds and the cost.
type tokenBucketPublishedCall struct {
	scriptCall
	t          *tokenBucketPublishedLimiter
	tokens, ts argBuf
	now, cost  int64
	cmd        *evalCmd
}

// NewCall implements Limiter.
func (t *tokenBucketPublishedLimiter) NewCall() Call {
	c := &tokenBucketPublishedCall{scriptCall: scriptCall{name: "token-bucket-published"}, t: t}
	c.cmd = newEvalCmd(t.script, t.fresh, []*argBuf{&c.tokens, &c.ts}, t.rate, t.capacity, &c.now, &c.cost)
	return c
}

func (c *tokenBucketPublishedCall) Send(ctx context.Context, rc redis.Cmdable, req Request) {
	t := c.t
	cost, err := checkRequest("token-bucket-published", req, true)
	if err != nil {
		c.fail(err)
		return
	}
	c.tokens.subjectKey(t.prefix, "tbp", req.Subject).b = append(c.tokens.b, ":tokens"...)
	c.ts.subjectKey(t.prefix, "tbp", req.Subject).b = append(c.ts.b, ":ts"...)
	c.now, c.cost = clientTime(req).Unix(), cost
	c.send(ctx, rc, c.cmd)
}

func (c *tokenBucketPublishedCall) Result() (Decision, error) {
	raw, err := c.reply()
	if err != nil {
		return Decision{}, err
	}
	return c.decoded(decodeDecision(raw, ClockClient))
}
