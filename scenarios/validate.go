package scenarios

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/problem"
	"github.com/limitbench/limitbench/internal/redisenv"
)

// position is where a field is in the scenario file.
type position struct{ line, col int }

// Validate reports every problem with s at once as an *Errors (matching ErrInvalid), or nil.
// Algorithm names are checked against the built-in algorithms registered now (algorithms.Names)
// and the custom entries of s.
func (s *Scenario) Validate() error {
	return s.validate(algorithms.Names(), nil)
}

// validate checks s with builtins as the known algorithm names; problems found while decoding
// (pre) come first, and problems in the subtree of a field that failed to decode are dropped.
func (s *Scenario) validate(builtins []string, pre []problem.Problem) error {
	c := &checker{s: s, builtins: builtins}
	c.check()
	probs := append([]problem.Problem(nil), pre...)
	for _, p := range c.probs {
		if overlapsAny(p.Field, pre) {
			continue
		}
		probs = append(probs, s.place(p))
	}
	return errorsOf(probs)
}

// overlapsAny reports whether field is, contains or is inside a field of pre.
func overlapsAny(field string, pre []problem.Problem) bool {
	for _, p := range pre {
		if p.Field == "" {
			continue
		}
		if isUnder(field, p.Field) || isUnder(p.Field, field) {
			return true
		}
	}
	return false
}

// isUnder reports whether path is parent or inside it.
func isUnder(path, parent string) bool {
	if !strings.HasPrefix(path, parent) {
		return false
	}
	rest := path[len(parent):]
	return rest == "" || rest[0] == '.' || rest[0] == '['
}

// parentPath strips the last component of a field path: "a.b[2]" → "a.b", "a.b" → "a", "a" → "".
func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}

// place fills in the file, line and column of p from the nearest field of its path that is in the
// file, and notes a field set by a command-line flag.
func (s *Scenario) place(p problem.Problem) problem.Problem {
	p.File = s.File
	for f := p.Field; f != ""; f = parentPath(f) {
		if flag, ok := s.flags[f]; ok {
			p.Msg += " (set by " + flag + ")"
			return p
		}
	}
	for f := p.Field; f != ""; f = parentPath(f) {
		if at, ok := s.pos[f]; ok {
			p.Line, p.Column = at.line, at.col
			return p
		}
	}
	return p
}

// ProblemAt returns a problem with field of s, placed as Validate places its problems: s's file,
// the line of field (or of the nearest enclosing field the file wrote), and a note when a
// command-line flag set it. Callers that find a problem after loading (a script Redis rejects) use
// it to name the file, line and field; its String renders "file:line: field: msg" (a scenario's
// problems name no column: see Errors).
func (s *Scenario) ProblemAt(field, msg string) problem.Problem {
	p := s.place(problem.Problem{Field: field, Msg: msg})
	p.Column = 0
	return p
}

// present reports whether field was written in the scenario file.
func (s *Scenario) present(field string) bool {
	_, ok := s.pos[field]
	return ok
}

type checker struct {
	s        *Scenario
	builtins []string
	probs    []problem.Problem
}

func (c *checker) add(field, format string, a ...any) {
	c.probs = append(c.probs, problem.Problem{Field: field, Msg: fmt.Sprintf(format, a...)})
}

// bound adds err, a load bound's verdict on field (see load.CheckRate and the others), as a
// problem; it reports whether there was none.
func (c *checker) bound(field string, err error) bool {
	if err != nil {
		c.add(field, "%v", err)
		return false
	}
	return true
}

func (c *checker) positiveDuration(field string, d time.Duration) {
	if d <= 0 {
		c.add(field, "must be > 0, got %s", d)
	}
}

