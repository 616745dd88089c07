package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/limitbench/limitbench/ci"
	"github.com/limitbench/limitbench/gate"
	"github.com/limitbench/limitbench/result"
)

func init() {
	register("gate", "compare a run with a baseline run and fail on a significant regression (CI gate)", runGate)
}

const gateSynopsis = "--baseline BASELINE.json [--metric-threshold throughput=10%,p99=15%,cpu=10%,memory=5%,efficiency=1pt] [--fail-inconclusive] [--allow-different-load] [--format markdown|json|bmf|benchmark-action] [--junit FILE] [--metrics-report FILE] CURRENT.json"

// gateHelp is the rule and the exit codes, printed by `limitbench gate -h` between the synopsis
// and the flags; gate's package documentation is the full specification.
const gateHelp = `Compares per-repeat figures (limitbench run --repeat 6 or more, both sides) per algorithm and
topology: throughput, p99, Redis CPU per decision, bytes per subject, efficiency, and the verdict.

Rule, per figure: the 99% confidence interval of the change (Hodges-Lehmann, from the Mann-Whitney
U test) against the metric's threshold.
  regression     the whole interval lies beyond the threshold on the worse side, whatever the
                 spread; also a verdict that went pass -> fail
  inconclusive   the interval reaches beyond the threshold and the samples cannot detect a change
                 of threshold size (detectable change at 80% power above the threshold): the run
                 cannot rule out a regression; also an inconclusive or tolerated verdict
  improvement    the whole interval lies beyond the threshold on the better side
  insignificant  the interval contains 0 (no detectable change)
  ok             a significant change not certainly beyond the threshold
Each row shows its detectable change and, when that is above the threshold, the repeats a side
that would reach it. On one machine a row compares raw figures or per-repeat ratios to the
reference script measured in the same round, whichever detects smaller changes once the raw
figures' drift (the reference's own change between the runs) is counted; between machines only
the ratios.

Exit codes: 0 no regression (inconclusive, improvement, insignificant and ok rows pass);
1 a regression, or an inconclusive row with --fail-inconclusive; 2 bad input (a missing or invalid
file, another scenario, the scenario under another load (rate, clients, duration, keys, limit,
cost, client mode, WAIT or faults) without --allow-different-load, fewer than 6 samples a side,
different machines without reference samples, nothing in common, bad flags).
`

// runGate implements `limitbench gate`: it reads two result.json files (or results directories
// holding one), runs gate.Compare, writes the Markdown table (or JSON with --json) to stdout, and
// returns failed when the gate fails (a regression, or an inconclusive row with
// --fail-inconclusive), badInput when an input is missing, invalid, of another scenario or load
// (unless --allow-different-load) or has too few samples. Flags may come before or after CURRENT.json.
func runGate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("gate", gateSynopsis, stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: limitbench gate %s\n\n%s\nflags:\n", gateSynopsis, gateHelp)
		fs.PrintDefaults()
	}
	baselinePath := fs.String("baseline", "", "baseline result.json, or the results directory holding it (required)")
	thresholds := fs.String("metric-threshold", gate.DefaultThresholds().String(),
		"smallest change that counts, per metric: percent of the baseline median for throughput, p99, cpu and memory; absolute points for efficiency; metrics not named keep their defaults")
	failInconclusive := fs.Bool("fail-inconclusive", false,
		"fail (exit 1) when a row is inconclusive, that is when the run cannot rule out a regression of threshold size; by default such rows are reported and pass")
	allowLoad := fs.Bool("allow-different-load", false,
		"compare runs of the scenario under different loads (rate, clients, duration, keys, limit, cost, client mode, WAIT, faults), naming the differences in the summary; refused by default (exit 2), since a different load changes every figure")
	asJSON := fs.Bool("json", false, "write the report as JSON instead of a Markdown table (--format json)")
	format := fs.String("format", "markdown", "what stdout gets: markdown (the table), json (the whole report), bmf (Bencher Metric Format) or benchmark-action (github-action-benchmark's custom JSON); the last two hold every row with a figure, for teams that keep history elsewhere")
	var cf ciFlags
	cf.register(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	write, err := gateFormat(*format, *asJSON)
	if err != nil {
		return badInput(err)
	}
	switch {
	case *baselinePath == "":
		fs.Usage()
		return badInput(errors.New("--baseline is required"))
	case len(pos) != 1:
		fs.Usage()
		return badInput(fmt.Errorf("want one CURRENT.json, got %d arguments", len(pos)))
	}
	th, err := gate.ParseThresholds(*thresholds)
	if err != nil {
		return badInput(fmt.Errorf("--metric-threshold: %w", err))
	}
	g, current, err := compareFiles(ctx, *baselinePath, pos[0], gate.Policy{Thresholds: th, FailInconclusive: *failInconclusive, AllowDifferentLoad: *allowLoad})
	if err != nil {
		return err
	}
	if err := write(g, stdout); err != nil {
		return fmt.Errorf("write gate report: %w", err)
	}
	notes := stdout
	if *format != "markdown" || *asJSON {
		notes = stderr // stdout is data
	}
	if err := gateCIOutputs(ctx, cf, g, current, notes); err != nil {
		return fmt.Errorf("write CI outputs: %w", err)
	}
	return gateFailure(g, resultPath(*baselinePath))
}

