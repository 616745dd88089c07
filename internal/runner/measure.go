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
// algorithm with contract and model.
func (r *recording) verification(res *load.Result, contract algorithms.Contract, model algorithms.Model) verify.Measurement {
	m := verify.Measurement{
		Contract: contract, Model: model,
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
		Mode:          s.ClientMode,
		PipelineDepth: s.PipelineDepth,
		Keys:          s.Keys,
		Seed:          uint64(s.Seed),
		Bin:           timelineBin(s.Duration),
		Skew:          s.ClockSkew,
		Cost:          s.Cost,
	}
	if s.Arrival != nil {
		p.Arrival = load.NewProfile(s.Arrival.Segments(s.TotalDuration())...)
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
	rec := newRecording(p, sharedClock, serverClock, clientClock)
	res, err := load.Run(ctx, client, lim, p, rec.sinks())
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", name, err)
	}
	vm := rec.verification(res, contract, a.Model(s.Limit))
	_, custom := a.(*customAlgorithm)
	statCtx, cancel := context.WithTimeout(cleanCtx, 10*time.Second)
	defer cancel()
	if err := alive(statCtx, tgt); err != nil {
		m := &measurement{repeat: rep, entry: withCustomNotes(entryOf(name, topo, res, rec, vm, custom, nil), lim)}
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
		if n := vm.Log.SubjectsDecided(); n > 0 {
			srv.BytesPerKey = math.Round(float64(bytes) / float64(n))
		}
	}
	return &measurement{repeat: rep, entry: withCustomNotes(entryOf(name, topo, res, rec, vm, custom, &srv), lim)}, nil
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
func serverCost(before, after serverStats, res *load.Result) report.Server {
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