func (c *checker) check() {
	s := c.s
	if s.Version != 1 {
		c.add("version", "unsupported version %d; this limitbench reads version 1", s.Version)
	}
	if strings.TrimSpace(s.Name) == "" {
		c.add("name", "must not be empty")
	}
	c.topologies()
	durOK := c.bound("duration", load.CheckDuration(s.Duration))
	warmOK := c.bound("warmup", load.CheckWarmup(s.Warmup))
	if durOK && warmOK {
		c.bound("duration", load.CheckSpan(s.Warmup, s.Duration))
	}
	c.bound("clients", load.CheckClients(s.Clients))
	switch s.ClientMode {
	case load.ModePlain, load.ModeAutoPipeline:
		if s.PipelineDepth != 0 {
			c.add("pipeline_depth", "only applies with client_mode: pipeline (client_mode is %s)", s.ClientMode)
		}
	case load.ModePipeline:
		clients := s.Clients
		if load.CheckClients(clients) != nil {
			clients = 0 // reported above; check the depth alone
		}
		c.bound("pipeline_depth", load.CheckPipelineDepth(s.PipelineDepth, clients))
	default:
		c.add("client_mode", "unknown client mode %q; use plain, pipeline or autopipeline", s.ClientMode)
	}
	if _, err := algorithms.ParseCallMode(string(s.Call)); err != nil || s.Call == "" {
		c.add("call", "unknown call %q; use evalsha or fcall", s.Call)
	}
	if s.Arrival != nil {
		c.arrival(s.Arrival)
	}
	c.keys()
	c.limit()
	if c.bound("cost", load.CheckCost(s.Cost)) && s.Cost > c.s.Limit.Capacity() && s.Limit.Limit > 0 {
		c.add("cost", "%d is more than the limit's capacity %d: every request would be denied", s.Cost, s.Limit.Capacity())
	}
	c.clockSkew()
	c.faults()
	c.wait()
	names := c.algorithms()
	c.expect(names)
	for i, t := range s.Thresholds {
		c.threshold(fmt.Sprintf("thresholds[%d]", i), t, names)
	}
}

// threshold checks t; a threshold with no metric is one whose Text did not parse.
func (c *checker) threshold(f string, t Threshold, names []string) {
	if t.Metric == "" {
		if _, err := ParseThreshold(t.Text); err != nil {
			c.add(f, "%v", err)
		} else {
			c.add(f, "no metric (build thresholds with ParseThreshold)")
		}
		return
	}
	if !contains(metricNames(), string(t.Metric)) {
		c.add(f, "unknown metric %q; use one of %s", t.Metric, metricList())
	}
	switch t.Op {
	case Less, LessEqual, Greater, GreaterEqual:
	default:
		c.add(f, "unknown comparison %q; use <, <=, > or >=", t.Op)
	}
	if t.Algorithm != "" && !contains(names, t.Algorithm) {
		c.add(f, "%s", unknownName(fmt.Sprintf("%q is not run by this scenario", t.Algorithm), t.Algorithm, names))
	}
	if err := t.Unmeetable(); err != nil {
		c.add(f, "%v", err)
	}
}

func (c *checker) topologies() {
	if len(c.s.Topologies) == 0 {
		c.add("topologies", "must name at least one of single, cluster, sentinel")
	}
	seen := map[redisenv.Topology]bool{}
	for i, t := range c.s.Topologies {
		f := fmt.Sprintf("topologies[%d]", i)
		switch {
		case t != redisenv.TopologySingle && t != redisenv.TopologyCluster && t != redisenv.TopologySentinel:
			c.add(f, "unknown topology %q; use single, cluster or sentinel", t)
		case seen[t]:
			c.add(f, "%s is listed twice", t)
		}
		seen[t] = true
	}
}

// wait checks wait_replicas and wait_timeout: in bounds, the timeout only with replicas, and a
// client mode that can send the WAIT on its request's connection (not autopipeline, and not
// pipeline on a cluster). Whether the topology has the replicas is CheckReplicas's to say.
func (c *checker) wait() {
	s := c.s
	w := s.Wait
	if w.Replicas < 0 || w.Replicas > algorithms.MaxWaitReplicas {
		c.add("wait_replicas", "must be between 0 and %d (the most replicas per master limitbench starts), got %d", algorithms.MaxWaitReplicas, w.Replicas)
	}
	if w.Timeout != 0 || c.s.present("wait_timeout") {
		switch {
		case w.Replicas == 0:
			c.add("wait_timeout", "only applies with wait_replicas")
		case w.Timeout <= 0:
			c.add("wait_timeout", "must be > 0 (WAIT's 0, wait forever, would stop the load while a replica is missing), got %s", w.Timeout)
		default:
			if err := algorithms.CheckWaitTimeout(w.Timeout); err != nil {
				c.add("wait_timeout", "%s", strings.TrimPrefix(err.Error(), algorithms.ErrBadWait.Error()+": timeout "))
			}
		}
	}
	if s.waitShort != "" && s.waitShort != WaitShortAdmit && s.waitShort != WaitShortDeny {
		c.add("wait_short", "unknown value %q; use admit or deny", s.waitShort)
	} else if (w.DenyShort || c.s.present("wait_short")) && w.Replicas == 0 {
		c.add("wait_short", "only applies with wait_replicas")
	}
	if w.Replicas <= 0 {
		return
	}
	switch s.ClientMode {
	case load.ModeAutoPipeline:
		c.add("wait_replicas", "cannot be used with client_mode: autopipeline (its pipelines mix every client's requests on any connection, and WAIT waits for its own connection's writes); use plain or pipeline")
	case load.ModePipeline:
		if slices.Contains(s.Topologies, redisenv.TopologyCluster) {
			c.add("wait_replicas", "cannot be used with client_mode: pipeline on topology cluster (a cluster pipeline sends a WAIT, which has no key, to any master); use client_mode: plain")
		}
	}
}

