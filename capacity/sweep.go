package capacity

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/cpus"
	"github.com/limitbench/limitbench/internal/judge"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/measure"
	"github.com/limitbench/limitbench/internal/metrics"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/report"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/scenarios"
)

// Defaults of Options.
const (
	DefaultStep           = 2 * time.Second
	DefaultMemorySubjects = 10_000
	// DefaultMaxSteps bounds the open-loop steps of one sweep.
	DefaultMaxSteps = 24
	// FollowRatio is the share of the offered rate a step must achieve to be good.
	FollowRatio = 0.95
	// Resolution is how close the bisection brings the last good and first bad rates:
	// (bad − good) / good ≤ Resolution.
	Resolution = 0.05
	// maxErrorShare is the share of failed or unknown requests above which a step is bad.
	maxErrorShare = 0.001
	// memoryBudget bounds the requests of the memory step: fewer subjects when each needs many.
	memoryBudget = 300_000
	// memoryMinSubjects is the fewest subjects the memory step touches.
	memoryMinSubjects = 200
	// maxFill is the most requests the memory step sends one subject.
	maxFill = 1000
	// memoryWindow is the least window of the memory step's limit, so that no state expires
	// before used_memory is read.
	memoryWindow = 10 * time.Minute
	// minRate is the lowest rate the sweep halves down to.
	minRate = 10.0
)

// Run finds the highest open-loop rate at which one algorithm still meets o.SLO on one Redis
// environment, and what each decision and each subject cost there.
//
// The sweep, every step on a fresh key prefix of the same environment:
//
//  1. A closed-loop probe with the scenario's clients measures the saturation throughput S.
//  2. Open-loop steps at a constant rate, starting at S/4 (1,000/s without a probe result),
//     double the rate until a step is bad (halving instead while the first steps are bad).
//     A step is good when it meets the SLO, achieves at least FollowRatio (95%) of the offered
//     rate, the generator stayed on schedule (load.BehindLimit) and at most 0.1% of requests
//     failed.
//  3. Bisection between the last good and the first bad rate until they are within Resolution
//     (5%) of each other. The sustainable rate is the last good one.
//
// A step that breaks a latency objective and nothing else is measured again at once, and its
// rate judged on both steps' latencies together (see sweep.step): a stall of the machine in one
// short step does not decide the sweep.
//
// Then a memory step touches MemorySubjects fresh subjects and reads INFO used_memory before and
// after (and MEMORY USAGE over a sample of the keys). Each subject is sent the requests that put
// it at its limit: the scenario's limit L (at most 1,000) for algorithms whose state grows with
// the limit, 2 for O(1) ones; when L is large the step touches fewer subjects (at least 200)
// so as to stay under 300,000 requests. Its window is stretched to at least 10 minutes so no
// state expires before it is read (state size depends on L, not on the window).
//
// The error is non-nil when the sweep could not start or finish (measure's sentinels); the
// Result is never nil and holds what was measured.
func Run(ctx context.Context, o Options) (*Result, error) {
	o.defaults()
	s := o.Scenario
	c := &Result{
		Schema:      SchemaVersion,
		Algorithm:   o.Algorithm,
		Environment: report.HarnessEnvironment(),
		StepS:       o.Step.Seconds(),
		WarmupS:     o.Warmup.Seconds(),
		FollowRatio: FollowRatio,
		Resolution:  Resolution,
		StartedAt:   time.Now().UTC(),
		Steps:       []Step{},
	}
	finish := func(err error) (*Result, error) {
		c.FinishedAt = time.Now().UTC()
		return c, measure.Mark(err)
	}
	if s == nil {
		return finish(errors.New("capacity: no scenario"))
	}
	c.setSLO(o.SLO)
	alg, err := Algorithm(s, o.Algorithm)
	if err != nil {
		return finish(err)
	}
	cfg := o.Env
	if cfg.Topology == "" {
		cfg.Topology = redisenv.TopologySingle
		if len(s.Topologies) > 0 {
			cfg.Topology = redisenv.Topology(s.Topologies[0])
		}
	}
	cfg.Logf = o.Logf
	c.Topology = string(cfg.Topology)
	c.Scenario = describe(s, o, c.Topology)

	tgt, err := redisenv.Start(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return finish(fmt.Errorf("%w: %w", measure.ErrInterrupted, ctx.Err()))
		}
		return finish(fmt.Errorf("start %s environment: %w", cfg.Topology, err))
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := tgt.Stop(stopCtx); err != nil {
			o.Logf("stop environment: %v", err)
		}
	}()
	report.AddTarget(&c.Environment, tgt.Info)
	c.Environment.Topology = c.Topology
	c.Masters = len(tgt.Masters())
	c.Pinning = pin(ctx, tgt, o.CPUs)
	o.Logf("%s %s: %s, Redis %s; %s; CPU idle states %s", tgt.Info.Backend, c.Topology, strings.Join(tgt.Masters(), " "),
		tgt.Info.Version, c.Pinning.Note, c.Pinning.AwakeNote)

	sw := &sweep{o: o, tgt: tgt, alg: alg, runID: measure.NewRunID(), c: c}
	err = sw.runNoting(ctx, liveProc)
	if err == nil && o.MemorySubjects > 0 {
		var m Memory
		m, err = sw.memoryStep(ctx)
		m.LoadBytesPerSubject = c.Memory.LoadBytesPerSubject
		c.Memory = m
		if err == nil {
			o.Logf("memory: %.0f bytes per subject (used_memory delta over %d subjects), MEMORY USAGE %.0f",
				m.BytesPerSubject, m.Subjects, m.MemoryUsagePerSubject)
		}
	}
	sw.warnedAgain()
	c.project()
	if err != nil {
		c.Notes = append(c.Notes, "the sweep was cut short: "+err.Error())
	}
	return finish(err)
}

