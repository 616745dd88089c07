package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/clock"
	"github.com/limitbench/limitbench/internal/faults"
	"github.com/limitbench/limitbench/internal/faults/watch"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/verify"
	"github.com/limitbench/limitbench/result"
)

// clockDrift bounds how fast an external server's clock and the harness's drift apart: 100 ppm,
// more than an undisciplined crystal oscillator's typical 20 to 50 ppm, and far more than NTP
// leaves.
const clockDrift = 100e-6

// recording is the aggregators one measurement feeds: latency histograms, the timeline and the
// errors by class of the measured part, and the admission logs of the measured part and of the
// warmup (nil without one).
type recording struct {
	hist      *load.Histograms
	tl        *load.Timeline
	errs      *load.Errors
	log, warm *verify.AdmissionLog
}

// newRecording returns the aggregators of a measurement of p whose admission logs are on the
// clock sharedClock, server and clientClock say (see verify.AdmissionLog).
func newRecording(p load.Plan, sharedClock bool, server *clock.Offset, clientClock bool) *recording {
	r := &recording{
		hist: load.NewHistograms(p.MaxLatency),
		tl:   load.NewTimeline(p.Warmup, p.Bin, p.Duration),
		errs: load.NewErrors(),
		log:  verify.NewAdmissionLog(time.Time{}, sharedClock, server, clientClock),
	}
	if p.Warmup > 0 {
		r.warm = verify.NewAdmissionLog(time.Time{}, sharedClock, server, clientClock)
	}
	return r
}

// sinks returns the aggregators as load.Run takes them.
func (r *recording) sinks() load.Sinks {
	s := load.Sinks{Measured: []load.Aggregator{r.hist, r.tl, r.errs, r.log}}
	if r.warm != nil {
		s.Warmup = []load.Aggregator{r.warm}
	}
	return s
}

// verification returns what the verifier needs of the measurement res recorded in r, for an
// algorithm with contract and model, with the node watch's events, which happened during the
// measurement (warmup included) and around it; fresh says that the algorithm held no state when
// the measurement began (see verify.Measurement.Fresh).
func (r *recording) verification(res *load.Result, contract algorithms.Contract, model algorithms.Model,
	events []faults.Event, fresh bool) verify.Measurement {
	m := verify.Measurement{
		Contract: contract, Model: model, Fresh: fresh,
		Log: r.log.Log(res.Subjects, res.Clients),
		Warnings: verify.Warnings{Behind: res.Behind, Canceled: res.Canceled, ClockMismatch: res.Counts.ClockMismatch,
			Dropped: res.Counts.Dropped},
		Start:       r.log.Micros(res.Plan.Warmup),
		Disruptions: r.disruptions(events, res),
	}
	if r.warm != nil {
		m.Warmup = r.warm.Log(res.Subjects, res.Clients)
	}
	return m
}

// disruptions returns the node watch's events as the verifier takes them: on the admission log's
// clock, described in words with when they were seen (seconds from the start of the measured
// part of res), each with what it means for the limiter's state (faults.Event.StateLost,
// Deposes; a promotion's former master).
func (r *recording) disruptions(events []faults.Event, res *load.Result) []verify.Disruption {
	var out []verify.Disruption
	measured := res.Start.Add(res.Plan.Warmup)
	for _, e := range events {
		after, at := e.After.Sub(res.Start), e.At.Sub(res.Start)
		if e.After.IsZero() {
			// Any time since the watch began, before the load: from the load's start (every
			// request of the log was sent after it), or At when that is earlier.
			after = min(0, at)
		}
		lo, hi := r.log.Span(after, at)
		d := verify.Disruption{Lo: lo, Hi: hi, Node: e.Node, Kind: string(e.Kind), StateLost: e.StateLost(), Deposes: e.Deposes(),
			What: fmt.Sprintf("%s (seen at %.3fs)", e.Describe(), e.At.Sub(measured).Seconds())}
		if e.Kind == watch.EventPromoted {
			d.Former = e.From
		}
		out = append(out, d)
	}
	return out
}

// SettleTimeout bounds the wait, after a measurement with faults, for replication to be at rest
// again (faults.Watcher.WaitSettled): a Sentinel group turns a former master into a replica up to
// about 10 s after a failover (its INFO period), and a resync takes a few seconds more.
const SettleTimeout = 20 * time.Second

