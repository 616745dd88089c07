package algorithms

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/scripts"
)

// script is a Lua script an algorithm runs: loaded with SCRIPT LOAD on every master of the
// client it was prepared on, and loaded again there when a pipeline finds it gone (see run).
// It is safe for concurrent use.
type script struct {
	*redis.Script
	// on is the client Prepare loaded it with: SCRIPT LOAD goes to each of its masters.
	on redis.UniversalClient
	// gen counts the loads since the first; mu serialises them.
	mu  sync.Mutex
	gen atomic.Uint64
}

// reloadTimeout bounds one reload of a script after NOSCRIPT.
const reloadTimeout = 5 * time.Second

// loadScript reads file (a name in scripts.FS, for example "gcra.lua") and loads it with SCRIPT
// LOAD on every master of c: each master of a *redis.ClusterClient (ForEachMaster), otherwise c
// itself. Loading everywhere up front is what lets run use a bare EVALSHA inside pipelines,
// where go-redis cannot fall back to EVAL on NOSCRIPT.
func loadScript(ctx context.Context, c redis.UniversalClient, file string) (*script, error) {
	src, err := scripts.FS.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read script %s: %w", file, err)
	}
	return newScript(ctx, c, string(src))
}

// newScript loads src on every master of c (loadEverywhere) and returns it as a script.
func newScript(ctx context.Context, c redis.UniversalClient, src string) (*script, error) {
	s := &script{Script: redis.NewScript(src), on: c}
	if err := loadEverywhere(ctx, c, s.Script); err != nil {
		return nil, err
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

// run sends s on c and returns the call, whose Result is read after a pipeline's Exec. On a
// client it is (*redis.Script).Run: EVALSHA, then EVAL when the server answers NOSCRIPT (a
// script cache flushed or a server restarted after Prepare), which loads the script again. On
// a pipeline (redis.Pipeliner) it queues a bare EVALSHA, since a queued command has no reply to
// fall back on; when its reply is NOSCRIPT, Result loads the script again on every master
// before it returns the error (see call.Result), so the request fails, as it did, and the
// requests after it find the script.
func (s *script) run(ctx context.Context, c redis.Cmdable, keys []string, args ...any) call {
	if _, ok := c.(redis.Pipeliner); ok {
		return call{Cmd: s.EvalSha(ctx, c, keys, args...), s: s, gen: s.gen.Load()}
	}
	return call{Cmd: s.Run(ctx, c, keys, args...)}
}

// Reloads returns how many times the script was loaded again after a NOSCRIPT reply in a
// pipeline.
func (s *script) Reloads() uint64 { return s.gen.Load() }

// reload loads s again on every master after a pipelined call queued at load generation gen
// was answered NOSCRIPT, unless a load since gen already did. It returns the load's error.
func (s *script) reload(gen uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen.Load() != gen {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), reloadTimeout)
	defer cancel()
	err := loadEverywhere(ctx, s.on, s.Script)
	s.gen.Add(1)
	return err
}

// call is one script call sent by script.run.
type call struct {
	*redis.Cmd
	// s is the script of a pipelined call, nil otherwise; gen is s's load generation when the
	// call was queued.
	s   *script
	gen uint64
}

// Result returns the call's reply or error. A pipelined call answered NOSCRIPT loads its script
// again first (script.reload): the error is still the call's, and a failed reload is added to
// it.
func (c call) Result() (any, error) {
	v, err := c.Cmd.Result()
	if c.s != nil && err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		if rerr := c.s.reload(c.gen); rerr != nil {
			return v, fmt.Errorf("%w (loading the script again failed: %w)", err, rerr)
		}
	}
	return v, err
}

// Err returns the call's error, as Result does.
func (c call) Err() error {
	_, err := c.Result()
	return err
}

// maxExact is 2^53: every integer below it is exact in a Lua (IEEE double) number. Prepare checks
// that the numbers a script multiplies stay below it.
const maxExact = 1 << 53

// scriptPending returns the Pending of a script whose reply is {allowed 0|1, remaining,
// retry-after µs, time µs}, decoded by decodeDecision; name prefixes errors.
func scriptPending(name string, cmd call, clock Clock) Pending {
	return decodedPending(name, cmd, func(raw any) (Decision, error) { return decodeDecision(raw, clock) })
}

// decodedPending returns the Pending of a script whose reply decode reads; name prefixes the
// errors of both the call and the decoding.
func decodedPending(name string, cmd call, decode func(raw any) (Decision, error)) Pending {
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