// compareFiles reads the baseline and current result.json files (or results directories holding
// one) and compares them under p; every input problem is bad input and names its file.
func compareFiles(ctx context.Context, baselinePath, currentPath string, p gate.Policy) (*gate.Report, *result.Result, error) {
	bPath, cPath := resultPath(baselinePath), resultPath(currentPath)
	baseline, err := result.Read(bPath)
	if err != nil {
		return nil, nil, badInput(fmt.Errorf("baseline: %w", err))
	}
	current, err := result.Read(cPath)
	if err != nil {
		return nil, nil, badInput(fmt.Errorf("current: %w", err))
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	g, err := gate.Compare(baseline, current, p)
	if err != nil {
		return nil, nil, badInput(nameGateFiles(err, bPath, cPath))
	}
	return g, current, nil
}

// gateFailure returns nil when g passes, else failed naming its regressions (and inconclusive
// rows under --fail-inconclusive) against the baseline at bPath.
func gateFailure(g *gate.Report, bPath string) error {
	if !g.Failed {
		return nil
	}
	var why []string
	if n := g.Counts.Regressions; n > 0 {
		why = append(why, fmt.Sprintf("%d regression%s", n, map[bool]string{true: "", false: "s"}[n == 1]))
	}
	if n := g.Counts.Inconclusive; n > 0 && g.Policy.FailInconclusive {
		why = append(why, fmt.Sprintf("%d inconclusive row%s (--fail-inconclusive)", n, map[bool]string{true: "", false: "s"}[n == 1]))
	}
	return failed(fmt.Errorf("%s against %s", strings.Join(why, " and "), bPath))
}

// gateFormat returns the writer of the gate report's format (--format), --json being json.
func gateFormat(format string, asJSON bool) (func(*gate.Report, io.Writer) error, error) {
	if asJSON && format != "markdown" && format != "json" {
		return nil, fmt.Errorf("--json and --format %s: give one", format)
	}
	if asJSON {
		format = "json"
	}
	switch format {
	case "markdown":
		return (*gate.Report).Markdown, nil
	case "json":
		return (*gate.Report).JSON, nil
	case "bmf":
		return (*gate.Report).BMF, nil
	case "benchmark-action":
		return (*gate.Report).BenchmarkAction, nil
	}
	return nil, fmt.Errorf("--format %q: want markdown, json, bmf or benchmark-action", format)
}

// gateCIOutputs writes what the gate reports to CI: its rows as JUnit and the current run's
// figures with the rows' verdicts as metrics (as cf asks), and on GitHub its Markdown in the step
// summary and an annotation per row that fails it, printed to notes.
func gateCIOutputs(ctx context.Context, cf ciFlags, g *gate.Report, current *result.Result, notes io.Writer) error {
	outs := newCIOutputs(ctx, cf)
	outs.junit.Add(ci.GateSuites(g)...)
	outs.metrics.AddResult(current)
	outs.metrics.AddGate(g)
	outs.annotate(ci.GateAnnotations(g, outs.placesOfFile(current.Scenario.File)))
	var md bytes.Buffer
	err := g.Markdown(&md)
	if err == nil {
		err = outs.summarize(md.Bytes(), "the gate's output")
	}
	if ferr := outs.finish(notes); err == nil {
		err = ferr
	}
	return err
}

// resultPath returns p, or p/result.json when p is a directory.
func resultPath(p string) string {
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		return filepath.Join(p, result.FileName)
	}
	return p
}

// nameGateFiles rewrites gate.Compare's errors so that those about one side name its file.
func nameGateFiles(err error, baselinePath, currentPath string) error {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	out := make([]error, len(errs))
	for i, e := range errs {
		var ie *gate.InputError
		if !errors.As(e, &ie) {
			out[i] = fmt.Errorf("%s vs %s: %w", baselinePath, currentPath, e)
			continue
		}
		path := baselinePath
		if ie.Side == gate.Current {
			path = currentPath
		}
		out[i] = fmt.Errorf("%s (%s): %w", path, ie.Side, trimSide(ie))
	}
	return errors.Join(out...)
}

// trimSide returns ie without its side prefix, keeping it in the chain for errors.Is.
func trimSide(ie *gate.InputError) error {
	if ie.Algorithm == "" {
		return ie.Err
	}
	return fmt.Errorf("%s on %s: %w", ie.Algorithm, ie.Topology, ie.Err)
}

// parseInterspersed parses args with fs, allowing flags after positional arguments, and returns
// the positional ones. Everything after "--" is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	rest := args
	for {
		if err := parseFlags(fs, rest); err != nil {
			return nil, err
		}
		left := fs.Args()
		if len(left) == 0 {
			return pos, nil
		}
		if consumed := len(rest) - len(left); consumed > 0 && rest[consumed-1] == "--" {
			return append(pos, left...), nil
		}
		pos = append(pos, left[0])
		rest = left[1:]
	}
}
