package algorithms

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// GCRA is `gcra`: the generic cell rate algorithm of go-redis/redis_rate and redis-cell
// (scripts/gcra.lua). One key per subject holds the theoretical arrival time in µs of server
// TIME; the emission interval is T = ⌈Window/Limit⌉ µs and the burst Capacity(). Nothing is
// written on a denial and nothing rounds toward admission. Cost > 1 is supported.
type GCRA struct{}

var _ Algorithm = (*GCRA)(nil)

func init() { register(GCRA{}) }

// Describe implements Algorithm.
func (GCRA) Describe() Description {
	return Description{
		Name:           "gcra",
		Script:         "gcra.lua",
		Origin:         "go-redis/redis_rate, redis-cell (generic cell rate algorithm)",
		Clock:          ClockServer,
		KeysPerSubject: 1,
		Memory:         "O(1)",
		Corrected:      "integer µs arithmetic; emission interval rounded up, never toward admission (redis_rate's floor(x+0.5))",
		Cost:           true,
	}
}

// Contract implements Algorithm: token-bucket(Capacity(), Limit per Window).
func (GCRA) Contract(l Limit) (Contract, error) {
	if err := l.Validate(); err != nil {
		return Contract{}, err
	}
	return Contract{Kind: TokenBucket, Capacity: l.Capacity(), RefillPermits: l.Limit, RefillPer: l.Window}, nil
}

// Prepare implements Algorithm. The burst tolerance Capacity()·T must stay below 2^50 µs (about 35
// years) so that TAT arithmetic is exact.
func (a GCRA) Prepare(ctx context.Context, c redis.UniversalClient, l Limit, prefix string) (Limiter, error) {
	s, err := prepareScript(ctx, a, c, l, prefix, func() error {
		if interval, _ := gcraParams(l); l.Capacity() > (1<<50)/interval {
			return fmt.Errorf("%w: capacity %d × %d µs is too long a burst", ErrBadLimit, l.Capacity(), interval)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	interval, tolerance := gcraParams(l)
	return &gcraLimiter{script: s, fresh: isCluster(c), prefix: prefix, interval: interval, tolerance: tolerance}, nil
}

// Model implements Algorithm.
func (GCRA) Model(l Limit) Model { return newGCRAModel(l) }

type gcraLimiter struct {
	script              *script
	fresh               bool // prepared on a cluster client: see evalCmd
	prefix              string
	interval, tolerance int64
}

func (g *gcraLimiter) Keys(req Request) []string {
	return []string{subjectKey(g.prefix, "gcra", req.Subject)}
}

// gcraCall is the Call of a gcraLimiter: the script's arguments are the key, n·T and C·T, and
// the fixed time in tests.
type gcraCall struct {
	scriptCall
	g          *gcraLimiter
	key        argBuf
	inc, fixed int64
	now, at    *evalCmd // without and with a fixed time
}

func (g *gcraLimiter) NewCall() Call {
	c := &gcraCall{scriptCall: scriptCall{name: "gcra"}, g: g}
	keys := []*argBuf{&c.key}
	c.now = newEvalCmd(g.script, g.fresh, keys, &c.inc, g.tolerance)
	c.at = newEvalCmd(g.script, g.fresh, keys, &c.inc, g.tolerance, &c.fixed)
	return c
}

func (c *gcraCall) Send(ctx context.Context, rc redis.Cmdable, req Request) {
	g := c.g
	cost, err := checkRequest("gcra", req, true)
	if err != nil {
		c.fail(err)
		return
	}
	if cost > g.tolerance/g.interval {
		// Never admissible; still ask Redis so that the decision carries a time.
		cost = g.tolerance/g.interval + 1
	}
	c.key.subjectKey(g.prefix, "gcra", req.Subject)
	c.inc = cost * g.interval
	e := c.now
	if c.fixed = fixedMicros(req); c.fixed != 0 {
		e = c.at
	}
	c.send(ctx, rc, e)
}

func (c *gcraCall) Result() (Decision, error) {
	raw, err := c.reply()
	if err != nil {
		return Decision{}, err
	}
	return c.decoded(c.g.decode(raw, c.inc))
}

// decode decodes the reply of scripts/gcra.lua, "<allowed 0|1> <TAT µs> <s> <µs>", for a request
// that adds inc = n·T µs to the TAT. With d = max(TAT − t, 0) µs, the time until the bucket is
// full again (TAT is the new one after an admission, the stored one, or 0 for none, after a
// denial):
//
//	remaining = max(0, ⌊(C·T − d)/T⌋) permits
//	retry-after = d + n·T − C·T µs after a denial (until the request fits), or 0 when n·T > C·T
//	(it never fits)
//
// as the script computed them before it left the arithmetic to Go. A reply whose decision
// contradicts its own TAT (an admission that leaves d outside (0, C·T], a denial the TAT would
// have allowed) is an error wrapping ErrBadReply, never an admission.
func (g *gcraLimiter) decode(raw any, inc int64) (Decision, error) {
	v, allowed, now, err := stateReply(raw, 4)
	if err != nil {
		return Decision{}, err
	}
	d := max(v[1]-now, 0)
	dec := Decision{Allowed: allowed, TimeMicros: now, Clock: ClockServer}
	switch {
	case allowed && (d <= 0 || d > g.tolerance):
		return Decision{}, badReply(fmt.Sprintf("admitted with TAT %d µs after the decision time, want in (0, %d]", d, g.tolerance), raw)
	case !allowed && d+inc <= g.tolerance:
		return Decision{}, badReply(fmt.Sprintf("denied with TAT %d µs after the decision time, which admits %d µs more", d, inc), raw)
	case !allowed && inc <= g.tolerance:
		dec.RetryAfter = time.Duration(d+inc-g.tolerance) * time.Microsecond
	}
	dec.Remaining = max(floorDiv(g.tolerance-d, g.interval), 0)
	return dec, nil
}
