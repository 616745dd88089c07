// Command limitbench load-tests and verifies Redis rate limiters written as Lua scripts.
//
// Each subcommand lives in its own file, registers itself with register and is wiring only:
// flags into the options of the package that does the work, and results out. It returns an error
// and never exits. main is the only place that exits, with the code DESIGN.md fixes, from one
// table of sentinel errors (exitCodes): 0 all passed, 1 a verdict failed or a threshold broke,
// 2 bad input, 3 the environment could not be set up or was lost.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/measure"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/scenarios"
)

// Exit codes.
const (
	exitOK       = 0
	exitFailed   = 1
	exitBadInput = 2
	exitEnv      = 3
)

// The commands' own marks, for what no package's sentinel says: a bad flag or argument, a run
// that failed its verdicts, an environment the env command could not hold.
var (
	errBadInput    = errors.New("bad input")
	errFailed      = errors.New("failed")
	errEnvironment = errors.New("environment failed")
)

// exitCodes maps sentinel errors to exit codes; the first that an error matches (errors.Is)
// decides, and an error that matches none exits 1.
var exitCodes = []struct {
	err  error
	code int
}{
	{flag.ErrHelp, exitOK},
	{errBadInput, exitBadInput},
	{errFailed, exitFailed},
	{errEnvironment, exitEnv},
	// Ctrl-C or SIGTERM: what was measured is written, and the run did not pass.
	{measure.ErrInterrupted, exitFailed},
	// A refused permission is the environment's problem, whatever else the error says.
	{measure.ErrPermission, exitEnv},
	{scenarios.ErrInvalid, exitBadInput},
	{measure.ErrBadScript, exitBadInput},
	{redisenv.ErrBadConfig, exitBadInput},
	{algorithms.ErrUnknownAlgorithm, exitBadInput},
	// A load out of bounds; scenarios.Load reports it first, with its file, line and field.
	{load.ErrBadPlan, exitBadInput},
	{redisenv.ErrUnavailable, exitEnv},
	{measure.ErrLost, exitEnv},
	{measure.ErrRedis, exitEnv},
}

// exitCode returns the exit code for err (see exitCodes); 0 for nil.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	for _, e := range exitCodes {
		if errors.Is(err, e.err) {
			return e.code
		}
	}
	return exitFailed
}

// marked is err marked with one of the commands' sentinels; its message is err's.
type marked struct{ err, mark error }

func (m *marked) Error() string   { return m.err.Error() }
func (m *marked) Unwrap() []error { return []error{m.mark, m.err} }

// badInput marks err as bad input (exit 2).
func badInput(err error) error { return &marked{err, errBadInput} }

// envFailure marks err as an environment that could not be set up or was lost (exit 3).
func envFailure(err error) error { return &marked{err, errEnvironment} }

// failed marks err as a failed verdict, expectation or threshold (exit 1).
func failed(err error) error { return &marked{err, errFailed} }

// command is one subcommand. run parses its own flags from args, writes its output to stdout and
// diagnostics to stderr, and stops when ctx is cancelled (Ctrl-C or SIGTERM).
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{}

// register adds a subcommand; each subcommand file calls it from init.
func register(name, summary string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) error) {
	if _, dup := commands[name]; dup {
		panic("limitbench: duplicate command " + name)
	}
	commands[name] = command{name, summary, run}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: limitbench <command> [flags] [args]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'limitbench <command> -h' for a command's flags.")
	fmt.Fprintln(w, "Exit codes: 0 passed, 1 a verdict or threshold failed, 2 bad input, 3 Redis could not be set up or was lost.")
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches args to a subcommand and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return exitBadInput
		}
		return exitOK
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = append([]string{"version"}, args[1:]...)
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "limitbench: unknown command %q\n", args[0])
		usage(stderr)
		return exitBadInput
	}
	// Every message goes through the console, so that none shares a line with a live progress
	// line (run's).
	con := newConsole(stderr)
	stderr = con
	redis.SetLogger(newRedisLog(stderr, cmd.name, os.Getenv(redisLogEnv) == "1"))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal the command stops cleanly (servers stopped, results written); a
	// second one gets the default action and ends the process at once (child redis-servers die
	// with it, containers are swept at the next start).
	// Unregistered (deferred after stop, so run first) before stop cancels ctx on return: it runs
	// only for a signal.
	defer context.AfterFunc(ctx, func() {
		stop()
		fmt.Fprintf(stderr, "limitbench %s: stopping cleanly; signal again to quit at once\n", cmd.name)
	})()
	err := cmd.run(ctx, args[1:], stdout, stderr)
	con.ClearLive()
	code := exitCode(err)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stderr, "limitbench %s: %s\n", cmd.name, ownWords(err))
	}
	return code
}

// ownWords returns err's message in limitbench's words: a cancellation (Ctrl-C, SIGTERM) that
// reached it from Go's context package says "interrupted" where Go says "context canceled".
func ownWords(err error) string {
	msg := err.Error()
	if !errors.Is(err, context.Canceled) {
		return msg
	}
	canceled := context.Canceled.Error()
	msg = strings.ReplaceAll(msg, ": "+canceled, "")
	msg = strings.ReplaceAll(msg, canceled, "interrupted")
	if !strings.Contains(msg, "interrupted") && !strings.Contains(msg, "cut short") {
		msg = "interrupted: " + msg
	}
	return msg
}

// redisLogEnv names the environment variable that, set to 1, shows go-redis's own log lines.
const redisLogEnv = "LIMITBENCH_REDIS_LOG"

// sentinelNewMaster is the format of the line go-redis's failover client logs when a Sentinel
// names a new master (go-redis v9 sentinel.go), with the master's name and address.
const sentinelNewMaster = "sentinel: new master=%q addr=%q"

// redisLog is go-redis's logger (redis.SetLogger) while a command runs, so that what the user
// sees is limitbench's words. What go-redis logs is either also returned as an error (a dial
// that failed, a command Redis refused), which the command reports in its own words with the
// address and the exit code, or detail of its connection pool; none of it is shown. The one line
// that says what no error does, a Sentinel naming the master (when a failover client first
// asks, and after a failover), is shown as the command's own, once per master and address
// ("limitbench env: Sentinel: the master of mymaster is 127.0.0.1:7001"). With raw (the
// environment variable LIMITBENCH_REDIS_LOG=1) every line is shown as go-redis wrote it, after
// "go-redis: ", for debugging. Safe for concurrent use.
type redisLog struct {
	mu      sync.Mutex
	w       io.Writer
	command string
	raw     bool
	masters map[string]string // the address last shown for each master name
}

func newRedisLog(w io.Writer, command string, raw bool) *redisLog {
	return &redisLog{w: w, command: command, raw: raw, masters: map[string]string{}}
}

// Printf implements go-redis's logging interface.
func (l *redisLog) Printf(_ context.Context, format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.raw:
		fmt.Fprintf(l.w, "go-redis: %s\n", strings.TrimRight(fmt.Sprintf(format, v...), "\n"))
	case format == sentinelNewMaster && len(v) == 2:
		name, addr := fmt.Sprint(v[0]), fmt.Sprint(v[1])
		if l.masters[name] != addr {
			l.masters[name] = addr
			fmt.Fprintf(l.w, "limitbench %s: Sentinel: the master of %s is %s\n", l.command, name, addr)
		}
	}
}

// newFlagSet returns a flag set for a subcommand that reports errors instead of exiting and prints
// its usage to stderr.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("limitbench "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: limitbench %s %s\n\nflags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args with fs and marks a parse error as bad input.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return badInput(err)
	}
	return nil
}
