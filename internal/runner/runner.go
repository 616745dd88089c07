// Package runner runs a scenario: for each topology it starts one Redis environment, runs every
// algorithm (interleaved with the reference script, repeated as asked) under the scenario's load,
// measures what the decisions cost Redis, verifies each algorithm against its contract, and
// assembles a report.Result. It evaluates the scenario's expectations and thresholds; writing the
// files and choosing the exit code are the caller's (the CLI's) job.
package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/verify"
	"github.com/limitbench/limitbench/report"
	"github.com/limitbench/limitbench/scenarios"
)

// Errors of Run; compare with errors.Is. Environment errors also wrap redisenv's sentinels
// (ErrUnavailable, ErrBadConfig).
var (
	// ErrLost means Redis stopped answering during the run. The Conclusion still holds what was
	// measured before.
	ErrLost = errors.New("redis was lost during the run")
	// ErrInterrupted means ctx was cancelled (Ctrl-C, SIGTERM) before the run finished; the
	// Conclusion holds what was measured, with Result.CutShort set.
	ErrInterrupted = errors.New("run cut short")
	// ErrBadScript means a custom script does not load in Redis (its Lua does not compile, or its
	// keys do not fit the topology).
	ErrBadScript = errors.New("bad custom script")
)

// Options configure Run. Scenario is required; the zero value of every other field is a
// documented default.
type Options struct {
	// Scenario is what to run; it must be valid (scenarios.Load returns valid scenarios).
	Scenario *scenarios.Scenario
	// Env is the environment to start for each topology; its Topology is set per topology.
	Env redisenv.Config
	// Repeat runs each algorithm this many times (default 1), interleaved: A B C A B C.
	Repeat int
	// NoReference skips the reference script (a bare INCR + PEXPIRE) that is otherwise measured
	// under the same load in every round, so that results carry relative figures.
	NoReference bool
	// Progress, when set, receives a live view of the current measurement about once a second.
	Progress func(Progress)
	// Done, when set, is called after each measurement with its entry.
	Done func(e *report.Entry, repeat int)
	// Logf, when set, receives one line per notable step (environment chosen, started, stopped).
	Logf func(format string, args ...any)
	// ScenarioFile is recorded in the result; defaults to Scenario.File.
	ScenarioFile string
}

// Progress is a live view of one measurement.
type Progress struct {
	Algorithm, Topology string
	Repeat, Repeats     int
	load.Progress
	// Duration is the planned length of this measurement, warmup included.
	Duration time.Duration
}

// Conclusion is what Run concluded.
type Conclusion struct {
	// Result holds every measurement made, even when Run returned an error.
	Result *report.Result
	// Failures lists, one sentence each, what makes the run fail: a failed verdict the scenario
	// did not expect, an expected violation that was not found, an inconclusive verdict, a broken
	// threshold. Empty means the run passed.
	Failures []string
}

// Passed reports whether every verdict passed and every expectation and threshold held.
func (o *Conclusion) Passed() bool { return len(o.Failures) == 0 }

