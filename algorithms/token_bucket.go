package algorithms

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// TokenBucketHash is `token-bucket`: seed 003 corrected (scripts/token_bucket.lua). One key per
// subject holds the tokens, as exact integers in units of 1/U permit, and the server time in µs
// they were counted at (16 packed bytes; the type keeps the name it had when the state was a hash);
// Limit permits refill per Window up to Capacity(). A request for a subject whose key the last
// reply said is kept reads the state with GET; any other first writes the state of an admission
// into a full bucket with SET … NX … GET, which creates a missing key (a full bucket) and
// otherwise returns the stored state. Nothing is written on a denial; the key expires soon after
// the bucket would be full. Cost > 1 is supported. Needs Redis >= 7.0 (SET with NX and GET).
type TokenBucketHash struct{}

var _ Algorithm = (*TokenBucketHash)(nil)

func init() { register(TokenBucketHash{}) }

// Describe implements Algorithm.
func (TokenBucketHash) Describe() Description {
	return Description{
		Name:           "token-bucket",
		Script:         "token_bucket.lua",
		Origin:         "seed 003 (Jedis token bucket in Lua), corrected",
		Clock:          ClockServer,
		KeysPerSubject: 1,
		Memory:         "O(1)",
		Corrected: "one key instead of two, written with its expiry in one SET; server TIME in µs instead of the client's whole seconds; " +
			"stored time never goes back; exact integer tokens; nothing written on denial; the key lives until the bucket is full again (and less than half the refill time longer)",
		Cost: true,
	}
}

// Contract implements Algorithm: token-bucket(Capacity(), Limit per Window).
func (TokenBucketHash) Contract(l Limit) (Contract, error) {
	if err := l.Validate(); err != nil {
		return Contract{}, err
	}
	return Contract{Kind: TokenBucket, Capacity: l.Capacity(), RefillPermits: l.Limit, RefillPer: l.Window}, nil
}

