package ci

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/limitbench/limitbench/gate"
	"github.com/limitbench/limitbench/hunt"
	"github.com/limitbench/limitbench/result"
)

// A family is one metric family of the metrics report: its name (the unit its suffix), help,
// OpenMetrics unit ("" for none) and its samples.
type family struct {
	name, help, unit string
	samples          []sample
}

type sample struct {
	labels [][2]string
	value  float64
}

// entryFamilies are the families WriteMetrics writes for a result's entries, with the figure
// each reads from an entry (false when the entry did not measure it).
var entryFamilies = []struct {
	name, help, unit string
	value            func(e *result.Entry) (float64, bool)
}{
	{"limitbench_throughput_decisions_per_second", "Completed decisions (allowed or denied) per second of measured time.", "",
		result.Throughput.Value},
	{"limitbench_latency_p99_seconds", "99th percentile of latency from each request's intended send time.", "seconds",
		scaled(result.P99, 1e-6)},
	{"limitbench_redis_cpu_per_decision_seconds", "Redis process CPU time (user + system) per decision.", "seconds",
		scaled(result.CPU, 1e-6)},
	{"limitbench_memory_per_subject_bytes", "Redis memory per limited subject.", "bytes", result.Memory.Value},
	{"limitbench_efficiency_ratio", "Admitted requests over what an exact limiter with the same contract admitted.", "ratio",
		result.Efficiency.Value},
	{"limitbench_definite_violations", "Definite violations of the algorithm's contract found by the verifier.", "",
		func(e *result.Entry) (float64, bool) { return float64(e.Verification.DefiniteViolations), true }},
}

// scaled returns m's value of an entry times k (µs to seconds).
func scaled(m result.Metric, k float64) func(e *result.Entry) (float64, bool) {
	return func(e *result.Entry) (float64, bool) {
		v, ok := m.Value(e)
		return v * k, ok
	}
}

// Metrics is a metrics report in the OpenMetrics text format, as GitLab's merge-request metrics
// widget reads it (artifacts:reports:metrics). Add results, gate reports and hunts; Write
// writes the families in the order they were first added.
type Metrics struct {
	families []*family
}

func (m *Metrics) family(name, help, unit string) *family {
	for _, f := range m.families {
		if f.name == name {
			return f
		}
	}
	f := &family{name: name, help: help, unit: unit}
	m.families = append(m.families, f)
	return f
}

func (m *Metrics) add(name, help, unit string, value float64, labels ...[2]string) {
	f := m.family(name, help, unit)
	f.samples = append(f.samples, sample{labels: labels, value: value})
}

// AddResult adds a result's figures: each of the families in the package documentation per
// entry, labelled scenario, algorithm and topology; the reference script's entry is left out.
func (m *Metrics) AddResult(r *result.Result) {
	for _, fam := range entryFamilies {
		m.family(fam.name, fam.help, fam.unit)
	}
	for i := range r.Entries {
		e := &r.Entries[i]
		if r.IsReference(e) {
			continue
		}
		labels := [][2]string{{"scenario", r.Scenario.Name}, {"algorithm", e.Algorithm}, {"topology", e.Topology}}
		for _, fam := range entryFamilies {
			if v, ok := fam.value(e); ok {
				m.add(fam.name, fam.help, fam.unit, v, labels...)
			}
		}
	}
}

// AddGate adds a gate report's outcome: the number of rows of each verdict, labelled scenario
// and verdict (every verdict, zeros included, so that a count that drops to 0 still shows).
func (m *Metrics) AddGate(g *gate.Report) {
	const name, help = "limitbench_gate_rows", "Rows of the CI gate's comparison with the baseline, by verdict."
	c := g.Counts
	for _, v := range []struct {
		verdict gate.Verdict
		n       int
	}{{gate.Regression, c.Regressions}, {gate.Inconclusive, c.Inconclusive}, {gate.Improvement, c.Improvements},
		{gate.Insignificant, c.Insignificant}, {gate.OK, c.OK}} {
		m.add(name, help, "", float64(v.n), [2]string{"scenario", g.Scenario}, [2]string{"verdict", string(v.verdict)})
	}
}

// AddHunt adds a hunt's figures per algorithm × topology: the best score (above 1 broke the
// contract), the trials run, and whether a violation was found (1) or not (0).
func (m *Metrics) AddHunt(f *hunt.File, scenario string) {
	for _, e := range f.Entries {
		labels := [][2]string{{"scenario", scenario}, {"algorithm", e.Algorithm}, {"topology", e.Topology}}
		m.add("limitbench_hunt_best_score", "The hunt's best score: above 1 is a definite violation of the contract.", "", e.BestScore, labels...)
		m.add("limitbench_hunt_trials", "Schedules the hunt ran.", "", float64(e.Trials), labels...)
		found := 0.0
		if e.Violation != nil {
			found = 1
		}
		m.add("limitbench_hunt_violation_found", "1 when the hunt found a schedule that broke the contract, else 0.", "", found, labels...)
	}
}

// Write writes the report: per family its HELP, TYPE (gauge) and UNIT, then its samples, and
// "# EOF" at the end. Values have at most six significant digits.
func (m *Metrics) Write(w io.Writer) error {
	var b strings.Builder
	for _, f := range m.families {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", f.name, escapeHelp(f.help), f.name)
		if f.unit != "" {
			fmt.Fprintf(&b, "# UNIT %s %s\n", f.name, f.unit)
		}
		for _, s := range f.samples {
			b.WriteString(f.name)
			if len(s.labels) > 0 {
				b.WriteString("{")
				for i, l := range s.labels {
					if i > 0 {
						b.WriteString(",")
					}
					fmt.Fprintf(&b, "%s=\"%s\"", l[0], escapeLabel(l[1]))
				}
				b.WriteString("}")
			}
			fmt.Fprintf(&b, " %s\n", strconv.FormatFloat(s.value, 'g', 6, 64))
		}
	}
	b.WriteString("# EOF\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// escapeLabel escapes a label value as OpenMetrics and the Prometheus text format do.
func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// escapeHelp escapes a HELP text.
func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}