// setSLO records the sweep's objective slo (nil: none) in c.
func (c *Result) setSLO(slo *scenarios.Threshold) {
	if slo == nil {
		return
	}
	c.SLO = slo.Text
	if c.SLO == "" {
		c.SLO = slo.String()
	}
	c.SLOMetric = string(slo.Metric)
	if slo.Metric.IsLatency() && (slo.Op == scenarios.Less || slo.Op == scenarios.LessEqual) {
		c.SLOBoundUS = slo.Value
	}
}

// project sets c's rate per shard and its projections to other scales from the sweep's figures.
func (c *Result) project() {
	if c.Masters > 0 {
		c.ShardRPS = result.Round3(c.SustainableRPS / float64(c.Masters))
	}
	if c.Masters > 1 {
		cpus := len(c.Pinning.RedisCPUs)
		if cpus == 0 {
			cpus = runtime.NumCPU()
		}
		if cpus < c.Masters {
			c.Notes = append(c.Notes, fmt.Sprintf("the %d masters shared %d CPU(s), so the rate per shard "+
				"(the sweep's rate over the masters) is a lower bound for a shard with a CPU of its own", c.Masters, cpus))
		}
	}
	perSubject := c.Memory.BytesPerSubject
	if perSubject <= 0 {
		perSubject = c.Memory.MemoryUsagePerSubject
	}
	c.Projection = Project(perSubject, c.ShardRPS)
}

// pin pins the target's servers to the CPUs st chose and describes where Redis and the load
// generator run, with the CPUs' idle states.
func pin(ctx context.Context, tgt *redisenv.Target, st cpus.State) Pinning {
	out := Pinning{CPUsAwake: st.Awake, AwakeNote: st.AwakeNote}
	if len(st.RedisCPUs) == 0 {
		out.Note = "not pinned: " + st.NotPinned
		return out
	}
	if err := tgt.PinServers(ctx, st.RedisCPUs); err != nil {
		out.Note = "not pinned: " + err.Error()
		if st.HarnessCPUs != nil {
			out.Note += "; the load generator runs on " + cpuList(st.HarnessCPUs)
		}
		return out
	}
	out.Pinned, out.RedisCPUs, out.HarnessCPUs = true, st.RedisCPUs, st.HarnessCPUs
	out.Note = "Redis pinned to " + cpuList(st.RedisCPUs)
	if st.HarnessCPUs != nil {
		out.Note += ", the load generator to " + cpuList(st.HarnessCPUs)
	}
	return out
}

