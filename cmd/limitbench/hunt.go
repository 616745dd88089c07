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
	"slices"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/hunt"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/cpus"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/measure"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/trace"
	"github.com/limitbench/limitbench/internal/verify"
	"github.com/limitbench/limitbench/report"
	"github.com/limitbench/limitbench/scenarios"
)

func init() {
	register("hunt", "search for the schedule that breaks each limiter's contract, shrink it, write a reproducer", runHunt)
}

// huntMargin is how far above 1 a shrunk reproducer must score (hunt.Budget.Margin).
const huntMargin = 0.1

// huntConfirm is how many replays, at the end, the reproducer must break the contract in
// (hunt.Budget.Confirm).
const huntConfirm = 5

// huntFile is the file that marks a hunt's results directory.
const huntFile = "hunt.json"

// huntFlags are the flags of `limitbench hunt`.
type huntFlags struct {
	env                  envFlags
	topology, algorithms string
	budget               time.Duration
	trials, batch        int
	seed                 uint64
	span                 time.Duration
	out                  string
	force, quiet         bool
	procs                int
}

func runHunt(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("hunt", "[flags] SCENARIO.yaml", stderr)
	var f huntFlags
	f.env.register(fs)
	fs.StringVar(&f.topology, "topology", "", "override the scenario's topologies: single, cluster or single,cluster")
	fs.StringVar(&f.algorithms, "algorithms", "", "override the scenario's algorithms: a comma-separated list of names, or all")
	fs.DurationVar(&f.budget, "budget", hunt.DefaultTime, "wall time of the search per algorithm and topology (shrinking a violation takes up to as long again)")
	fs.IntVar(&f.trials, "trials", 0, "most schedules tried per algorithm and topology (0: bounded by --budget only)")
	fs.IntVar(&f.batch, "batch", 4, "schedules run at the same time, each on its own keys")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of every choice of the search: the same seed explores the same schedules")
	fs.DurationVar(&f.span, "span", hunt.DefaultSpan, "longest schedule: one trial lasts about this long")
	fs.StringVar(&f.out, "out", "", "results directory (default a new results/<scenario>-hunt-<UTC time>/); refused when it holds a hunt.json already, unless --force")
	fs.BoolVar(&f.force, "force", false, forceUsage)
	fs.BoolVar(&f.quiet, "quiet", false, "print only the summary")
	fs.IntVar(&f.procs, "procs", 0, "GOMAXPROCS of the load generator (as for run)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return badInput(errors.New("give exactly one scenario file"))
	}
	var problems []error
	if f.budget <= 0 {
		problems = append(problems, fmt.Errorf("--budget must be > 0, got %s", f.budget))
	}
	if f.trials < 0 {
		problems = append(problems, fmt.Errorf("--trials must be >= 0, got %d", f.trials))
	}
	if f.batch < 1 || f.batch > 64 {
		problems = append(problems, fmt.Errorf("--batch must be in [1, 64], got %d", f.batch))
	}
	if f.procs < 0 {
		problems = append(problems, fmt.Errorf("--procs must be >= 0, got %d", f.procs))
	}
	bounds := hunt.Bounds{Span: f.span}
	if f.span <= 0 {
		problems = append(problems, fmt.Errorf("--span must be > 0, got %s", f.span))
	} else if err := bounds.Validate(); err != nil {
		problems = append(problems, fmt.Errorf("--span: %w", err))
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	s, err := scenarios.Load(fs.Arg(0))
	if err == nil {
		err = s.Apply(overrides(runFlags{topology: f.topology, algorithms: f.algorithms}, set))
	}
	if err != nil {
		problems = append(problems, err)
	} else if s.Wait.Enabled() {
		// Trials have loads of their own; a WAIT they did not send must not be taken for measured.
		problems = append(problems, fmt.Errorf("%s: wait_replicas applies to limitbench run; a hunt's trials do not send WAIT (remove it, or hunt a copy without it)", s.File))
	}
	if len(problems) > 0 {
		return badInput(errors.Join(problems...))
	}
	env, err := f.env.config(set)
	if err != nil {
		return badInput(err)
	}
	targets, skipped, err := huntTargets(s)
	if err != nil {
		return badInput(err)
	}
	var dir *outDir
	if f.out == "" {
		dir, err = newOutDir("results", s.Name+"-hunt-"+timeStamp(time.Now()))
	} else {
		dir, err = explicitOutDir("--out", f.out, huntFile, f.force)
	}
	defer dir.release()
	if err != nil {
		return err
	}
	st, undo := cpus.Apply(cpus.Policy{Env: env, Topologies: s.Topologies, Procs: f.procs})
	defer undo()
	if st.ProcsNote != "" && !f.quiet {
		fmt.Fprintln(stderr, st.ProcsNote)
	}
	for _, n := range skipped {
		if !f.quiet {
			fmt.Fprintf(stderr, "%s: no contract to break; not hunted\n", n)
		}
	}

	h := &hunter{s: s, f: f, bounds: bounds, dir: dir.path, stderr: stderr, live: isTerminal(stderr) && !f.quiet,
		file: &hunt.File{Schema: hunt.Schema, Scenario: s.File, Seed: f.seed, BudgetS: f.budget.Seconds(), Trials: f.trials,
			SpanS: f.span.Seconds(), Entries: []hunt.Entry{}}}
	runErr := h.run(ctx, env, targets)
	interrupted := ctx.Err() != nil || errors.Is(runErr, measure.ErrInterrupted)
	h.file.CutShort = interrupted || runErr != nil
	if err := h.write(); err != nil {
		return fmt.Errorf("write results to %s: %w", dir.path, err)
	}
	h.summary(stdout)
	fmt.Fprintf(stdout, "results: %s\n", dir.path)
	switch {
	case interrupted:
		return failed(fmt.Errorf("%w; what was found so far is in %s", measure.ErrInterrupted, dir.path))
	case runErr != nil:
		return fmt.Errorf("%w; what was found so far is in %s", runErr, dir.path)
	}
	return huntVerdict(s, h.file.Entries)
}

// huntVerdict returns nil when the hunt's entries are what the scenario s expects, else an error
// that exits 1 naming each surprise: a violation of an algorithm listed neither under
// expect.violations nor under expect.may_violate, and an algorithm listed under
// expect.violations (which must be flagged) that held within the budget.
func huntVerdict(s *scenarios.Scenario, entries []hunt.Entry) error {
	var broken, held []string
	for _, e := range entries {
		switch {
		case e.Violation != nil && !e.ExpectedViolation:
			broken = append(broken, fmt.Sprintf("%s on %s broke %s (reproducer: %s)", e.Algorithm, e.Topology, e.Contract, reproOf(e)))
		case e.Violation == nil && slices.Contains(s.Expect.Violations, e.Algorithm):
			held = append(held, fmt.Sprintf("%s on %s held %s in %d trials (closest approach %.3f)", e.Algorithm, e.Topology, e.Contract, e.Trials, e.BestScore))
		}
	}
	var errs []error
	if len(broken) > 0 {
		errs = append(errs, fmt.Errorf("%d violation(s) not listed under expect.may_violate:\n  %s", len(broken), strings.Join(broken, "\n  ")))
	}
	if len(held) > 0 {
		errs = append(errs, fmt.Errorf("%d algorithm(s) listed under expect.violations not broken within the budget (a longer --budget or another --seed may find it):\n  %s",
			len(held), strings.Join(held, "\n  ")))
	}
	if len(errs) > 0 {
		return failed(errors.Join(errs...))
	}
	return nil
}

func reproOf(e hunt.Entry) string {
	if s := e.Violation.Shrunk; s != nil {
		if s.Scenario != "" {
			return s.Scenario
		}
		return s.Trace
	}
	return e.Violation.Schedule.Trace
}

// huntTarget is one algorithm to hunt.
type huntTarget struct {
	alg    algorithms.Algorithm
	target hunt.Target
	custom bool
}

// huntTargets resolves the scenario's algorithms and returns those with a contract to break, and
// the names of those without one.
func huntTargets(s *scenarios.Scenario) ([]huntTarget, []string, error) {
	skews := scenarioSkews(s.ClockSkew)
	var out []huntTarget
	var skipped []string
	for _, e := range s.ResolveAlgorithms() {
		a, err := measure.Resolve(s, e)
		if err != nil {
			return nil, nil, err
		}
		c, err := a.Contract(s.Limit)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", e.Name, err)
		}
		if c.Kind == algorithms.NoContract {
			skipped = append(skipped, e.Name)
			continue
		}
		t, err := hunt.TargetOf(a, s.Limit, skews)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, huntTarget{alg: a, target: t, custom: e.Custom != nil})
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("%s: no algorithm of the scenario has a contract to break", s.File)
	}
	return out, skipped, nil
}

