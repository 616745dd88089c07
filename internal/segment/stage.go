package segment

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/clock"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/measure"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// Stage returns the stage that makes one measurement g's part of a segmented run (see
// measure.Stage):
//
//   - Leave: the key prefix is shared by every segment; none claims it, and the last generator
//     to leave (a counter in Redis, prefix + "done") removes its keys;
//   - Setup: the plan sends g's share, and every decision time goes on the server's clock
//     (measure.Measurement.OneClock), the one clock the generators share;
//   - Begin: with a ClockOffset (testing), the limiter gives client-clock algorithms the moved
//     time and the admission logs read the run's start on the moved clock;
//   - Meet: the load starts at StartAt (the first measurement) or at the barrier in the Redis
//     under test: the first generator to arrive sets the start to the server's TIME plus the
//     lead (SET NX prefix + "start"), and every generator reads it and converts it to its own
//     clock with the offset it measured; one that arrives after the start starts late and says
//     so (result.Partial.LateStartMS);
//   - Report: the entry carries the partial result (result.Partial): counts, the encoded
//     aggregators and the clock offset, which Merge needs.
func (g *Segment) Stage() measure.Stage {
	st := &stage{g: g}
	return measure.Stage{Setup: st.setup, Begin: st.begin, Meet: st.meet, Report: st.report, Leave: st.leave}
}

// stage is one measurement's segment stage.
type stage struct {
	g    *Segment
	real clock.Offset // the offset to the server's clock, as the real clock measured it
	met  meeting
}

func (st *stage) setup(_ context.Context, m *measure.Measurement) error {
	m.Plan.Share = st.g
	m.OneClock = true
	return nil
}

func (st *stage) begin(_ context.Context, m *measure.Measurement) error {
	st.real = *m.Clock // OneClock: the offset is always measured
	d := st.g.ClockOffset
	if d == 0 {
		return nil
	}
	// This generator's clock reads d ahead: the offset it measures is less.
	m.Clock.Offset -= d
	m.Limiter = clockShifted{m.Limiter, d}
	for _, set := range [][]load.Aggregator{m.Sinks.Measured, m.Sinks.Warmup} {
		for i, a := range set {
			if l, ok := a.(*verify.AdmissionLog); ok {
				set[i] = shiftedLog{l, d}
			}
		}
	}
	return nil
}

func (st *stage) meet(ctx context.Context, m *measure.Measurement) error {
	first := !st.g.met
	st.g.met = true
	var err error
	st.met, err = st.g.meet(ctx, m.Spec.Target.Client, m.Spec.Prefix, st.real, m.Plan.Warmup+m.Plan.Duration, first)
	m.Plan.Start = st.met.start
	return err
}

func (st *stage) report(m *measure.Measurement, e *result.Entry) {
	part, err := partialOf(e, m.Result, m.Recording, st.real, st.met)
	if err != nil {
		e.Warnings = append(e.Warnings, result.Warning{Kind: "partial", Message: err.Error()})
	}
	if part != nil {
		part.ClockOffsetUS -= float64(st.g.ClockOffset) / 1e3
	}
	e.Partial = part
}

// leave records that this generator finished the measurement (a counter with a TTL) and reports
// whether it was the last of the run's segments to do so, and how many generators had arrived at
// the barrier (result.Partial.Arrived); when fewer than all had, the entry gets a warning of kind
// "segment".
func (st *stage) leave(ctx context.Context, m *measure.Measurement) bool {
	c, prefix := m.Spec.Target.Client, m.Spec.Prefix
	n, err := c.Incr(ctx, prefix+"done").Result()
	if err != nil {
		// Redis is gone or refuses: leave the keys (they expire) rather than remove them under
		// generators still running.
		return false
	}
	// The counter expires as the barrier's keys do, counted from now: when a partner never
	// leaves (it died), nothing of the run stays in Redis for good.
	if err := c.Expire(ctx, prefix+"done", st.g.Lead+m.Plan.Warmup+m.Plan.Duration+time.Minute).Err(); err != nil {
		m.Warn(result.Warning{Kind: "segment", Message: fmt.Sprintf("the key %sdone has no TTL (EXPIRE: %v): remove it by hand", prefix, err)})
	}
	arrived, _ := c.Get(ctx, prefix+"arrived").Int64()
	if m.Entry != nil && m.Entry.Partial != nil {
		m.Entry.Partial.Arrived = arrived
	}
	if count := int64(st.g.Count); arrived > 0 && arrived < count {
		m.Warn(result.Warning{Kind: "segment", Message: fmt.Sprintf("only %d of %d generators arrived at the barrier before this one "+
			"finished: the other segments' share of the load was not sent with it (a generator died, or started too late)", arrived, count)})
	}
	return n >= int64(st.g.Count)
}

