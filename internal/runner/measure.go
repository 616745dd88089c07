package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/verify"
	"github.com/limitbench/limitbench/report"
	"github.com/limitbench/limitbench/scenarios"
)

// memorySample is the most keys per master whose MEMORY USAGE is read; the total is scaled from
// them.
const memorySample = 500

// clockDrift bounds how fast an external server's clock and the harness's drift apart: 100 ppm,
// more than an undisciplined crystal oscillator's typical 20 to 50 ppm, and far more than NTP
// leaves.
const clockDrift = 100e-6

// run is what load.Run measured, with the aggregators it fed: histograms and timeline of the
// measured part, and the admission logs of the measured part and of the warmup as the verifier
// reads them (nil when not recorded; warm nil without a warmup).
type run struct {
	*load.Result
	hist      *load.Histograms
	tl        *load.Timeline
	log, warm *verify.Log
	// start is where the measured part starts on the logs' clock, µs since the Unix epoch.
	start int64
}

// measurement is one run of one algorithm on one topology.
type measurement struct {
	repeat int
	entry  report.Entry
}

// plan turns the scenario's load into a load.Plan.
func plan(s *scenarios.Scenario) load.Plan {
	p := load.Plan{
		Arrival:       load.ClosedLoop{},
		Duration:      s.Duration,
		Warmup:        s.Warmup,
		Clients:       s.Clients,
		Mode:          load.Mode(s.ClientMode),
		PipelineDepth: s.PipelineDepth,
		Keys: load.Keys{
			Count:        s.Keys.Count,
			Distribution: load.Distribution(s.Keys.Distribution),
			Exponent:     s.Keys.ZipfS,
			HotShare:     s.Keys.HotShare,
		},
		Seed: uint64(s.Seed),
		Bin:  timelineBin(s.Duration),
		Skew: load.Skew{Offsets: s.ClockSkew.Offsets, Spread: s.ClockSkew.Spread},
		Cost: s.Cost,
	}
	if s.Arrival != nil {
		var segs []load.Segment
		for _, g := range s.Arrival.Segments(s.TotalDuration()) {
			segs = append(segs, load.Segment{From: g.From, To: g.To, Duration: g.For})
		}
		p.Arrival = load.NewProfile(segs...)
	}
	return p
}

// timelineBin returns the widest of 1s, 500ms, 250ms and 100ms that divides d, so that the last
// bin of a timeline is a whole bin and its rate is not understated; 1s when none does.
func timelineBin(d time.Duration) time.Duration {
	for _, b := range []time.Duration{time.Second, 500 * time.Millisecond, 250 * time.Millisecond, 100 * time.Millisecond} {
		if d%b == 0 && d >= b {
			return b
		}
	}
	return time.Second
}

// measure runs algorithm a once on tgt under the scenario's load and returns the measurement. A
// non-nil measurement comes back even with an error when something was measured.
func measure(ctx context.Context, o Options, tgt *redisenv.Target, topo string, a algorithms.Algorithm, rep int,
	runID string) (*measurement, error) {
	s := o.Scenario
	name := a.Describe().Name
	prefix := fmt.Sprintf("limitbench:%s:%s:%d:", runID, keySafe(name), rep)
	cleanCtx := context.WithoutCancel(ctx)
	if err := tgt.ClaimPrefix(ctx, prefix); err != nil {
		return nil, lostOr(ctx, tgt, fmt.Errorf("%s: %w", name, err))
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
		return nil, lostOr(ctx, tgt, fmt.Errorf("prepare %s: %w", name, err))
	}
	contract, err := a.Contract(s.Limit)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}

	p := plan(s)
	sharedClock, clientClock := tgt.Info.SharedClock, a.Describe().Clock == algorithms.ClockClient
	var serverClock *load.ClockOffset
	if !sharedClock {
		off, err := load.MeasureOffset(ctx, tgt.Client, 16)
		if err != nil {
			return nil, lostOr(ctx, tgt, fmt.Errorf("measure the server's clock offset: %w", err))
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

	before, err := snapshot(ctx, tgt)
	if err != nil {
		return nil, lostOr(ctx, tgt, fmt.Errorf("read server stats: %w", err))
	}
	if s.Arrival != nil && s.Arrival.Align.Every > 0 {
		wait := time.Until(s.Arrival.Align.Start(time.Now()))
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err())
		case <-time.After(wait):
		}
	}
	hist := load.NewHistograms(p.MaxLatency)
	tl := load.NewTimeline(p.Warmup, p.Bin, p.Duration)
	log := verify.NewAdmissionLog(time.Time{}, sharedClock, serverClock, clientClock)
	sinks := load.Sinks{Measured: []load.Aggregator{hist, tl, log}}
	var warm *verify.AdmissionLog
	if p.Warmup > 0 {
		warm = verify.NewAdmissionLog(time.Time{}, sharedClock, serverClock, clientClock)
		sinks.Warmup = []load.Aggregator{warm}
	}
	lres, err := load.Run(ctx, client, lim, p, sinks)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", name, err)
	}
	res := &run{Result: lres, hist: hist, tl: tl, log: log.Log(lres.Subjects, lres.Clients), start: log.Micros(p.Warmup)}
	if warm != nil {
		res.warm = warm.Log(lres.Subjects, lres.Clients)
	}
	statCtx, cancel := context.WithTimeout(cleanCtx, 10*time.Second)
	defer cancel()
	if err := alive(statCtx, tgt); err != nil {
		m := &measurement{repeat: rep, entry: withCustomNotes(entryOf(name, topo, res, contract, a, s, nil), lim)}
		return m, fmt.Errorf("%w: after %s on %s: %w", ErrLost, name, topo, err)
	}
	after, err := snapshot(statCtx, tgt)
	if err != nil {
		return nil, fmt.Errorf("%w: read server stats: %w", ErrLost, err)
	}
	srv := serverCost(before, after, res)
	keys, bytes, err := keyMemory(statCtx, tgt, prefix)
	if err == nil && keys > 0 {
		srv.Keys = keys
		if n := subjectsTouched(res.log); n > 0 {
			srv.BytesPerKey = math.Round(float64(bytes) / float64(n))
		}
	}
	return &measurement{repeat: rep, entry: withCustomNotes(entryOf(name, topo, res, contract, a, s, &srv), lim)}, nil
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

