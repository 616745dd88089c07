package algorithms

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"
)

// FixedWindowCounter is `fixed-window`: seed 001 corrected. It admits at most Limit permits in
// every window [kW, (k+1)W) of Unix time on the server's clock (scripts/fixed_window.lua). One
// hash per subject holds one counter per window index (the current one; earlier ones are deleted
// when a window starts); the script HINCRBYs it first and denies when the count passes Limit,
// taking the increment back for a cost above 1 (a denial of cost 1 means the window is full, so
// leaving it changes no decision and saves a command). The expiry is set once per window, to its
// end. Cost > 1 is supported.
type FixedWindowCounter struct{}

var _ Algorithm = (*FixedWindowCounter)(nil)

func init() { register(FixedWindowCounter{}) }

// Describe implements Algorithm.
func (FixedWindowCounter) Describe() Description {
	return Description{
		Name:           "fixed-window",
		Origin:         "seed 001 (Spring WebFlux fixed window), corrected",
		Clock:          ClockServer,
		KeysPerSubject: 1,
		Memory:         "O(1)",
		Corrected: "server TIME instead of the client's minute; any window W; expiry set once per " +
			"window instead of refreshed per admission; check and count in one script, admitted only if the whole cost fits",
		Cost: true,
	}
}

// Contract implements Algorithm: fixed-window(Limit, Window).
func (FixedWindowCounter) Contract(l Limit) (Contract, error) {
	if err := l.Validate(); err != nil {
		return Contract{}, err
	}
	return Contract{Kind: FixedWindow, Limit: l.Limit, Window: l.Window}, nil
}

// Prepare implements Algorithm.
func (a FixedWindowCounter) Prepare(ctx context.Context, c redis.UniversalClient, l Limit, prefix string) (Limiter, error) {
	if _, err := a.Contract(l); err != nil {
		return nil, fmt.Errorf("fixed-window: %w", err)
	}
	if err := CheckPrefix(prefix); err != nil {
		return nil, fmt.Errorf("fixed-window: %w", err)
	}
	s, err := loadScript(ctx, c, "fixed_window.lua")
	if err != nil {
		return nil, fmt.Errorf("fixed-window: %w", err)
	}
	return &fixedWindowLimiter{script: s, prefix: prefix, limit: l.Limit, windowUs: l.Window.Microseconds()}, nil
}

// Model implements Algorithm.
func (FixedWindowCounter) Model(l Limit) Model { return newFixedWindowModel(l) }

type fixedWindowLimiter struct {
	script   *script
	prefix   string
	limit    int64
	windowUs int64
}

func (f *fixedWindowLimiter) Keys(req Request) []string {
	return []string{subjectKey(f.prefix, "fw", req.Subject)}
}

func (f *fixedWindowLimiter) Do(ctx context.Context, c redis.Cmdable, req Request) Pending {
	cost, err := checkRequest("fixed-window", req, true)
	if err != nil {
		return failedPending(err)
	}
	args := []any{f.limit, f.windowUs}
	if fixed := fixedMicros(req); fixed != 0 {
		args = append(args, cost, fixed)
	} else if cost != 1 {
		args = append(args, cost)
	}
	cmd := f.script.run(ctx, c, f.Keys(req), args...)
	return decodedPending("fixed-window", cmd, func(raw any) (Decision, error) { return f.decode(raw, cost) })
}

// decode decodes the reply of scripts/fixed_window.lua, "<allowed 0|1> <count> <window> <s> <µs>",
// for a request of cost permits at time t, in window k = ⌊t/W⌋:
//
//   - window k, allowed: remaining L − count, retry-after 0;
//   - window k, denied (count > L, this cost counted in): remaining max(0, L − count + cost),
//     retry-after (k+1)·W − t µs until the window ends, or 0 when cost > L (it never fits);
//   - a later window j > k, denied (the clock stepped back): remaining 0, retry-after j·W − t µs
//     until that window starts;
//
// as the script computed them before it left the arithmetic to Go. Any other reply (an earlier
// window, an admission past the limit, a denial within it) is an error wrapping ErrBadReply,
// never an admission.
func (f *fixedWindowLimiter) decode(raw any, cost int64) (Decision, error) {
	v, allowed, now, err := stateReply(raw, 5)
	if err != nil {
		return Decision{}, err
	}
	count, w, k := v[1], v[2], floorDiv(now, f.windowUs)
	d := Decision{Allowed: allowed, TimeMicros: now, Clock: ClockServer}
	switch {
	case w == k && allowed && count >= cost && count <= f.limit:
		d.Remaining = f.limit - count
	case w == k && !allowed && count > f.limit:
		d.Remaining = max(0, f.limit-count+cost)
		if cost <= f.limit {
			d.RetryAfter = time.Duration((k+1)*f.windowUs-now) * time.Microsecond
		}
	case w > k && !allowed && w < math.MaxInt64/f.windowUs:
		d.RetryAfter = time.Duration(w*f.windowUs-now) * time.Microsecond
	default:
		return Decision{}, badReply(fmt.Sprintf("allowed=%v with count %d in window %d, at a time in window %d (limit %d, cost %d)", allowed, count, w, k, f.limit, cost), raw)
	}
	return d, nil
}
