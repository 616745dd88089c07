package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limitbench/limitbench/gate"
	"github.com/limitbench/limitbench/result"
)

// gateFixture returns the path of gate/testdata/<name>/result.json.
func gateFixture(name string) string {
	return filepath.Join("..", "..", "gate", "testdata", name, "result.json")
}

func TestGateCommand(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"schema": "limitbench/result/v1", "entries": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.json")
	base := gateFixture("baseline")
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // substring of stdout
		stderr string // substring of stderr
	}{
		{"same code", []string{"gate", "--baseline", base, gateFixture("current-same")}, 0,
			"**limitbench gate: no regression in scenario saturation.", ""},
		{"flags after the positional argument", []string{"gate", gateFixture("current-same"), "--baseline", base}, 0,
			"| saturation | gcra | single | throughput (rps) |", ""},
		{"results directories", []string{"gate", "--baseline", filepath.Dir(base), filepath.Dir(gateFixture("current-same"))}, 0,
			"no regression", ""},
		{"25% slower", []string{"gate", "--baseline", base, gateFixture("current-slower")}, 1,
			"| saturation | gcra | single | throughput (rps) | 9985 | 7988 | -20.0% | [-21.2, -18.8]% | 0.002 | 1.7% | **regression** |", "3 regressions against " + base},
		{"25% slower under 30% thresholds", []string{"gate", "--baseline", base, "--metric-threshold", "throughput=30%,p99=30%,cpu=30%", gateFixture("current-slower")}, 0,
			"| -20.0% | [-21.2, -18.8]% | 0.002 | 1.7% | ok (significant but within the threshold) |", ""},
		{"same code, noisy: inconclusive passes by default", []string{"gate", "--baseline", gateFixture("baseline-noisy"), gateFixture("current-noisy-same")}, 0,
			"**limitbench gate: INCONCLUSIVE in scenario saturation: cannot rule out a regression in gcra/single throughput", ""},
		{"same code, noisy, --fail-inconclusive", []string{"gate", "--fail-inconclusive", "--baseline", gateFixture("baseline-noisy"), gateFixture("current-noisy-same")}, 1,
			"**inconclusive** (cannot rule out a regression of 10%", "3 inconclusive rows (--fail-inconclusive) against " + gateFixture("baseline-noisy")},
		{"4x slower, noisy: a regression whatever the spread", []string{"gate", "--baseline", gateFixture("baseline-noisy"), gateFixture("current-noisy-4x")}, 1,
			"| saturation | gcra | single | cpu (µs/decision) | 24.5 | 98.0 | +300.0% | [+210.2, +408.2]% | 0.002 | 256.7% (10% needs 1962 repeats) | **regression** |", "3 regressions against"},
		{"pass to fail", []string{"gate", "--baseline", base, gateFixture("current-failed")}, 1,
			"| saturation | gcra | single | verdict | pass | fail | — | — | — | — | **regression** (pass → fail) |", "1 regression against"},
		{"5 samples", []string{"gate", "--baseline", base, gateFixture("current-5")}, 2,
			"", gateFixture("current-5") + " (current): gcra on single: too few samples: 5, the gate needs at least 6 a side"},
		{"5 samples in the baseline", []string{"gate", "--baseline", gateFixture("current-5"), base}, 2,
			"", gateFixture("current-5") + " (baseline): gcra on single: too few samples: 5"},
		{"different scenarios", []string{"gate", "--baseline", base, gateFixture("current-zipf")}, 2,
			"", `baseline and current ran different scenarios: baseline ran "saturation", current ran "zipf"`},
		// Issue 28 item 15: the scenario at 100/s against a baseline at 200/s.
		{"different load", []string{"gate", "--baseline", gateFixture("baseline-reference"), gateFixture("current-half-rate")}, 2,
			"", "baseline and current ran different loads: arrival constant 200/s (baseline) vs constant 100/s (current)"},
		{"different load allowed", []string{"gate", "--allow-different-load", "--baseline", gateFixture("baseline-reference"), gateFixture("current-half-rate")}, 0,
			"The runs' loads differ (arrival constant 200/s (baseline) vs constant 100/s (current))", ""},
		{"missing baseline", []string{"gate", "--baseline", missing, gateFixture("current-same")}, 2,
			"", "baseline: read result: open " + missing},
		{"invalid current", []string{"gate", "--baseline", base, bad}, 2, "", "current: " + bad + ": "},
		{"no baseline flag", []string{"gate", gateFixture("current-same")}, 2, "", "--baseline is required"},
		{"two currents", []string{"gate", "--baseline", base, gateFixture("current-same"), gateFixture("current-slower")}, 2,
			"", "want one CURRENT.json, got 2 arguments"},
		{"bad threshold", []string{"gate", "--baseline", base, "--metric-threshold", "latency=5%", gateFixture("current-same")}, 2,
			"", `--metric-threshold: bad metric threshold: "latency=5%": unknown metric "latency"`},
		{"unknown flag", []string{"gate", "--baseline", base, "--alpha", "0.1", gateFixture("current-same")}, 2,
			"", "flag provided but not defined: -alpha"},
		{"help", []string{"gate", "-h"}, 0, "", "usage: limitbench gate --baseline BASELINE.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			if code != tt.code {
				t.Errorf("run(%q) = %d; want %d\nstdout:\n%s\nstderr:\n%s", tt.args, code, tt.code, stdout.String(), stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout does not contain %q:\n%s", tt.stdout, stdout.String())
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr does not contain %q:\n%s", tt.stderr, stderr.String())
			}
			if tt.code == 2 && stdout.Len() > 0 && tt.name != "help" {
				t.Errorf("bad input wrote a report to stdout:\n%s", stdout.String())
			}
		})
	}
}

func TestGateCommandJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"gate", "--json", "--baseline", gateFixture("baseline"), gateFixture("current-slower")}, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit code %d; want 1\n%s", code, stderr.String())
	}
	var g gate.Report
	if err := json.Unmarshal(stdout.Bytes(), &g); err != nil {
		t.Fatalf("stdout is not a GateReport: %v\n%s", err, stdout.String())
	}
	if g.Counts.Regressions != 3 || !g.Failed || !g.SameMachine || !strings.HasPrefix(g.Summary, "limitbench gate: REGRESSION") {
		t.Errorf("JSON report = counts %+v, failed %v, same machine %v, summary %q; want 3 regressions that fail, same machine",
			g.Counts, g.Failed, g.SameMachine, g.Summary)
	}
	if len(g.Rows) != 12 || g.Rows[0].Metric != result.Throughput || g.Rows[0].Verdict != gate.Regression || !(g.Rows[0].P < 0.05) ||
		g.Rows[0].Figures != gate.FiguresRaw || !(g.Rows[0].MDE > 0 && g.Rows[0].MDE < g.Rows[0].Threshold) || g.Rows[0].RepeatsNeeded != gate.MinSamples {
		t.Errorf("rows = %+v; want 12, the first a throughput regression of raw figures with p < 0.05, an MDE under its threshold and 6 repeats needed", g.Rows)
	}
}

// TestGateLoadGolden is the regression test of issue 28 item 15 through the built binary: a gate
// of the scenario at 100/s against a baseline at 200/s is bad input (exit 2) that names the
// different rate, not a comparison that calls the halved throughput the machine's drift.
func TestGateLoadGolden(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	runGoldens(t, buildBinary(t), []cliCase{
		{"gate-different-load", []string{"gate", "--baseline", gateFixture("baseline-reference"), gateFixture("current-half-rate")}, exitBadInput},
	}, 5*time.Second, nil)
}
