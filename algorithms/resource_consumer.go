package algorithms

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ResourceConsumer is seed 004's two-level sliding-window log, corrected
// (scripts/resource_consumer.lua): one list for the limited subject (the shared resource) and one
// for each consumer (Request.Client) of that subject, each holding the Redis TIME in µs of its
// last Limit (Consumer()) admitted permits. A request is admitted only when both windows have room
// for its cost (one LINDEX each decides), and is then recorded in both (all or nothing). Only
// admissions are recorded, and both keys expire W after the last admission.
//
// Both sets must be in one cluster slot for the script to touch them, so the consumer set is per
// (subject, consumer), as in the article (whose keys share a {tag}). The contract is therefore
// sliding-window(Limit, Window) per subject and sliding-window(Consumer(), Window) per
// (subject, client): a consumer that calls several subjects gets Consumer() on each.
//
// Request.Cost is supported; a cost above either limit is denied with retry-after 0 (never).
type ResourceConsumer struct{}

var _ Algorithm = (*ResourceConsumer)(nil)

func init() { register(ResourceConsumer{}) }

// Describe implements Algorithm.
func (ResourceConsumer) Describe() Description {
	return Description{
		Name:           "resource-consumer",
		Script:         "resource_consumer.lua",
		Origin:         "seed 004 (sliding-window log for a resource and each consumer), corrected",
		Clock:          ClockServer,
		KeysPerSubject: 2, // the resource's set + one per consumer
		Memory:         "O(limit)",
		Corrected: "times in µs of TIME instead of whole seconds; `count + cost <= limit` on both " +
			"logs instead of `==` on the resource; one entry per permit; keys expire W after the last " +
			"admission; the last L admission times in lists checked with one LINDEX each instead of " +
			"sorted sets trimmed and counted on every call",
		Cost: true,
	}
}

// Contract implements Algorithm: sliding-window(Limit, Window) per subject and
// sliding-window(Consumer(), Window) per (subject, client), in µs of Redis TIME.
func (ResourceConsumer) Contract(l Limit) (Contract, error) {
	if err := l.Validate(); err != nil {
		return Contract{}, err
	}
	return twoLevelContract(l, time.Microsecond), nil
}

// twoLevelContract is the pair of limits both resource-consumer variants promise, at granularity g.
func twoLevelContract(l Limit, g time.Duration) Contract {
	return Contract{
		Kind:        SlidingWindow,
		Limit:       l.Limit,
		Window:      l.Window,
		Granularity: g,
		Scope:       PerSubject,
		Also: []Contract{{
			Kind:        SlidingWindow,
			Limit:       l.Consumer(),
			Window:      l.Window,
			Granularity: g,
			Scope:       PerClient,
		}},
	}
}

// Prepare implements Algorithm.
func (a ResourceConsumer) Prepare(ctx context.Context, c redis.UniversalClient, l Limit, prefix string) (Limiter, error) {
	s, err := prepareScript(ctx, a, c, l, prefix)
	if err != nil {
		return nil, err
	}
	return &twoListLimiter{
		script:   s,
		fresh:    isCluster(c),
		prefix:   prefix,
		rlimit:   l.Limit,
		climit:   l.Consumer(),
		windowUs: l.Window.Microseconds(),
	}, nil
}

// Model implements Algorithm: the two-level sliding log of model_twolevel.go.
func (ResourceConsumer) Model(l Limit) Model { return newTwoLevelModel(l) }

// twoListLimiter is a prepared ResourceConsumer.
type twoListLimiter struct {
	script         *script
	fresh          bool // prepared on a cluster client: see evalCmd
	prefix         string
	rlimit, climit int64
	windowUs       int64
}

// Keys implements Limiter: the resource's list ("rc:{subject}:r") and this consumer's list
// ("rc:{subject}:c:" + Request.Client), with the subject as hash tag. The names are short because
// Redis keeps them in memory once per key, per consumer.
func (r *twoListLimiter) Keys(req Request) []string {
	base := subjectKey(r.prefix, "rc", req.Subject)
	return []string{base + ":r", base + ":c:" + req.Client}
}

// twoListCall is the Call of a twoListLimiter: the script's arguments are the two keys, Lr − 1,
// Lc − 1 and W, then the cost when it is not 1 or a fixed time follows, and the fixed time in
// tests.
type twoListCall struct {
	scriptCall
	r             *twoListLimiter
	res, consumer argBuf
	cost, fixed   int64
	one, n, at    *evalCmd // cost 1, cost n, and cost with a fixed time
}

// NewCall implements Limiter.
func (r *twoListLimiter) NewCall() Call {
	c := &twoListCall{scriptCall: scriptCall{name: "resource-consumer"}, r: r}
	keys := []*argBuf{&c.res, &c.consumer}
	c.one = newEvalCmd(r.script, r.fresh, keys, r.rlimit-1, r.climit-1, r.windowUs)
	c.n = newEvalCmd(r.script, r.fresh, keys, r.rlimit-1, r.climit-1, r.windowUs, &c.cost)
	c.at = newEvalCmd(r.script, r.fresh, keys, r.rlimit-1, r.climit-1, r.windowUs, &c.cost, &c.fixed)
	return c
}