// scenarioSkews returns the clock offsets a scenario's clients may have: its list, or for a
// spread its two ends and 0.
func scenarioSkews(k load.Skew) []time.Duration {
	if len(k.Offsets) > 0 {
		return slices.Clone(k.Offsets)
	}
	if k.Spread != 0 {
		return []time.Duration{-k.Spread, 0, k.Spread}
	}
	return nil
}

// hunter runs the hunts of one scenario and writes what they found.
type hunter struct {
	s      *scenarios.Scenario
	f      huntFlags
	bounds hunt.Bounds
	dir    string
	stderr io.Writer
	live   bool
	mu     sync.Mutex
	file   *hunt.File
	// traces are the files to write, by name.
	traces map[string]*trace.Trace
	yamls  map[string][]byte
}

func (h *hunter) logf(format string, args ...any) {
	if h.f.quiet {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.live {
		fmt.Fprint(h.stderr, "\r\033[K")
	}
	fmt.Fprintf(h.stderr, format+"\n", args...)
}

// run hunts every target on every topology of the scenario.
func (h *hunter) run(ctx context.Context, env redisenv.Config, targets []huntTarget) error {
	h.traces, h.yamls = map[string]*trace.Trace{}, map[string][]byte{}
	for _, topo := range h.s.Topologies {
		cfg := env
		cfg.Topology = topo
		cfg.Logf = h.logf
		tgt, err := redisenv.Start(ctx, cfg)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%w: %w", measure.ErrInterrupted, ctx.Err())
			}
			return measure.Mark(fmt.Errorf("start %s environment: %w", topo, err))
		}
		err = h.topology(ctx, tgt, string(topo), targets)
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		if serr := tgt.Stop(stopCtx); serr != nil {
			h.logf("stop %s environment: %v", topo, serr)
		}
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

// topology hunts every target on tgt.
func (h *hunter) topology(ctx context.Context, tgt *redisenv.Target, topo string, targets []huntTarget) error {
	algs := make([]algorithms.Algorithm, len(targets))
	for i, t := range targets {
		algs[i] = t.alg
	}
	if err := measure.CheckScripts(ctx, tgt, algs); err != nil {
		return measure.Mark(err)
	}
	for _, t := range targets {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %w", measure.ErrInterrupted, ctx.Err())
		}
		name := t.target.Algorithm
		frame := hunt.FrameOf(t.target, h.bounds)
		cfg := hunt.Config{
			Target: t.target,
			Bounds: h.bounds,
			// Each shrink candidate must violate in two replays out of two, by a tenth of the
			// allowance or more, so that a reproducer that broke the contract by luck, or by a
			// single permit that timing jitter can take away, is not kept; and the reproducer
			// must then break it in huntConfirm replays more, or an earlier, larger step is.
			Budget: hunt.Budget{Time: h.f.budget, Trials: h.f.trials, Batch: h.f.batch, Replays: 2, Margin: huntMargin, Confirm: huntConfirm},
			Seed:   h.f.seed,
			Trial: func(ctx context.Context, batch []*trace.Trace) ([]*verify.Log, error) {
				return measure.Trials(ctx, measure.Trial{Target: tgt, Topology: topo, Algorithm: t.alg, Limit: h.s.Limit,
					Call: h.s.Call, Frame: frame, Logf: h.logf}, batch)
			},
		}
		if h.live {
			cfg.Progress = func(p hunt.Progress) {
				h.mu.Lock()
				defer h.mu.Unlock()
				fmt.Fprintf(h.stderr, "\r\033[Khunt %s %s: %s, %d trials, %s, best %.3f, %d rows", name, topo, p.Phase, p.Trials,
					p.Elapsed.Truncate(100*time.Millisecond), p.Best, p.Rows)
			}
		}
		h.logf("hunt %s on %s: %s", name, topo, t.target.Contract)
		res, err := hunt.Hunt(ctx, cfg)
		if res != nil {
			h.add(res, topo, t)
		}
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%w: %w", measure.ErrInterrupted, ctx.Err())
			}
			return err
		}
	}
	return nil
}

