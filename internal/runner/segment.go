package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/clock"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/verify"
	"github.com/limitbench/limitbench/result"
)

// DefaultLead is how long after the first generator arrives at the barrier the load starts.
const DefaultLead = 5 * time.Second

// Segment makes a run one generator's part of a segmented run (Options.Segment): it sends
// Share's part of the schedule, on the key prefix of RunID (shared by every segment, so all hit
// the same subjects), meets the other generators at a barrier in the Redis under test or at
// StartAt, and records every decision time on the server's clock (its measured offset, with the
// offset's error in each interval) so that `limitbench merge` verifies the segments' histories as
// one. Each entry of the result then carries a result.Partial.
type Segment struct {
	// Share is the segment, I/N with N > 1.
	Share load.Share
	// RunID is shared by the run's segments (required).
	RunID string
	// StartAt, when set, is when every segment starts each measurement's load: the first at
	// StartAt, the next ones at the barrier. Zero: at the barrier only.
	StartAt time.Time
	// Lead is how long after the first generator arrives at a measurement's barrier its load
	// starts (default DefaultLead): the other generators must arrive within it, else they
	// start late, and say so.
	Lead time.Duration
	// ClockOffset is added to this generator's clock: the time it gives client-clock
	// algorithms and the times it records (testing only: it imitates machines whose clocks
	// differ). Merged results must not depend on it for server-clock algorithms.
	ClockOffset time.Duration

	met bool // a measurement has met the others (StartAt applies to the first only)
}

// DefaultRunID returns the run id segments share when none is given: the first 12 hex digits of
// the scenario's hash (which covers its seed).
func DefaultRunID(scenarioHash string) string {
	if len(scenarioHash) < 12 {
		return scenarioHash
	}
	return "seg-" + scenarioHash[:12]
}

// clockShifted is a Limiter whose requests carry a client time moved by shift.
type clockShifted struct {
	algorithms.Limiter
	shift time.Duration
}

// NewCall returns a Call of the limiter that moves each request's client time by shift.
func (l clockShifted) NewCall() algorithms.Call {
	return shiftedCall{l.Limiter.NewCall(), l.shift}
}

// shiftedCall is a Call whose requests carry a client time moved by shift.
type shiftedCall struct {
	algorithms.Call
	shift time.Duration
}

// Send sends req with its client time moved by shift.
func (c shiftedCall) Send(ctx context.Context, rc redis.Cmdable, req algorithms.Request) {
	req.ClientTime = req.ClientTime.Add(c.shift)
	c.Call.Send(ctx, rc, req)
}

// meeting is where one measurement of a segmented run met the other generators.
type meeting struct {
	start time.Time     // the agreed start, on this generator's clock
	late  time.Duration // how late this generator arrived (0: on time)
}

// meet returns when the load of the measurement on prefix starts: at g.StartAt for the first
// measurement, else at the barrier in tgt: the first generator to arrive sets the start to the
// server's TIME plus the lead (SET NX), and every generator reads it and converts it to its own
// clock with off. span is the measurement's length, warmup included.
func (g *Segment) meet(ctx context.Context, tgt *redisenv.Target, prefix string, off clock.Offset, span time.Duration, first bool) (meeting, error) {
	var m meeting
	if first && !g.StartAt.IsZero() {
		m.start = g.StartAt
	} else {
		lead := g.Lead
		if lead <= 0 {
			lead = DefaultLead
		}
		now, err := tgt.Client.Time(ctx).Result()
		if err != nil {
			return m, fmt.Errorf("barrier: TIME: %w", err)
		}
		key := prefix + "start"
		ttl := lead + span + time.Minute
		if err := tgt.Client.SetNX(ctx, key, now.Add(lead).UnixMicro(), ttl).Err(); err != nil {
			return m, fmt.Errorf("barrier: SET %s: %w", key, err)
		}
		v, err := tgt.Client.Get(ctx, key).Int64()
		if err != nil {
			return m, fmt.Errorf("barrier: GET %s: %w", key, err)
		}
		if err := tgt.Client.Incr(ctx, prefix+"arrived").Err(); err != nil {
			return m, fmt.Errorf("barrier: INCR: %w", err)
		}
		if err := tgt.Client.Expire(ctx, prefix+"arrived", ttl).Err(); err != nil {
			return m, fmt.Errorf("barrier: EXPIRE: %w", err)
		}
		// The start on the server's clock, moved to this generator's (with a monotonic reading).
		local := time.UnixMicro(v).Add(-off.Offset)
		m.start = time.Now().Add(time.Until(local))
	}
	if late := time.Since(m.start); late > 0 {
		m.late = late
	}
	return m, nil
}