// lostOr returns err marked as ErrLost when the target no longer answers, or as
// ErrInterrupted when ctx was cancelled.
func lostOr(ctx context.Context, tgt *redisenv.Target, err error) error {
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

// serverCost turns two stats snapshots around a measurement into per-decision costs.
func serverCost(before, after serverStats, res *run) report.Server {
	var srv report.Server
	n := float64(res.Counts.Requests + res.Counts.Warmup)
	if n == 0 {
		return srv
	}
	if d := after.usec - before.usec; d > 0 {
		srv.USecPerCall = round3(float64(d) / n)
	}
	if d := after.cpu - before.cpu; d > 0 {
		srv.CPUUSecPerDecision = round3(d * 1e6 / n)
	}
	return srv
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// keyMemory counts the keys under prefix on every master and estimates their memory from
// MEMORY USAGE of up to memorySample keys per master, scaled to all of them.
func keyMemory(ctx context.Context, tgt *redisenv.Target, prefix string) (keys, bytes int64, err error) {
	type part struct{ keys, sampled, bytes int64 }
	var parts []part
	var mu = make(chan struct{}, 1)
	err = tgt.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		var p part
		iter := c.Scan(ctx, 0, globEscape(prefix)+"*", 1000).Iterator()
		for iter.Next(ctx) {
			p.keys++
			if p.sampled < memorySample {
				n, err := c.MemoryUsage(ctx, iter.Val(), 0).Result()
				if err == nil {
					p.sampled++
					p.bytes += n
				}
			}
		}
		if err := iter.Err(); err != nil {
			return err
		}
		mu <- struct{}{}
		parts = append(parts, p)
		<-mu
		return nil
	})
	for _, p := range parts {
		keys += p.keys
		if p.sampled > 0 {
			bytes += p.bytes * p.keys / p.sampled
		}
	}
	return keys, bytes, err
}

// globEscape escapes the glob metacharacters of s for SCAN MATCH.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// subjectsTouched counts the distinct subjects of the log's admitted or denied requests.
func subjectsTouched(log *verify.Log) int {
	if log == nil {
		return 0
	}
	seen := make([]bool, len(log.Subjects))
	n := 0
	for _, e := range log.Events {
		if k := e.Kind(); (k == verify.Admitted || k == verify.Denied) && int(e.Subject) < len(seen) && !seen[e.Subject] {
			seen[e.Subject] = true
			n++
		}
	}
	return n
}