// add records the hunt res of t on topo: its entry and the files it refers to.
func (h *hunter) add(res *hunt.Result, topo string, t huntTarget) {
	base := fileSafe(t.target.Algorithm) + "-" + topo
	var files hunt.Files
	if res.Best != nil {
		files.Best = base + "-best.csv"
		h.traces[files.Best] = res.Best.Trace
	}
	if v := res.Violation; v != nil {
		files.Found = base + "-found.csv"
		h.traces[files.Found] = v.Trace
		if sr := v.Shrunk; sr != nil {
			files.Shrunk = base + "-repro.csv"
			h.traces[files.Shrunk] = sr.Trace
			algs := "algorithms: [" + t.target.Algorithm + "]\n"
			var err error
			if t.custom {
				algs, err = customEntryYAML(h.s.File, t.target.Algorithm, h.dir)
			}
			if err != nil {
				// The trace alone still replays the schedule; say why there is no scenario.
				h.logf("hunt %s on %s: no reproducer scenario: %v", t.target.Algorithm, topo, err)
			} else {
				files.Scenario = base + "-repro.yaml"
				h.yamls[files.Scenario] = reproScenario(h.s, t.target.Algorithm, topo, files.Shrunk, res.Frame, sr.Trace, algs)
			}
		}
	}
	e := hunt.NewEntry(res, topo, files)
	e.ExpectedViolation = slices.Contains(h.s.Expect.MayViolate, e.Algorithm) || slices.Contains(h.s.Expect.Violations, e.Algorithm)
	h.file.Entries = append(h.file.Entries, e)
	switch v := res.Violation; {
	case v != nil && v.Shrunk != nil:
		h.logf("hunt %s on %s: violation at trial %d (score %.3f), shrunk from %d to %d requests%s: %s", e.Algorithm, topo, v.Trial,
			v.Score(), v.Shrunk.From.Rows, v.Shrunk.To.Rows, confirmText(v.Confirmation), filepath.Join(h.dir, reproOf(e)))
	case v != nil:
		h.logf("hunt %s on %s: violation at trial %d (score %.3f)", e.Algorithm, topo, v.Trial, v.Score())
	default:
		h.logf("hunt %s on %s: no violation in %d trials (%s); closest approach %.3f", e.Algorithm, topo, res.Trials, res.Stop, e.BestScore)
	}
}