// Run runs o.Scenario and returns its outcome. The error is non-nil when the run could not
// start or finish: an environment that could not be set up (wrapping redisenv.ErrUnavailable or
// ErrBadConfig), Redis lost mid-run (ErrLost), a bad custom script (ErrBadScript), or
// cancellation (ErrInterrupted). The Conclusion is never nil and holds what was measured.
func Run(ctx context.Context, o Options) (*Conclusion, error) {
	s := o.Scenario
	if o.Repeat <= 0 {
		o.Repeat = 1
	}
	if o.ScenarioFile == "" {
		o.ScenarioFile = s.File
	}
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	res := &report.Result{
		Schema:      report.SchemaVersion,
		Scenario:    describeScenario(s, o.ScenarioFile),
		Environment: describeHarness(),
		StartedAt:   time.Now().UTC(),
	}
	out := &Conclusion{Result: res}
	finish := func(err error) (*Conclusion, error) {
		res.FinishedAt = time.Now().UTC()
		if err != nil && res.CutShortNote == "" && len(res.Entries) > 0 {
			res.CutShort = true
			res.CutShortNote = err.Error()
		}
		out.Failures = append(out.Failures, judge(s, res)...)
		return out, err
	}

	entries := s.ResolveAlgorithms()
	algs := make([]algorithms.Algorithm, 0, len(entries)+1)
	if !o.NoReference {
		algs = append(algs, algorithms.Reference())
		res.Reference = algorithms.ReferenceName
	}
	for _, e := range entries {
		a, err := resolve(s, e)
		if err != nil {
			return finish(err)
		}
		algs = append(algs, a)
	}

	runID := newRunID()
	var topologies []string
	for _, topo := range s.Topologies {
		topologies = append(topologies, string(topo))
	}
	res.Environment.Topology = strings.Join(topologies, ",")

	for _, topo := range s.Topologies {
		cfg := o.Env
		cfg.Topology = redisenv.Topology(topo)
		cfg.Logf = logf
		tgt, err := redisenv.Start(ctx, cfg)
		if err != nil {
			if ctx.Err() != nil {
				return finish(fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err()))
			}
			return finish(fmt.Errorf("start %s environment: %w", topo, err))
		}
		describeTarget(&res.Environment, tgt)
		logf("%s %s: %s, Redis %s, %d node(s) (%s)", tgt.Info.Backend, topo, strings.Join(tgt.Masters(), " "),
			tgt.Info.Version, len(tgt.Info.Nodes), tgt.Info.Chosen)
		err = runTopology(ctx, o, tgt, string(topo), algs, runID, res)
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		if serr := tgt.Stop(stopCtx); serr != nil {
			logf("stop %s environment: %v", topo, serr)
		}
		cancel()
		if err != nil {
			return finish(err)
		}
	}
	return finish(nil)
}

// resolve returns the algorithm an entry of s names; s, when not nil, locates a custom entry in
// its file for messages.
func resolve(s *scenarios.Scenario, e scenarios.AlgorithmEntry) (algorithms.Algorithm, error) {
	if e.Custom != nil {
		return customAlgorithmOf(s, e.Custom)
	}
	return algorithms.Lookup(e.Name)
}

// runTopology runs every algorithm on tgt, o.Repeat rounds, and appends one entry per algorithm
// to res (repeats become its Samples).
func runTopology(ctx context.Context, o Options, tgt *redisenv.Target, topo string, algs []algorithms.Algorithm,
	runID string, res *report.Result) error {
	if err := checkCustomScripts(ctx, tgt.Client, algs); err != nil {
		return err
	}
	first := len(res.Entries)
	runs := make([][]*measurement, len(algs))
	defer func() {
		// Whatever happened, record what was measured, in algorithm order.
		for i, ms := range runs {
			if len(ms) > 0 {
				res.Entries = append(res.Entries, summarize(ms, algs[i], o.Scenario))
			}
		}
		relate(res, first)
	}()
	for rep := 1; rep <= o.Repeat; rep++ {
		for i, a := range algs {
			m, err := measure(ctx, o, tgt, topo, a, rep, runID)
			if m != nil {
				// Mark expected and tolerated violations now, so that Done sees the final label.
				markExpectations(&m.entry, o.Scenario)
				runs[i] = append(runs[i], m)
				if o.Done != nil {
					e := m.entry
					o.Done(&e, rep)
				}
			}
			if err != nil {
				return err
			}
			if ctx.Err() != nil {
				return fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err())
			}
		}
	}
	return nil
}

// newRunID returns a short random id for the run's key prefixes.
func newRunID() string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Sprintf("%x", time.Now().UnixNano()&0xffffffff)
	}
	return hex.EncodeToString(b[:])
}

func describeScenario(s *scenarios.Scenario, file string) report.Scenario {
	rs := report.Scenario{
		Name:             s.Name,
		Description:      s.Description,
		File:             file,
		Seed:             s.Seed,
		DurationS:        s.Duration.Seconds(),
		Clients:          s.Clients,
		Loop:             "closed",
		Mode:             string(s.ClientMode),
		Keys:             s.Keys.String(),
		ExpectViolations: slices.Clone(s.Expect.Violations),
	}
	if s.ClientMode == load.ModePipeline {
		rs.Mode = fmt.Sprintf("pipeline(%d)", s.PipelineDepth)
	}
	if s.Arrival != nil {
		rs.Loop = "open"
		rs.Arrival = s.Arrival.String()
	}
	rs.Skew = s.ClockSkew.String()
	for _, t := range s.Topologies {
		rs.Topologies = append(rs.Topologies, string(t))
	}
	for _, e := range s.ResolveAlgorithms() {
		rs.Algorithms = append(rs.Algorithms, e.Name)
	}
	rs.Settings = settingsOf(s)
	return rs
}

