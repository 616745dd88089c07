package measure

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/trace"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/scenarios"
	"github.com/limitbench/limitbench/verify"
)

// Align returns the stage that starts the load at the first instant of a on the Unix clock
// (a scenario's arrival.align), waiting for it at step 7.
func Align(a arrival.Align) Stage {
	return Stage{Meet: func(ctx context.Context, _ *Measurement) error {
		t := time.NewTimer(time.Until(a.Start(time.Now())))
		defer t.Stop()
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err())
		case <-t.C:
			return nil
		}
	}}
}

// trialSetup is how long after the last trial of a batch is ready the batch starts, at the
// least: the trials' loads open their connections before their first row is due.
const trialSetup = 50 * time.Millisecond

// trialLateAfter is how late a trial's row may be sent: a row a stalled machine could not send
// on time is sent late, at a time its log records, rather than dropped (load.Plan.LateAfter),
// so that a trial carries out its whole schedule.
const trialLateAfter = time.Minute

// MaxTrialWorkers is the most workers one hunt trial sends its schedule with: a schedule's
// clients up to this many, so a spike of that many clients at one instant is sent at once.
const MaxTrialWorkers = 64

// TrialWorkers returns the number of workers a trial of t uses: one per client of t, or as many
// as t has rows due at one instant when that is more (so they are sent at once, not one after
// another), at least 2 and at most MaxTrialWorkers. A reproducer scenario of t gives it as
// clients.
func TrialWorkers(t *trace.Trace) int {
	most, run := 0, 0
	for i, r := range t.Rows {
		if i > 0 && r.At == t.Rows[i-1].At {
			run++
		} else {
			run = 1
		}
		most = max(most, run)
	}
	return min(MaxTrialWorkers, max(2, len(t.Clients), most))
}

// Trial is what the trials of a hunt's batch share: the algorithm under its limit on a target,
// called as the scenario says (Functions), each trial's time zero on an instant of Frame.
type Trial struct {
	Target    *redisenv.Target
	Topology  string
	Algorithm algorithms.Algorithm
	Limit     algorithms.Limit
	Call      algorithms.CallMode
	// Frame aligns the batch's common start (the zero Align: any instant).
	Frame arrival.Align
	// Logf, when set, receives the trials' warnings (keys that could not be removed).
	Logf func(format string, args ...any)
	// Stage, when set, gives one more stage for each trial (live metrics).
	Stage func() Stage
}

// Trials runs each trace of batch as one measurement of t (Do): a short real trial, on a fresh
// key prefix of its own with its own client, with the Functions of t.Call; the trials of a
// batch are set up at once and start together, at the first instant of t.Frame at least
// trialSetup after the last is ready, and each lasts until just after its trace's last row or
// fault (scenarios.TraceDuration), every row sent however late. A trace with faults
// (trace.Fault, a hunt's nemesis) runs alone, after the others, with the Faults stage carrying
// them out on the first shard's master (scenarios.FaultsOf, recovery the limit's window): a
// fault acts on the whole server, so no other trial may share it. It returns what the
// verifier was given of each (Measurement.Verification: the admission log, the disruptions the
// node watch saw, the faults as injected), in batch order (hunt.Trial).
// A failed request is data in its log (a possible admission when it may have run). The error
// matches ErrInterrupted when ctx ended the batch, ErrLost when Redis stopped answering, or
// another of Do's sentinels.
func Trials(ctx context.Context, t Trial, batch []*trace.Trace) ([]verify.Measurement, error) {
	out := make([]verify.Measurement, len(batch))
	var plain []int
	for i, tr := range batch {
		if len(tr.Faults) == 0 {
			plain = append(plain, i)
		}
	}
	if err := t.together(ctx, batch, plain, out); err != nil {
		return nil, err
	}
	for i, tr := range batch {
		if len(tr.Faults) > 0 {
			if err := t.together(ctx, batch, []int{i}, out); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// together runs the traces batch[i], i in which, at once (see Trials), and puts what each
// measured in out[i].
func (t Trial) together(ctx context.Context, batch []*trace.Trace, which []int, out []verify.Measurement) error {
	if len(which) == 0 {
		return nil
	}
	name := t.Algorithm.Describe().Name
	runID := NewRunID()
	meeting := newBatch(t.Frame, len(which))
	errs := make([]error, len(which))
	warnings := make([][]result.Warning, len(which))
	var wg sync.WaitGroup
	for k, i := range which {
		tr := batch[i]
		wg.Go(func() {
			spec := Spec{Target: t.Target, Topology: t.Topology, Algorithm: t.Algorithm, Limit: t.Limit,
				Prefix: KeyPrefix(runID, name, "h"+strconv.Itoa(i)), Logf: t.Logf,
				Plan: load.Plan{Arrival: load.Replay(tr), Duration: scenarios.TraceDuration(tr, 0), Clients: TrialWorkers(tr),
					LateAfter: trialLateAfter},
				WholeHistory: true} // the hunt reads each trial's log
			var at trialAt
			stages := []Stage{Functions(t.Call), meeting.stage(&at)}
			if len(tr.Faults) > 0 {
				schedule, err := scenarios.FaultsOf(tr, t.Limit.Window)
				if err != nil {
					meeting.gone(&at)
					errs[k] = err
					return
				}
				stages = append(stages, Faults(schedule))
			}
			if t.Stage != nil {
				stages = append(stages, t.Stage())
			}
			m, err := Do(ctx, spec, stages...)
			meeting.gone(&at) // the others must not wait for a trial that ended before it got there
			if m.Entry != nil {
				out[i], warnings[k] = m.Verification, m.Entry.Warnings
			}
			errs[k] = err
		})
	}
	wg.Wait()
	t.warn(warnings)
	if err := errors.Join(errs...); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err())
		}
		return Mark(err)
	}
	return nil
}

