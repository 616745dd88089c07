package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/verify"
	"github.com/limitbench/limitbench/report"
)

// clockDrift bounds how fast an external server's clock and the harness's drift apart: 100 ppm,
// more than an undisciplined crystal oscillator's typical 20 to 50 ppm, and far more than NTP
// leaves.
const clockDrift = 100e-6

// recording is the aggregators one measurement feeds: latency histograms and the timeline of the
// measured part, and the admission logs of the measured part and of the warmup (nil without one).
type recording struct {
	hist      *load.Histograms
	tl        *load.Timeline
	log, warm *verify.AdmissionLog
}

// newRecording returns the aggregators of a measurement of p whose admission logs are on the
// clock sharedClock, server and clientClock say (see verify.AdmissionLog).
func newRecording(p load.Plan, sharedClock bool, server *load.ClockOffset, clientClock bool) *recording {
	r := &recording{
		hist: load.NewHistograms(p.MaxLatency),
		tl:   load.NewTimeline(p.Warmup, p.Bin, p.Duration),
		log:  verify.NewAdmissionLog(time.Time{}, sharedClock, server, clientClock),
	}
	if p.Warmup > 0 {
		r.warm = verify.NewAdmissionLog(time.Time{}, sharedClock, server, clientClock)
	}
	return r
}

// sinks returns the aggregators as load.Run takes them.
func (r *recording) sinks() load.Sinks {
	s := load.Sinks{Measured: []load.Aggregator{r.hist, r.tl, r.log}}
	if r.warm != nil {
		s.Warmup = []load.Aggregator{r.warm}
	}
	return s
}

// verification returns what the verifier needs of the measurement res recorded in r, for an
// algorithm with contract and model; fresh says that the algorithm held no state when the
// measurement began (see verify.Measurement.Fresh).
func (r *recording) verification(res *load.Result, contract algorithms.Contract, model algorithms.Model, fresh bool) verify.Measurement {
	m := verify.Measurement{
		Contract: contract, Model: model, Fresh: fresh,
		Log: r.log.Log(res.Subjects, res.Clients),
		Warnings: verify.Warnings{Behind: res.Behind, Canceled: res.Canceled, ClockMismatch: res.Counts.ClockMismatch,
			Dropped: res.Counts.Dropped},
		Start: r.log.Micros(res.Plan.Warmup),
	}
	if r.warm != nil {
		m.Warmup = r.warm.Log(res.Subjects, res.Clients)
	}
	return m
}

