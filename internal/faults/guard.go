package faults

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/limitbench/limitbench/internal/load"
)

// Errors of a Guard; compare with errors.Is.
var (
	// ErrUnreachable means Redis stopped answering for good during a run: see GuardOptions.
	ErrUnreachable = errors.New("redis is unreachable")
	// ErrNoPermission means Redis refused the run's user a command or a key it needs (a NOPERM
	// error reply: an ACL that forbids them). It is the environment's problem, not a verdict.
	ErrNoPermission = errors.New("the redis user lacks a permission the run needs")
)

// Defaults of GuardOptions.
const (
	// DefaultLostRequests is how many requests in a row must fail to reach Redis before the
	// environment counts as lost.
	DefaultLostRequests = 20
	// DefaultLostAfter is how long they must span: longer than a restart of a local server
	// takes (tens of ms), so that a restart is measured, not taken for a loss.
	DefaultLostAfter = time.Second
)

// GuardOptions configure a Guard. Zero values take the defaults.
type GuardOptions struct {
	// LostRequests and LostAfter say when Redis is lost: when LostRequests requests in a row
	// (of all clients together) could not reach it (load.Unreachable: a refused or failed
	// dial, a connection the server closed) and the first and last of them came back at least
	// LostAfter apart. A timeout, an error reply or a decision ends the streak: a paused or
	// slow server is still there, and one that answers is not lost. Defaults
	// DefaultLostRequests and DefaultLostAfter.
	LostRequests int
	LostAfter    time.Duration
}

// Guard watches the outcomes of a run (Observe, load.Plan.OnOutcome) for an environment that is
// gone and calls its stop function once, with the reason, as soon as it is: Redis lost
// (ErrUnreachable, see GuardOptions) or a permission refused (ErrNoPermission, at the first ACL
// refusal, load.Refused: a NOPERM reply, or a command a script called refused; with an ACL that
// forbids the run's keys or commands every request would fail).
// So a run stops instead of sending errors until its scheduled end. Its methods are safe for
// concurrent use.
type Guard struct {
	opts GuardOptions
	stop func(error)

	// streak counts the requests in a row that could not reach Redis; first is the reply offset
	// of the first of them (valid while streak > 0). active is streak > 0, read without mu.
	mu     sync.Mutex
	streak int
	first  time.Duration
	active atomic.Bool
	// tripped is set once the guard has called stop; err is why.
	tripped atomic.Bool
	err     error
}

// NewGuard returns a guard that calls stop (once, from the goroutine of the outcome that trips
// it) when the environment is gone.
func NewGuard(o GuardOptions, stop func(error)) *Guard {
	if o.LostRequests <= 0 {
		o.LostRequests = DefaultLostRequests
	}
	if o.LostAfter <= 0 {
		o.LostAfter = DefaultLostAfter
	}
	return &Guard{opts: o, stop: stop}
}

// Observe looks at one outcome; its pointer is not kept. A decision costs one atomic load when
// no streak is running.
func (g *Guard) Observe(o *load.Outcome) {
	if g.tripped.Load() {
		return
	}
	if o.Err == nil {
		if g.active.Load() {
			g.mu.Lock()
			g.streak = 0
			g.active.Store(false)
			g.mu.Unlock()
		}
		return
	}
	if load.Refused(o.Err) {
		g.trip(&StopError{Reason: ErrNoPermission, Err: fmt.Errorf("%s: %w", refusal(o.Err), o.Err)})
		return
	}
	g.mu.Lock()
	if !load.Unreachable(load.ErrorKindOf(o.Err)) {
		g.streak = 0
		g.active.Store(false)
		g.mu.Unlock()
		return
	}
	if g.streak == 0 {
		g.first = o.Received
		g.active.Store(true)
	}
	g.streak++
	n, span := g.streak, o.Received-g.first
	g.mu.Unlock()
	if n >= g.opts.LostRequests && span >= g.opts.LostAfter {
		g.trip(&StopError{Reason: ErrUnreachable, Err: fmt.Errorf("%d requests in a row over %s could not reach Redis; the last: %w",
			n, span.Round(time.Millisecond), o.Err)})
	}
}

// refusedCommand finds the command and the script in Redis's words for a refusal: "... to run the
// 'incr' command" and "script: <sha or function>, on @user_script:1."
var (
	refusedCommand = regexp.MustCompile(`to run the '([^']+)' command`)
	refusedScript  = regexp.MustCompile(`script: ([^,\s]+),? on @user_(?:script|function)`)
)

// refusal says in words what an ACL refusal (load.Refused) refused: a command sent, or a command
// a script called, naming the command and the script when Redis does (Redis 7.0 does not name a
// command refused inside a script).
func refusal(err error) string {
	s := err.Error()
	command := "a command"
	if m := refusedCommand.FindStringSubmatch(s); m != nil {
		command = strings.ToUpper(strings.ReplaceAll(m[1], "|", " "))
	}
	keys := strings.Contains(s, "keys mentioned") || strings.Contains(s, "to access")
	m := refusedScript.FindStringSubmatch(s)
	switch {
	case m == nil && keys:
		return "Redis refused the user a key"
	case m == nil:
		return "Redis refused the user " + command
	case keys:
		return "Redis refused the user a key that script " + m[1] + " used"
	case command == "a command":
		return "Redis refused the user a command that script " + m[1] + " called (Redis 7.0 does not say which)"
	}
	return "Redis refused the user " + command + ", which script " + m[1] + " called"
}

// trip records err and calls stop, once.
func (g *Guard) trip(err error) {
	g.mu.Lock()
	if g.err != nil {
		g.mu.Unlock()
		return
	}
	g.err = err
	g.tripped.Store(true)
	g.mu.Unlock()
	g.stop(err)
}

// StopError is why a Guard stopped a run: Reason (ErrUnreachable or ErrNoPermission) and what
// showed it (Err: the refusal, in words naming the command and the script where Redis does, then
// Redis's reply; or the requests that could not reach Redis). Its message is Err's; errors.Is
// matches both.
type StopError struct {
	Reason, Err error
}

func (e *StopError) Error() string   { return e.Err.Error() }
func (e *StopError) Unwrap() []error { return []error{e.Reason, e.Err} }

// Err returns why the guard stopped the run (a *StopError, matching ErrUnreachable or
// ErrNoPermission), or nil when it did not.
func (g *Guard) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}
