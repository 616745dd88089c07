package ci

import (
	"fmt"
	"slices"

	"github.com/limitbench/limitbench/hunt"
)

// HuntSuites returns the JUnit suites of a hunt: one per algorithm × topology hunted, each with
// one testcase (its outcome as the package documentation says) and the hunt's figures as
// properties. scenario names the scenario; mustBreak lists the algorithms the scenario expects
// to be flagged (expect.violations), for which holding within the budget is a failure.
func HuntSuites(f *hunt.File, scenario string, mustBreak []string) []Suite {
	var out []Suite
	for _, e := range f.Entries {
		props := []Property{
			{Name: "scenario", Value: scenario},
			{Name: "algorithm", Value: e.Algorithm},
			{Name: "topology", Value: e.Topology},
			{Name: "contract", Value: e.Contract},
			count("trials", int64(e.Trials)),
			prop("best_score", e.BestScore),
			prop("elapsed_s", e.ElapsedS),
			{Name: "stop", Value: e.Stop},
			{Name: "violation_found", Value: fmt.Sprint(e.Violation != nil)},
		}
		out = append(out, NewSuite(fmt.Sprintf("hunt %s: %s on %s", scenario, e.Algorithm, e.Topology), props,
			[]Case{huntCase(e, scenario, mustBreak)}))
	}
	return out
}

// huntCase returns the testcase of one hunted algorithm × topology.
func huntCase(e hunt.Entry, scenario string, mustBreak []string) Case {
	c := Case{Name: e.Algorithm + " on " + e.Topology, Classname: "limitbench.hunt." + scenario, Time: Seconds(e.ElapsedS)}
	words := []string{fmt.Sprintf("%s on %s: %d trials (%s), best score %.3f (above 1 breaks %s)", e.Algorithm, e.Topology,
		e.Trials, e.Stop, e.BestScore, e.Contract)}
	switch v := e.Violation; {
	case v != nil && e.ExpectedViolation:
		c.Skipped = skip(fmt.Sprintf("expected violation caught: %s broke %s, as the scenario allows", e.Algorithm, e.Contract), words)
	case v != nil:
		c.Failure = failure(fmt.Sprintf("%s on %s broke %s (reproducer: %s)", e.Algorithm, e.Topology, e.Contract, reproducer(v)), words)
	case slices.Contains(mustBreak, e.Algorithm):
		c.Failure = failure(fmt.Sprintf("%s on %s held %s in %d trials, but the scenario lists it under expect.violations (closest approach %.3f)",
			e.Algorithm, e.Topology, e.Contract, e.Trials, e.BestScore), words)
	default:
		c.SystemOut = words[0]
	}
	return c
}

// reproducer names the file that replays a violation: the shrunk reproducer's scenario or
// trace, else the trace as found.
func reproducer(v *hunt.Found) string {
	if s := v.Shrunk; s != nil {
		if s.Scenario != "" {
			return s.Scenario
		}
		return s.Trace
	}
	return v.Schedule.Trace
}