// Measure runs algorithm a once on tgt (whose topology is topo) under o.Scenario's load, on a
// fresh key prefix of run runID numbered rep, and returns its entry: load's figures, the
// verifier's sections and what the decisions cost the server. A non-nil entry comes back even
// with an error when something was measured. o.Progress, when set, sees the measurement live.
func Measure(ctx context.Context, o Options, tgt *redisenv.Target, topo string, a algorithms.Algorithm, rep int,
	runID string) (*report.Entry, error) {
	s := o.Scenario
	name := a.Describe().Name
	prefix := KeyPrefix(runID, name, strconv.Itoa(rep))
	cleanCtx := context.WithoutCancel(ctx)
	if err := tgt.ClaimPrefix(ctx, prefix); err != nil {
		return nil, LostOr(ctx, tgt, fmt.Errorf("%s: %w", name, err))
	}
	defer func() {
		cctx, cancel := context.WithTimeout(cleanCtx, 30*time.Second)
		defer cancel()
		_ = tgt.CleanupPrefix(cctx, prefix)
	}()
	lim, err := a.Prepare(ctx, tgt.Client, s.Limit, prefix)
	if err != nil {
		var rerr redis.Error
		if ca, custom := a.(*customAlgorithm); custom && errors.As(err, &rerr) {
			return nil, ca.badScript(err)
		}
		if _, custom := a.(*customAlgorithm); custom && errors.Is(err, algorithms.ErrBadCustom) {
			return nil, fmt.Errorf("%w: %w", ErrBadScript, err)
		}
		return nil, LostOr(ctx, tgt, fmt.Errorf("prepare %s: %w", name, err))
	}
	contract, err := a.Contract(s.Limit)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}

	p := s.Plan()
	sharedClock, clientClock := tgt.Info.SharedClock, a.Describe().Clock == algorithms.ClockClient
	var serverClock *load.ClockOffset
	if !sharedClock {
		off, err := load.MeasureOffset(ctx, tgt.Client, 16)
		if err != nil {
			return nil, LostOr(ctx, tgt, fmt.Errorf("measure the server's clock offset: %w", err))
		}
		// The offset is measured once; allow for the clocks drifting apart until the run ends.
		off.Err += time.Duration(float64(s.TotalDuration()+time.Minute) * clockDrift)
		serverClock = &off
	}
	if o.Progress != nil {
		total := s.TotalDuration()
		p.Progress = func(lp load.Progress) {
			o.Progress(Progress{Algorithm: name, Topology: topo, Repeat: rep, Repeats: o.Repeat, Progress: lp, Duration: total})
		}
	}
	client := tgt.NewClient(redisenv.ClientOptions{PoolSize: s.Clients + 2})
	defer client.Close()

	before, err := ReadStats(ctx, tgt)
	if err != nil {
		return nil, LostOr(ctx, tgt, fmt.Errorf("read server stats: %w", err))
	}
	if s.Arrival != nil && s.Arrival.Align.Every > 0 {
		wait := time.Until(s.Arrival.Align.Start(time.Now()))
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err())
		case <-time.After(wait):
		}
	}
	rec := newRecording(p, sharedClock, serverClock, clientClock)
	res, err := load.Run(ctx, client, lim, p, rec.sinks())
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", name, err)
	}
	// The prefix was claimed empty before the warmup, and every key of the algorithm is under
	// it, except a custom script's empty key, which could hold state from before.
	ca, custom := a.(*customAlgorithm)
	fresh := !custom || !ca.HasEmptyKey()
	vm := rec.verification(res, contract, a.Model(s.Limit), fresh)
	statCtx, cancel := context.WithTimeout(cleanCtx, 10*time.Second)
	defer cancel()
	if err := alive(statCtx, tgt); err != nil {
		e := withCustomNotes(entryOf(name, topo, res, rec, vm, custom, nil), lim, contract, s.Limit)
		return &e, fmt.Errorf("%w: after %s on %s: %w", ErrLost, name, topo, err)
	}
	after, err := ReadStats(statCtx, tgt)
	if err != nil {
		return nil, fmt.Errorf("%w: read server stats: %w", ErrLost, err)
	}
	srv := serverCost(before, after, res)
	keys, bytes, err := KeyMemory(statCtx, tgt, prefix)
	if err == nil && keys > 0 {
		srv.Keys = keys
		if n := vm.Log.SubjectsDecided(); n > 0 {
			srv.BytesPerKey = math.Round(float64(bytes) / float64(n))
		}
	}
	e := withCustomNotes(entryOf(name, topo, res, rec, vm, custom, &srv), lim, contract, s.Limit)
	return &e, nil
}

// KeyPrefix returns the key prefix of one measurement of algorithm name in run runID:
// "limitbench:<runID>:<name>:<what>:", the name kept usable inside a key prefix (no hash-tag
// braces, no glob characters).
func KeyPrefix(runID, name, what string) string {
	return fmt.Sprintf("limitbench:%s:%s:%s:", runID, keySafe(name), what)
}

// keySafe keeps a name usable inside a key prefix: no hash-tag braces, no glob characters.
func keySafe(name string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '{', '}', '*', '?', '[', ']', '\\', ' ':
			return '_'
		}
		return r
	}, name)
}

// LostOr returns err marked as ErrLost when the target no longer answers, or as
// ErrInterrupted when ctx was cancelled.
func LostOr(ctx context.Context, tgt *redisenv.Target, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %w", ErrInterrupted, err)
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	if perr := alive(pctx, tgt); perr != nil {
		return fmt.Errorf("%w: %w", ErrLost, err)
	}
	return err
}

// alive pings every master of tgt.
func alive(ctx context.Context, tgt *redisenv.Target) error {
	return tgt.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		return c.Ping(ctx).Err()
	})
}

// entryOf builds the report entry of one measurement: load's counts, rates, latency and timeline,
// the verifier's sections and the contract's limit per bin, and the server's cost srv (nil when
// not measured); custom marks a scenario's own script.
func entryOf(name, topo string, res *load.Result, rec *recording, vm verify.Measurement, custom bool,
	srv *report.Server) report.Entry {
	e := report.NewEntry(name, topo, res)
	e.Custom = custom
	if srv != nil {
		e.Server = *srv
	}
	// Encoding a histogram we built cannot fail short of a bug; the entry then simply has no
	// histogram, and the report says so.
	_ = e.SetHistograms(rec.hist.Latency(), rec.hist.Service())
	e.Verification, e.Accuracy = vm.Sections()
	series := rec.tl.Series()
	e.Timeline = report.Timeline{Series: series, Limit: vm.BinLimits(rec.tl.Width, len(series.Offered))}
	return e
}
