package algorithms

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/scripts"
)

// loadScript reads file (a name in scripts.FS, for example "gcra.lua") and loads it with SCRIPT
// LOAD on every master of c: each master of a *redis.ClusterClient (ForEachMaster), otherwise c
// itself. Loading everywhere up front is what lets runScript use a bare EVALSHA inside pipelines,
// where go-redis cannot fall back to EVAL on NOSCRIPT.
func loadScript(ctx context.Context, c redis.UniversalClient, file string) (*redis.Script, error) {
	src, err := scripts.FS.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read script %s: %w", file, err)
	}
	s := redis.NewScript(string(src))
	if err := loadEverywhere(ctx, c, s); err != nil {
		return nil, fmt.Errorf("load script %s: %w", file, err)
	}
	return s, nil
}

// loadEverywhere runs SCRIPT LOAD of s on every master of c: each master of a
// *redis.ClusterClient (ForEachMaster), otherwise c itself.
func loadEverywhere(ctx context.Context, c redis.UniversalClient, s *redis.Script) error {
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			return s.Load(ctx, m).Err()
		})
	}
	return s.Load(ctx, c).Err()
}

// runScript sends s on c. On a client it is (*redis.Script).Run: EVALSHA, then EVAL when the server
// answers NOSCRIPT (a script cache flushed after Prepare). On a pipeline (redis.Pipeliner) it
// queues a bare EVALSHA, since a queued command has no reply to fall back on; loadScript put the
// script on every master beforehand. The returned command's result is read after the pipeline's
// Exec.
func runScript(ctx context.Context, c redis.Cmdable, s *redis.Script, keys []string, args ...any) *redis.Cmd {
	if _, ok := c.(redis.Pipeliner); ok {
		return s.EvalSha(ctx, c, keys, args...)
	}
	return s.Run(ctx, c, keys, args...)
}

// maxExact is 2^53: every integer below it is exact in a Lua (IEEE double) number. Prepare checks
// that the numbers a script multiplies stay below it.
const maxExact = 1 << 53

// scriptPending returns the Pending of a script whose reply is {allowed 0|1, remaining,
// retry-after µs, time µs}, decoded by decodeDecision; name prefixes errors.
func scriptPending(name string, cmd *redis.Cmd, clock Clock) Pending {
	return decodedPending(name, cmd, func(raw any) (Decision, error) { return decodeDecision(raw, clock) })
}

// decodedPending returns the Pending of a script whose reply decode reads; name prefixes the
// errors of both the call and the decoding.
func decodedPending(name string, cmd *redis.Cmd, decode func(raw any) (Decision, error)) Pending {
	return func() (Decision, error) {
		raw, err := cmd.Result()
		if err != nil {
			return Decision{}, fmt.Errorf("%s: %w", name, err)
		}
		d, err := decode(raw)
		if err != nil {
			return Decision{}, fmt.Errorf("%s: %w", name, err)
		}
		return d, nil
	}
}

// decodeDecision decodes the common reply {allowed 0|1, remaining, retry-after µs, time µs}. A
// reply of another shape, an allowed flag other than 0 or 1, a negative retry-after or a time
// that is not positive is an error wrapping ErrBadReply with the raw reply, never an admission.
func decodeDecision(raw any, clock Clock) (Decision, error) {
	v, err := Ints(raw, 4)
	if err != nil {
		return Decision{}, err
	}
	allowed, err := Bool01(v[0], raw)
	if err != nil {
		return Decision{}, err
	}
	if v[2] < 0 {
		return Decision{}, badReply(fmt.Sprintf("retry-after must be >= 0 µs, got %d", v[2]), raw)
	}
	if v[3] <= 0 {
		return Decision{}, badReply(fmt.Sprintf("decision time must be > 0 µs, got %d", v[3]), raw)
	}
	return Decision{
		Allowed:    allowed,
		Remaining:  v[1],
		RetryAfter: time.Duration(v[2]) * time.Microsecond,
		TimeMicros: v[3],
		Clock:      clock,
	}, nil
}

// failedPending is the Pending of a request that could not be sent.
func failedPending(err error) Pending {
	return func() (Decision, error) { return Decision{}, err }
}

// requestCost returns req.Cost, with 0 meaning 1. A negative cost, or a cost above 1 for an
// algorithm whose design charges one permit (multi false), is an error wrapping
// ErrCostUnsupported.
func requestCost(name string, req Request, multi bool) (int64, error) {
	switch {
	case req.Cost == 0:
		return 1, nil
	case req.Cost < 0:
		return 0, fmt.Errorf("%s: %w: cost must be >= 1, got %d", name, ErrCostUnsupported, req.Cost)
	case req.Cost > 1 && !multi:
		return 0, fmt.Errorf("%s: %w: got cost %d", name, ErrCostUnsupported, req.Cost)
	}
	return req.Cost, nil
}

// fixedMicros is the time argument of server-clock scripts: req.FixedTime in µs, or 0 (read
// Redis TIME) when it is zero, as it always is outside tests.
func fixedMicros(req Request) int64 {
	if req.FixedTime.IsZero() {
		return 0
	}
	return req.FixedTime.UnixMicro()
}

// clientTime is the time a client-clock algorithm sends: req.ClientTime, or time.Now() when the
// caller gave none.
func clientTime(req Request) time.Time {
	if req.ClientTime.IsZero() {
		return time.Now()
	}
	return req.ClientTime
}

// subjectKey is prefix + tag + ":{" + subject + "}": the subject is the hash tag, so every key of
// one subject is in one cluster slot. The prefix must have passed CheckPrefix (at Prepare) and the
// subject CheckSubject (checkRequest, in Do).
func subjectKey(prefix, tag, subject string) string {
	return prefix + tag + ":{" + subject + "}"
}

// CheckPrefix reports whether prefix can be put in front of a built-in algorithm's keys: it must
// not contain '{' or '}'. Redis hashes a key by the text between its first '{' and the next '}',
// so a brace in the prefix would steal the subject's hash tag (every subject in one slot, or keys
// of one subject in different slots and CROSSSLOT errors on a cluster). The error wraps ErrBadKey.
// Prepare calls it once, so requests do not pay for it.
func CheckPrefix(prefix string) error {
	if i := strings.IndexAny(prefix, "{}"); i >= 0 {
		return fmt.Errorf("%w: key prefix %q contains %q, which would take the subject's {hash tag}", ErrBadKey, prefix, prefix[i])
	}
	return nil
}

// CheckSubject reports whether subject can be the {hash tag} of a built-in algorithm's keys: it
// must not be empty (Redis hashes the whole key when the tag is "{}", so the keys of one subject
// land in different slots and multi-key algorithms fail with CROSSSLOT on a cluster) and must not
// contain '}' (the tag would end early, and a subject starting with '}' gives "{}" again). The
// error wraps ErrBadKey.
func CheckSubject(subject string) error {
	switch {
	case subject == "":
		return fmt.Errorf("%w: empty subject (it is the keys' {hash tag})", ErrBadKey)
	case strings.IndexByte(subject, '}') >= 0:
		return fmt.Errorf("%w: subject %q contains '}', which would end the keys' {hash tag} early", ErrBadKey, subject)
	}
	return nil
}

// checkRequest is the check every built-in limiter's Do makes before building keys: the subject
// (CheckSubject) and the cost (requestCost, whose result it returns). Errors start with name.
func checkRequest(name string, req Request, multi bool) (int64, error) {
	if err := CheckSubject(req.Subject); err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return requestCost(name, req, multi)
}
