package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/acl"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/scenarios"
)

func init() {
	register("acl", "print the ACL SETUSER line a run needs, or check a Redis user against it", runACL)
}

const aclSynopsis = "[--call evalsha|fcall] [--algorithms LIST] [--no-reference] [--wait] [--segments] [--user NAME] [--why] [--redis URL] [SCENARIO.yaml]"

// runACL implements `limitbench acl`: for the algorithms of a scenario (its custom scripts
// included), or the built-in ones, it prints the ACL SETUSER line that gives a Redis user exactly
// what a run needs; with --redis, it checks the URL's user against it instead, exit 3 when the
// user lacks something.
func runACL(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("acl", aclSynopsis, stderr)
	call := fs.String("call", "", "how the built-in algorithms' scripts are called: evalsha or fcall (default the scenario's, else evalsha)")
	names := fs.String("algorithms", "", "the algorithms, a comma-separated list (default the scenario's, else every built-in one)")
	noReference := fs.Bool("no-reference", false, "the run does not measure the reference script (run --no-reference)")
	wait := fs.Bool("wait", false, "the run sends WAIT after every request (default the scenario's wait_replicas)")
	segments := fs.Bool("segments", false, "the run is a segment of a run of several generators (run --segment)")
	user := fs.String("user", "limitbench", "the user the line creates")
	why := fs.Bool("why", false, "print, below the line, each command and who needs it")
	url := fs.String("redis", "", "check this URL's user (as `limitbench run --redis` reaches it) instead of printing the line: exit 3 when it lacks something")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return badInput(fmt.Errorf("want at most one SCENARIO.yaml, got %q", fs.Args()))
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	run, err := aclRun(fs.Arg(0), *call, *names, set)
	if err != nil {
		return err
	}
	run.Reference = !*noReference
	run.Wait = run.Wait || *wait
	run.Segments = *segments
	needs, err := acl.For(run)
	if err != nil {
		return badInput(err)
	}
	if *url != "" {
		return checkACL(ctx, redisenv.Config{Backend: redisenv.BackendExternal, URL: *url}, needs, stdout, stderr)
	}
	fmt.Fprintln(stdout, needs.SetUser(*user))
	if len(needs.Unnamed) > 0 {
		fmt.Fprintf(stderr, "limitbench acl: %s call a command that is not written out in the script: add it to the line yourself\n",
			strings.Join(needs.Unnamed, ", "))
	}
	if *why {
		return writeWhy(stdout, needs)
	}
	return nil
}

// aclRun returns the run whose needs `limitbench acl` prints: the scenario at path (its
// algorithms, call and WAIT) or the built-in algorithms, with the flags' overrides.
func aclRun(path, call, names string, set map[string]bool) (acl.Run, error) {
	var run acl.Run
	var entries []scenarios.AlgorithmEntry
	if path != "" {
		s, err := scenarios.Load(path)
		if err != nil {
			return run, badInput(err)
		}
		entries, run.Call, run.Wait = s.ResolveAlgorithms(), s.Call, s.Wait.Enabled()
	} else {
		for _, n := range algorithms.Names() {
			entries = append(entries, scenarios.AlgorithmEntry{Name: n})
		}
	}
	if set["call"] {
		mode, err := algorithms.ParseCallMode(call)
		if err != nil {
			return run, badInput(fmt.Errorf("--call: %w", err))
		}
		run.Call = mode
	}
	if set["algorithms"] {
		entries = pickEntries(entries, names)
	}
	for _, e := range entries {
		a, err := entryAlgorithm(e)
		if err != nil {
			return run, badInput(err)
		}
		run.Algorithms = append(run.Algorithms, a)
	}
	return run, nil
}

// pickEntries returns the entries named in the comma-separated list names, keeping the
// scenario's custom entries and adding built-in algorithms by name; "all" is every built-in one.
func pickEntries(entries []scenarios.AlgorithmEntry, names string) []scenarios.AlgorithmEntry {
	var out []scenarios.AlgorithmEntry
	for n := range strings.SplitSeq(names, ",") {
		n = strings.TrimSpace(n)
		if n == scenarios.AllAlgorithms {
			for _, b := range algorithms.Names() {
				out = append(out, scenarios.AlgorithmEntry{Name: b})
			}
			continue
		}
		e := scenarios.AlgorithmEntry{Name: n}
		for _, have := range entries {
			if have.Name == n {
				e = have
			}
		}
		out = append(out, e)
	}
	return out
}

// entryAlgorithm returns the algorithm of a scenario entry: the built-in one of its name, or
// its custom script.
func entryAlgorithm(e scenarios.AlgorithmEntry) (algorithms.Algorithm, error) {
	if e.Custom != nil {
		return algorithms.NewCustom(*e.Custom)
	}
	return algorithms.Lookup(e.Name)
}