func cpuList(cpus []int) string {
	parts := make([]string, len(cpus))
	for i, c := range cpus {
		parts[i] = fmt.Sprint(c)
	}
	if len(cpus) == 1 {
		return "CPU " + parts[0]
	}
	return "CPUs " + strings.Join(parts, ",")
}

// sweep is one capacity sweep in progress.
type sweep struct {
	o     Options
	tgt   *redisenv.Target
	alg   algorithms.Algorithm
	runID string
	c     *Result
	n     int // steps run, for key prefixes
	// warned holds the steps' warnings by kind (see warn).
	warned map[string][]result.Warning
	// measure runs one step at rate (0: closed loop); nil means measureStep. Tests replace it.
	measure func(ctx context.Context, phase string, rate float64) (Step, *result.Entry, error)
}

// run runs the probe, the doubling and the bisection.
func (sw *sweep) run(ctx context.Context) error {
	c := sw.c
	probe, _, err := sw.step(ctx, PhaseProbe, 0)
	if err != nil {
		return err
	}
	c.Probe = &probe
	start := 1000.0
	if probe.AchievedRPS > 0 {
		start = niceRate(probe.AchievedRPS / 4)
	}
	good, bad, err := sw.bracket(ctx, start)
	if err != nil {
		return err
	}
	if good > 0 && bad > 0 {
		if err := sw.bisect(ctx, good, bad); err != nil {
			return err
		}
	}
	return nil
}

// bracket doubles the rate from start until a step is bad, or halves it until one is good, and
// returns the last good and first bad rates (0 when there is none).
func (sw *sweep) bracket(ctx context.Context, start float64) (good, bad float64, err error) {
	r := start
	for len(sw.c.Steps) < sw.o.MaxSteps {
		phase := PhaseDouble
		if bad > 0 {
			phase = PhaseHalve
		}
		st, _, err := sw.step(ctx, phase, r)
		if err != nil {
			return good, bad, err
		}
		switch {
		case st.Good && bad > 0:
			return r, bad, nil
		case st.Good:
			good = r
			r *= 2
		case good > 0:
			return good, r, nil
		default:
			bad = r
			r /= 2
			if r < minRate {
				sw.c.Notes = append(sw.c.Notes, fmt.Sprintf("no rate down to %g/s met the objective", minRate))
				return 0, bad, nil
			}
		}
	}
	sw.c.Notes = append(sw.c.Notes, fmt.Sprintf("stopped after %d steps", sw.o.MaxSteps))
	return good, bad, nil
}

// bisect narrows [good, bad] until bad/good − 1 ≤ Resolution.
func (sw *sweep) bisect(ctx context.Context, good, bad float64) error {
	for bad/good-1 > Resolution && len(sw.c.Steps) < sw.o.MaxSteps {
		mid := math.Round((good + bad) / 2)
		if mid <= good || mid >= bad {
			break
		}
		st, _, err := sw.step(ctx, PhaseBisect, mid)
		if err != nil {
			return err
		}
		if st.Good {
			good = mid
		} else {
			bad = mid
		}
	}
	if bad/good-1 > Resolution && len(sw.c.Steps) >= sw.o.MaxSteps {
		sw.c.Notes = append(sw.c.Notes, fmt.Sprintf("stopped after %d steps, %.0f%% short of the resolution", sw.o.MaxSteps, (bad/good-1-Resolution)*100))
	}
	return nil
}

