package runner

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/clock"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/trace"
	"github.com/limitbench/limitbench/internal/verify"
	"github.com/limitbench/limitbench/scenarios"
)

// huntSetup is how long before its start a hunt trial's batch is set up: the trials wait for the
// first instant of the frame at least this far ahead, so that preparing the limiters (one script
// load and a key prefix each) does not make them late.
const huntSetup = 50 * time.Millisecond

// MaxHuntWorkers is the most workers one hunt trial sends its schedule with: a schedule's
// clients up to this many, so a spike of that many clients at one instant is sent at once.
const MaxHuntWorkers = 64

// HuntWorkers returns the number of workers a trial of t uses: one per client of t, or as many
// as t has rows due at one instant when that is more (so they are sent at once, not one after
// another), at least 2 and at most MaxHuntWorkers. A reproducer scenario of t gives it as
// clients.
func HuntWorkers(t *trace.Trace) int {
	most, run := 0, 0
	for i, r := range t.Rows {
		if i > 0 && r.At == t.Rows[i-1].At {
			run++
		} else {
			run = 1
		}
		most = max(most, run)
	}
	return min(MaxHuntWorkers, max(2, len(t.Clients), most))
}

// HuntTrial runs each trace of batch as a short real trial of algorithm a under limit l on tgt
// and returns the admission log of each, in batch order (hunt.Trial). Each trial has a fresh key
// prefix, removed afterwards, and its own client; the trials of a batch run at the same time,
// each with its time zero at the same instant of frame (the first at least huntSetup from now;
// anywhere when frame is zero), and each lasts until just after its trace's last row
// (scenarios.TraceDuration). A failed request is data in its log (a possible admission when it
// may have run). The error matches ErrInterrupted when ctx ended the batch, ErrLost when Redis
// stopped answering (every request of a trial failed, and Redis does not answer a PING), or
// another of Run's sentinels (MarkRedis).
func HuntTrial(ctx context.Context, tgt *redisenv.Target, a algorithms.Algorithm, l algorithms.Limit, frame arrival.Align,
	batch []*trace.Trace) ([]*verify.Log, error) {
	if len(batch) == 0 {
		return nil, nil
	}
	name := a.Describe().Name
	runID := NewRunID()
	sharedClock, clientClock := tgt.Info.SharedClock, a.Describe().Clock == algorithms.ClockClient
	var serverClock *clock.Offset
	if !sharedClock {
		off, err := clock.Measure(ctx, tgt.Client, 16)
		if err != nil {
			return nil, MarkRedis(LostOr(ctx, tgt, fmt.Errorf("measure the server's clock offset: %w", err)))
		}
		off.Err += time.Duration(float64(time.Minute) * clockDrift)
		serverClock = &off
	}
	start := frame.Start(time.Now().Add(huntSetup))
	logs := make([]*verify.Log, len(batch))
	errs := make([]error, len(batch))
	var wg sync.WaitGroup
	for i, t := range batch {
		prefix := KeyPrefix(runID, name, "h"+strconv.Itoa(i))
		wg.Go(func() {
			logs[i], errs[i] = huntOne(ctx, tgt, a, l, prefix, start, t, sharedClock, serverClock, clientClock)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err())
		}
		return nil, MarkRedis(err)
	}
	return logs, nil
}

// huntOne runs trace t as one trial on prefix, starting at start.
func huntOne(ctx context.Context, tgt *redisenv.Target, a algorithms.Algorithm, l algorithms.Limit, prefix string, start time.Time,
	t *trace.Trace, sharedClock bool, serverClock *clock.Offset, clientClock bool) (*verify.Log, error) {
	name := a.Describe().Name
	cleanCtx := context.WithoutCancel(ctx)
	if err := tgt.ClaimPrefix(ctx, prefix); err != nil {
		return nil, LostOr(ctx, tgt, fmt.Errorf("%s: %w", name, err))
	}
	defer func() {
		cctx, cancel := context.WithTimeout(cleanCtx, 30*time.Second)
		defer cancel()
		_ = cleanup(cctx, tgt, prefix) // a trial's keys on an external Redis expire with their windows
	}()
	lim, err := a.Prepare(ctx, tgt.Client, l, prefix)
	if err != nil {
		return nil, LostOr(ctx, tgt, fmt.Errorf("prepare %s: %w", name, err))
	}
	workers := HuntWorkers(t)
	p := load.Plan{
		Arrival:  load.Replay(t),
		Duration: scenarios.TraceDuration(t, 0),
		Clients:  workers,
	}
	p.Bin = load.BinFor(p.Duration)
	client := tgt.NewClient(redisenv.ClientOptions{PoolSize: workers + 2})
	defer client.Close()
	log := verify.NewAdmissionLog(time.Time{}, sharedClock, serverClock, clientClock)
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err())
	case <-time.After(time.Until(start)):
	}
	res, err := load.Run(ctx, client, lim, p, load.Sinks{Measured: []load.Aggregator{log}})
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", name, err)
	}
	if c := res.Counts; c.Requests > 0 && c.Errors() == c.Requests {
		pctx, cancel := context.WithTimeout(cleanCtx, 5*time.Second)
		defer cancel()
		if err := alive(pctx, tgt); err != nil {
			return nil, fmt.Errorf("%w: during a hunt trial of %s: %w", ErrLost, name, err)
		}
	}
	return log.Log(res.Subjects, res.Clients), nil
}

// CheckScripts loads every custom script among algs on every master of tgt, as Run does before
// it measures anything: a script that does not compile, or whose keys do not fit the topology,
// is an error matching ErrBadScript that names the scenario's file and line.
func CheckScripts(ctx context.Context, tgt *redisenv.Target, algs []algorithms.Algorithm) error {
	return checkCustomScripts(ctx, tgt.Client, algs)
}