// entryOf builds the report entry of one measurement, verifying its admission log.
func entryOf(name, topo string, res *run, contract algorithms.Contract, a algorithms.Algorithm,
	s *scenarios.Scenario, srv *report.Server) report.Entry {
	c := res.Counts
	e := report.Entry{
		Algorithm:     name,
		Topology:      topo,
		Requests:      int64(c.Requests),
		Allowed:       int64(c.Allowed),
		Denied:        int64(c.Denied),
		Errors:        int64(c.Failed),
		Unknown:       int64(c.Unknown),
		Dropped:       int64(c.Missed + c.Dropped),
		Late:          int64(c.Late),
		DurationS:     res.Duration.Seconds(),
		OfferedRPS:    round3(res.OfferedRate),
		ThroughputRPS: round3(res.Throughput),
	}
	if _, custom := a.(*customAlgorithm); custom {
		e.Custom = true
	}
	if c.Requests > 0 {
		e.LateFraction = float64(c.Late) / float64(c.Requests)
	}
	if srv != nil {
		e.Server = *srv
	}
	if res.hist != nil {
		// Encoding a histogram we built cannot fail short of a bug; the entry then simply has no
		// histogram, and the report says so.
		_ = e.SetHistograms(res.hist.Latency(), res.hist.Service())
	}
	e.Verification = verify.Summarize(contract, res.log, verify.Warnings{Behind: res.Behind, Canceled: res.Canceled,
		ClockMismatch: res.Counts.ClockMismatch, Dropped: res.Counts.Dropped}, res.start)
	if res.log != nil && contract.Kind != algorithms.NoContract {
		if acc, err := accuracy(contract, res); err == nil {
			e.Accuracy = report.Accuracy{
				IdealAllowed:   acc.IdealAllowed,
				Efficiency:     round3(acc.Efficiency),
				FalseDenials:   acc.FalseDenials,
				MaxWindowRatio: round3(acc.MaxWindowRatio),
			}
		} else {
			e.Verification.Reasons = append(e.Verification.Reasons, "accuracy not computed: "+err.Error())
		}
		if note := replay(a.Model(s.Limit), res); note != "" {
			e.Verification.Reasons = append(e.Verification.Reasons, note)
		}
	}
	e.Timeline = timeline(res, contract)
	if res.Canceled && res.log == nil {
		// With a log, the verdict's reasons already say so.
		e.Verification.Reasons = append(e.Verification.Reasons, "the measurement was cut short")
	}
	return e
}

// timeline converts the load timeline and adds the contract's allowance per bin.
func timeline(res *run, contract algorithms.Contract) report.Timeline {
	t := report.Timeline{BinS: res.Plan.Bin.Seconds()}
	if res.tl == nil {
		return t
	}
	for _, b := range res.tl.Bins {
		t.Offered = append(t.Offered, int64(b.Offered))
		t.Admitted = append(t.Admitted, int64(b.AdmittedPermits))
		t.Denied = append(t.Denied, int64(b.Denied))
		t.Errors = append(t.Errors, int64(b.Failed+b.Unknown))
	}
	if contract.Kind == algorithms.NoContract || res.log == nil || len(t.Offered) == 0 {
		return t
	}
	// The allowance of one scope over one bin, in the steady state.
	bin := res.Plan.Bin
	var per float64
	switch contract.Kind {
	case algorithms.SlidingWindow, algorithms.FixedWindow:
		per = float64(contract.Limit) * bin.Seconds() / contract.Window.Seconds()
	case algorithms.TokenBucket:
		per = float64(contract.RefillPermits) * bin.Seconds() / contract.RefillPer.Seconds()
	}
	// Count the scopes active in each bin.
	start := res.start
	binUS := bin.Microseconds()
	active := make([]map[uint64]struct{}, len(t.Offered))
	for _, ev := range res.log.Events {
		// The midpoint, on the log's clock: Base plus relative times.
		i := int((res.log.Base + ev.Lo() + (ev.Hi()-ev.Lo())/2 - start) / binUS)
		if i < 0 || i >= len(active) {
			continue
		}
		if active[i] == nil {
			active[i] = map[uint64]struct{}{}
		}
		k := uint64(ev.Subject)
		if contract.Scope == algorithms.PerClient {
			k = k<<16 | uint64(ev.Client)
		} else if contract.Scope == algorithms.PerConsumer {
			k = uint64(ev.Client)
		}
		active[i][k] = struct{}{}
	}
	t.Limit = make([]float64, len(t.Offered))
	for i, m := range active {
		t.Limit[i] = round3(per * float64(len(m)))
	}
	return t
}