// step measures one step at rate (0: closed loop), records it and, when it is the best good
// step so far, takes the sustainable rate and costs from it.
//
// A step that broke the latency objective and nothing else (it achieved the offered rate, on
// schedule, without errors) is not the rate's verdict on its own: one stall of the machine, a
// few ms in a 2 s step, is enough to put a p99 over its bound at any rate. The rate is measured
// once more (PhaseConfirm) and judged on both steps' latency histograms merged, twice the data;
// a real overload, whose queue grows for as long as it lasts, breaks the objective over both
// just as well. The first step is kept, marked Superseded, and the confirm step's verdict is
// the rate's.
func (sw *sweep) step(ctx context.Context, phase string, rate float64) (Step, *result.Entry, error) {
	st, e, err := sw.measureOnce(ctx, phase, rate)
	if e == nil || err != nil || phase == PhaseProbe || st.Good || !sw.latencyOnly(rate, e) ||
		len(sw.c.Steps)+1 >= sw.o.MaxSteps || ctx.Err() != nil {
		sw.record(st, e)
		return st, e, err
	}
	st.Superseded = true
	sw.record(st, e)
	st2, e2, err := sw.measureOnce(ctx, PhaseConfirm, rate)
	if e2 == nil {
		// Nothing measured: the first step's verdict stands.
		st.Superseded = false
		sw.c.Steps[len(sw.c.Steps)-1] = st
		sw.settle(st, e)
		return st, e, err
	}
	st2 = sw.judgeBoth(st2, e, e2)
	sw.record(st2, e2)
	return st2, e2, err
}

// measureOnce runs one measurement (sw.measure, else measureStep), checking the context after it.
func (sw *sweep) measureOnce(ctx context.Context, phase string, rate float64) (Step, *result.Entry, error) {
	step := sw.measure
	if step == nil {
		step = sw.measureStep
	}
	st, e, err := step(ctx, phase, rate)
	if e != nil && err == nil && ctx.Err() != nil {
		err = fmt.Errorf("%w: %w", measure.ErrInterrupted, ctx.Err())
	}
	return st, e, err
}

// latencyOnly reports whether the step measured in e at rate broke a latency objective and
// nothing else.
func (sw *sweep) latencyOnly(rate float64, e *result.Entry) bool {
	return sw.o.SLO != nil && sw.o.SLO.Metric.IsLatency() && judgeStep(PhaseBisect, rate, e, nil).Good
}

// judgeBoth judges the confirm step st (entry e2) of the rate first (entry e1) broke: st must
// meet every criterion on its own except the objective, which must hold over both steps'
// latencies merged. Without both histograms the rate is bad: half the data cannot overrule.
func (sw *sweep) judgeBoth(st Step, e1, e2 *result.Entry) Step {
	alone := judgeStep(st.Phase, st.OfferedRPS, e2, nil)
	if !alone.Good {
		return st
	}
	slo := sw.o.SLO
	h1, err1 := e1.LatencyHistogram()
	h2, err2 := e2.LatencyHistogram()
	if err1 != nil || err2 != nil || h1 == nil || h2 == nil {
		st.Good, st.Reason = false, "no latency histograms to judge both steps together"
		return st
	}
	if dropped := h1.Merge(h2); dropped > 0 {
		st.Good, st.Reason = false, fmt.Sprintf("%d latencies of the confirm step did not fit the first step's histogram", dropped)
		return st
	}
	both := *e2
	both.Allowed, both.Denied = e1.Allowed+e2.Allowed, e1.Denied+e2.Denied
	both.Histograms.Latency = ""
	both.LatencyUS = load.Summarize(h1)
	v, ok := slo.Metric.Value(&both)
	st.Good = ok && slo.Holds(v)
	st.Note = fmt.Sprintf("over both steps %s %s", slo.Metric, judge.FormatMetric(slo.Metric, v))
	st.Reason = ""
	if !st.Good {
		st.Reason = fmt.Sprintf("over both steps %s %s broke %q", slo.Metric, judge.FormatMetric(slo.Metric, v), slo.Text)
		st.Note = ""
	}
	return st
}

