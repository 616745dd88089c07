package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/limitbench/limitbench/ci"
	"github.com/limitbench/limitbench/gate"
	"github.com/limitbench/limitbench/report"
	"github.com/limitbench/limitbench/result"
)

func init() {
	register("ci", "run a scenario and gate it against the baseline branch's last result, in one CI step (the GitHub Action's logic)", runCI)
}

const ciSynopsis = "[--repeat N] [--out DIR] [--baseline PATH] [--baseline-branch BRANCH] [--artifact NAME] [--metric-threshold LIST] [--fail-inconclusive] [--comment=false] SCENARIO.yaml"

// ciHelp says what `limitbench ci` does, printed by -h between the synopsis and the flags.
const ciHelp = `Runs SCENARIO.yaml with --repeat N into DIR (with DIR/junit.xml and DIR/metrics.txt), then, when
there is a baseline, gates the run against it (DIR/gate.md, DIR/gate-junit.xml) and exits with the
gate's code: 0 no regression, 1 a regression (or an inconclusive row with --fail-inconclusive),
2 bad input, 3 Redis could not be set up or was lost. Without a baseline it exits with the run's
code (1: a verdict failed).

The baseline is --baseline, or on GitHub Actions (GITHUB_ACTIONS=true), unless the run is a push
to the baseline branch itself: the result.json in the artifact --artifact of the newest successful
run of the same workflow on --baseline-branch, fetched with $GITHUB_TOKEN from $GITHUB_API_URL. On
GitHub it also writes the gate's table and the run's report to the job summary, annotates the
scenario's lines, creates or updates one comment on the pull request (not from a fork), and
writes the step outputs verdict (pass, inconclusive, regression, no-baseline, baseline, error),
exit-code, results, junit, gate-junit and comment-url.
`

// ciCommand is one `limitbench ci`: its flags, and where it runs.
type ciCommand struct {
	repeat                                int
	out, baseline, branch, artifact       string
	policy                                gate.Policy
	wantComment, force                    bool
	scenario                              string
	stdout, stderr                        io.Writer
	gh                                    *githubStep // shared with the run and the gate; nil off GitHub
	event                                 ci.Event
	api                                   *ci.GitHub
	runID                                 int64
	refName, workflowRef, serverURL, repo string
}

// runCI implements `limitbench ci` (see ciHelp): the run, the baseline, the gate, and on GitHub
// the summary, the comment and the step outputs. It exits with the gate's code, or the run's
// without a baseline; the run's failed verdicts do not stop the gate, which reports them as
// pass → fail against the baseline.
func runCI(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseCI(ctx, args, stdout, stderr)
	if err != nil {
		return err
	}
	sub := ctx
	if c.gh != nil {
		sub = withGitHub(ctx, c.gh)
	}
	// The baseline first: a token or a permission that does not work fails before the run.
	base, err := c.findBaseline(ctx)
	defer base.cleanup()
	if err != nil {
		c.finish(ctx, ciOutcome{verdict: "error", code: exitCode(err)})
		return err
	}
	runErr := runRun(sub, c.runArgs(), stdout, stderr)
	if code := exitCode(runErr); code >= exitBadInput {
		c.finish(ctx, ciOutcome{verdict: "error", code: code, note: base.note})
		return runErr
	}
	if base.path == "" {
		verdict := "no-baseline"
		if !c.gates() {
			verdict = "baseline"
		}
		c.finish(ctx, ciOutcome{verdict: verdict, code: exitCode(runErr), note: base.note})
		return runErr
	}
	g, current, err := compareFiles(ctx, base.path, c.out, c.policy)
	if err != nil {
		c.finish(ctx, ciOutcome{verdict: "error", code: exitCode(err), note: base.note})
		return err
	}
	var md bytes.Buffer
	if err := g.Markdown(&md); err != nil {
		return err
	}
	_, _ = stdout.Write(md.Bytes()) // stdout: a failed write has nowhere to be reported
	err = result.WriteFile(filepath.Join(c.out, "gate.md"), md.Bytes())
	if err == nil {
		err = gateCIOutputs(sub, ciFlags{junit: filepath.Join(c.out, "gate-junit.xml")}, g, current, stdout)
	}
	if err != nil {
		err = fmt.Errorf("write the gate's report: %w", err)
		c.finish(ctx, ciOutcome{verdict: "error", code: exitCode(err), note: base.note, gate: md.String()})
		return err
	}
	gateErr := gateFailure(g, base.name)
	c.finish(ctx, ciOutcome{verdict: gateVerdict(g), code: exitCode(gateErr), note: base.note, gate: md.String()})
	return gateErr
}