// fileSafe keeps a name usable as part of a file name.
func fileSafe(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ':' || r == ' ' {
			return '_'
		}
		return r
	}, name)
}

// reproScenario returns a scenario that replays the trace file traceFile (beside it) against alg
// on topo with s's limit, at the frame the hunt ran it, and expects the violation. algs is its
// algorithms: field, a built-in's name or a custom algorithm's definition (customEntryYAML).
func reproScenario(s *scenarios.Scenario, alg, topo, traceFile string, frame arrival.Align, t *trace.Trace, algs string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Written by limitbench hunt from %s: replays the schedule that broke %s.\n", s.File, alg)
	fmt.Fprintf(&b, "# limitbench run %s  (passes when the violation is found again)\n", strings.TrimSuffix(traceFile, ".csv")+".yaml")
	fmt.Fprintf(&b, "version: 1\nname: %s-repro\n", fileSafe(alg))
	fmt.Fprintf(&b, "description: The schedule limitbench hunt found and shrank that breaks %s's contract (%d requests).\n", alg, len(t.Rows))
	fmt.Fprintf(&b, "topologies: [%s]\n", topo)
	fmt.Fprintf(&b, "clients: %d\n", measure.TrialWorkers(t))
	fmt.Fprintf(&b, "arrival:\n  trace: %s\n", traceFile)
	if frame.Every > 0 {
		fmt.Fprintf(&b, "  align: {every: %s, offset: %s}\n", frame.Every, frame.Offset)
	}
	l := s.Limit
	fmt.Fprintf(&b, "limit: {limit: %d, window: %s", l.Limit, l.Window)
	if l.Burst != 0 {
		fmt.Fprintf(&b, ", burst: %d", l.Burst)
	}
	if l.ConsumerLimit != 0 {
		fmt.Fprintf(&b, ", consumer_limit: %d", l.ConsumerLimit)
	}
	b.WriteString("}\n")
	b.WriteString(algs)
	fmt.Fprintf(&b, "expect:\n  violations: [%s]\n", alg)
	return b.Bytes()
}