// record appends st (entry e) to the steps, logs it, and, unless it is superseded, settles its
// rate's verdict.
func (sw *sweep) record(st Step, e *result.Entry) {
	if e == nil {
		return
	}
	if st.Phase != PhaseProbe {
		sw.c.Steps = append(sw.c.Steps, st)
		if !st.Superseded {
			sw.settle(st, e)
		}
	}
	what := "closed loop"
	if st.OfferedRPS > 0 {
		what = fmt.Sprintf("%.0f/s", st.OfferedRPS)
	}
	verdict := "good"
	switch {
	case st.Good && st.Note != "":
		verdict = "good: " + st.Note
	case st.Superseded:
		verdict = "bad: " + st.Reason + "; measuring again"
	case !st.Good:
		verdict = "bad: " + st.Reason
	}
	sw.o.Logf("%s %s: achieved %.0f/s, p99 %s, %s", st.Phase, what, st.AchievedRPS, report.MicrosExact(st.LatencyUS.P99), verdict)
	if sw.o.OnStep != nil {
		sw.o.OnStep(st)
	}
}

// settle takes the sustainable rate and costs from st when it is the best good step so far, and
// the bound from it when it is the lowest bad one.
func (sw *sweep) settle(st Step, e *result.Entry) {
	rate := st.OfferedRPS
	if st.Good && rate > sw.c.SustainableRPS {
		sw.c.SustainableRPS = rate
		sw.c.CPUUSecPerDecision = e.Server.CPUUSecPerDecision
		sw.c.USecPerCall = e.Server.USecPerCall
		sw.c.Memory.LoadBytesPerSubject = e.Server.BytesPerKey
	}
	if !st.Good && (sw.c.FirstBadRPS == 0 || rate < sw.c.FirstBadRPS) {
		sw.c.FirstBadRPS = rate
		sw.c.Bound = st.Reason
	}
}

// measureStep runs one step on the target, on a fresh key prefix, and judges it.
func (sw *sweep) measureStep(ctx context.Context, phase string, rate float64) (Step, *result.Entry, error) {
	s := *sw.o.Scenario
	s.Duration, s.Warmup = sw.o.Step, sw.o.Warmup
	s.Arrival = nil
	if rate > 0 {
		s.Arrival = &arrival.Arrival{Rate: rate}
	}
	s.Thresholds, s.Expect = nil, result.Expect{}
	sw.n++
	m, _, err := sw.measure1(ctx, s.Limit, s.Plan(), strconv.Itoa(sw.n))
	if m.Entry == nil {
		return Step{}, nil, err
	}
	st := judgeStep(phase, rate, m.Entry, sw.o.SLO)
	if phase == PhaseProbe {
		st.Good, st.Reason = true, ""
	}
	return st, m.Entry, err
}

// measure1 measures the sweep's algorithm once under l with plan p on the key prefix named what,
// with the scenario's call mode and the server's cost, which it returns with the measurement. A
// key it could not remove from an external Redis is a note of the sweep's result, said once.
func (sw *sweep) measure1(ctx context.Context, l algorithms.Limit, p load.Plan, what string) (*measure.Measurement, *measure.Cost, error) {
	cost := new(measure.Cost)
	spec := measure.Spec{Target: sw.tgt, Topology: sw.c.Topology, Algorithm: sw.alg, Limit: l, Plan: p,
		Prefix: measure.KeyPrefix(sw.runID, sw.alg.Describe().Name, what), Logf: sw.o.Logf}
	live := sw.o.Metrics.Stage(metrics.Labels{RunID: sw.runID, Scenario: sw.o.Scenario.Name, Algorithm: sw.alg.Describe().Name,
		Topology: sw.c.Topology}, nil)
	m, err := measure.Do(ctx, spec, measure.Functions(sw.o.Scenario.Call), cost.Stage(), live)
	if m.Entry != nil {
		for _, w := range m.Entry.Warnings {
			sw.warn(w)
		}
	}
	return m, cost, err
}