// Prepare implements Algorithm. The capacity in units, Capacity()·W/gcd(Limit, W in µs), must stay
// below 2^53 so that the script's arithmetic is exact.
func (a TokenBucketHash) Prepare(ctx context.Context, c redis.UniversalClient, l Limit, prefix string) (Limiter, error) {
	var unit, rate, capacity, q int64
	s, err := prepareScript(ctx, a, c, l, prefix, func() error {
		unit, rate = tokenBucketUnits(l)
		if l.Capacity() > maxExact/unit {
			return fmt.Errorf("%w: capacity %d with window %s needs more than 53 bits", ErrBadLimit, l.Capacity(), l.Window)
		}
		capacity = l.Capacity() * unit
		if q = expiryQuantum(capacity, rate); q > (maxExact-capacity)/rate {
			return fmt.Errorf("%w: capacity %d refilled %d per %s needs more than 53 bits for its expiry", ErrBadLimit, l.Capacity(), l.Limit, l.Window)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &tokenBucketLimiter{script: s, fresh: isCluster(c), prefix: prefix, unit: unit, rate: rate, capacity: capacity, quantum: q, seed: maphash.MakeSeed()}, nil
}

// expiryQuantum is the Q of scripts/token_bucket.lua for a capacity of capacity units refilled at
// rate units per µs: a quarter of Tfull = ⌈capacity/rate⌉ µs (the time an empty bucket takes to
// refill), rounded up to a whole ms, and at least 1 ms. The script sets a key's expiry once per
// quantum of the time its bucket is full again, at or after the end of that quantum, so a key
// lives less than 2Q after its bucket is full again, at most Tfull + 2Q after its last admission.
func expiryQuantum(capacity, rate int64) int64 {
	full := (capacity + rate - 1) / rate
	return max(1000, ((full+3)/4+999)/1000*1000)
}

// quantumEnd is the end of the quantum of q µs that the time F = ts + d/rate µs, at which a bucket
// counted at ts µs and missing d units is full again, falls in: kQ + Q with kQ = ts − a +
// q·⌊(a·rate + d)/(q·rate)⌋ and a = ts mod q, as scripts/token_bucket.lua computes it.
func quantumEnd(ts, d, rate, q int64) int64 {
	a := ts - floorDiv(ts, q)*q
	return ts - a + q*((a*rate+d)/(q*rate)) + q
}

// freshExpiry is the expiry in ms that scripts/token_bucket.lua takes from its caller for the state
// of an admission of need units into a full bucket at now µs (the server's time, estimated): the
// script takes it when it is at least a quantum after the time F = now + need/rate the bucket is
// full again and less than two, which this one is, ⌈(F + 3Q/2)/1000⌉, while the estimate is within
// about Q/2 of the server's time.
func freshExpiry(now, need, rate, q int64) int64 {
	return (now + (need+rate-1)/rate + q + q/2 + 999) / 1000
}

// Model implements Algorithm.
func (TokenBucketHash) Model(l Limit) Model { return newTokenBucketModel(l) }

type tokenBucketLimiter struct {
	script               *script
	fresh                bool // prepared on a cluster client: see evalCmd
	prefix               string
	unit, rate, capacity int64
	quantum              int64 // µs, expiryQuantum
	clock                serverClock
	// kept holds, for the subjects that hash to each slot, until when on the server's clock the
	// last reply said the subject's key is kept (decodeKept): a request sent before then reads the
	// stored state first rather than try to write a missing key's. A hint only: a wrong one costs
	// a command, never a decision.
	kept [keptSlots]atomic.Int64
	seed maphash.Seed
}

// keptSlots is the number of slots of tokenBucketLimiter.kept: subjects beyond it share slots,
// and a shared slot's hint is only as good as its last writer's.
const keptSlots = 4096

func (t *tokenBucketLimiter) Keys(req Request) []string {
	return []string{subjectKey(t.prefix, "tb", req.Subject)}
}

// tokenBucketCall is the Call of a tokenBucketLimiter: the script's arguments are the key, the
// units needed, R, C·U, the expiry quantum, the estimated expiry of a missing key's state in ms
// (0: read the stored state first), and the fixed time in tests. sentAt is when the request was
// sent (local µs), kept the request's subject's slot of the limiter's kept.
type tokenBucketCall struct {
	scriptCall
	t                           *tokenBucketLimiter
	key                         argBuf
	need, expiry, fixed, sentAt int64
	kept                        *atomic.Int64
	now, at                     *evalCmd // without and with a fixed time
}

func (t *tokenBucketLimiter) NewCall() Call {
	c := &tokenBucketCall{scriptCall: scriptCall{name: "token-bucket"}, t: t}
	keys := []*argBuf{&c.key}
	c.now = newEvalCmd(t.script, t.fresh, keys, &c.need, t.rate, t.capacity, t.quantum, &c.expiry)
	c.at = newEvalCmd(t.script, t.fresh, keys, &c.need, t.rate, t.capacity, t.quantum, &c.expiry, &c.fixed)
	return c
}

func (c *tokenBucketCall) Send(ctx context.Context, rc redis.Cmdable, req Request) {
	t := c.t
	cost, err := checkRequest("token-bucket", req, true)
	if err != nil {
		c.fail(err)
		return
	}
	if limit := t.capacity / t.unit; cost > limit {
		// Never admissible (and cost·U stays exact); still ask Redis so that the decision
		// carries a time.
		cost = limit + 1
	}
	c.key.subjectKey(t.prefix, "tb", req.Subject)
	c.need = cost * t.unit
	// A subject whose key the last reply said is still kept reads its state first (expiry 0);
	// any other first tries to write a missing key's state, with an expiry estimated on the
	// server's clock (the script formats its own only when this one is out of its range).
	c.sentAt = time.Now().UnixMicro()
	c.kept = &t.kept[maphash.String(t.seed, req.Subject)%keptSlots]
	if now := t.clock.now(req, c.sentAt); now < c.kept.Load() {
		c.expiry = 0
	} else {
		c.expiry = freshExpiry(now, c.need, t.rate, t.quantum)
	}
	e := c.now
	if c.fixed = fixedMicros(req); c.fixed != 0 {
		e = c.at
	}
	c.send(ctx, rc, e)
}

func (c *tokenBucketCall) Result() (Decision, error) {
	raw, err := c.reply()
	if err != nil {
		return Decision{}, err
	}
	d, kept, err := c.t.decodeKept(raw, c.need)
	d, err = c.decoded(d, err)
	if err == nil {
		c.kept.Store(kept)
		if c.fixed == 0 {
			c.t.clock.observe(d.TimeMicros, c.sentAt)
		}
	}
	return d, err
}

// decode decodes the reply of scripts/token_bucket.lua, the state alone or "<allowed 0|1> <s> <µs>
// <state>" (see tokenBucketReply), for a request of need = n·U units. The bucket is refilled from ts to the
// decision time t (as the script did; nothing when ts >= t) to b units (the state after an
// admission is already at t), and
//
//	remaining = ⌊b/U⌋ permits
//	retry-after = ⌈(need − b)/R⌉ µs after a denial (until need units are there), or 0 when
//	need > C·U (they never are)
//
// as the script computed them before it left the arithmetic to Go. A reply whose decision
// contradicts its own state (tokens outside [0, C·U], an admission whose state is older than its
// time, a denial the refilled bucket would have allowed) is an error wrapping ErrBadReply, never
// an admission.
func (t *tokenBucketLimiter) decode(raw any, need int64) (Decision, error) {
	d, _, err := t.decodeKept(raw, need)
	return d, err
}

// decodeKept is decode, and also returns until when the subject's key is kept, on the server's
// clock: at least until the end of the expiry quantum that the time its state's bucket is full
// again falls in (scripts/token_bucket.lua).
func (t *tokenBucketLimiter) decodeKept(raw any, need int64) (Decision, int64, error) {
	allowed, now, tokens, ts, err := tokenBucketReply(raw)
	if err != nil {
		return Decision{}, 0, err
	}
	if tokens > t.capacity {
		return Decision{}, 0, badReply(fmt.Sprintf("%d tokens in a bucket of %d", tokens, t.capacity), raw)
	}
	kept := quantumEnd(ts, t.capacity-tokens, t.rate, t.quantum)
	if now > ts {
		if allowed {
			return Decision{}, 0, badReply(fmt.Sprintf("admitted with state counted at %d µs, before the decision time", ts), raw)
		}
		tokens = refill(tokens, now-ts, t.rate, t.capacity)
	}
	d := Decision{Allowed: allowed, Remaining: tokens / t.unit, TimeMicros: now, Clock: ClockServer}
	if !allowed {
		if tokens >= need {
			return Decision{}, 0, badReply(fmt.Sprintf("denied with %d tokens, enough for %d", tokens, need), raw)
		}
		if need <= t.capacity {
			d.RetryAfter = time.Duration((need-tokens+t.rate-1)/t.rate) * time.Microsecond
		}
	}
	return d, kept, nil
}

// tokenBucketReply reads the reply of scripts/token_bucket.lua: the state after an admission
// decided at its ts, 16 bytes of struct.pack('<dd', tokens, ts) (two little-endian IEEE doubles
// holding integers below 2^53), or "<allowed 0|1> <s> <µs> " and then such a state. Any other
// shape, or a double that is not such an integer, is an error wrapping ErrBadReply that shows the
// raw reply.
func tokenBucketReply(raw any) (allowed bool, now, tokens, ts int64, err error) {
	s, ok := raw.(string)
	if !ok {
		return false, 0, 0, 0, badReply("want a string", raw)
	}
	if len(s) == 16 {
		tokens, ts, err := packedState(s, raw)
		return true, ts, tokens, ts, err
	}
	head, state, found := cutN(s, ' ', 3)
	if !found {
		return false, 0, 0, 0, badReply("want three fields and the state", raw)
	}
	v, err := splitFields(head, 3, raw)
	if err == nil {
		allowed, err = Bool01(v[0], raw)
	}
	if err == nil {
		now, err = timeMicros(v[1], v[2], raw)
	}
	if err != nil {
		return false, 0, 0, 0, err
	}
	if len(state) != 16 {
		return false, 0, 0, 0, badReply(fmt.Sprintf("state of %d bytes, want 16", len(state)), raw)
	}
	if tokens, ts, err = packedState(state, raw); err != nil {
		return false, 0, 0, 0, err
	}
	return allowed, now, tokens, ts, nil
}

// packedState reads a state of scripts/token_bucket.lua, 16 bytes: tokens >= 0 and ts > 0,
// both integers below 2^53.
func packedState(state string, raw any) (tokens, ts int64, err error) {
	tokens, ok1 := exactInt(state[:8])
	ts, ok2 := exactInt(state[8:])
	if !ok1 || !ok2 || tokens < 0 || ts <= 0 {
		return 0, 0, badReply("state is not two non-negative integers below 2^53", raw)
	}
	return tokens, ts, nil
}

// cutN splits s after the n-th sep: the text before it and the rest; found is false when s has
// fewer than n seps.
func cutN(s string, sep byte, n int) (head, rest string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			if n--; n == 0 {
				return s[:i], s[i+1:], true
			}
		}
	}
	return "", "", false
}

// exactInt reads 8 bytes as a little-endian IEEE double and reports whether it holds an integer
// in [−2^53, 2^53].
func exactInt(b string) (int64, bool) {
	f := math.Float64frombits(binary.LittleEndian.Uint64([]byte(b)))
	if f != math.Trunc(f) || math.Abs(f) > maxExact {
		return 0, false
	}
	return int64(f), true
}