// writeWhy prints each command of needs with who needs it.
func writeWhy(w io.Writer, needs acl.Needs) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nCOMMAND\tNEEDED BY")
	fmt.Fprintf(tw, "%s\tthe keys of every run (its prefix limitbench:<run id>:)\n", acl.KeyPattern)
	for _, c := range needs.Commands {
		by := strings.Join(c.By, "; ")
		if c.Optional {
			by += " (optional)"
		}
		fmt.Fprintf(tw, "+%s\t%s\n", c.Name, by)
	}
	return tw.Flush()
}

// checkACL reaches the external Redis of env as a run would and checks its user against needs
// (acl.Check): it writes "ok" or what is missing, and returns an error (exit 3) when a command
// the run cannot do without, or the keys, are refused, after a warning for an optional one.
func checkACL(ctx context.Context, env redisenv.Config, needs acl.Needs, stdout, stderr io.Writer) error {
	err := permissionCheck(ctx, env, needs, stderr)
	if err == nil {
		fmt.Fprintln(stdout, "ok: the user may run everything the run needs")
	}
	return err
}

// permissionCheck reaches the external Redis of env (its first topology, as a run would) and
// checks its user against needs. A refusal of what the run needs is an error (exit 3) that names
// each command refused, on which master, who needs it, and the command that would grant all at
// once; an optional command refused is a warning on notes; a server that cannot check (before
// Redis 7.0) is a note. An environment that cannot be reached is the error a run would get.
func permissionCheck(ctx context.Context, env redisenv.Config, needs acl.Needs, notes io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tgt, err := redisenv.Start(ctx, env)
	if err != nil {
		topo := cmp.Or(env.Topology, redisenv.TopologySingle)
		err = fmt.Errorf("start %s environment: %w", topo, err) // as the run would say it
		if errors.Is(err, redisenv.ErrBadConfig) {
			return badInput(err)
		}
		return envFailure(err)
	}
	defer func() { _ = tgt.Stop(context.Background()) }()
	refusals, err := acl.Check(ctx, tgt, needs)
	switch {
	case errors.Is(err, acl.ErrCannotCheck):
		fmt.Fprintf(notes, "permissions not checked before the run: %v\n", err)
		return nil
	case err != nil:
		return envFailure(fmt.Errorf("check the user's permissions: %w", err))
	}
	user := tgt.Username
	if user == "" {
		user = "default"
	}
	for _, r := range refusals {
		var missing, optional []string
		for _, c := range r.Missing {
			what := fmt.Sprintf("%s (%s)", aclWords(c.Name), strings.Join(c.By, "; "))
			if c.Optional {
				optional = append(optional, what)
			} else {
				missing = append(missing, what)
			}
		}
		if len(missing) > 0 {
			return envFailure(fmt.Errorf("%w: %s: user %q may not run %s, or not on keys under limitbench:; this line grants what the run needs:\n  %s",
				errPermission, r.Addr, user, strings.Join(missing, ", "), needs.SetUser(user)))
		}
		for _, o := range optional {
			fmt.Fprintf(notes, "warning: %s: user %q may not run %s; the run goes on without it\n", r.Addr, user, o)
		}
	}
	return nil
}

// runPermissions checks, before a run against an external Redis, that its user may run what
// each scenario of the run needs (permissionCheck): a refusal is exit 3 before anything starts.
// Servers limitbench starts need no check.
func runPermissions(ctx context.Context, loaded []*scenarios.Scenario, env redisenv.Config, f runFlags, notes io.Writer) error {
	if env.Backend != redisenv.BackendExternal {
		return nil
	}
	for _, s := range loaded {
		run := acl.Run{Call: s.Call, Reference: !f.noReference, Wait: s.Wait.Enabled(), Segments: f.segment != nil}
		for _, e := range s.ResolveAlgorithms() {
			a, err := entryAlgorithm(e)
			if err != nil {
				return badInput(fmt.Errorf("%s: %w", s.File, err))
			}
			run.Algorithms = append(run.Algorithms, a)
		}
		needs, err := acl.For(run)
		if err != nil {
			return badInput(fmt.Errorf("%s: %w", s.File, err))
		}
		c := env
		c.Topology = s.Topologies[0]
		if err := permissionCheck(ctx, c, needs, notes); err != nil {
			return err
		}
	}
	return nil
}

// errPermission marks a refused permission found before the run.
var errPermission = errors.New("the Redis user lacks a permission the run needs")

// aclWords writes an ACL command name as a user reads it: "SCRIPT LOAD" for "script|load".
func aclWords(name string) string { return strings.ToUpper(strings.ReplaceAll(name, "|", " ")) }