// warn makes the first warning of each kind a note of the sweep's result and says it through
// Logf; later ones of that kind are kept (warned), and Run notes them in one line (warnedAgain).
func (sw *sweep) warn(w result.Warning) {
	if sw.warned == nil {
		sw.warned = map[string][]result.Warning{}
	}
	sw.warned[w.Kind] = append(sw.warned[w.Kind], w)
	if len(sw.warned[w.Kind]) == 1 {
		sw.c.Notes = append(sw.c.Notes, "warning: "+w.Message)
		sw.o.Logf("warning: %s", w.Message)
	}
}

// warnedAgain notes, for each kind of warning more than one step had, how many more did and,
// for keys left behind, under which prefixes (the first warning's command removes them with its
// prefix changed).
func (sw *sweep) warnedAgain() {
	for _, k := range slices.Sorted(maps.Keys(sw.warned)) {
		ws := sw.warned[k][1:]
		if len(ws) == 0 {
			continue
		}
		note := fmt.Sprintf("%d more steps had a %s warning like the one above", len(ws), k)
		if k == result.WarningKeysLeft {
			var where []string
			for _, w := range ws {
				n := fmt.Sprint(w.Keys)
				if w.Keys < 0 {
					n = "some" // they could not be counted
				}
				where = append(where, n+" under "+w.Prefix)
			}
			note = fmt.Sprintf("keys were left behind by %d more steps as well: %s", len(ws), strings.Join(where, ", "))
		}
		sw.c.Notes = append(sw.c.Notes, note)
		sw.o.Logf("warning: %s", note)
	}
}

// judgeStep turns a step's entry into a Step and decides whether it is good.
func judgeStep(phase string, rate float64, e *result.Entry, slo *scenarios.Threshold) Step {
	scheduled := e.Requests + e.Dropped // Dropped holds the missed ticks
	st := Step{
		Phase:              phase,
		OfferedRPS:         rate,
		ScheduledRPS:       e.OfferedRPS,
		AchievedRPS:        e.ThroughputRPS,
		LatencyUS:          e.LatencyUS,
		Requests:           e.Requests,
		Errors:             e.Errors + e.Unknown,
		Late:               e.Late,
		Missed:             e.Dropped,
		Behind:             scheduled > 0 && float64(e.Late+e.Dropped) > load.BehindLimit*float64(scheduled),
		CPUUSecPerDecision: e.Server.CPUUSecPerDecision,
		USecPerCall:        e.Server.USecPerCall,
		BytesPerSubject:    e.Server.BytesPerKey,
		Good:               true,
	}
	if phase == PhaseProbe {
		st.Behind = false
	}
	var why []string
	if e.Requests == 0 {
		why = append(why, "no request completed")
	}
	if st.Errors > 0 && float64(st.Errors) > maxErrorShare*float64(e.Requests) {
		why = append(why, fmt.Sprintf("%d of %d requests failed", st.Errors, e.Requests))
	}
	if st.Behind {
		why = append(why, fmt.Sprintf("the generator fell behind (%d late, %d never sent)", st.Late, st.Missed))
	}
	if rate > 0 && st.AchievedRPS < FollowRatio*rate {
		why = append(why, fmt.Sprintf("achieved %.0f%% of offered", 100*st.AchievedRPS/rate))
	}
	if slo != nil && e.Requests > 0 {
		if v, ok := slo.Metric.Value(e); ok && !slo.Holds(v) {
			why = append(why, fmt.Sprintf("%s %s broke %q", slo.Metric, judge.FormatMetric(slo.Metric, v), slo.Text))
		}
	}
	if len(why) > 0 {
		st.Good, st.Reason = false, strings.Join(why, "; ")
	}
	return st
}

// niceRate rounds r down to two significant digits, at least minRate.
func niceRate(r float64) float64 {
	if r <= minRate {
		return minRate
	}
	p := math.Pow(10, math.Floor(math.Log10(r))-1)
	return math.Floor(r/p) * p
}