// settingsOf returns the effective settings of s, for result.json.
func settingsOf(s *scenarios.Scenario) *report.Settings {
	st := &report.Settings{
		Limit: s.Limit, Cost: s.Cost, WarmupS: s.Warmup.Seconds(), DurationS: s.Duration.Seconds(),
		Clients: s.Clients, ClientMode: s.ClientMode, Arrival: s.Arrival, Keys: s.Keys, ClockSkew: s.ClockSkew,
		Expect: scenarios.Expect{
			Violations: slices.Clone(s.Expect.Violations), MayViolate: slices.Clone(s.Expect.MayViolate),
		},
	}
	if s.ClientMode == load.ModePipeline {
		st.PipelineDepth = s.PipelineDepth
	}
	for _, e := range s.ResolveAlgorithms() {
		st.Algorithms = append(st.Algorithms, e.Name)
		if c := e.Custom; c != nil {
			st.Custom = append(st.Custom, *c)
		}
	}
	for _, th := range s.Thresholds {
		st.Thresholds = append(st.Thresholds, th.Text)
	}
	return st
}

// describeHarness fills the harness side of the environment.
func describeHarness() report.Environment {
	return report.Environment{
		CPUs:           runtime.NumCPU(),
		GOMAXPROCS:     runtime.GOMAXPROCS(0),
		GoVersion:      runtime.Version(),
		HarnessVersion: harnessVersion(),
		OS:             runtime.GOOS,
		Arch:           runtime.GOARCH,
	}
}

// describeTarget fills the Redis side of the environment from a started target.
func describeTarget(env *report.Environment, t *redisenv.Target) {
	env.Backend = string(t.Info.Backend)
	env.Image = t.Info.Image
	env.RedisVersion = t.Info.Version
	if len(t.Info.Nodes) > env.Nodes {
		env.Nodes = len(t.Info.Nodes)
	}
}

// harnessVersion is the module version, or the VCS revision the binary was built from.
func harnessVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

