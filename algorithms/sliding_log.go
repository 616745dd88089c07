package algorithms

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// SlidingLog is `sliding-log`: seed 002 made atomic (scripts/sliding_log.lua). A sorted set per
// subject holds one uniquely named member per admitted permit, scored by its Redis TIME in µs;
// a request is admitted when the members in (t−W, t] plus cost are at most Limit. Denials are not
// recorded. Memory grows with Limit. Cost > 1 is supported.
type SlidingLog struct{}

var _ Algorithm = (*SlidingLog)(nil)

func init() { register(SlidingLog{}) }

// Describe implements Algorithm.
func (SlidingLog) Describe() Description {
	return Description{
		Name:           "sliding-log",
		Origin:         "seed 002 (Go sliding window log on a sorted set), made atomic",
		Clock:          ClockServer,
		KeysPerSubject: 1,
		Memory:         "O(limit)",
		Corrected: "one script instead of four separate commands (atomic); count checked before adding; " +
			"denied requests not recorded; unique members; server TIME in µs instead of the client's ms",
		Cost: true,
	}
}

// Contract implements Algorithm: sliding-window(Limit, Window).
func (SlidingLog) Contract(l Limit) (Contract, error) {
	if err := l.Validate(); err != nil {
		return Contract{}, err
	}
	return Contract{Kind: SlidingWindow, Limit: l.Limit, Window: l.Window}, nil
}

// Prepare implements Algorithm.
func (a SlidingLog) Prepare(ctx context.Context, c redis.UniversalClient, l Limit, prefix string) (Limiter, error) {
	if _, err := a.Contract(l); err != nil {
		return nil, fmt.Errorf("sliding-log: %w", err)
	}
	if err := CheckPrefix(prefix); err != nil {
		return nil, fmt.Errorf("sliding-log: %w", err)
	}
	s, err := loadScript(ctx, c, "sliding_log.lua")
	if err != nil {
		return nil, fmt.Errorf("sliding-log: %w", err)
	}
	return &slidingLogLimiter{script: s, prefix: prefix, limit: l.Limit, windowUs: l.Window.Microseconds()}, nil
}

// Model implements Algorithm.
func (SlidingLog) Model(l Limit) Model { return newSlidingLogModel(l) }

type slidingLogLimiter struct {
	script   *script
	prefix   string
	limit    int64
	windowUs int64
}

func (s *slidingLogLimiter) Keys(req Request) []string {
	return []string{subjectKey(s.prefix, "sl", req.Subject)}
}

func (s *slidingLogLimiter) Do(ctx context.Context, c redis.Cmdable, req Request) Pending {
	cost, err := checkRequest("sliding-log", req, true)
	if err != nil {
		return failedPending(err)
	}
	cmd := s.script.run(ctx, c, s.Keys(req), fixedMicros(req), s.limit, s.windowUs, cost)
	return scriptPending("sliding-log", cmd, ClockServer)
}
