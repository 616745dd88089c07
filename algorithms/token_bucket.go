package algorithms

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// TokenBucketHash is `token-bucket`: seed 003 corrected (scripts/token_bucket.lua). One hash per
// subject holds the tokens, as exact integers in units of 1/U permit, and the server time in µs
// they were counted at; Limit permits refill per Window up to Capacity(). Nothing is written on a
// denial; the key expires when the bucket would be full. Cost > 1 is supported.
type TokenBucketHash struct{}

var _ Algorithm = (*TokenBucketHash)(nil)

func init() { register(TokenBucketHash{}) }

// Describe implements Algorithm.
func (TokenBucketHash) Describe() Description {
	return Description{
		Name:           "token-bucket",
		Origin:         "seed 003 (Jedis token bucket in Lua), corrected",
		Clock:          ClockServer,
		KeysPerSubject: 1,
		Memory:         "O(1)",
		Corrected: "one hash instead of two keys; server TIME in µs instead of the client's whole seconds; " +
			"stored time never goes back; exact integer tokens; nothing written on denial; TTL = time to refill",
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
	if _, err := a.Contract(l); err != nil {
		return nil, fmt.Errorf("token-bucket: %w", err)
	}
	if err := CheckPrefix(prefix); err != nil {
		return nil, fmt.Errorf("token-bucket: %w", err)
	}
	unit, rate := tokenBucketUnits(l)
	if l.Capacity() > maxExact/unit {
		return nil, fmt.Errorf("token-bucket: %w: capacity %d with window %s needs more than 53 bits", ErrBadLimit, l.Capacity(), l.Window)
	}
	s, err := loadScript(ctx, c, "token_bucket.lua")
	if err != nil {
		return nil, fmt.Errorf("token-bucket: %w", err)
	}
	return &tokenBucketLimiter{script: s, prefix: prefix, unit: unit, rate: rate, capacity: l.Capacity() * unit}, nil
}

// Model implements Algorithm.
func (TokenBucketHash) Model(l Limit) Model { return newTokenBucketModel(l) }

type tokenBucketLimiter struct {
	script               *script
	prefix               string
	unit, rate, capacity int64
}

func (t *tokenBucketLimiter) Keys(req Request) []string {
	return []string{subjectKey(t.prefix, "tb", req.Subject)}
}

func (t *tokenBucketLimiter) Do(ctx context.Context, c redis.Cmdable, req Request) Pending {
	cost, err := checkRequest("token-bucket", req, true)
	if err != nil {
		return failedPending(err)
	}
	if limit := t.capacity / t.unit; cost > limit {
		// Never admissible (and cost·U stays exact); still ask Redis so that the decision
		// carries a time.
		cost = limit + 1
	}
	need := cost * t.unit
	args := []any{need, t.rate, t.capacity}
	if fixed := fixedMicros(req); fixed != 0 {
		args = append(args, fixed)
	}
	cmd := t.script.run(ctx, c, t.Keys(req), args...)
	return decodedPending("token-bucket", cmd, func(raw any) (Decision, error) { return t.decode(raw, need) })
}

// decode decodes the reply of scripts/token_bucket.lua, "<allowed 0|1> <tokens> <ts µs> <s> <µs>",
// for a request of need = n·U units. The bucket is refilled from ts to the decision time t (as the
// script did; nothing when ts >= t) to b units (the state after an admission is already at t), and
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
	v, allowed, now, err := stateReply(raw, 5)
	if err != nil {
		return Decision{}, err
	}
	tokens, ts := v[1], v[2]
	if tokens > t.capacity {
		return Decision{}, badReply(fmt.Sprintf("%d tokens in a bucket of %d", tokens, t.capacity), raw)
	}
	if now > ts {
		if allowed {
			return Decision{}, badReply(fmt.Sprintf("admitted with state counted at %d µs, before the decision time", ts), raw)
		}
		tokens = refill(tokens, now-ts, t.rate, t.capacity)
	}
	d := Decision{Allowed: allowed, Remaining: tokens / t.unit, TimeMicros: now, Clock: ClockServer}
	if !allowed {
		if tokens >= need {
			return Decision{}, badReply(fmt.Sprintf("denied with %d tokens, enough for %d", tokens, need), raw)
		}
		if need <= t.capacity {
			d.RetryAfter = time.Duration((need-tokens+t.rate-1)/t.rate) * time.Microsecond
		}
	}
	return d, nil
}