// leave records that this generator finished the measurement on prefix and reports whether it
// was the last of the run's segments to do so (it then removes the keys), and how many
// generators had arrived at the barrier.
func (g *Segment) leave(ctx context.Context, tgt *redisenv.Target, prefix string) (last bool, arrived int64) {
	n, err := tgt.Client.Incr(ctx, prefix+"done").Result()
	if err != nil {
		// Redis is gone or refuses: leave the keys (they expire) rather than remove them under
		// generators still running.
		return false, 0
	}
	arrived, _ = tgt.Client.Get(ctx, prefix+"arrived").Int64()
	return n >= int64(g.Share.Count), arrived
}

// partialOf returns the result.Partial of a measurement of a segmented run.
func partialOf(e *result.Entry, res *load.Result, rec *recording, off clock.Offset, m meeting) (*result.Partial, error) {
	p := &result.Partial{
		Counts: res.Counts, Scheduled: res.Scheduled,
		DurationNS: int64(res.Duration), WarmupNS: int64(res.Plan.Warmup), BinNS: int64(res.Plan.Bin),
		Canceled: res.Canceled, Behind: res.Behind,
		Log:            result.LogFile(e, false),
		MeasuredFromUS: rec.log.Micros(res.Plan.Warmup),
		ClockOffsetUS:  float64(off.Offset) / 1e3, ClockErrorUS: float64(off.Err) / 1e3,
		LateStartMS: float64(m.late) / 1e6,
	}
	var errs []error
	enc := func(a interface{ MarshalBinary() ([]byte, error) }) []byte {
		b, err := a.MarshalBinary()
		errs = append(errs, err)
		return b
	}
	p.Histograms, p.Timeline, p.Errors = enc(rec.hist), enc(rec.tl), enc(rec.errs)
	p.LogData = enc(rec.log)
	if rec.warm != nil {
		p.WarmupLog = result.LogFile(e, true)
		p.WarmupLogData = enc(rec.warm)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("encode the partial result of %s: %w", e.Name(), err)
	}
	return p, nil
}

// segmentInfo returns the result.Segment of a run of g on a scenario whose hash is hash.
func (g *Segment) segmentInfo(hash string) *result.Segment {
	start := "barrier"
	if !g.StartAt.IsZero() {
		start = "start-at " + g.StartAt.UTC().Format(time.RFC3339Nano)
	}
	return &result.Segment{RunID: g.RunID, Index: g.Share.Index, Count: g.Share.Count, ScenarioHash: hash, Start: start,
		TestClockOffsetUS: g.ClockOffset.Microseconds()}
}

// oneClock puts r's admission logs on the server's clock for every algorithm (see
// verify.AdmissionLog.OneClock).
func (r *recording) oneClock() {
	r.log.OneClock = true
	if r.warm != nil {
		r.warm.OneClock = true
	}
}

// shiftedLog is an admission log whose generator's clock reads d ahead of the real one: the
// run's start, which the log's Origin is, is read on that clock (Segment.ClockOffset).
type shiftedLog struct {
	*verify.AdmissionLog
	d time.Duration
}

// Start implements load.Starter.
func (l shiftedLog) Start(t time.Time) { l.AdmissionLog.Start(t.Add(l.d)) }

// Fresh implements load.Aggregator.
func (l shiftedLog) Fresh() load.Aggregator {
	return shiftedLog{l.AdmissionLog.Fresh().(*verify.AdmissionLog), l.d}
}

// Merge implements load.Aggregator.
func (l shiftedLog) Merge(other load.Aggregator) error {
	if o, ok := other.(shiftedLog); ok {
		other = o.AdmissionLog
	}
	return l.AdmissionLog.Merge(other)
}

// shiftedSinks returns r's sinks with its admission logs reading the start on a clock d ahead.
func (r *recording) shiftedSinks(d time.Duration) load.Sinks {
	s := r.sinks()
	for _, set := range [][]load.Aggregator{s.Measured, s.Warmup} {
		for i, a := range set {
			if l, ok := a.(*verify.AdmissionLog); ok {
				set[i] = shiftedLog{l, d}
			}
		}
	}
	return s
}