// Measure runs algorithm a once on tgt (whose topology is topo) under o.Scenario's load, on a
// fresh key prefix of run runID numbered rep, and returns its entry: load's figures, the
// verifier's sections and what the decisions cost the server. A non-nil entry comes back even
// with an error when something was measured. o.Progress, when set, sees the measurement live.
func Measure(ctx context.Context, o Options, tgt *redisenv.Target, topo string, a algorithms.Algorithm, rep int,
	runID string) (e *result.Entry, err error) {
	s := o.Scenario
	name := a.Describe().Name
	prefix := KeyPrefix(runID, name, strconv.Itoa(rep))
	cleanCtx := context.WithoutCancel(ctx)
	seg := o.Segment // nil unless this is one segment of a segmented run (see segment.go)
	if seg == nil {
		// The segments of a run share their prefix: none claims it, and the last one out
		// removes the keys.
		if err := tgt.ClaimPrefix(ctx, prefix); err != nil {
			return nil, LostOr(ctx, tgt, fmt.Errorf("%s: %w", name, err))
		}
	}
	defer func() {
		cctx, cancel := context.WithTimeout(cleanCtx, 30*time.Second)
		defer cancel()
		if seg != nil {
			last, arrived := seg.leave(cctx, tgt, prefix)
			if e != nil && e.Partial != nil {
				e.Partial.Arrived = arrived
			}
			if !last {
				return
			}
		}
		if w := cleanup(cctx, tgt, prefix); w != nil {
			if e != nil {
				e.Warnings = append(e.Warnings, *w)
			} else if o.Logf != nil {
				o.Logf("warning: %s on %s: %s", name, topo, w.Message)
			}
		}
		if ca, custom := a.(*customAlgorithm); custom {
			// A function library is removed as the keys are; the next measurement loads it again.
			if err := ca.Unload(cctx, tgt.Client); err != nil && o.Logf != nil {
				o.Logf("warning: %s on %s: the function library could not be removed: %v", name, topo, err)
			}
		}
	}()
	// The node watch starts before the script is loaded and its first poll is in before the
	// load starts, so that a restart from then on is seen.
	watch := faults.WatchTarget(ctx, tgt, faults.WatchOptions{})
	defer watch.Stop()
	pctx, fns := prepareContext(ctx, s.Call)
	if fns != nil {
		defer func() {
			cctx, cancel := context.WithTimeout(cleanCtx, 30*time.Second)
			defer cancel()
			if derr := fns.Delete(cctx); derr != nil && e != nil {
				e.Warnings = append(e.Warnings, result.Warning{Kind: "function", Message: derr.Error()})
			}
		}()
	}
	lim, err := a.Prepare(pctx, tgt.Client, s.Limit, prefix)
	if err != nil {
		var rerr redis.Error
		if ca, custom := a.(*customAlgorithm); custom && errors.As(err, &rerr) && !noPermission(err) {
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
	// Bins fine enough to show a burst, as fine for every algorithm of the run (see BinFor).
	p.Bin = load.BinFor(p.Duration, append(contractWindows(contract), o.windows...)...)
	sharedClock, clientClock := tgt.Info.SharedClock && seg == nil, a.Describe().Clock == algorithms.ClockClient
	var serverClock *clock.Offset
	var realOffset clock.Offset // the offset to the server's clock measured by the real clock
	if !sharedClock {
		off, err := clock.Measure(ctx, tgt.Client, 16)
		if err != nil {
			return nil, LostOr(ctx, tgt, fmt.Errorf("measure the server's clock offset: %w", err))
		}
		// The offset is measured once; allow for the clocks drifting apart until the run ends.
		off.Err += time.Duration(float64(s.TotalDuration()+time.Minute) * clockDrift)
		realOffset = off
		if seg != nil {
			// This generator's clock reads ClockOffset ahead: the offset it measures is less.
			off.Offset -= seg.ClockOffset
		}
		serverClock = &off
	}
	if o.Progress != nil {
		total := s.TotalDuration()
		p.Progress = func(lp load.Progress) {
			o.Progress(Progress{Algorithm: name, Topology: topo, Repeat: rep, Repeats: o.Repeat, Progress: lp, Duration: total})
		}
	}
	copts := redisenv.ClientOptions{PoolSize: s.Clients + 2}
	var netw *faults.Network
	if needsNetwork(s.Faults) {
		// The load reaches every node through a proxy, where network faults are injected.
		if netw, err = faults.ProxyTarget(tgt); err != nil {
			return nil, fmt.Errorf("%s: start the fault proxies: %w", name, err)
		}
		defer func() { _ = netw.Close(cleanCtx) }()
		copts.Dialer = netw.Dialer()
		if err := proxyReplication(ctx, tgt, netw, s.Faults); err != nil {
			return nil, LostOr(ctx, tgt, fmt.Errorf("%s: %w", name, err))
		}
	}
	client := tgt.NewClient(copts)
	defer client.Close()

	before, err := ReadStats(ctx, tgt)
	if err != nil {
		return nil, LostOr(ctx, tgt, fmt.Errorf("read server stats: %w", err))
	}
	var met meeting
	if seg != nil {
		first := !seg.met
		seg.met = true
		p.Share = seg.Share
		met, err = seg.meet(ctx, tgt, prefix, realOffset, s.TotalDuration(), first)
		if err != nil {
			return nil, LostOr(ctx, tgt, fmt.Errorf("%s: %w", name, err))
		}
		p.Start = met.start
	} else if s.Arrival != nil && s.Arrival.Align.Every > 0 {
		wait := time.Until(s.Arrival.Align.Start(time.Now()))
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err())
		case <-time.After(wait):
		}
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	_ = watch.WaitPolled(pctx) // a node that does not answer its first poll is an event of its own
	cancel()
	// The guard stops the load when Redis is lost or refuses a permission (see faults.Guard).
	loadCtx, stopLoad := context.WithCancelCause(ctx)
	defer stopLoad(nil)
	guard := faults.NewGuard(faults.GuardOptions{}, stopLoad)
	var ns noScripts
	var inj *injector
	p.OnOutcome = func(o *load.Outcome) {
		if !inj.Busy() {
			guard.Observe(o)
		}
		ns.observe(o)
		if o.Err != nil && load.Unreachable(load.ErrorKindOf(o.Err)) {
			watch.Poke() // date a restart closely
		}
	}
	rec := newRecording(p, sharedClock, serverClock, clientClock)
	var runLim algorithms.Limiter = lim
	sinks := rec.sinks()
	if seg != nil {
		rec.oneClock()
		if seg.ClockOffset != 0 {
			runLim = clockShifted{lim, seg.ClockOffset}
			sinks = rec.shiftedSinks(seg.ClockOffset)
		}
	}
	if len(s.Faults) > 0 {
		inj = startInjector(ctx, tgt, netw, s.Faults, time.Now().Add(p.Warmup))
	}
	res, err := load.Run(loadCtx, client, runLim, p, sinks)
	var injected []injection
	var unsettled error
	if inj != nil {
		injected = inj.Stop()
		if err == nil && ctx.Err() == nil {
			// The watch goes on until replication is at rest again, so that what the faults set
			// off after the load (a Sentinel turning the former master into a replica, seconds
			// later) is seen and judged, and the next measurement starts on a settled topology.
			sctx, cancel := context.WithTimeout(ctx, SettleTimeout)
			unsettled = watch.WaitSettled(sctx, len(tgt.Masters()))
			cancel()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", name, err)
	}
	events := watch.Stop()
	// The prefix was claimed empty before the warmup, and every key of the algorithm is under
	// it, except a custom script's empty key, which could hold state from before.
	ca, custom := a.(*customAlgorithm)
	fresh := !custom || !ca.HasEmptyKey()
	vm := rec.verification(res, contract, a.Model(s.Limit), events, fresh)
	if len(s.Faults) > 0 {
		vm.Faults = rec.injectedFaults(injected, res)
		vm.Disruptions = append(vm.Disruptions, rec.injectedDisruptions(injected, res)...)
	}
	gerr := guard.Err()
	if gerr != nil {
		vm.Warnings.StopReason = stopReason(gerr)
	}
	entry := func(srv *result.Server) *result.Entry {
		e := withCustomNotes(entryOf(name, topo, res, rec, vm, custom, srv), lim, contract, s.Limit)
		addNoScripts(e.Verification.Faults, injected, &ns, res)
		e.Call = string(algorithms.CallEvalSha)
		if fns != nil && len(fns.Libraries()) > 0 {
			e.Call = string(algorithms.CallFCall)
		}
		w := watch.Summary(res.Start.Add(p.Warmup))
		e.Watch = &w
		if unsettled != nil {
			e.Warnings = append(e.Warnings, result.Warning{Kind: "unsettled",
				Message: fmt.Sprintf("%v within %s of the load's end; what happened after that is not judged, and the next measurement may start on it", unsettled, SettleTimeout)})
		}
		if seg != nil {
			part, err := partialOf(&e, res, rec, realOffset, met)
			if err != nil {
				e.Warnings = append(e.Warnings, result.Warning{Kind: "partial", Message: err.Error()})
			}
			if part != nil {
				part.ClockOffsetUS -= float64(seg.ClockOffset) / 1e3
			}
			e.Partial = part
		}
		return &e
	}
	statCtx, cancel := context.WithTimeout(cleanCtx, 10*time.Second)
	defer cancel()
	if gerr != nil && errors.Is(gerr, faults.ErrNoPermission) {
		return entry(nil), fmt.Errorf("%w: %s on %s: %w (%s)", ErrPermission, name, topo, gerr, permissionHint)
	}
	if gerr != nil {
		// The load was stopped: even if Redis answers again by now, the measurement is cut short.
		return entry(nil), fmt.Errorf("%w: during %s on %s: %w", ErrLost, name, topo, gerr)
	}
	if err := alive(statCtx, tgt); err != nil {
		return entry(nil), fmt.Errorf("%w: after %s on %s: %w", ErrLost, name, topo, err)
	}
	after, err := ReadStats(statCtx, tgt)
	if err != nil {
		return entry(nil), LostOr(ctx, tgt, fmt.Errorf("read server stats: %w", err))
	}
	srv := serverCost(before, after, res)
	keys, bytes, err := KeyMemory(statCtx, tgt, prefix)
	if err == nil && keys > 0 {
		srv.Keys = keys
		if n := vm.Log.SubjectsDecided(); n > 0 {
			srv.BytesPerKey = math.Round(float64(bytes) / float64(n))
		}
	}
	return entry(&srv), nil
}

// stopReason says, for the verdict, why the guard stopped a run.
func stopReason(err error) string {
	if errors.Is(err, faults.ErrNoPermission) {
		return "Redis refused a permission the run needs"
	}
	return "Redis was lost"
}

// cleanup removes the keys under prefix (Target.CleanupPrefix). On an external server, when that
// fails, it counts the keys left and returns a warning that says how many, where, why and how to
// remove them; nil when every key went, or when the server is one limitbench started (its keys
// go with it).
func cleanup(ctx context.Context, tgt *redisenv.Target, prefix string) *result.Warning {
	err := tgt.CleanupPrefix(ctx, prefix)
	if err == nil || tgt.Info.Backend != redisenv.BackendExternal {
		return nil
	}
	left := map[string]int64{}
	var mu sync.Mutex
	cerr := tgt.ScanPrefix(ctx, prefix, func(_ context.Context, c *redis.Client, keys []string) error {
		mu.Lock()
		left[c.Options().Addr] += int64(len(keys))
		mu.Unlock()
		return nil
	})
	var total int64
	var where, cmds []string
	for _, addr := range slices.Sorted(maps.Keys(left)) {
		total += left[addr]
		where = append(where, fmt.Sprintf("%d on %s", left[addr], addr))
		cmds = append(cmds, removeCommand(tgt, addr, prefix))
	}
	w := &result.Warning{Kind: result.WarningKeysLeft, Prefix: prefix, Keys: total, Remove: strings.Join(cmds, "; ")}
	switch {
	case cerr != nil:
		w.Keys = -1
		for _, a := range tgt.Masters() {
			cmds = append(cmds, removeCommand(tgt, a, prefix))
		}
		w.Remove = strings.Join(cmds, "; ")
		why := fmt.Sprintf("%v, nor counted: %v", err, cerr)
		if cerr.Error() == err.Error() {
			why = err.Error()
		}
		w.Message = fmt.Sprintf("the keys under %s could not be removed (%s); if they are still there, remove them as a user allowed to SCAN and UNLINK, with REDISCLI_AUTH set to its password: %s",
			prefix, why, w.Remove)
	case total == 0:
		return nil // the cleanup failed, then the keys went (they expired)
	default:
		keys := "keys"
		if total == 1 {
			keys = "key"
		}
		w.Message = fmt.Sprintf("%d %s under %s were left behind (%s): %v; remove them as a user allowed to SCAN and UNLINK, with REDISCLI_AUTH set to its password: %s",
			total, keys, prefix, strings.Join(where, ", "), err, w.Remove)
	}
	return w
}

// removeCommand returns a shell command that removes the keys under prefix from the master at
// addr of tgt, as the user USER (a placeholder) whose password is in REDISCLI_AUTH.
func removeCommand(tgt *redisenv.Target, addr, prefix string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host, port = addr, "6379"
	}
	cli := fmt.Sprintf("redis-cli -h %s -p %s --user USER", host, port)
	if tgt.TLS() {
		cli += " --tls"
	}
	if db := tgt.DB(); db != 0 {
		cli += fmt.Sprintf(" -n %d", db)
	}
	pattern := "'" + strings.ReplaceAll(prefix, "'", `'\''`) + "*'"
	return fmt.Sprintf("%s --scan --pattern %s | xargs -r -n 500 %s unlink", cli, pattern, cli)
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

// LostOr returns err marked as ErrPermission when Redis refused a permission (a NOPERM reply),
// as ErrInterrupted when ctx was cancelled, or as ErrLost when the target no longer answers.
func LostOr(ctx context.Context, tgt *redisenv.Target, err error) error {
	if noPermission(err) {
		return fmt.Errorf("%w: %w (%s)", ErrPermission, err, permissionHint)
	}
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

// permissionHint says where to find what the user of a run needs, for a message about a refused
// permission: the line `limitbench acl` prints (package acl).
const permissionHint = "`limitbench acl SCENARIO.yaml` prints the ACL SETUSER line a run needs, " +
	"and `limitbench acl --redis URL SCENARIO.yaml` what this user lacks"

// noPermission reports whether err holds a NOPERM reply: an ACL that forbids the run's user a
// command or a key.
func noPermission(err error) bool {
	if err == nil {
		return false
	}
	var rerr redis.Error
	if errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), "NOPERM") {
		return true
	}
	// ForEachMaster joins the masters' errors, each wrapped with its address.
	return strings.Contains(err.Error(), "NOPERM ")
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
	srv *result.Server) result.Entry {
	e := result.NewEntry(name, topo, res)
	e.Custom = custom
	if srv != nil {
		e.Server = *srv
	}
	// Encoding a histogram we built cannot fail short of a bug; the entry then simply has no
	// histogram, and the report says so.
	_ = e.SetHistograms(rec.hist.Latency(), rec.hist.Service())
	e.Verification, e.Accuracy = vm.Sections()
	// The report's violation explorer and fairness section; a log Check refuses has no excerpt,
	// and the verification above says why.
	e.Excerpt, _ = verify.NewExcerpt(vm.Contract, vm.Log, vm.Start, 0)
	e.Fairness = verify.NewFairness(vm.Contract, vm.Log, vm.Start)
	e.ErrorClasses = rec.errs.Classes(res.Plan.Warmup)
	series := rec.tl.Series()
	e.Timeline = result.Timeline{Series: series, Limit: binLimits(vm, rec.tl.Width, len(series.Offered)),
		Use: verify.NewWindowUse(vm.Contract, vm.Log, vm.Warmup, vm.Start, rec.tl.Width, len(series.Offered))}
	return e
}

// binLimits returns the contract's limit for each of n timeline bins of width bin
// (verify.Measurement.BinLimits: its steady allowance times the scopes offered requests), with
// the scopes counted over spans of k whole bins about as long as the contract's narrowest window
// (k = ⌊window / bin⌋, at least 1), each bin taking 1/k of its span's limit. Bins much finer than
// the window (load.BinFor) would otherwise make the limit line jump with the subjects that
// happened to send within each bin; so it shows the contract's rate for the subjects in play
// around it. nil without a contract.
func binLimits(vm verify.Measurement, bin time.Duration, n int) []float64 {
	k := 1
	if ws := contractWindows(vm.Contract); len(ws) > 0 && bin > 0 {
		k = max(1, int(slices.Min(ws)/bin))
	}
	spans := vm.BinLimits(time.Duration(k)*bin, (n+k-1)/k)
	if spans == nil {
		return nil
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = result.Round3(spans[i/k] / float64(k))
	}
	return out
}

// prepareContext returns the context to prepare an algorithm with for the scenario's call mode:
// with CallFCall, one that makes built-in scripts Redis Functions (algorithms.WithFunctions), and
// the Functions that records their libraries, to be deleted after the measurement; otherwise ctx
// and nil.
func prepareContext(ctx context.Context, call algorithms.CallMode) (context.Context, *algorithms.Functions) {
	if call != algorithms.CallFCall {
		return ctx, nil
	}
	fns := &algorithms.Functions{}
	return algorithms.WithFunctions(ctx, fns), fns
}