// summarize merges the repeats of one algorithm on one topology into one entry: the repeat with
// the median throughput gives the histograms and timeline, verification takes the worst verdict
// and adds up violations, and every repeat becomes a Sample.
func summarize(ms []*measurement, a algorithms.Algorithm, s *scenarios.Scenario) report.Entry {
	byTP := slices.Clone(ms)
	sort.SliceStable(byTP, func(i, j int) bool { return byTP[i].entry.ThroughputRPS < byTP[j].entry.ThroughputRPS })
	e := byTP[len(byTP)/2].entry
	markExpectations(&e, s)
	if len(ms) == 1 {
		return e
	}
	var def, poss, worst int64
	verdict := verify.Pass
	var reasons []string
	for _, m := range ms {
		v := m.entry.Verification
		def += v.DefiniteViolations
		poss += v.PossibleViolations
		if v.WorstExcess > worst {
			worst = v.WorstExcess
			e.Verification.Where = fmt.Sprintf("repeat %d: %s", m.repeat, v.Where)
		}
		switch {
		case v.Verdict == verify.Fail:
			verdict = verify.Fail
		case v.Verdict == verify.Inconclusive && verdict == verify.Pass:
			verdict = verify.Inconclusive
		}
		for _, r := range v.Reasons {
			reasons = append(reasons, fmt.Sprintf("repeat %d: %s", m.repeat, r))
		}
		e.Samples = append(e.Samples, report.Sample{
			Repeat:             m.repeat,
			ThroughputRPS:      m.entry.ThroughputRPS,
			LatencyUS:          m.entry.LatencyUS,
			Efficiency:         m.entry.Accuracy.Efficiency,
			USecPerCall:        m.entry.Server.USecPerCall,
			CPUUSecPerDecision: m.entry.Server.CPUUSecPerDecision,
			BytesPerKey:        m.entry.Server.BytesPerKey,
			Verdict:            v.Verdict,
		})
	}
	e.Verification.Verdict = verdict
	e.Verification.Reasons = reasons
	e.Verification.DefiniteViolations = def
	e.Verification.PossibleViolations = poss
	e.Verification.WorstExcess = worst
	return e
}

// relate fills Relative for the entries from first on, against the reference entry of the same
// topology.
func relate(res *report.Result, first int) {
	if res.Reference == "" {
		return
	}
	var ref *report.Entry
	for i := first; i < len(res.Entries); i++ {
		if res.Entries[i].Algorithm == res.Reference {
			ref = &res.Entries[i]
		}
	}
	if ref == nil {
		return
	}
	ratio := func(a, b float64) float64 {
		if a == 0 || b == 0 {
			return 0
		}
		return round3(a / b)
	}
	for i := first; i < len(res.Entries); i++ {
		e := &res.Entries[i]
		if e == ref {
			continue
		}
		e.Relative = &report.Relative{
			Reference:          res.Reference,
			Throughput:         ratio(e.ThroughputRPS, ref.ThroughputRPS),
			P50:                ratio(e.LatencyUS.P50, ref.LatencyUS.P50),
			P99:                ratio(e.LatencyUS.P99, ref.LatencyUS.P99),
			USecPerCall:        ratio(e.Server.USecPerCall, ref.Server.USecPerCall),
			CPUUSecPerDecision: ratio(e.Server.CPUUSecPerDecision, ref.Server.CPUUSecPerDecision),
			BytesPerKey:        ratio(e.Server.BytesPerKey, ref.Server.BytesPerKey),
		}
	}
}

// accuracy compares the run's decisions, the warmup's first (see withWarmup), with an exact
// limiter's.
func accuracy(contract algorithms.Contract, res *run) (verify.AccuracyReport, error) {
	log, err := withWarmup(res)
	if err != nil {
		return verify.AccuracyReport{}, err
	}
	return verify.Accuracy(contract, log, time.Second)
}

// withWarmup returns the measured log preceded by the warmup's requests, with From set to the
// start of the measured part: the ideal limiter sees every request the algorithm saw, so both start
// the measured part in the same state, and only the measured part is counted. The warmup's events
// are moved to the measured log's Base when theirs differs (load.Run gives both one Base); it
// returns an error when one does not fit there.
func withWarmup(res *run) (*verify.Log, error) {
	if res.warm == nil || len(res.warm.Events) == 0 {
		return res.log, nil
	}
	events := make([]verify.Event, 0, len(res.warm.Events)+len(res.log.Events))
	events = append(events, res.warm.Events...)
	if d := res.warm.Base - res.log.Base; d != 0 {
		for i, e := range events {
			s, err := e.Shift(d)
			if err != nil {
				return nil, fmt.Errorf("warmup event %d: %w", i, err)
			}
			events[i] = s
		}
	}
	events = append(events, res.log.Events...)
	return &verify.Log{Subjects: res.log.Subjects, Clients: res.log.Clients, Base: res.log.Base, Events: events,
		From: res.start}, nil
}

// replay replays the decisions of the run (the warmup's first) through the algorithm's reference
// model and returns a note when some differ; "" when they agree or replay is not possible: no
// model, or a warmup request without an exact decision time, which the model cannot follow.
func replay(m algorithms.Model, res *run) string {
	if m == nil || res.log == nil {
		return ""
	}
	if res.warm != nil {
		for _, e := range res.warm.Events {
			if k := e.Kind(); e.Lo() != e.Hi() || (k != verify.Admitted && k != verify.Denied) {
				return ""
			}
		}
	}
	log, err := withWarmup(res)
	if err != nil {
		return ""
	}
	rr, err := verify.Replay(m, log)
	if err != nil || rr.Differ == 0 {
		return ""
	}
	return fmt.Sprintf("note: %d of %d decisions replayed through the reference model differ", rr.Differ, rr.Replayed)
}