// parseCI reads the flags and, on GitHub Actions, the workflow's environment and event.
func parseCI(ctx context.Context, args []string, stdout, stderr io.Writer) (*ciCommand, error) {
	fs := newFlagSet("ci", ciSynopsis, stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: limitbench ci %s\n\n%s\nflags:\n", ciSynopsis, ciHelp)
		fs.PrintDefaults()
	}
	c := &ciCommand{stdout: stdout, stderr: stderr}
	fs.IntVar(&c.repeat, "repeat", 6, "interleaved repeats of each algorithm; the gate needs at least 6 a side")
	fs.StringVar(&c.out, "out", "limitbench-results", "results directory of the run, with the JUnit, metrics and gate reports beside result.json")
	fs.BoolVar(&c.force, "force", false, forceUsage)
	fs.StringVar(&c.baseline, "baseline", "", "baseline result.json, or the results directory holding it; default on GitHub Actions: the artifact of the newest successful run of this workflow on --baseline-branch")
	fs.StringVar(&c.branch, "baseline-branch", "", "branch whose runs hold the baseline (default the repository's default branch, from the event)")
	fs.StringVar(&c.artifact, "artifact", "limitbench-results", "name of the artifact that holds a run's results (what the action uploads DIR as)")
	thresholds := fs.String("metric-threshold", gate.DefaultThresholds().String(), "the gate's thresholds, as limitbench gate takes them")
	fs.BoolVar(&c.policy.FailInconclusive, "fail-inconclusive", false, "fail (exit 1) when a gate row is inconclusive, as limitbench gate does")
	fs.BoolVar(&c.wantComment, "comment", true, "on GitHub, create or update one comment on the pull request with the gate's table")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return nil, badInput(errors.New("give exactly one scenario file"))
	}
	c.scenario = fs.Arg(0)
	var err error
	if c.policy.Thresholds, err = gate.ParseThresholds(*thresholds); err != nil {
		return nil, badInput(fmt.Errorf("--metric-threshold: %w", err))
	}
	if c.repeat < gate.MinSamples {
		return nil, badInput(fmt.Errorf("--repeat %d: the gate needs at least %d repeats a side", c.repeat, gate.MinSamples))
	}
	if env := githubOf(ctx); env != nil {
		if err := c.readGitHub(env); err != nil {
			return nil, badInput(err)
		}
	}
	return c, nil
}

// readGitHub reads the workflow's environment: the step's summary is the command's own (the run
// and the gate it starts write none), the annotations shared.
func (c *ciCommand) readGitHub(env *githubStep) error {
	c.gh = &githubStep{workspace: env.workspace, notes: env.notes, shared: true}
	c.runID, _ = strconv.ParseInt(os.Getenv("GITHUB_RUN_ID"), 10, 64)
	c.refName, c.workflowRef = os.Getenv("GITHUB_REF_NAME"), os.Getenv("GITHUB_WORKFLOW_REF")
	c.serverURL, c.repo = os.Getenv("GITHUB_SERVER_URL"), os.Getenv("GITHUB_REPOSITORY")
	c.api = &ci.GitHub{API: os.Getenv("GITHUB_API_URL"), Repo: c.repo, Token: os.Getenv("GITHUB_TOKEN")}
	if c.api.API == "" {
		c.api.API = "https://api.github.com"
	}
	var err error
	c.event, err = ci.ReadEvent(os.Getenv("GITHUB_EVENT_NAME"), os.Getenv("GITHUB_EVENT_PATH"))
	if c.branch == "" {
		c.branch = c.event.DefaultBranch
	}
	if c.branch == "" {
		c.branch = "main"
	}
	return err
}

// runArgs are the arguments of the run.
func (c *ciCommand) runArgs() []string {
	a := []string{"--repeat", strconv.Itoa(c.repeat), "--out", c.out, "--junit", filepath.Join(c.out, "junit.xml"),
		"--metrics-report", filepath.Join(c.out, "metrics.txt")}
	if c.force {
		a = append(a, "--force")
	}
	return append(a, c.scenario)
}

// gates reports whether this run is to be gated: with --baseline, or on GitHub unless it is a
// push to the baseline branch (which records the next baseline).
func (c *ciCommand) gates() bool {
	return c.baseline != "" || c.gh != nil && !(c.event.PullRequest == 0 && c.refName == c.branch)
}

// ciBaseline is the baseline of a `limitbench ci`: its result.json (path "" for none), the name
// messages give it, a note on where it came from or why there is none, and the cleanup of what
// was downloaded.
type ciBaseline struct {
	path, name, note string
	cleanup          func()
}

