// Package grafana holds the Grafana dashboard for limitbench's live metrics (limitbench.json);
// its test checks that every query names only series limitbench exports.
package grafana

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/limitbench/limitbench/internal/metrics"
)

// seriesName matches a limitbench series in a PromQL expression.
var seriesName = regexp.MustCompile(`\blimitbench_[a-z_]+`)

// TestDashboardQueries checks that every query of the dashboard (panels' targets, annotations,
// template variables) names at least one series, and only series limitbench exports (a
// histogram's _bucket, _sum and _count among them); and that each question has its panel.
func TestDashboardQueries(t *testing.T) {
	b, err := os.ReadFile("limitbench.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
		Annotations struct{ List []struct{ Name, Expr string } }
		Templating  struct {
			List []struct{ Name, Definition string }
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("limitbench.json: %v", err)
	}
	var exprs []string
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	faults := false
	for _, a := range d.Annotations.List {
		if a.Expr != "" {
			exprs = append(exprs, a.Expr)
			faults = faults || strings.Contains(a.Expr, "limitbench_faults_active")
		}
	}
	if !faults {
		t.Error("no annotation shows the faults (limitbench_faults_active)")
	}
	for _, v := range d.Templating.List {
		if v.Definition != "" {
			exprs = append(exprs, v.Definition)
		}
	}
	used := map[string]bool{}
	for _, e := range exprs {
		names := seriesName.FindAllString(e, -1)
		if len(names) == 0 {
			t.Errorf("query names no limitbench series: %s", e)
		}
		for _, n := range names {
			base := n
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(n, suffix); ok && slices.Contains(metrics.Series, b) {
					base = b
				}
			}
			if !slices.Contains(metrics.Series, base) {
				t.Errorf("query names %s, which limitbench does not export: %s", n, e)
			}
			used[base] = true
		}
	}
	for _, want := range []string{"limitbench_requests_total", "limitbench_latency_seconds", "limitbench_window_admitted_permits",
		"limitbench_window_allowance_permits", "limitbench_violations_definite_total"} {
		if !used[want] {
			t.Errorf("no panel shows %s", want)
		}
	}
}
