package algorithms

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/scripts"
)

// script is a Lua script an algorithm runs: loaded with SCRIPT LOAD on every master of the
// client it was prepared on, and loaded again there when a pipeline finds it gone (see
// evalCmd.result). A built-in script prepared with WithFunctions is instead the function fn of
// the library lib (FunctionLibrary), loaded with FUNCTION LOAD and called with FCALL.
// It is safe for concurrent use.
type script struct {
	*redis.Script
	// on is the client Prepare loaded it with: SCRIPT LOAD goes to each of its masters.
	on redis.UniversalClient
	// fn, lib and libCode are the function, its library's name and its library's code; fn is ""
	// for a script called with EVALSHA.
	fn, lib, libCode string
	// gen counts the loads since the first; mu serialises them.
	mu  sync.Mutex
	gen atomic.Uint64
}

// reloadTimeout bounds one reload of a script after NOSCRIPT.
const reloadTimeout = 5 * time.Second

// prepareScript is the preamble every built-in algorithm's Prepare shares: it checks l against a's
// contract (Algorithm.Contract), the key prefix (CheckPrefix) and, in order, each of bounds (an
// algorithm's own limits on l, such as the bits its arithmetic needs), and only then loads the
// file Description.Script names (loadScript). Every error is wrapped with a's name, as "gcra: ...".
func prepareScript(ctx context.Context, a Algorithm, c redis.UniversalClient, l Limit, prefix string,
	bounds ...func() error) (*script, error) {
	d := a.Describe()
	name, file := d.Name, d.Script
	if _, err := a.Contract(l); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := CheckPrefix(prefix); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for _, b := range bounds {
		if err := b(); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	s, err := loadScript(ctx, c, file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return s, nil
}

// loadScript reads file (a name in scripts.FS, for example "gcra.lua") and loads it with SCRIPT
// LOAD on every master of c: each master of a *redis.ClusterClient (ForEachMaster), otherwise c
// itself. Loading everywhere up front is what lets a Call send a bare EVALSHA inside pipelines,
// where go-redis cannot fall back to EVAL on NOSCRIPT. With a ctx from WithFunctions the script
// is loaded instead as the function library of the file's name without ".lua" (loadFunction).
func loadScript(ctx context.Context, c redis.UniversalClient, file string) (*script, error) {
	src, err := scripts.FS.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read script %s: %w", file, err)
	}
	if f := functionsOf(ctx); f != nil {
		return loadFunction(ctx, c, f, strings.TrimSuffix(file, ".lua"), string(src))
	}
	return newScript(ctx, c, string(src))
}

// newScript loads src on every master of c (loadEverywhere) and returns it as a script; with a
// ctx from WithStrictKeys, src behind the strict-keys guard.
func newScript(ctx context.Context, c redis.UniversalClient, src string) (*script, error) {
	if strictKeysOf(ctx) {
		src = guardKeys(src)
	}
	s := &script{Script: redis.NewScript(src), on: c}
	if err := loadEverywhere(ctx, c, s.Script); err != nil {
		return nil, err
	}
	return s, nil
}

// loadEverywhere runs SCRIPT LOAD of s on every master of c: each master of a
// *redis.ClusterClient (ForEachMaster), otherwise c itself.
func loadEverywhere(ctx context.Context, c redis.UniversalClient, s *redis.Script) error {
	return onEveryMaster(ctx, c, func(ctx context.Context, m redis.Cmdable) error {
		return s.Load(ctx, m).Err()
	})
}

// loadEverywhere loads s again on every master of the client it was prepared on: SCRIPT LOAD, or
// FUNCTION LOAD REPLACE of its library (its name is this run's own: see FunctionLibrary).
func (s *script) loadEverywhere(ctx context.Context) error {
	if s.fn == "" {
		return loadEverywhere(ctx, s.on, s.Script)
	}
	return onEveryMaster(ctx, s.on, func(ctx context.Context, m redis.Cmdable) error {
		return m.FunctionLoadReplace(ctx, s.libCode).Err()
	})
}

// processor is what a Call needs of the Cmdable it sends on: every go-redis client, connection,
// pipeline and autopipeliner has Process.
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// argBuf is a command argument a Call builds in place for each request: a key, or a custom
// script's argument. go-redis writes it with MarshalBinary, which hands over the bytes without
// copying them, and formats it with String where it needs the text (a cluster client hashing the
// first key to its slot, when the command does not hold the key as a string; see evalCmd).
type argBuf struct{ b []byte }

// MarshalBinary returns the bytes of a (not a copy: they are valid until a is built again).
func (a *argBuf) MarshalBinary() ([]byte, error) { return a.b, nil }

// String returns the bytes of a as a new string.
func (a *argBuf) String() string { return string(a.b) }

// subjectKey builds prefix + tag + ":{" + subject + "}" in a (see subjectKey) and returns a.
func (a *argBuf) subjectKey(prefix, tag, subject string) *argBuf {
	a.b = append(append(append(append(append(a.b[:0], prefix...), tag...), ":{"...), subject...), '}')
	return a
}

// evalCmd is one EVALSHA of a script as a Call sends it, request after request. Its arguments,
// built once, are "evalsha", the script's SHA, the number of keys, the keys (*argBuf) and the
// script's arguments, each a value that stays or a pointer to the Call's field that holds what
// varies (*argBuf, *int64: go-redis writes what they point to). A request sets those fields, and
// send sends the same command object again, reset, on a single server's client, connection or
// pipeline. It makes a new command each time on a cluster (fresh: go-redis keeps the slot of a
// command's first key on the command once it has computed it, so a reused command would go to
// the first request's slot) and on an autopipeliner (which may still hold a command it has run);
// such a command holds its first key as a string, so that the cluster client reads it without
// formatting. A pipelined EVALSHA answered NOSCRIPT loads the script again when its result is read
// (see result). For a script prepared as a function (script.fn) the command is "fcall", the
// function's name, the number of keys and the same keys and arguments, and "Function not found"
// plays the part of NOSCRIPT.
type evalCmd struct {
	script *script
	keys   int
	fresh  bool
	args   []any
	// cmd is the EVALSHA sent again and again (nil until the first send, and when fresh); last is
	// the command last sent, whose reply result reads (cmd, a fresh command, or the EVAL sent
	// after NOSCRIPT).
	cmd, last *redis.Cmd
	// pipelined says last was queued on a pipeline, when the script's load generation was gen.
	pipelined bool
	gen       uint64
}

// newEvalCmd returns the EVALSHA of s with keys and args (values, *argBuf or *int64) for a Call of
// a limiter prepared on a cluster client (fresh) or not. s may be nil for a limiter that is never
// sent (tests); the command then has no SHA. For a script prepared as a function it is the FCALL
// of the function.
func newEvalCmd(s *script, fresh bool, keys []*argBuf, args ...any) *evalCmd {
	verb, sha := "evalsha", ""
	switch {
	case s != nil && s.fn != "":
		verb, sha = "fcall", s.fn
	case s != nil:
		sha = s.Hash()
	}
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, verb, sha, len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	return &evalCmd{script: s, keys: len(keys), fresh: fresh, args: append(a, args...)}
}

// isCluster reports whether a limiter prepared on c must build a command per request (evalCmd's
// fresh): c is a cluster client.
func isCluster(c redis.UniversalClient) bool {
	_, ok := c.(*redis.ClusterClient)
	return ok
}

// send sends the command on c, with what its pointers point to now (see Call.Send): on a client,
// a connection or an autopipeliner, a NOSCRIPT reply is followed by EVAL with the script's source,
// as (*redis.Script).Run does, which loads the script again; on a pipeline the bare EVALSHA is
// queued (and result loads the script again if it meets NOSCRIPT). A function's "Function not
// found" on a client, connection or autopipeliner loads its library again on every master
// (script.reload) and sends the FCALL once more.
func (e *evalCmd) send(ctx context.Context, c redis.Cmdable) {
	e.pipelined = false
	p, ok := c.(processor)
	if !ok {
		e.last = redis.NewCmdResult(nil, fmt.Errorf("cannot send a command on %T", c))
		return
	}
	_, auto := c.(*redis.AutoPipeliner)
	switch {
	case e.fresh || auto:
		args := slices.Clone(e.args)
		if e.keys > 0 {
			args[3] = e.args[3].(*argBuf).String()
		}
		e.last = redis.NewCmd(ctx, args...)
	case e.cmd == nil:
		e.cmd = redis.NewCmd(ctx, e.args...)
		e.last = e.cmd
	default:
		e.cmd.SetErr(nil)
		e.cmd.SetVal(nil)
		e.last = e.cmd
	}
	if e.keys > 0 {
		e.last.SetFirstKeyPos(3)
	}
	if _, pipelined := c.(redis.Pipeliner); pipelined {
		// The generation before the queueing: a reload after it is one this command may have missed.
		e.pipelined = e.script != nil
		if e.pipelined {
			e.gen = e.script.gen.Load()
		}
		_ = p.Process(ctx, e.last) // the command carries its error, read after Exec
		return
	}
	gen := uint64(0)
	if e.script != nil {
		gen = e.script.gen.Load()
	}
	_ = p.Process(ctx, e.last) // the command carries its error
	// (HasErrorPrefix allocates even for a nil error: ask only when there is one.)
	if err := e.last.Err(); err == nil || e.script == nil || !e.script.missing(err) {
		return // (no script: a custom function's FCALL, see newFCallCmd)
	}
	if e.script.fn != "" {
		if rerr := e.script.reload(gen); rerr != nil {
			e.last.SetErr(fmt.Errorf("%w (loading the function library again failed: %w)", e.last.Err(), rerr))
			return
		}
		e.last.SetErr(nil)
		e.last.SetVal(nil)
		_ = p.Process(ctx, e.last)
		return
	}
	keys := make([]string, e.keys)
	for i := range keys {
		keys[i] = e.args[3+i].(*argBuf).String()
	}
	e.last = e.script.Eval(ctx, c, keys, e.args[3+e.keys:]...)
}

// result returns the reply of the command last sent, redis.Nil for a nil reply. A pipelined
// EVALSHA answered NOSCRIPT (the script cache was flushed, or the server restarted, since the
// script was loaded) loads the script again on every master of the client it was prepared on
// (script.reload) before result returns: the request still fails with NOSCRIPT, since it did not
// run, and the requests after it find the script. A failed reload is added to the error.
func (e *evalCmd) result() (any, error) {
	v, err := e.last.Result()
	if e.pipelined && err != nil && e.script.missing(err) {
		if rerr := e.script.reload(e.gen); rerr != nil {
			return v, fmt.Errorf("%w (loading the script again failed: %w)", err, rerr)
		}
	}
	return v, err
}

// scriptCall is what every script's Call holds: the algorithm's name (its errors start with it),
// the error of a request that could not be sent, and the command last sent.
type scriptCall struct {
	name string
	err  error
	sent *evalCmd
}

// fail makes err the error of the request being sent, which is not sent.
func (s *scriptCall) fail(err error) { s.err, s.sent = err, nil }

// send sends e on c as the request's command.
func (s *scriptCall) send(ctx context.Context, c redis.Cmdable, e *evalCmd) {
	s.err, s.sent = nil, e
	e.send(ctx, c)
}

// reply returns the raw reply of the request sent last, or its error (the name prefixed).
func (s *scriptCall) reply() (any, error) {
	if s.err != nil {
		return nil, s.err
	}
	raw, err := s.sent.result()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.name, err)
	}
	return raw, nil
}

// decoded returns d, or err prefixed with the name.
func (s *scriptCall) decoded(d Decision, err error) (Decision, error) {
	if err != nil {
		return Decision{}, fmt.Errorf("%s: %w", s.name, err)
	}
	return d, nil
}

// Reloads returns how many times the script was loaded again after a NOSCRIPT reply in a
// pipeline (or, for a function, after "Function not found" anywhere).
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
	err := s.loadEverywhere(ctx)
	s.gen.Add(1)
	return err
}

// maxExact is 2^53: every integer below it is exact in a Lua (IEEE double) number. Prepare checks
// that the numbers a script multiplies stay below it.
const maxExact = 1 << 53

// decodeDecision decodes the common reply {allowed 0|1, remaining, retry-after µs, time µs}. A
// reply of another shape, an allowed flag other than 0 or 1, a negative retry-after or a time
// that is not positive is an error wrapping ErrBadReply with the raw reply, never an admission.
func decodeDecision(raw any, clock Clock) (Decision, error) {
	v, err := ints(raw, 4)
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
