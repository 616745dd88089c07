package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/limitbench/limitbench/ci"
	"github.com/limitbench/limitbench/hunt"
	"github.com/limitbench/limitbench/report"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/scenarios"
)

// ciFlags are the CI output flags of run, merge, gate and hunt, spelled alike in each.
type ciFlags struct {
	junit, metrics string
}

func (f *ciFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.junit, "junit", "", "also write the verdicts as JUnit XML to `FILE`, as GitLab, Jenkins and GitHub test reporters read it: one testcase per algorithm × topology verdict")
	fs.StringVar(&f.metrics, "metrics-report", "", "also write the key figures as OpenMetrics text to `FILE`, as GitLab's merge-request metrics widget reads it (artifacts:reports:metrics)")
}

// githubStep is what a command writes for a GitHub Actions step when GITHUB_ACTIONS=true: its
// summary Markdown appended to $GITHUB_STEP_SUMMARY (summary "" writes none) and its findings as
// error annotations at the scenario's lines, paths relative to workspace ($GITHUB_WORKSPACE).
// A command that runs others in its step (limitbench ci) gives them its own with shared set:
// then the annotations are its to print, once, for the whole step.
type githubStep struct {
	summary, workspace string
	notes              *ci.Annotator
	shared             bool
}

type githubKey struct{}

// withGitHub returns ctx whose commands write for GitHub as g says.
func withGitHub(ctx context.Context, g *githubStep) context.Context {
	return context.WithValue(ctx, githubKey{}, g)
}

// githubOf returns the GitHub step the command runs in: the one ctx carries, else one read from
// the environment; nil when not on GitHub Actions.
func githubOf(ctx context.Context) *githubStep {
	if g, ok := ctx.Value(githubKey{}).(*githubStep); ok {
		return g
	}
	if os.Getenv("GITHUB_ACTIONS") != "true" {
		return nil
	}
	return &githubStep{summary: os.Getenv("GITHUB_STEP_SUMMARY"), workspace: os.Getenv("GITHUB_WORKSPACE"), notes: &ci.Annotator{}}
}

// ciOutputs collects what a command writes for CI: the JUnit report and the metrics report its
// flags ask for, and what it writes for GitHub.
type ciOutputs struct {
	flags   ciFlags
	junit   ci.JUnit
	metrics ci.Metrics
	gh      *githubStep
}

func newCIOutputs(ctx context.Context, f ciFlags) *ciOutputs {
	return &ciOutputs{flags: f, gh: githubOf(ctx)}
}

// summarize appends md to the step summary, the whole of it being in full; nothing off GitHub.
func (o *ciOutputs) summarize(md []byte, full string) error {
	if o.gh == nil || o.gh.summary == "" {
		return nil
	}
	return ci.AppendSummary(o.gh.summary, string(md), full)
}

// annotate collects annotations for the step; nothing off GitHub.
func (o *ciOutputs) annotate(as []ci.Annotation) {
	if o.gh != nil {
		o.gh.notes.Add(as...)
	}
}

// places returns where the scenario s defines what annotations point at.
func (o *ciOutputs) places(s *scenarios.Scenario) ci.Places {
	if o.gh == nil {
		return ci.Places{}
	}
	return ci.PlacesOf(s, o.gh.workspace)
}

// placesOfFile returns the places of the scenario file a result names, loaded again; the file
// alone when it no longer loads, nothing when it is gone.
func (o *ciOutputs) placesOfFile(path string) ci.Places {
	if o.gh == nil || path == "" {
		return ci.Places{}
	}
	if s, err := scenarios.Load(path); err == nil {
		return ci.PlacesOf(s, o.gh.workspace)
	}
	if _, err := os.Stat(path); err != nil {
		return ci.Places{}
	}
	return ci.PlacesOf(&scenarios.Scenario{File: path}, o.gh.workspace)
}

// addResult adds a run's or a merge's result, written into dir, with the places of its scenario.
func (o *ciOutputs) addResult(res *result.Result, dir string, p ci.Places) error {
	o.junit.Add(ci.RunSuites(res)...)
	o.metrics.AddResult(res)
	o.annotate(ci.RunAnnotations(res, p))
	if o.gh == nil || o.gh.summary == "" {
		return nil
	}
	var md bytes.Buffer
	if err := report.WriteMarkdown(&md, res, nil); err != nil {
		return err
	}
	return o.summarize(md.Bytes(), filepath.Join(dir, report.MarkdownFile))
}

// finish writes the JUnit and metrics files the flags name and prints the step's annotations to
// w (unless the step is shared). It returns the first error, naming the file.
func (o *ciOutputs) finish(w io.Writer) error {
	var first error
	keep := func(err error) {
		if first == nil {
			first = err
		}
	}
	if o.gh != nil && !o.gh.shared {
		keep(o.gh.notes.Flush(w))
	}
	if p := o.flags.junit; p != "" {
		if o.junit.Name == "" {
			o.junit.Name = "limitbench"
		}
		var b bytes.Buffer
		if err := o.junit.Write(&b); err != nil {
			keep(err)
		} else if err := result.WriteFile(p, b.Bytes()); err != nil {
			keep(fmt.Errorf("--junit %s: %w", p, err))
		}
	}
	if p := o.flags.metrics; p != "" {
		var b bytes.Buffer
		if err := o.metrics.Write(&b); err != nil {
			keep(err)
		} else if err := result.WriteFile(p, b.Bytes()); err != nil {
			keep(fmt.Errorf("--metrics-report %s: %w", p, err))
		}
	}
	return first
}

// huntCIOutputs writes what a hunt of s, written into dir, reports to CI: its targets as JUnit
// and its figures as metrics (as cf asks), and on GitHub its report in the step summary and an
// annotation per surprise, printed to w.
func huntCIOutputs(ctx context.Context, cf ciFlags, s *scenarios.Scenario, f *hunt.File, dir string, w io.Writer) error {
	outs := newCIOutputs(ctx, cf)
	outs.junit.Add(ci.HuntSuites(f, s.Name, s.Expect.Violations)...)
	outs.metrics.AddHunt(f, s.Name)
	outs.annotate(ci.HuntAnnotations(f, outs.places(s), s.Expect.Violations))
	var err error
	if outs.gh != nil && outs.gh.summary != "" {
		var md bytes.Buffer
		if err = hunt.WriteMarkdown(&md, f, nil); err == nil {
			err = outs.summarize(md.Bytes(), filepath.Join(dir, report.MarkdownFile))
		}
	}
	if ferr := outs.finish(w); err == nil {
		err = ferr
	}
	return err
}
