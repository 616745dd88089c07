package ci

import (
	"fmt"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/report"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// RunSuites returns the JUnit suites of r, a run's or a merge's result: one per entry but the
// reference script's, each with one testcase for the entry's verdict (its outcome as the package
// documentation says) and the entry's key figures as properties; and one suite with a failing
// testcase per algorithm the scenario expects to be flagged that has no entry, unless the run
// was cut short.
func RunSuites(r *result.Result) []Suite {
	var out []Suite
	stamp := ""
	if !r.StartedAt.IsZero() {
		stamp = r.StartedAt.UTC().Format(time.RFC3339)
	}
	seen := map[string]bool{}
	for i := range r.Entries {
		e := &r.Entries[i]
		if r.IsReference(e) {
			continue
		}
		seen[e.Algorithm] = true
		s := NewSuite(fmt.Sprintf("%s: %s on %s", r.Scenario.Name, e.Algorithm, e.Topology), entryProperties(r, e),
			[]Case{entryCase(r, e)})
		s.Timestamp = stamp
		out = append(out, s)
	}
	if st := r.Scenario.Settings; st != nil && !r.CutShort {
		for _, name := range st.Expect.Violations {
			if seen[name] {
				continue
			}
			seen[name] = true
			c := Case{Name: name, Classname: classname(r.Scenario.Name),
				Failure: failure(name+": expected to be flagged with a definite violation, but the algorithm was not run",
					[]string{"The scenario lists " + name + " under expect.violations; no entry of the result is for it."})}
			out = append(out, NewSuite(fmt.Sprintf("%s: %s", r.Scenario.Name, name), nil, []Case{c}))
		}
	}
	return out
}

// classname is the testcases' classname: limitbench.<scenario>.
func classname(scenario string) string { return "limitbench." + scenario }

// entryCase returns the testcase of e's verdict.
func entryCase(r *result.Result, e *result.Entry) Case {
	c := Case{Name: e.Algorithm + " on " + e.Topology, Classname: classname(r.Scenario.Name),
		Time: Seconds(e.DurationS * float64(max(len(e.Samples), 1)))}
	findings := report.Findings(r, e)
	label := e.Label()
	v := e.Verification
	first := func(fallback string) string {
		if len(v.Reasons) > 0 {
			return label + ": " + v.Reasons[0]
		}
		return label + ": " + fallback
	}
	switch label {
	case string(verify.Pass):
	case result.LabelCaught, result.LabelTolerated:
		c.Skipped = skip(fmt.Sprintf("%s: %d definite violations of %s, as the scenario allows", label, v.DefiniteViolations, v.Contract), findings)
	case result.LabelMissed:
		c.Failure = failure(first("no definite violation was found"), findings)
	case string(verify.Fail):
		c.Failure = failure(first(fmt.Sprintf("%d definite violations of %s", v.DefiniteViolations, v.Contract)), findings)
	case string(verify.Inconclusive):
		if v.Contract == "" || v.Contract == string(algorithms.NoContract) {
			c.Skipped = skip("no contract: nothing was verified", findings)
			break
		}
		c.Error = errorOf(first("the run cannot support a verdict"), findings)
	default:
		c.Error = errorOf("no verdict was recorded for this entry", findings)
	}
	return c
}

// entryProperties returns e's key figures: what it is, its counts, rates, latency, accuracy,
// violations and server cost, each name saying its unit. A figure the entry did not measure is
// left out.
func entryProperties(r *result.Result, e *result.Entry) []Property {
	v := e.Verification
	ps := []Property{
		{Name: "scenario", Value: r.Scenario.Name},
		{Name: "algorithm", Value: e.Algorithm},
		{Name: "topology", Value: e.Topology},
		{Name: "verdict", Value: e.Label()},
		{Name: "contract", Value: v.Contract},
		count("requests", e.Requests),
		count("allowed", e.Allowed),
		count("denied", e.Denied),
		count("errors", e.Errors),
		count("unknown", e.Unknown),
		count("definite_violations", v.DefiniteViolations),
		count("possible_violations", v.PossibleViolations),
		count("worst_excess_permits", v.WorstExcess),
		count("repeats", int64(max(len(e.Samples), 1))),
	}
	for _, f := range []struct {
		name   string
		metric result.Metric
	}{
		{"throughput_rps", result.Throughput},
		{"latency_p50_us", result.P50},
		{"latency_p99_us", result.P99},
		{"latency_p999_us", result.P999},
		{"efficiency", result.Efficiency},
		{"redis_cpu_us_per_decision", result.CPU},
		{"bytes_per_subject", result.Memory},
	} {
		if x, ok := f.metric.Value(e); ok {
			ps = append(ps, prop(f.name, x))
		}
	}
	if e.Server.USecPerCall > 0 {
		ps = append(ps, prop("redis_us_per_call", e.Server.USecPerCall))
	}
	if r.CutShort {
		ps = append(ps, Property{Name: "cut_short", Value: r.CutShortNote})
	}
	return ps
}