// customEntryYAML returns the algorithms: field of a reproducer scenario written into dir for the
// custom algorithm name of the scenario file scenario: its definition as the file writes it
// (templates, rules and contract unchanged), with its script: or library: path made relative to
// dir (an absolute path stays absolute), so that `limitbench run` reads the same script from the
// reproducer's directory.
func customEntryYAML(scenario, name, dir string) (string, error) {
	data, err := os.ReadFile(scenario)
	if err != nil {
		return "", err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return "", fmt.Errorf("%s: %w", scenario, err)
	}
	var entry *yaml.Node
	if len(doc.Content) == 1 {
		if algs := mappingValue(doc.Content[0], "algorithms"); algs != nil && algs.Kind == yaml.SequenceNode {
			for _, it := range algs.Content {
				if n := mappingValue(it, "name"); it.Kind == yaml.MappingNode && n != nil && n.Value == name {
					entry = it
				}
			}
		}
	}
	if entry == nil {
		return "", fmt.Errorf("%s: no custom algorithm %q under algorithms", scenario, name)
	}
	out := &yaml.Node{Kind: yaml.MappingNode, Style: entry.Style}
	for i := 0; i+1 < len(entry.Content); i += 2 {
		k, v := *entry.Content[i], *entry.Content[i+1]
		k.HeadComment, k.LineComment, k.FootComment = "", "", ""
		v.HeadComment, v.LineComment, v.FootComment = "", "", ""
		if (k.Value == "script" || k.Value == "library") && v.Kind == yaml.ScalarNode && !filepath.IsAbs(v.Value) {
			rel, err := relativeTo(filepath.Join(filepath.Dir(scenario), v.Value), dir)
			if err != nil {
				return "", err
			}
			v.Value, v.Style, v.Tag = rel, 0, "!!str"
		}
		out.Content = append(out.Content, &k, &v)
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{out}}); err != nil {
		return "", err
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	return "algorithms:\n  " + strings.Join(lines, "\n  ") + "\n", nil
}

// mappingValue returns the value of key in the mapping n, or nil.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// relativeTo returns path relative to the directory dir, both taken from the working directory
// when relative.
func relativeTo(path, dir string) (string, error) {
	ap, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	ad, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(ad, ap)
	if err != nil {
		return ap, nil // another volume: the absolute path still works
	}
	return filepath.ToSlash(rel), nil
}

// write writes hunt.json, every trace and reproducer, and the report (report.md, report.html and
// the figure of each best schedule) into the directory.
func (h *hunter) write() error {
	for name, t := range h.traces {
		if err := trace.Write(filepath.Join(h.dir, name), t); err != nil {
			return err
		}
	}
	for name, y := range h.yamls {
		if err := os.WriteFile(filepath.Join(h.dir, name), y, 0o644); err != nil {
			return err
		}
	}
	var js bytes.Buffer
	if err := h.file.Write(&js); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(h.dir, huntFile), js.Bytes(), 0o644); err != nil {
		return err
	}
	_, err := report.WriteHunt(h.dir, h.file)
	return err
}

// summary prints one line per algorithm and topology.
func (h *hunter) summary(w io.Writer) {
	fmt.Fprintf(w, "%-30s %-8s %7s %10s  %s\n", "ALGORITHM", "TOPOLOGY", "TRIALS", "BEST", "RESULT")
	for _, e := range h.file.Entries {
		result := "held"
		if v := e.Violation; v != nil {
			result = "VIOLATION"
			if e.ExpectedViolation {
				result = "violation (expected)"
			}
			result += ": " + reproOf(e)
		}
		fmt.Fprintf(w, "%-30s %-8s %7d %10.3f  %s\n", e.Algorithm, e.Topology, e.Trials, e.BestScore, result)
	}
}

// confirmText says in a few words how the reproducer fared in its confirmation replays.
func confirmText(c *hunt.Confirmation) string {
	switch {
	case c == nil:
		return ""
	case c.Confirmed():
		return fmt.Sprintf(", broke it again in %d of %d replays", c.Broke, c.Replays)
	default:
		return fmt.Sprintf(", and the violation as found broke it again in only %d of %d replays (timing-dependent)", c.Broke, c.Replays)
	}
}
