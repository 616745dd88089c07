package measure

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/scenarios"
)

// Errors of a measurement; compare with errors.Is. Every error Do and Trials return matches one
// of them, redisenv's ErrUnavailable or ErrBadConfig, algorithms.ErrUnknownAlgorithm, or
// scenarios.ErrInvalid (a scenario that does not fit the environment; see Mark);
// cmd/limitbench's exit-code table names each.
var (
	// ErrLost means Redis stopped answering during the measurement. What was measured before is
	// still in the Measurement's Entry.
	ErrLost = errors.New("redis was lost during the run")
	// ErrInterrupted means ctx was cancelled (Ctrl-C, SIGTERM) before the measurement finished;
	// what was measured is in the Measurement's Entry.
	ErrInterrupted = errors.New("run cut short")
	// ErrBadScript means a custom script does not load in Redis (its Lua does not compile, or
	// its keys do not fit the topology).
	ErrBadScript = errors.New("bad custom script")
	// ErrPermission means Redis refused the run's user a command or a key the run needs (a
	// NOPERM reply: an ACL). It is the environment's problem, not a verdict: the message names
	// the permission.
	ErrPermission = errors.New("the Redis user lacks a permission the run needs")
	// ErrRedis means Redis answered a step of the measurement other than as it needs: a key
	// prefix already in use, an error reply to loading a script or to reading its figures, a
	// load it refused. Mark marks with it every error that matches no other sentinel.
	ErrRedis = errors.New("redis failed a step of the run")
)

// Mark returns err as it is when it is nil or matches one of the errors Do documents, else err
// marked as ErrRedis, with err's message; a NOPERM reply is marked ErrPermission. Drivers return
// their own errors through it, so that a caller can tell every error apart by its sentinel.
func Mark(err error) error {
	if noPermission(err) && !errors.Is(err, ErrPermission) {
		return fmt.Errorf("%w: %w (%s)", ErrPermission, err, permissionHint)
	}
	if err == nil || known(err) {
		return err
	}
	return &redisError{err}
}

// known reports whether err matches one of the errors Do documents.
func known(err error) bool {
	for _, k := range []error{ErrLost, ErrInterrupted, ErrBadScript, ErrPermission, ErrRedis, redisenv.ErrUnavailable,
		redisenv.ErrBadConfig, algorithms.ErrUnknownAlgorithm, scenarios.ErrInvalid} {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

// redisError is an error marked as ErrRedis; its message is the error's own.
type redisError struct{ err error }

func (e *redisError) Error() string   { return e.err.Error() }
func (e *redisError) Unwrap() []error { return []error{ErrRedis, e.err} }

// lostOr returns err marked as ErrPermission when Redis refused a permission (a NOPERM reply),
// as ErrInterrupted when ctx was cancelled, or as ErrLost when the target no longer answers; an
// error that already matches one of the sentinels comes back as it is.
func lostOr(ctx context.Context, tgt *redisenv.Target, err error) error {
	switch {
	case known(err):
		return err
	case noPermission(err):
		return fmt.Errorf("%w: %w (%s)", ErrPermission, err, permissionHint)
	case ctx.Err() != nil:
		return fmt.Errorf("%w: %w", ErrInterrupted, err)
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	if perr := alive(pctx, tgt); perr != nil {
		return fmt.Errorf("%w: %w", ErrLost, err)
	}
	return err
}

// permissionHint says where to find what the user of a run needs, for a message about a refused
// permission: the line `limitbench acl` prints (package acl).
const permissionHint = "`limitbench acl SCENARIO.yaml` prints the ACL SETUSER line a run needs, " +
	"and `limitbench acl --redis URL SCENARIO.yaml` what this user lacks"

// noPermission reports whether err holds a NOPERM reply: an ACL that forbids the run's user a
// command or a key.
func noPermission(err error) bool {
	if err == nil {
		return false
	}
	var rerr redis.Error
	if errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), "NOPERM") {
		return true
	}
	// ForEachMaster joins the masters' errors, each wrapped with its address.
	return strings.Contains(err.Error(), "NOPERM ")
}

// alive pings every master of tgt.
func alive(ctx context.Context, tgt *redisenv.Target) error {
	return tgt.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		return c.Ping(ctx).Err()
	})
}