// findBaseline returns the baseline: --baseline, or the artifact of the newest successful run on
// the baseline branch. A baseline the API cannot be asked for (a refused token, a missing
// permission) is bad input; none on the branch yet is not an error.
func (c *ciCommand) findBaseline(ctx context.Context) (ciBaseline, error) {
	b := ciBaseline{cleanup: func() {}}
	switch {
	case c.baseline != "":
		b.path, b.name = c.baseline, c.baseline
		if _, err := os.Stat(resultPath(c.baseline)); err != nil {
			return b, badInput(fmt.Errorf("--baseline: %w", err))
		}
		return b, nil
	case c.gh == nil:
		b.note = "No --baseline was given: the run was not gated."
		return b, nil
	case !c.gates():
		b.note = fmt.Sprintf("This run on %s records the baseline that pull requests are gated against.", c.branch)
		return b, nil
	}
	a, err := c.api.FindBaseline(ctx, ci.WorkflowFile(c.workflowRef), c.branch, c.artifact, c.runID)
	if errors.Is(err, ci.ErrNoBaseline) {
		b.note = fmt.Sprintf("No baseline yet (%v): the run was not gated. A push to %s records one.", err, c.branch)
		return b, nil
	}
	if err != nil {
		hint := "the workflow needs permissions: actions: read"
		if c.api.Token == "" {
			hint = "GITHUB_TOKEN is empty: give the step env: GITHUB_TOKEN: ${{ github.token }}"
		}
		return b, badInput(fmt.Errorf("find the baseline (%s): %w", hint, err))
	}
	dir, err := os.MkdirTemp("", "limitbench-baseline-")
	if err != nil {
		return b, err
	}
	b.cleanup = func() { _ = os.RemoveAll(dir) }
	if b.path, err = c.api.DownloadResult(ctx, a, dir); err != nil {
		return b, badInput(fmt.Errorf("download the baseline: %w", err))
	}
	b.name = fmt.Sprintf("the baseline of run %d on %s", a.RunID, c.branch)
	b.note = fmt.Sprintf("Baseline: artifact %s of run %d on %s (commit %s).", c.artifact, a.RunID, c.branch, short(a.HeadSHA))
	return b, nil
}

func short(sha string) string { return sha[:min(len(sha), 12)] }

// gateVerdict names the gate's outcome for the step output verdict.
func gateVerdict(g *gate.Report) string {
	switch {
	case g.Counts.Regressions > 0:
		return "regression"
	case g.Counts.Inconclusive > 0:
		return "inconclusive"
	}
	return "pass"
}

// ciOutcome is how a `limitbench ci` ended: the step output verdict, the exit code, a note on
// the baseline, and the gate's Markdown ("" when not gated).
type ciOutcome struct {
	verdict string
	code    int
	note    string
	gate    string
}

// finish writes, on GitHub, the step's annotations, summary, pull-request comment and outputs.
// What fails here is said on stderr and changes no exit code: the run and the gate decided it.
func (c *ciCommand) finish(ctx context.Context, o ciOutcome) {
	if c.gh == nil {
		return
	}
	warn := func(err error) {
		if err != nil {
			fmt.Fprintf(c.stderr, "limitbench ci: %v\n", err)
		}
	}
	warn(c.gh.notes.Flush(c.stdout))
	md := c.summary(o)
	if s := os.Getenv("GITHUB_STEP_SUMMARY"); s != "" {
		warn(ci.AppendSummary(s, md, filepath.Join(c.out, report.MarkdownFile)))
	}
	url := c.comment(ctx, o)
	if p := os.Getenv("GITHUB_OUTPUT"); p != "" {
		warn(ci.SetOutputs(p, [][2]string{{"verdict", o.verdict}, {"exit-code", strconv.Itoa(o.code)}, {"results", c.out},
			{"junit", filepath.Join(c.out, "junit.xml")}, {"gate-junit", filepath.Join(c.out, "gate-junit.xml")}, {"comment-url", url}}))
	}
}

// summary is the step's summary: the gate's table (or why there is none), then the run's report
// folded under it.
func (c *ciCommand) summary(o ciOutcome) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## limitbench ci: %s\n\n", c.scenario)
	if o.note != "" {
		b.WriteString(o.note + "\n\n")
	}
	b.WriteString(o.gate)
	if r, err := result.Read(filepath.Join(c.out, result.FileName)); err == nil {
		var md bytes.Buffer
		if report.WriteMarkdown(&md, r, nil) == nil {
			fmt.Fprintf(&b, "\n<details><summary>The run: verdicts and findings</summary>\n\n%s\n</details>\n", md.String())
		}
	}
	return b.String()
}

// comment creates or updates the pull request's comment with the gate's table (or the note),
// and returns its address; it says on stderr why it did not.
func (c *ciCommand) comment(ctx context.Context, o ciOutcome) string {
	switch {
	case !c.wantComment || c.event.PullRequest == 0 || o.gate == "" && o.note == "":
		return ""
	case c.event.FromFork():
		fmt.Fprintf(c.stderr, "limitbench ci: pull request #%d comes from the fork %s, whose token cannot comment; the job summary has the table\n",
			c.event.PullRequest, c.event.HeadRepo)
		return ""
	}
	marker := "<!-- limitbench ci: " + c.scenario + " -->"
	body := marker + "\n" + o.note + "\n\n" + o.gate
	if c.serverURL != "" && c.runID != 0 {
		body += fmt.Sprintf("\n<sub>[The run](%s/%s/actions/runs/%d): its job summary, and the results in the artifact %s.</sub>\n",
			c.serverURL, c.repo, c.runID, c.artifact)
	}
	if cut, ok := ci.CutLines(body, ci.CommentLimit-200); ok {
		body = cut + "\n(cut to GitHub's limit for a comment: the job summary has the whole table)\n"
	}
	cm, _, err := c.api.UpsertComment(ctx, c.event.PullRequest, marker, body)
	if err != nil {
		fmt.Fprintf(c.stderr, "limitbench ci: comment on pull request #%d (the workflow needs permissions: pull-requests: write): %v\n", c.event.PullRequest, err)
		return ""
	}
	return cm.HTMLURL
}
