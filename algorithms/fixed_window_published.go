package algorithms

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// FixedWindowPublished is `fixed-window-published`: seed 001 as written
// (scripts/fixed_window_published.lua). The key is the subject plus the minute of the hour on the
// caller's clock (Request.ClientTime, UTC; time.Now() when zero); the script GETs the counter and,
// when it is missing or below Limit, INCRs it and EXPIREs it for 59 s, on every admission. The
// window is forced to one minute: Limit is the limit per minute and Limit.Window is ignored.
// Cost > 1 is not supported (the article increments by one).
type FixedWindowPublished struct{}

var _ Algorithm = (*FixedWindowPublished)(nil)

func init() { register(FixedWindowPublished{}) }

// publishedExpirySeconds is the EXPIRE the article passes with every admission.
const publishedExpirySeconds = 59

// Describe implements Algorithm.
func (FixedWindowPublished) Describe() Description {
	return Description{
		Name:           "fixed-window-published",
		Script:         "fixed_window_published.lua",
		Origin:         "seed 001 (Spring WebFlux fixed window per client and minute-of-hour), as written",
		Clock:          ClockClient,
		KeysPerSubject: 1,
		Memory:         "O(1)",
		Flaw: "the window is the client's minute-of-hour (skewed clients count in different keys and " +
			"together over-admit); EXPIRE refreshed on every admission; window forced to 60 s",
		Cost: false,
	}
}

// Contract implements Algorithm: fixed-window(Limit, 60s), whatever l.Window says.
func (FixedWindowPublished) Contract(l Limit) (Contract, error) {
	if err := l.Validate(); err != nil {
		return Contract{}, err
	}
	return Contract{Kind: FixedWindow, Limit: l.Limit, Window: time.Minute}, nil
}

// Prepare implements Algorithm.
func (a FixedWindowPublished) Prepare(ctx context.Context, c redis.UniversalClient, l Limit, prefix string) (Limiter, error) {
	s, err := prepareScript(ctx, a, c, l, prefix)
	if err != nil {
		return nil, err
	}
	return &fixedWindowPublishedLimiter{script: s, fresh: isCluster(c), prefix: prefix, limit: l.Limit}, nil
}

// Model implements Algorithm: nil, the published variants have no reference model.
func (FixedWindowPublished) Model(Limit) Model { return nil }

type fixedWindowPublishedLimiter struct {
	script *script
	fresh  bool // prepared on a cluster client: see evalCmd
	prefix string
	limit  int64
}

// Keys returns the subject's key for the minute of the hour on the request's client clock.
func (f *fixedWindowPublishedLimiter) Keys(req Request) []string {
	return []string{f.key(req.Subject, clientTime(req))}
}

func (f *fixedWindowPublishedLimiter) key(subject string, t time.Time) string {
	return subjectKey(f.prefix, "fwp", subject) + ":" + strconv.Itoa(t.UTC().Minute())
}

// fixedWindowPublishedCall is the Call of a fixedWindowPublishedLimiter: the script's arguments
// are the minute's key, the limit, the expiry in seconds and the client's time in µs.
type fixedWindowPublishedCall struct {
	scriptCall
	f   *fixedWindowPublishedLimiter
	key argBuf
	now int64
	cmd *evalCmd
}

// NewCall implements Limiter.
func (f *fixedWindowPublishedLimiter) NewCall() Call {
	c := &fixedWindowPublishedCall{scriptCall: scriptCall{name: "fixed-window-published"}, f: f}
	c.cmd = newEvalCmd(f.script, f.fresh, []*argBuf{&c.key}, f.limit, publishedExpirySeconds, &c.now)
	return c
}

func (c *fixedWindowPublishedCall) Send(ctx context.Context, rc redis.Cmdable, req Request) {
	if _, err := checkRequest("fixed-window-published", req, false); err != nil {
		c.fail(err)
		return
	}
	now := clientTime(req)
	c.key.subjectKey(c.f.prefix, "fwp", req.Subject).b = strconv.AppendInt(append(c.key.b, ':'), int64(now.UTC().Minute()), 10)
	c.now = now.UnixMicro()
	c.send(ctx, rc, c.cmd)
}

func (c *fixedWindowPublishedCall) Result() (Decision, error) {
	raw, err := c.reply()
	if err != nil {
		return Decision{}, err
	}
	return c.decoded(decodeDecision(raw, ClockClient))
}
