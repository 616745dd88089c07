package algorithms

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ResourceConsumer is seed 004's two-level sliding-window log, corrected
// (scripts/resource_consumer.lua): one sorted set for the limited subject (the shared resource)
// and one for each consumer (Request.Client) of that subject, both scored by Redis TIME in µs. A
// request is admitted only when both windows have room for its cost, and is then recorded in
// both (all or nothing). Entries are unique, only admissions are recorded, and both keys expire W
// after the last admission.
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
		Origin:         "seed 004 (sliding-window log for a resource and each consumer), corrected",
		Clock:          ClockServer,
		KeysPerSubject: 2, // the resource's set + one per consumer
		Memory:         "O(limit)",
		Corrected: "scores in µs of TIME instead of whole seconds; `count + cost <= limit` on both " +
			"sets instead of `==` on the resource; unique members; keys expire W after the last " +
			"admission",
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
func (ResourceConsumer) Prepare(ctx context.Context, c redis.UniversalClient, l Limit, prefix string) (Limiter, error) {
	const name = "resource-consumer"
	if err := l.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := CheckPrefix(prefix); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s, err := loadScript(ctx, c, "resource_consumer.lua")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &resourceConsumerLimiter{
		name:   name,
		script: s,
		prefix: prefix,
		args:   []any{l.Limit, l.Consumer(), l.Window.Microseconds()},
	}, nil
}

// Model implements Algorithm: the two-level sliding log of model_twolevel.go.
func (ResourceConsumer) Model(l Limit) Model { return newTwoLevelModel(l) }

// resourceConsumerLimiter is a prepared ResourceConsumer or ResourceConsumerPublished.
type resourceConsumerLimiter struct {
	name   string
	script *script
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

// Do implements Limiter.
func (r *resourceConsumerLimiter) Do(ctx context.Context, c redis.Cmdable, req Request) Pending {
	cost, err := checkRequest(r.name, req, true)
	if err != nil {
		return failedPending(err)
	}
	args := make([]any, 0, len(r.args)+2)
	args = append(args, fixedMicros(req))
	args = append(args, r.args...)
	args = append(args, cost)
	cmd := r.script.run(ctx, c, r.Keys(req), args...)
	return scriptPending(r.name, cmd, ClockServer)
}