func (c *twoListCall) Send(ctx context.Context, rc redis.Cmdable, req Request) {
	r := c.r
	cost, err := checkRequest("resource-consumer", req, true)
	if err != nil {
		c.fail(err)
		return
	}
	if never := min(r.rlimit, r.climit) + 1; cost > never {
		// Never admissible; still ask Redis so that the decision carries a time.
		cost = never
	}
	c.res.subjectKey(r.prefix, "rc", req.Subject).b = append(c.res.b, ":r"...)
	c.consumer.subjectKey(r.prefix, "rc", req.Subject).b = append(append(c.consumer.b, ":c:"...), req.Client...)
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

func (c *twoListCall) Result() (Decision, error) {
	raw, err := c.reply()
	if err != nil {
		return Decision{}, err
	}
	return c.decoded(c.r.decode(raw, c.cost))
}

// decode decodes the reply of scripts/resource_consumer.lua, "<allowed 0|1> <x> <y> <s> <µs>", for
// a request of n = cost permits at time t:
//
//   - allowed: x and y are the resource's and the consumer's list lengths after the push,
//     n <= x <= Lr + n and n <= y <= Lc + n; remaining max(0, min(Lr − x, Lc − y)), a lower bound
//     (entries that have left the window are counted until they are trimmed);
//   - denied, x or y > 0: each non-zero one is the time of the entry that keeps its list full,
//     inside the window (> t − W); the request fits once both have left, retry-after
//     max(x, y) + W − t µs (at least 1); remaining 0;
//   - denied, x = y = 0: n > Lr or n > Lc, never admissible; retry-after 0, remaining 0.
//
// Any other reply is an error wrapping ErrBadReply, never an admission.
func (r *twoListLimiter) decode(raw any, cost int64) (Decision, error) {
	v, allowed, now, err := stateReply(raw, 5)
	if err != nil {
		return Decision{}, err
	}
	x, y := v[1], v[2]
	inWindow := func(e int64) bool { return e == 0 || e > now-r.windowUs }
	fits := cost <= r.rlimit && cost <= r.climit
	d := Decision{Allowed: allowed, TimeMicros: now, Clock: ClockServer}
	switch {
	case allowed && fits && x >= cost && x <= r.rlimit+cost && y >= cost && y <= r.climit+cost:
		d.Remaining = max(0, min(r.rlimit-x, r.climit-y))
	case !allowed && !fits && x == 0 && y == 0:
	case !allowed && fits && (x > 0 || y > 0) && inWindow(x) && inWindow(y):
		d.RetryAfter = time.Duration(max(1, max(x, y)+r.windowUs-now)) * time.Microsecond
	default:
		return Decision{}, badReply(fmt.Sprintf("allowed=%v with %d and %d, at %d µs (limits %d and %d, window %d µs, cost %d)",
			allowed, x, y, now, r.rlimit, r.climit, r.windowUs, cost), raw)
	}
	return d, nil
}

// resourceConsumerLimiter is a prepared ResourceConsumerPublished.
type resourceConsumerLimiter struct {
	name   string
	script *script
	fresh  bool // prepared on a cluster client: see evalCmd
	prefix string
	// args are the script's arguments after the time and before the cost.
	args []any
}

// Keys implements Limiter: the resource's set and this consumer's set, with the subject as hash
// tag.
func (r *resourceConsumerLimiter) Keys(req Request) []string {
	base := subjectKey(r.prefix, r.name, req.Subject)
	return []string{base + ":resource", base + ":consumer:" + req.Client}
}

// resourceConsumerCall is the Call of a resourceConsumerLimiter: the script's arguments are the
// two keys, the fixed time (0: Redis TIME), the limiter's arguments and the cost.
type resourceConsumerCall struct {
	scriptCall
	r                  *resourceConsumerLimiter
	resource, consumer argBuf
	fixed, cost        int64
	cmd                *evalCmd
}

// NewCall implements Limiter.
func (r *resourceConsumerLimiter) NewCall() Call {
	c := &resourceConsumerCall{scriptCall: scriptCall{name: r.name}, r: r}
	args := append(append([]any{&c.fixed}, r.args...), &c.cost)
	c.cmd = newEvalCmd(r.script, r.fresh, []*argBuf{&c.resource, &c.consumer}, args...)
	return c
}

func (c *resourceConsumerCall) Send(ctx context.Context, rc redis.Cmdable, req Request) {
	r := c.r
	cost, err := checkRequest(r.name, req, true)
	if err != nil {
		c.fail(err)
		return
	}
	c.resource.subjectKey(r.prefix, r.name, req.Subject).b = append(c.resource.b, ":resource"...)
	c.consumer.subjectKey(r.prefix, r.name, req.Subject).b = append(append(c.consumer.b, ":consumer:"...), req.Client...)
	c.fixed, c.cost = fixedMicros(req), cost
	c.send(ctx, rc, c.cmd)
}

func (c *resourceConsumerCall) Result() (Decision, error) {
	raw, err := c.reply()
	if err != nil {
		return Decision{}, err
	}
	return c.decoded(decodeDecision(raw, ClockServer))
}
