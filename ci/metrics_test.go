package ci

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/limitbench/limitbench/gate"
)

// parseMetrics parses a metrics report with the Prometheus text parser, and lints it with
// promtool when that is on PATH.
func parseMetrics(t *testing.T, text []byte) map[string]*dto.MetricFamily {
	t.Helper()
	if !bytes.HasSuffix(text, []byte("# EOF\n")) {
		t.Errorf("the report does not end with # EOF:\n%s", text)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("the Prometheus text parser refuses the report: %v\n%s", err, text)
	}
	if promtool, err := exec.LookPath("promtool"); err == nil {
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(text)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics: %v\n%s\nthe report:\n%s", err, out, text)
		}
	} else {
		t.Logf("promtool is not on PATH; the report was checked with the Go text parser only")
	}
	return fams
}

// sampleOf returns the value of family name's sample whose labels hold want, and whether there
// is one.
func sampleOf(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f, ok := fams[name]
	if !ok {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && got[k] == v
		}
		if match {
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// TestMetricsResult: every figure of every entry but the reference, in base units, parsed back
// by the Prometheus text parser; a figure not measured is left out, not written as 0.
func TestMetricsResult(t *testing.T) {
	r := mixedResult()
	r.Scenario.Name = `odd "name"\with` + "\nnewline"
	r.Entries[1].Server.CPUUSecPerDecision = 0 // not measured
	var m Metrics
	m.AddResult(r)
	var b bytes.Buffer
	if err := m.Write(&b); err != nil {
		t.Fatal(err)
	}
	fams := parseMetrics(t, b.Bytes())
	for i := range r.Entries {
		e := &r.Entries[i]
		labels := map[string]string{"scenario": r.Scenario.Name, "algorithm": e.Algorithm, "topology": e.Topology}
		for _, tt := range []struct {
			name string
			want float64
			ok   bool
		}{
			{"limitbench_throughput_decisions_per_second", e.ThroughputRPS, true},
			{"limitbench_latency_p99_seconds", e.LatencyUS.P99 / 1e6, true},
			{"limitbench_redis_cpu_per_decision_seconds", e.Server.CPUUSecPerDecision / 1e6, e.Server.CPUUSecPerDecision > 0},
			{"limitbench_memory_per_subject_bytes", e.Server.BytesPerKey, true},
			{"limitbench_efficiency_ratio", e.Accuracy.Efficiency, e.Verification.Contract != "none"},
			{"limitbench_definite_violations", float64(e.Verification.DefiniteViolations), true},
		} {
			got, ok := sampleOf(fams, tt.name, labels)
			want := tt.ok && !r.IsReference(e)
			switch {
			case ok != want:
				t.Errorf("%s %v: present = %v; want %v", tt.name, labels, ok, want)
			case ok && got != tt.want:
				t.Errorf("%s %v = %g; want %g", tt.name, labels, got, tt.want)
			}
		}
	}
	for name, f := range fams {
		if f.GetType() != dto.MetricType_GAUGE {
			t.Errorf("%s is a %s; want gauge", name, f.GetType())
		}
		if f.GetHelp() == "" {
			t.Errorf("%s has no help", name)
		}
	}
	if !strings.Contains(b.String(), "# UNIT limitbench_latency_p99_seconds seconds\n") {
		t.Errorf("no UNIT line for the latency:\n%s", b.String())
	}
}

// TestMetricsGateAndHunt: the gate's rows by verdict, zeros included, and a hunt's figures.
func TestMetricsGateAndHunt(t *testing.T) {
	g, err := gate.Compare(gateFixture(t, "baseline"), gateFixture(t, "current-slower"), gate.DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	h := huntFixture(t)
	var m Metrics
	m.AddGate(g)
	m.AddHunt(h, "demo")
	var b bytes.Buffer
	if err := m.Write(&b); err != nil {
		t.Fatal(err)
	}
	fams := parseMetrics(t, b.Bytes())
	for verdict, want := range map[gate.Verdict]int{gate.Regression: g.Counts.Regressions, gate.Improvement: g.Counts.Improvements,
		gate.Inconclusive: g.Counts.Inconclusive, gate.Insignificant: g.Counts.Insignificant, gate.OK: g.Counts.OK} {
		got, ok := sampleOf(fams, "limitbench_gate_rows", map[string]string{"scenario": "saturation", "verdict": string(verdict)})
		if !ok || got != float64(want) {
			t.Errorf("limitbench_gate_rows{verdict=%q} = %g (present %v); want %d", verdict, got, ok, want)
		}
	}
	for _, e := range h.Entries {
		labels := map[string]string{"scenario": "demo", "algorithm": e.Algorithm, "topology": e.Topology}
		found := 0.0
		if e.Violation != nil {
			found = 1
		}
		for name, want := range map[string]float64{"limitbench_hunt_best_score": e.BestScore, "limitbench_hunt_trials": float64(e.Trials),
			"limitbench_hunt_violation_found": found} {
			if got, ok := sampleOf(fams, name, labels); !ok || got != want {
				t.Errorf("%s %v = %g (present %v); want %g", name, labels, got, ok, want)
			}
		}
	}
}

// TestMetricsParserRejects: the text parser the tests rely on does refuse a malformed report.
func TestMetricsParserRejects(t *testing.T) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	for _, bad := range []string{
		"limitbench_x{algorithm=\"a} 1\n",
		"# TYPE limitbench_x gauge\nlimitbench_x 1 2 3 4\n",
		"# TYPE limitbench_x gauge\n# TYPE limitbench_x counter\n",
	} {
		if _, err := p.TextToMetricFamilies(strings.NewReader(bad)); err == nil {
			t.Errorf("the text parser accepted %q", bad)
		}
	}
}