// CheckReplicas reports, as a problem of s's file, a wait_replicas that topology on env cannot
// satisfy: more than the replicas each master has (single: none; sentinel: env.Replicas, default
// 1; cluster: env.Replicas). On an external Redis the replicas are not limitbench's to know (a
// managed service may not show them, and they may change): wait_replicas is taken as written,
// and a WAIT that the server cannot satisfy comes back short after wait_timeout, which the
// result counts (wait.short) and the report shows. nil when it can run.
func (s *Scenario) CheckReplicas(env redisenv.Config, topology redisenv.Topology) error {
	if s.Wait.Replicas <= 0 || env.Backend == redisenv.BackendExternal {
		return nil
	}
	have := env.Replicas
	if have == 0 && topology != redisenv.TopologySingle {
		have = s.Replicas // the scenario's replicas:, unless --replicas was given (as the runner does)
	}
	switch topology {
	case redisenv.TopologySingle:
		have = 0
	case redisenv.TopologySentinel:
		if have == 0 {
			have = 1
		}
	}
	if s.Wait.Replicas <= have {
		return nil
	}
	hint := "set replicas: or --replicas"
	if topology == redisenv.TopologySingle {
		hint = "use topology sentinel, or cluster with replicas: or --replicas"
	}
	replicas := "replicas"
	if have == 1 {
		replicas = "replica"
	}
	return errorsOf([]problem.Problem{s.place(problem.Problem{Field: "wait_replicas", Msg: fmt.Sprintf(
		"%d: topology %s has %d %s per master here (%s)", s.Wait.Replicas, topology, have, replicas, hint)})})
}

func (c *checker) rate(field string, r float64, positive bool) {
	c.bound(field, load.CheckRate(r, positive))
}

