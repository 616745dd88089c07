package algorithms

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// SlidingCounter is `sliding-counter`: the sliding window counter Cloudflare describes
// (scripts/sliding_counter.lua). One hash per subject holds the current aligned window's index and
// the permits admitted in it and in the window before; a request is admitted when
// prev·(W − e)/W + cur + cost <= Limit, in exact integers, with e the server time into the current
// window. Denials are not counted. Cost > 1 is supported.
//
// Its contract is fixed-window(Limit, Window), exactly (cur never passes Limit). As a sliding
// window it is approximate: the estimate assumes the previous window's permits were evenly spread.
type SlidingCounter struct{}

var _ Algorithm = (*SlidingCounter)(nil)

func init() { register(SlidingCounter{}) }

// Describe implements Algorithm.
func (SlidingCounter) Describe() Description {
	return Description{
		Name:           "sliding-counter",
		Origin:         "Cloudflare's sliding window counter",
		Clock:          ClockServer,
		KeysPerSubject: 1,
		Memory:         "O(1)",
		Corrected: "exact integer comparison prev·(W−e) + (cur+n)·W <= L·W, denials not counted; " +
			"fixed-window(L, W) exactly, sliding-window(L, W) only approximately",
		Cost: true,
	}
}

// Contract implements Algorithm: fixed-window(Limit, Window).
func (SlidingCounter) Contract(l Limit) (Contract, error) {
	if err := l.Validate(); err != nil {
		return Contract{}, err
	}
	return Contract{Kind: FixedWindow, Limit: l.Limit, Window: l.Window}, nil
}

// Prepare implements Algorithm. Limit·Window in µs must stay below 2^53 so that the script's
// comparison is exact.
func (a SlidingCounter) Prepare(ctx context.Context, c redis.UniversalClient, l Limit, prefix string) (Limiter, error) {
	if _, err := a.Contract(l); err != nil {
		return nil, fmt.Errorf("sliding-counter: %w", err)
	}
	if err := CheckPrefix(prefix); err != nil {
		return nil, fmt.Errorf("sliding-counter: %w", err)
	}
	w := l.Window.Microseconds()
	if l.Limit > maxExact/(2*w) {
		return nil, fmt.Errorf("sliding-counter: %w: limit %d × window %s needs more than 53 bits", ErrBadLimit, l.Limit, l.Window)
	}
	s, err := loadScript(ctx, c, "sliding_counter.lua")
	if err != nil {
		return nil, fmt.Errorf("sliding-counter: %w", err)
	}
	return &slidingCounterLimiter{script: s, prefix: prefix, limit: l.Limit, windowUs: w}, nil
}

// Model implements Algorithm.
func (SlidingCounter) Model(l Limit) Model { return newSlidingCounterModel(l) }

type slidingCounterLimiter struct {
	script   *script
	prefix   string
	limit    int64
	windowUs int64
}

func (s *slidingCounterLimiter) Keys(req Request) []string {
	return []string{subjectKey(s.prefix, "sc", req.Subject)}
}

func (s *slidingCounterLimiter) Do(ctx context.Context, c redis.Cmdable, req Request) Pending {
	cost, err := checkRequest("sliding-counter", req, true)
	if err != nil {
		return failedPending(err)
	}
	cmd := s.script.run(ctx, c, s.Keys(req), fixedMicros(req), s.limit, s.windowUs, cost)
	return scriptPending("sliding-counter", cmd, ClockServer)
}