// meeting is where one measurement of a segmented run met the other generators.
type meeting struct {
	start time.Time     // the agreed start, on this generator's clock
	late  time.Duration // how late this generator arrived (0: on time)
}

// meet returns when the load of the measurement on prefix starts: at g.StartAt for the first
// measurement, else at the barrier in c: the first generator to arrive sets the start to the
// server's TIME plus the lead (SET NX), and every generator reads it and converts it to its own
// clock with off. span is the measurement's length, warmup included.
func (g *Segment) meet(ctx context.Context, c redis.UniversalClient, prefix string, off clock.Offset, span time.Duration, first bool) (meeting, error) {
	var m meeting
	if first && !g.StartAt.IsZero() {
		m.start = g.StartAt
	} else {
		lead := g.Lead
		if lead <= 0 {
			lead = DefaultLead
		}
		now, err := c.Time(ctx).Result()
		if err != nil {
			return m, fmt.Errorf("barrier: TIME: %w", err)
		}
		key := prefix + "start"
		ttl := lead + span + time.Minute
		if err := c.SetNX(ctx, key, now.Add(lead).UnixMicro(), ttl).Err(); err != nil {
			return m, fmt.Errorf("barrier: SET %s: %w", key, err)
		}
		v, err := c.Get(ctx, key).Int64()
		if err != nil {
			return m, fmt.Errorf("barrier: GET %s: %w", key, err)
		}
		if err := c.Incr(ctx, prefix+"arrived").Err(); err != nil {
			return m, fmt.Errorf("barrier: INCR: %w", err)
		}
		if err := c.Expire(ctx, prefix+"arrived", ttl).Err(); err != nil {
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

// partialOf returns the result.Partial of a measurement of a segmented run: res and the
// aggregators of rec, with the offset to the server's clock off and the meeting m; its
// admission logs are sorted log files (verify.AdmissionLog.WriteSorted), which Merge reads as
// streams in time order.
func partialOf(e *result.Entry, res *load.Result, rec *measure.Recording, off clock.Offset, m meeting) (*result.Partial, error) {
	p := &result.Partial{
		Counts: res.Counts, Scheduled: res.Scheduled,
		DurationNS: int64(res.Duration), WarmupNS: int64(res.Plan.Warmup), BinNS: int64(res.Plan.Bin),
		Canceled: res.Canceled, Behind: res.Behind,
		Log:            result.LogFile(e, false),
		MeasuredFromUS: rec.Log.Micros(res.Plan.Warmup),
		ClockOffsetUS:  float64(off.Offset) / 1e3, ClockErrorUS: float64(off.Err) / 1e3,
		LateStartMS: float64(m.late) / 1e6,
	}
	var errs []error
	enc := func(a interface{ MarshalBinary() ([]byte, error) }) []byte {
		b, err := a.MarshalBinary()
		errs = append(errs, err)
		return b
	}
	p.Histograms, p.Timeline, p.Errors = enc(rec.Histograms), enc(rec.Timeline), enc(rec.Errors)
	sorted := func(l *verify.AdmissionLog) []byte {
		b, err := l.SortedLog()
		errs = append(errs, err)
		return b
	}
	p.LogData = sorted(rec.Log)
	if rec.Warmup != nil {
		p.WarmupLog = result.LogFile(e, true)
		p.WarmupLogData = sorted(rec.Warmup)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("encode the partial result of %s: %w", e.Name(), err)
	}
	return p, nil
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