func (c *checker) arrival(a *arrival.Arrival) {
	before := len(c.probs)
	forms := 0
	if a.Rate != 0 || c.s.present("arrival.rate") {
		forms++
	}
	if a.Ramp != nil {
		forms++
	}
	if len(a.Steps) > 0 || c.s.present("arrival.steps") {
		forms++
	}
	if a.Spike != nil {
		forms++
	}
	if a.Trace != nil || c.s.present("arrival.trace") {
		forms++
	}
	switch {
	case forms == 0:
		c.add("arrival", "needs one of rate, ramp, steps, spike or trace (omit arrival for a closed loop)")
		return
	case forms > 1:
		c.add("arrival", "give only one of rate, ramp, steps, spike or trace")
		return
	}
	if a.Trace != nil || c.s.present("arrival.trace") {
		c.checkTrace(a)
	}
	switch a.Kind() {
	case arrival.Constant:
		if c.s.present("arrival.trace") {
			break // a trace that could not be read: its problems are reported
		}
		if a.Rate == 0 && c.s.present("arrival.steps") {
			c.add("arrival.steps", "must hold at least one step")
			return
		}
		c.rate("arrival.rate", a.Rate, true)
	case arrival.RampUp:
		c.rate("arrival.ramp.from", a.Ramp.From, false)
		c.rate("arrival.ramp.to", a.Ramp.To, false)
		if a.Ramp.From == 0 && a.Ramp.To == 0 {
			c.add("arrival.ramp", "from and to cannot both be 0")
		}
	case arrival.Stepped:
		if len(a.Steps) == 0 {
			c.add("arrival.steps", "must hold at least one step")
		}
		anyRate := false
		var period time.Duration
		for i, st := range a.Steps {
			f := fmt.Sprintf("arrival.steps[%d]", i)
			c.positiveDuration(f+".for", st.For)
			c.rate(f+".rate", st.Rate, false)
			anyRate = anyRate || st.Rate > 0
			period = min(period+max(st.For, 0), load.MaxSpan+1) // no overflow
		}
		if len(a.Steps) > 0 && !anyRate {
			c.add("arrival.steps", "every step has rate 0: nothing would be sent")
		}
		if period > load.MaxSpan {
			c.add("arrival.steps", "the steps last more than %s, longer than any run", load.MaxSpan)
		}
	case arrival.Spiked:
		sp := a.Spike
		c.rate("arrival.spike.base", sp.Base, false)
		c.rate("arrival.spike.peak", sp.Peak, true)
		if sp.At < 0 {
			c.add("arrival.spike.at", "must be >= 0, got %s", sp.At)
		}
		c.positiveDuration("arrival.spike.for", sp.For)
		if sp.Every < 0 {
			c.add("arrival.spike.every", "must be >= 0, got %s", sp.Every)
		} else if sp.Every > 0 && sp.For > sp.Every {
			c.add("arrival.spike.for", "%s is longer than every (%s)", sp.For, sp.Every)
		}
		for _, d := range []struct {
			field string
			d     time.Duration
		}{{"arrival.spike.at", sp.At}, {"arrival.spike.for", sp.For}, {"arrival.spike.every", sp.Every}} {
			if d.d > load.MaxSpan {
				c.add(d.field, "must be at most %s, the longest run; got %s", load.MaxSpan, d.d)
			}
		}
	}
	switch al := a.Align; {
	case al.Every < 0:
		c.add("arrival.align.every", "must be >= 0, got %s", al.Every)
	case al.Every == 0 && (al.Offset != 0 || c.s.present("arrival.align")):
		c.add("arrival.align.every", "must be > 0")
	case al.Every > MaxAlign:
		c.add("arrival.align.every", "must be at most %s (the run waits up to one period before it starts), got %s", MaxAlign, al.Every)
	case al.Offset < 0 || al.Offset >= al.Every && al.Every > 0:
		c.add("arrival.align.offset", "must be in [0, %s), got %s", al.Every, al.Offset)
	}
	// The schedule is built piece by piece over the whole run: steps or spikes too short for
	// the run's length would be millions of pieces. (Counted only when the pieces and the run
	// are valid.)
	if span := c.s.TotalDuration(); len(c.probs) == before && load.CheckDuration(c.s.Duration) == nil &&
		load.CheckWarmup(c.s.Warmup) == nil {
		if n := a.PieceBound(span); n > load.MaxPieces {
			c.add("arrival", "the schedule repeats to %d pieces over warmup + duration (%s); at most %d: make the steps or the spike's period longer",
				n, span, load.MaxPieces)
		}
	}
}

func (c *checker) keys() {
	k := c.s.Keys
	c.bound("keys.count", load.CheckKeyCount(k.Count))
	switch k.Distribution {
	case load.Uniform:
	case load.Zipf:
		// The load takes any exponent >= 0; a scenario asks for uniform by name. (NaN
		// compares false: the load's check reports it.)
		if k.ZipfS <= 0 {
			c.add("keys.zipf_s", "must be > 0 for a zipf distribution (0 would be uniform), got %g", k.ZipfS)
		} else {
			c.bound("keys.zipf_s", load.CheckExponent(k.ZipfS))
		}
	case load.Hot:
		if k.HotShare <= 0 || k.HotShare > 1 {
			c.add("keys.hot_share", "must be in (0, 1] for a hot distribution, got %g", k.HotShare)
		} else {
			c.bound("keys.hot_share", load.CheckShare(k.HotShare))
		}
	default:
		c.add("keys.distribution", "unknown distribution %q; use uniform, zipf or hot", k.Distribution)
	}
	if k.Distribution != load.Zipf && k.ZipfS != 0 {
		c.add("keys.zipf_s", "only applies with distribution: zipf")
	}
	if k.Distribution != load.Hot && k.HotShare != 0 {
		c.add("keys.hot_share", "only applies with distribution: hot")
	}
}

