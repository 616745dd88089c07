package algorithms

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// ResourceConsumerPublished is seed 004 as written (scripts/resource_consumer_published.lua): a
// sorted set for the resource (the subject) and one per consumer (Request.Client), scored by whole
// seconds of Redis TIME; the resource is refused only when its count equals the limit (`==`),
// the consumer when its count before adding is at its limit. It promises the same two limits as
// ResourceConsumer, at 1 s granularity, and breaks them: see Describe().Flaw.
//
// The window is sent in whole seconds, Window rounded up (the article takes seconds). Request.Cost
// is supported by adding cost entries, which is what lets a count jump past the `==` check.
// Retry-after is always 0: the design answers only True or False.
type ResourceConsumerPublished struct{}

var _ Algorithm = (*ResourceConsumerPublished)(nil)

func init() { register(ResourceConsumerPublished{}) }

// Describe implements Algorithm.
func (ResourceConsumerPublished) Describe() Description {
	return Description{
		Name:           "resource-consumer-published",
		Script:         "resource_consumer_published.lua",
		Origin:         "seed 004 (sliding-window log for a resource and each consumer), as written",
		Clock:          ClockServer,
		KeysPerSubject: 2, // the resource's set + one per consumer
		Memory:         "O(limit)",
		Flaw: "whole seconds of TIME, so a burst straddling a second sees an emptier window (up " +
			"to 2x the limit in one real window); the resource is refused only when its count is " +
			"exactly the limit (`==`), so a count pushed past it (cost > 1) is never caught again " +
			"until entries expire; sec:µs members collide; keys never expire; no retry-after",
		Cost: true,
	}
}

// Contract implements Algorithm: the two limits of ResourceConsumer, at 1 s granularity.
func (ResourceConsumerPublished) Contract(l Limit) (Contract, error) {
	if err := l.Validate(); err != nil {
		return Contract{}, err
	}
	return twoLevelContract(l, time.Second), nil
}

// Prepare implements Algorithm.
func (a ResourceConsumerPublished) Prepare(ctx context.Context, c redis.UniversalClient, l Limit, prefix string) (Limiter, error) {
	s, err := prepareScript(ctx, a, c, l, prefix)
	if err != nil {
		return nil, err
	}
	seconds := int64((l.Window + time.Second - 1) / time.Second)
	return &resourceConsumerLimiter{
		fresh:  isCluster(c),
		name:   "resource-consumer-published",
		script: s,
		prefix: prefix,
		args:   []any{seconds, l.Limit, l.Consumer()},
	}, nil
}

// Model implements Algorithm; nil, as for every published variant.
func (ResourceConsumerPublished) Model(Limit) Model { return nil }
