package measure

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/scenarios"
)

// customAlgorithm is a scenario's custom script: an *algorithms.Custom, marked so that a
// measurement flags its entry as custom and reports a failed Prepare (a Lua syntax error) as ErrBadScript,
// located in the scenario file.
type customAlgorithm struct {
	*algorithms.Custom
	// scenario and field (such as "algorithms[1].script") locate the entry in the scenario file;
	// scenario is nil when the entry has no place there.
	scenario *scenarios.Scenario
	field    string
}

// Resolve returns the algorithm an entry of s names; s, when not nil, locates a custom entry in
// its file for messages (a script Redis rejects is an error naming the scenario's file, line and
// field).
func Resolve(s *scenarios.Scenario, e scenarios.AlgorithmEntry) (algorithms.Algorithm, error) {
	if e.Custom != nil {
		return customAlgorithmOf(s, e.Custom)
	}
	return algorithms.Lookup(e.Name)
}

// customAlgorithmOf builds the algorithm of a scenario's custom entry; s, when not nil, is the
// scenario that holds c, for messages. A spec that algorithms.NewCustom rejects (which
// scenarios.Load already prevents) is an error wrapping ErrBadScript.
func customAlgorithmOf(s *scenarios.Scenario, c *algorithms.CustomSpec) (algorithms.Algorithm, error) {
	a, err := algorithms.NewCustom(*c)
	if err != nil {
		path := c.Path
		if path == "" {
			path = c.Script
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrBadScript, path, err)
	}
	ca := &customAlgorithm{Custom: a, scenario: s}
	if s != nil {
		for i, e := range s.Algorithms {
			if e.Custom == c {
				ca.field = fmt.Sprintf("algorithms[%d].script", i)
				if c.Function != "" {
					ca.field = fmt.Sprintf("algorithms[%d].library", i)
				}
			}
		}
	}
	return ca, nil
}

// scriptError is a custom script Redis rejected, located in the scenario file. It matches
// ErrBadScript and, through err, Redis's own error.
type scriptError struct {
	msg string
	err error
}

func (e *scriptError) Error() string   { return e.msg }
func (e *scriptError) Unwrap() []error { return []error{ErrBadScript, e.err} }

// badScript returns err, a failed load of a's script, as an error matching ErrBadScript whose
// message names the scenario file, the entry's line and field, the script's file and line, and
// Redis's message: "scenario.yaml:12: algorithms[1].script: my.lua:3: ERR Error compiling script
// ...". Without a place in a scenario file it is "bad custom script: name: my.lua:3: ...".
func (a *customAlgorithm) badScript(err error) error {
	var serr *algorithms.ScriptError
	if a.scenario == nil || a.field == "" || !errors.As(err, &serr) {
		return fmt.Errorf("%w: %w", ErrBadScript, err)
	}
	field := a.field
	if errors.Is(err, algorithms.ErrNoFunction) { // the library loads: the function: field is wrong
		field = strings.TrimSuffix(field, "library") + "function"
	}
	return &scriptError{msg: a.scenario.ProblemAt(field, serr.Location()+": "+serr.Err.Error()).String(), err: err}
}

// customNotes returns what a custom script's limiter has to add to its entry's
// Verification.Reasons, after the measurement: how many replies its rules could not read (each
// an unknown outcome, never an admission) with the first one's reason (which rule, which
// element) and raw reply, and, when the rule read
// replies but none as an admission, the first raw reply, so that a rule that never matches is
// visible. It returns nil for every other limiter. Counts include the warmup.
func customNotes(lim algorithms.Limiter) []string {
	rr, ok := lim.(algorithms.ReplyReporter)
	if !ok {
		return nil
	}
	st := rr.ReplyStats()
	var out []string
	if st.Unreadable > 0 {
		why := st.FirstReason
		if why == "" {
			why = "raw reply: " + st.FirstUnreadable
		}
		out = append(out, fmt.Sprintf(
			"%d replies could not be read (counted as unknown outcomes, warmup included); the first: %s",
			st.Unreadable, why))
	}
	if st.Read > 0 && st.Admitted == 0 {
		out = append(out, fmt.Sprintf(
			"none of the %d replies read by the allowed rule %s was an admission; first raw reply: %s",
			st.Read, st.Rule, st.FirstRead))
	}
	return out
}

// withCustomNotes returns e with customNotes(lim) appended to its Verification.Reasons and, for a
// custom script (e.Custom) whose contract's numbers differ from the scenario's limit l, a note
// that says how (Contract.LimitNote): a looser contract is legitimate, a typo is not.
func withCustomNotes(e result.Entry, lim algorithms.Limiter, contract algorithms.Contract, l algorithms.Limit) result.Entry {
	if notes := customNotes(lim); len(notes) > 0 {
		e.Verification.Reasons = append(e.Verification.Reasons, notes...)
	}
	if e.Custom {
		if note := contract.LimitNote(l); note != "" {
			e.Verification.Reasons = append(e.Verification.Reasons, note)
		}
	}
	return e
}

// CheckScripts loads every custom script among algs (as Resolve returns them) on every master of
// tgt, so that a script Redis rejects (its Lua does not compile, or its keys do not fit the
// topology, or a function library does not register its function), or a function library whose
// name the server holds with other code (algorithms.ErrLibraryInUse), stops a run before anything
// is measured; what it loads it unloads. Every
// rejected script is reported at once, each wrapping ErrBadScript with Redis's own message, the
// script's file and line, and the scenario file's line and field (see badScript). An error that
// is not Redis's answer (the connection failed) is returned as it is, without ErrBadScript.
func CheckScripts(ctx context.Context, tgt *redisenv.Target, algs []algorithms.Algorithm) error {
	var errs []error
	for _, a := range algs {
		ca, ok := a.(*customAlgorithm)
		if !ok {
			continue
		}
		err := ca.Check(ctx, tgt.Client)
		var rerr redis.Error
		switch {
		case err == nil:
		case errors.As(err, &rerr) && !noPermission(err), errors.Is(err, algorithms.ErrLibraryInUse), errors.Is(err, algorithms.ErrNoFunction):
			errs = append(errs, ca.badScript(err))
		default:
			return fmt.Errorf("load custom script: %w", err)
		}
	}
	return errors.Join(errs...)
}