// warn says each kind of warning the trials of a batch had (ws, by trial) once, through t.Logf:
// the first trial's, with how many others had one of that kind.
func (t Trial) warn(ws [][]result.Warning) {
	if t.Logf == nil {
		return
	}
	first := map[string]result.Warning{}
	count := map[string]int{}
	var kinds []string
	for _, trial := range ws {
		for _, w := range trial {
			if count[w.Kind] == 0 {
				first[w.Kind] = w
				kinds = append(kinds, w.Kind)
			}
			count[w.Kind]++
		}
	}
	for _, k := range kinds {
		more := ""
		if n := count[k] - 1; n > 0 {
			more = fmt.Sprintf(" (and alike for %d other trial(s) of the batch)", n)
		}
		t.Logf("warning: %s on %s: %s%s", t.Algorithm.Describe().Name, t.Topology, first[k].Message, more)
	}
}

// batch is where the trials of a batch meet, in process: at the start, which the last to arrive
// sets, and at the end of their loads, so that no trial's work after its load (verifying it,
// encoding its histograms) takes the CPU from another's load.
type batch struct {
	frame        arrival.Align
	start, ended *meetPoint
}

// newBatch returns the meeting points of n trials aligned on frame.
func newBatch(frame arrival.Align, n int) *batch {
	return &batch{frame: frame, start: newMeetPoint(n), ended: newMeetPoint(n)}
}

// trialAt records which meeting points one trial got to.
type trialAt struct{ started, ended bool }

// stage returns one trial's stage: Meet waits for the batch's start (and the load then starts
// its clock when its connections are open, a few milliseconds later: what a trial's log records
// is relative to that, so a slow setup delays a trial's rows but never drops them); End waits
// for every trial's load to end.
func (b *batch) stage(at *trialAt) Stage {
	return Stage{
		Meet: func(ctx context.Context, _ *Measurement) error {
			at.started = true
			start, err := b.start.arrive(ctx, func() time.Time { return b.frame.Start(time.Now().Add(trialSetup)) })
			if err != nil {
				return err
			}
			t := time.NewTimer(time.Until(start))
			defer t.Stop()
			select {
			case <-ctx.Done():
				return fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err())
			case <-t.C:
				return nil
			}
		},
		End: func(ctx context.Context, _ *Measurement, _ error) {
			at.ended = true
			_, _ = b.ended.arrive(ctx, time.Now)
		},
	}
}

// gone counts a trial that ended before it got to a meeting point as arrived there.
func (b *batch) gone(at *trialAt) {
	if !at.started {
		b.start.leave()
	}
	if !at.ended {
		b.ended.leave()
	}
}

// meetPoint is a point n goroutines meet at: each arrives (or leaves), and when the last has,
// everyone goes on with the value the last computed.
type meetPoint struct {
	mu      sync.Mutex
	waiting int
	ready   chan struct{}
	value   time.Time
}

func newMeetPoint(n int) *meetPoint { return &meetPoint{waiting: n, ready: make(chan struct{})} }

// count counts one goroutine at p (arrived or left); the last sets p's value with set.
func (p *meetPoint) count(set func() time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waiting--
	if p.waiting == 0 {
		p.value = set()
		close(p.ready)
	}
}

// leave counts one goroutine that will not arrive at p.
func (p *meetPoint) leave() { p.count(time.Now) }

// arrive counts one goroutine at p and waits for the others: the last sets the value all get.
func (p *meetPoint) arrive(ctx context.Context, set func() time.Time) (time.Time, error) {
	p.count(set)
	select {
	case <-ctx.Done():
		return time.Time{}, fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err())
	case <-p.ready:
		return p.value, nil
	}
}