func (c *checker) limit() {
	l := c.s.Limit
	if l.Limit <= 0 {
		c.add("limit.limit", "must be > 0, got %d", l.Limit)
	}
	if l.Window <= 0 {
		c.add("limit.window", "must be > 0, got %s", l.Window)
	} else if l.Window%time.Millisecond != 0 {
		c.add("limit.window", "must be whole milliseconds, got %s", l.Window)
	}
	if l.Burst < 0 {
		c.add("limit.burst", "must be >= 0, got %d", l.Burst)
	}
	if l.ConsumerLimit < 0 {
		c.add("limit.consumer_limit", "must be >= 0, got %d", l.ConsumerLimit)
	}
}

func (c *checker) clockSkew() {
	sk := c.s.ClockSkew
	if len(sk.Offsets) > 0 && sk.Spread != 0 {
		c.add("clock_skew", "give either a list of offsets or a spread, not both")
	}
	if sk.Spread < 0 {
		c.add("clock_skew.spread", "must be >= 0, got %s", sk.Spread)
	}
}

// algorithms checks the algorithms list and returns the names the scenario runs.
func (c *checker) algorithms() []string {
	s := c.s
	if len(s.Algorithms) == 0 {
		c.add("algorithms", "must name at least one algorithm, or all")
	}
	var customs []string
	for _, e := range s.Algorithms {
		if e.Custom != nil {
			customs = append(customs, e.Name)
		}
	}
	known := append(append([]string(nil), c.builtins...), customs...)
	seen := map[string]bool{}
	cluster := slices.Contains(s.Topologies, redisenv.TopologyCluster)
	for i, e := range s.Algorithms {
		f := fmt.Sprintf("algorithms[%d]", i)
		if e.Custom != nil {
			c.custom(f, e.Custom, cluster)
			if e.Name != e.Custom.Name {
				c.add(f+".name", "entry name %q differs from the custom script's name %q", e.Name, e.Custom.Name)
			}
			if contains(c.builtins, e.Name) || e.Name == AllAlgorithms {
				c.add(f+".name", "%q is the name of a built-in algorithm; choose another", e.Name)
			}
			if e.Name == algorithms.ReferenceName {
				c.add(f+".name", "%q is the name of the reference script every run measures; choose another", e.Name)
			}
		} else if e.Name != AllAlgorithms && !contains(c.builtins, e.Name) {
			if len(c.builtins) == 0 && len(customs) == 0 {
				c.add(f, "unknown algorithm %q (no built-in algorithm is registered)", e.Name)
			} else {
				c.add(f, "%s", unknownName(fmt.Sprintf("unknown algorithm %q", e.Name), e.Name, known))
			}
		}
		if seen[e.Name] && e.Name != "" {
			c.add(f, "%s is listed twice", e.Name)
		}
		seen[e.Name] = true
	}
	return s.names(c.builtins)
}

func (c *checker) expect(names []string) {
	ex := c.s.Expect
	seen := map[string]string{}
	for _, list := range []struct {
		field string
		names []string
	}{{"expect.violations", ex.Violations}, {"expect.may_violate", ex.MayViolate}} {
		for i, n := range list.names {
			f := fmt.Sprintf("%s[%d]", list.field, i)
			switch {
			case !contains(names, n):
				c.add(f, "%s", unknownName(fmt.Sprintf("%q is not run by this scenario", n), n, names))
			case seen[n] == list.field:
				c.add(f, "%s is listed twice", n)
			case seen[n] != "":
				c.add(f, "%s is already in %s", n, seen[n])
			}
			if seen[n] == "" {
				seen[n] = list.field
			}
		}
	}
	for i, n := range ex.Violations {
		for _, e := range c.s.Algorithms {
			if e.Custom != nil && e.Name == n && e.Custom.Contract.Kind == algorithms.NoContract {
				c.add(fmt.Sprintf("expect.violations[%d]", i), "%s has contract none: nothing is verified, so no violation can be found", n)
			}
		}
	}
}

// unknownName appends to msg, which says that name is unknown, the closest of known or the list.
func unknownName(msg, name string, known []string) string {
	if s := algorithms.Suggest(name, known); s != "" {
		return msg + fmt.Sprintf(" (did you mean %q?)", s)
	}
	if len(known) > 0 {
		return msg + " (known: " + strings.Join(known, ", ") + ")"
	}
	return msg
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