// judge evaluates verdicts, expectations and thresholds over res and returns the failures. It
// checks every threshold against every entry it applies to and records the checks in the entry's
// Verification: a broken threshold turns the verdict to fail, and one that cannot be evaluated (no
// data for its metric) turns a pass into inconclusive, each with its reason. Call it once per
// result.
func judge(s *scenarios.Scenario, res *report.Result) []string {
	var fails []string
	expected := map[string]bool{}
	for _, n := range s.Expect.Violations {
		expected[n] = true
	}
	seen := map[string]bool{}
	for i := range res.Entries {
		e := &res.Entries[i]
		if res.IsReference(e) {
			continue
		}
		markExpectations(e, s)
		seen[e.Algorithm] = true
		v := e.Verification
		name := e.Name()
		switch {
		case v.ExpectedViolation:
			if v.DefiniteViolations == 0 {
				fails = append(fails, fmt.Sprintf("%s: expected a definite violation, found none (%s)", name, v.Verdict))
			}
		case v.MayViolate:
		case v.Verdict == verify.Fail:
			fails = append(fails, fmt.Sprintf("%s: failed: %s", name, strings.Join(v.Reasons, "; ")))
		case v.Verdict == verify.Inconclusive && v.Contract != string(algorithms.NoContract):
			fails = append(fails, fmt.Sprintf("%s: inconclusive: %s", name, strings.Join(v.Reasons, "; ")))
		}
	}
	if !res.CutShort {
		names := make([]string, 0, len(expected))
		for n := range expected {
			if !seen[n] {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		for _, n := range names {
			fails = append(fails, fmt.Sprintf("%s: expected a violation, but the algorithm was not run", n))
		}
	}
	for i := range res.Entries {
		e := &res.Entries[i]
		if res.IsReference(e) {
			continue
		}
		fails = append(fails, checkThresholds(e, s.Thresholds)...)
	}
	return fails
}

// markExpectations sets e's ExpectedViolation and MayViolate from the scenario's expect section.
func markExpectations(e *report.Entry, s *scenarios.Scenario) {
	e.Verification.ExpectedViolation = slices.Contains(s.Expect.Violations, e.Algorithm)
	e.Verification.MayViolate = slices.Contains(s.Expect.MayViolate, e.Algorithm)
}

// checkThresholds checks each of ths that applies to e (all, or those naming e's algorithm),
// records the checks in e.Verification (which applies them to the verdict, see
// verify.Summary.AddThreshold) and returns one failure per threshold that is broken or cannot be
// evaluated.
func checkThresholds(e *report.Entry, ths []scenarios.Threshold) []string {
	var fails []string
	for _, th := range ths {
		if th.Algorithm != "" && th.Algorithm != e.Algorithm {
			continue
		}
		val, missing := evaluate(e, th.Metric)
		c := verify.ThresholdCheck{Threshold: th.Text, Value: val}
		var reason string
		switch {
		case missing != "":
			c.Status, c.Shown, c.Value = verify.ThresholdUnevaluated, missing, 0
			reason = fmt.Sprintf("threshold %q cannot be evaluated: %s", th.Text, missing)
		case th.Holds(val):
			c.Status, c.Shown = verify.ThresholdHeld, formatMetric(th.Metric, val)
		default:
			c.Status, c.Shown = verify.ThresholdBroken, formatMetric(th.Metric, val)
			reason = fmt.Sprintf("threshold %q broken: %s = %s", th.Text, th.Metric, c.Shown)
		}
		e.Verification.AddThreshold(c, reason)
		if reason != "" {
			fails = append(fails, fmt.Sprintf("%s: %s", e.Name(), reason))
		}
	}
	return fails
}

// metric returns the value of m for e in the unit Threshold uses (µs, requests/s, fraction), and
// false when e holds no data to evaluate m (see evaluate).
func metric(e *report.Entry, m scenarios.Metric) (float64, bool) {
	v, missing := evaluate(e, m)
	return v, missing == ""
}

// evaluate returns the value of m for e in the unit Threshold uses (µs, requests/s, fraction), or,
// when e holds no data to evaluate m, why not: no request measured (throughput, errors), no
// decision completed (latencies), no contract or nothing an exact limiter would have admitted
// (efficiency).
func evaluate(e *report.Entry, m scenarios.Metric) (float64, string) {
	completed := e.Allowed + e.Denied
	switch m {
	case scenarios.P50, scenarios.P90, scenarios.P99, scenarios.P999, scenarios.Max:
		if completed == 0 || e.Histograms.Latency == "" && e.LatencyUS == (report.Latency{}) {
			return 0, "no decision completed, so there is no latency to compare"
		}
		switch m {
		case scenarios.P50:
			return e.LatencyUS.P50, ""
		case scenarios.P90:
			return e.LatencyUS.P90, ""
		case scenarios.P99:
			return e.LatencyUS.P99, ""
		case scenarios.P999:
			return e.LatencyUS.P999, ""
		}
		return e.LatencyUS.Max, ""
	case scenarios.Throughput:
		if e.Requests == 0 || e.DurationS <= 0 {
			return 0, "no request was measured"
		}
		return e.ThroughputRPS, ""
	case scenarios.Efficiency:
		switch {
		case e.Verification.Contract == "" || e.Verification.Contract == string(algorithms.NoContract):
			return 0, "the algorithm has no contract, so there is no exact limiter to compare with"
		case e.Accuracy.IdealAllowed == 0:
			return 0, "an exact limiter would have admitted nothing (no request completed, or accuracy was not computed)"
		}
		return e.Accuracy.Efficiency, ""
	case scenarios.ErrorRate:
		if e.Requests == 0 {
			return 0, "no request was measured"
		}
		return float64(e.Errors+e.Unknown) / float64(e.Requests), ""
	}
	return 0, fmt.Sprintf("unknown metric %q", m)
}

func formatMetric(m scenarios.Metric, v float64) string {
	if m.IsLatency() {
		return (time.Duration(v*1000) * time.Nanosecond).Round(time.Microsecond).String()
	}
	return fmt.Sprintf("%.4g", v)
}
