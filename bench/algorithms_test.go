// Package bench holds limitbench's Go benchmarks (go test -bench) and the gate's baseline files.
package bench

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// benchLimit is the limit every algorithm is benchmarked at: 100 per window, where each
// sub-benchmark of BenchmarkAlgorithms sets the window (benchWindow) so that its subjects come
// back after the share of it that -algorithms-revisit says.
var benchLimit = algorithms.Limit{Limit: 100, Window: time.Second}

// benchSubjects is how many subjects the calls go round: one client sends them one call at a
// time, so each subject stays far below its limit and most calls take the admitting path. 200,
// as in issue 17's table: few enough that the measured rounds span whole windows (at the default
// regime, 100 rounds are 2.5 windows), so that a window's first calls are measured at their
// share in use.
const benchSubjects = 200

// benchRevisit is the regime of BenchmarkAlgorithms: the time after which a subject comes back,
// as a share of its window. How often a call finds its subject's state new, expired or refilled
// (a window's first call, a bucket that refilled, a key that expired) depends on it, and so does
// what the call costs; at a fixed window it would depend on how fast the machine answers, and
// make x-peer a property of the machine. The default 0.05 is the regime of issue 17's table (200
// subjects at 4,000/s, 20 calls per subject and one-second window): subjects in use. 2 is the cold
// regime: every call finds its subject's state gone or refilled.
var benchRevisit = flag.Float64("algorithms-revisit", 0.05, "BenchmarkAlgorithms: the time after which a subject comes back, as a share of its window (0.05: 20 calls per subject and window, subjects in use; 2: every call finds its subject's state gone or refilled)")

// benchRounds and benchRoundCalls shape one iteration of BenchmarkAlgorithms: benchRounds rounds,
// each benchRoundCalls calls of the reference and as many of the algorithm, in alternating order.
// Every figure comes from b.N·benchRounds rounds, so even `-benchtime 1x` measures
// benchRounds·benchRoundCalls calls of each (make bench's `-benchtime 2x`: 10 rounds, 1000 calls).
const (
	benchRounds     = 5
	benchRoundCalls = 100
	// benchCycle is the number of rounds after which a subject comes back.
	benchCycle = benchSubjects / benchRoundCalls
)

// BenchmarkAlgorithms measures, for the bare INCR + PEXPIRE reference script
// (algorithms.Reference(), scripts/reference.lua), every registered algorithm and the public
// designs of their families (peers), on a single Redis at limit 100 per window, one client sending
// one request at a time, in the regime of -algorithms-revisit (benchRevisit: by default each
// subject comes back 20 times per window; the window is set to make it so, benchWindow):
//
//   - server-µs/call: Redis time per call from INFO commandstats: the usec of EVALSHA/EVAL for
//     scripted algorithms (which includes the commands the script calls), else the sum over the
//     commands sent; the median over the rounds;
//   - x-reference: server-µs/call divided by that of the reference script in the same round, the
//     median over the rounds. The "reference" row compares the reference with a second copy of
//     itself: its distance from 1 is the noise of the ratio;
//   - x-peer: for an algorithm with peers (peerDesigns), server-µs/call divided by that of the
//     cheapest peer of its family (the lowest median server-µs/call) in the same round, the median
//     over the paired rounds; the sub-benchmark also logs the line "x-peer <algorithm> = R against
//     <peer> (median of N paired rounds; ...)". The issue's target for every corrected algorithm
//     is at most 1.00;
//   - client-µs/call: wall time of one call of the algorithm as the client sees it (round trip
//     included), the mean over every call;
//   - allowed/call: the share of the algorithm's calls that were allowed. The subjects are many
//     enough that it is about 1: the algorithms take their admitting path, as the reference (which
//     admits everything) always does, and all see the same subjects in the same order;
//   - bytes/subject: MEMORY USAGE of the keys of one subject that has just used its 100 permits;
//   - revisit/window: the time after which a subject came back, as a share of the window (the
//     median round's wall time times benchCycle): the regime the figures were measured in;
//   - server-Ir/call and x-peer-Ir, only when redis-server runs under callgrind (callgrindEnv):
//     the instructions redis-server executed inside EVALSHA per call, and their ratio to the
//     cheapest peer's, the median over the paired rounds: the same comparison as x-peer, free
//     of the machine's other load.
//
// One round is benchRoundCalls calls of each participant of the sub-benchmark (the reference, the
// algorithm, and the peers of its family), one participant after the other in an order that
// rotates from round to round, so that a drift of the machine's other load favours none; a round's
// calls go to the next benchRoundCalls subjects, so a subject comes back every benchCycle rounds,
// and the first rounds, one window and one cycle of them (benchWarmup), are not measured: each
// subject has met the window before the measured rounds and this one, as subjects in use have.
// Each
// batch resets INFO commandstats (CONFIG RESETSTAT) before it and reads it after, so ns/op is the
// time of one iteration (benchRounds rounds), not of one call. Compare algorithms by x-peer and
// x-reference, which survive a change of machine.
//
// The "peer-…" rows are the public designs of each family run on their own (peerDesigns). The
// "floor" rows are not algorithms (floors): each sends only the Redis commands that any
// server-clock limiter ("floor"), or one design's admitting path ("floor-<algorithm>"), cannot do
// without, and nothing else, so its x-peer is the least that design can cost against the peer on
// this machine and Redis.
func BenchmarkAlgorithms(b *testing.B) {
	env := redistest.Single(b)
	ctx := context.Background()
	c := env.Target.Client
	cg, err := newCallgrind(ctx, c)
	if err != nil {
		b.Fatal(err)
	}
	if *benchRevisit <= 0 {
		b.Fatalf("-algorithms-revisit must be above 0, got %g", *benchRevisit)
	}
	defer func(w time.Duration) { benchLimit.Window = w }(benchLimit.Window)
	type benchCase struct {
		name    string
		prepare func(prefix string) (algorithms.Limiter, error)
		peers   []peerDesign
	}
	prepareFor := func(a algorithms.Algorithm) func(string) (algorithms.Limiter, error) {
		return func(prefix string) (algorithms.Limiter, error) { return a.Prepare(ctx, c, benchLimit, prefix) }
	}
	cases := []benchCase{{name: algorithms.ReferenceName, prepare: prepareFor(algorithms.Reference())}}
	for _, f := range floors {
		cases = append(cases, benchCase{name: f.name, peers: peersOf(f.peerOf), prepare: func(prefix string) (algorithms.Limiter, error) {
			s := redis.NewScript(f.src)
			return floorLimiter{script: s, prefix: prefix, keyed: f.keyed}, s.Load(ctx, c).Err()
		}})
	}
	for _, p := range peerDesigns {
		cases = append(cases, benchCase{name: p.name, prepare: func(prefix string) (algorithms.Limiter, error) {
			return p.prepare(ctx, c, prefix)
		}})
	}
	for _, a := range algorithms.All() {
		name := a.Describe().Name
		cases = append(cases, benchCase{name: name, prepare: prepareFor(a), peers: peersOf(name)})
	}
	for i, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			// prepare prepares the participants of each round under prefix: the algorithm, the
			// reference, its peers.
			prepare := func(prefix string) []algorithms.Limiter {
				lim, err := bc.prepare(prefix + "x:")
				if err != nil {
					b.Fatal(err)
				}
				ref, err := algorithms.Reference().Prepare(ctx, c, benchLimit, prefix+"r:")
				if err != nil {
					b.Fatal(err)
				}
				parts := []algorithms.Limiter{lim, ref}
				for j, p := range bc.peers {
					pl, err := p.prepare(ctx, c, fmt.Sprintf("%sp%d:", prefix, j))
					if err != nil {
						b.Fatal(err)
					}
					parts = append(parts, pl)
				}
				return parts
			}
			// run runs round r of parts and returns what each batch measured and the round's
			// wall time.
			run := func(parts []algorithms.Limiter, r int) ([]batch, time.Duration) {
				ms, took, failed, err := runRound(ctx, c, cg, parts, r)
				if err != nil {
					b.Fatalf("%s: %v", participantName(bc.name, bc.peers, failed), err)
				}
				return ms, took
			}
			// The window: rounds of the participants timed at a provisional one, under a prefix of
			// their own (benchWindow).
			benchLimit.Window = time.Second
			var took []float64
			cal := prepare(fmt.Sprintf("%sc%02d:", env.Prefix, i))
			for r := range benchCalibration {
				_, d := run(cal, r)
				took = append(took, float64(d))
			}
			w := benchWindow(time.Duration(median(took)))
			var (
				parts          []algorithms.Limiter
				roundTime      []float64 // each round's wall time, in windows
				wall           time.Duration
				next           int // the next round's number: it rotates the order and the subjects
				round, allowed int // measured rounds, and their algorithm's admissions
			)
			// A window and a cycle of rounds unmeasured (benchWarmup), so that the measured calls
			// meet their subjects in the regime: not for the first time, and with what the window
			// before left (sliding-counter's previous counter). When the subjects came back far
			// from where they should (the machine's speed changed since the window was set), the
			// window is set again from these rounds and the participants start afresh, up to
			// len(benchAttempts) times.
			for attempt, letter := range benchAttempts {
				benchLimit.Window = w
				// Prefixes of one length for every participant: MEMORY USAGE counts the key names.
				parts = prepare(fmt.Sprintf("%s%c%02d:", env.Prefix, letter, i))
				roundTime, next = roundTime[:0], 0
				for ; next < benchWarmup(); next++ {
					_, d := run(parts, next)
					roundTime = append(roundTime, float64(d)/float64(w))
				}
				got := median(roundTime) * benchCycle
				if attempt == len(benchAttempts)-1 || (got > *benchRevisit/1.5 && got < *benchRevisit*1.5) {
					break
				}
				w = benchWindow(time.Duration(median(roundTime) * float64(w)))
			}
			bytes, err := subjectBytes(ctx, c, parts[0])
			if err != nil {
				b.Fatal(err)
			}
			perCall := make([][]float64, len(parts))   // server µs per call, per participant and round
			irPerCall := make([][]float64, len(parts)) // server instructions per call (callgrind)
			for b.Loop() {
				for range benchRounds {
					ms, d := run(parts, next)
					next++
					roundTime = append(roundTime, float64(d)/float64(w))
					for j, m := range ms {
						perCall[j] = append(perCall[j], m.usec/benchRoundCalls)
						irPerCall[j] = append(irPerCall[j], m.ir/benchRoundCalls)
					}
					wall += ms[0].wall
					allowed += ms[0].allowed
					round++
				}
			}
			revisit := median(roundTime) * benchCycle
			b.ReportMetric(revisit, "revisit/window")
			b.ReportMetric(median(slices.Clone(perCall[0])), "server-µs/call")
			if r, ok := pairedRatio(perCall[0], perCall[1]); ok {
				b.ReportMetric(r, "x-reference")
			}
			if len(bc.peers) > 0 {
				// The cheapest peer is the one with the lowest median server µs per call.
				cheapest := 2
				for j := 3; j < len(parts); j++ {
					if median(slices.Clone(perCall[j])) < median(slices.Clone(perCall[cheapest])) {
						cheapest = j
					}
				}
				if r, ok := pairedRatio(perCall[0], perCall[cheapest]); ok {
					b.ReportMetric(r, "x-peer")
					b.Logf("x-peer %s = %.2f against %s (median of %d paired rounds; %.2f against the reference; window %s, a subject back after %.3f of it)",
						bc.name, r, bc.peers[cheapest-2].name, round, median(slices.Clone(ratios(perCall[0], perCall[1]))), benchLimit.Window, revisit)
				}
				if r, ok := pairedRatio(irPerCall[0], irPerCall[cheapest]); ok && cg != nil {
					b.ReportMetric(r, "x-peer-Ir")
					b.Logf("x-peer-Ir %s = %.3f against %s by redis-server instructions (median of %d paired rounds)",
						bc.name, r, bc.peers[cheapest-2].name, round)
				}
			}
			if cg != nil {
				b.ReportMetric(median(slices.Clone(irPerCall[0])), "server-Ir/call")
			}
			b.ReportMetric(float64(wall.Microseconds())/float64(round*benchRoundCalls), "client-µs/call")
			b.ReportMetric(float64(allowed)/float64(round*benchRoundCalls), "allowed/call")
			b.ReportMetric(float64(bytes), "bytes/subject")
		})
	}
}

// participantName names participant j of a sub-benchmark's rounds in errors.
func participantName(name string, peers []peerDesign, j int) string {
	switch j {
	case 0:
		return name
	case 1:
		return algorithms.ReferenceName
	}
	return peers[j-2].name
}

// ratios returns a[i]/b[i] for every round in which b[i] > 0.
func ratios(a, b []float64) []float64 {
	var r []float64
	for i := range a {
		if b[i] > 0 {
			r = append(r, a[i]/b[i])
		}
	}
	return r
}

// pairedRatio is the median over the rounds of a[i]/b[i] (ratios), and false when no round had
// b[i] > 0.
func pairedRatio(a, b []float64) (float64, bool) {
	r := ratios(a, b)
	return median(r), len(r) > 0
}

// floors are the scripts of the "floor" rows. Each sends the Redis commands that a server-clock
// limiter, or one design's admitting path, cannot do without: TIME, and the reads and writes of the
// design's state, with arguments taken as they are from TIME's reply, and a reply of one string of
// them, as the algorithms do; it does no arithmetic, number conversion or formatting, which the
// algorithms cannot avoid. fixed-window reads TIME only on a window's first call, so its floor is
// the INCR of every other call, replied as it comes; sliding-counter reads it only when a counter
// is missing, so its floor is the MGET and INCRBY of a subject in use, replied with the counters.
// peerOf names the algorithm whose peers the row is compared with (its
// x-peer is the least that design can cost against them). Without arithmetic a key can only expire
// at the end of the second, so a floor's subject often still has its key when it comes round
// again, where the algorithms' (gone 10 ms after one admission at limit 100) often do not; by
// instruction counts (callgrind) that changes these floors by about 3%.
var floors = []struct {
	name, src, peerOf string
	keyed             bool // the script takes the subject's key as KEYS[1]
}{
	{"floor", `local t = redis.call('TIME')
return '1 ' .. t[1] .. ' ' .. t[2]`, "", false},
	{"floor-fixed-window", `return redis.call('INCR', KEYS[1])`, "fixed-window", true},
	// A window's first call of any fixed window aligned on the server's clock: TIME and one
	// command that creates the counter with its expiry (cold, every call is one).
	{"floor-first-fixed-window", `local t = redis.call('TIME')
return redis.call('SET', KEYS[1], '1', 'NX', 'PXAT', t[1] .. '999', 'GET') or t[1]`, "fixed-window", true},
	{"floor-gcra", `local t = redis.call('TIME')
redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], t[2], 'PXAT', t[1] .. '999')
return '1 ' .. t[2] .. ' ' .. t[1] .. ' ' .. t[2]`, "gcra", true},
	{"floor-token-bucket", `local t = redis.call('TIME')
return redis.call('SET', KEYS[1], t[2], 'NX', 'PXAT', t[1] .. '999', 'GET') or t[1]`, "token-bucket", true},
	{"floor-sliding-counter", `local v = redis.call('MGET', KEYS[1], KEYS[2])
redis.call('INCRBY', KEYS[1], '1')
return '1 ' .. (v[1] or '0') .. ' ' .. (v[2] or '0')`, "sliding-counter", true},
	{"floor-sliding-log", `local t = redis.call('TIME')
redis.call('LINDEX', KEYS[1], '99')
local n = redis.call('LPUSH', KEYS[1], t[2])
redis.call('PEXPIREAT', KEYS[1], t[1] .. '999')
return '1 ' .. n .. ' ' .. t[1] .. ' ' .. t[2]`, "sliding-log", true},
}

// peerDesign is a public rate-limiter design run as a yardstick beside the algorithms of its
// family: its own row, and the x-peer column of each algorithm in family. Each is written here
// after the design as its users run it (client clock, no server TIME, nothing that the design
// does not need), so that it is the cheapest public way to get that family's limit from Redis.
type peerDesign struct {
	name    string
	family  []string
	prepare func(ctx context.Context, c redis.UniversalClient, prefix string) (algorithms.Limiter, error)
}

// peerDesigns are the public designs of each family:
//
//   - peer-redis_rate: go-redis/redis_rate v10 (GCRA), called through its own Go API
//     (Limiter.AllowN); one key, TIME, GET and SET … EX; floating-point seconds.
//   - peer-token-bucket: a token bucket on the client's clock (the design of the Python library
//     limits' acquire_token_bucket.lua): one hash {tokens, ts}, HMGET, HSET and PEXPIRE on every
//     call, tokens as a float.
//   - peer-moving-window: the list-based moving window (limits' acquire_moving_window.lua): the
//     last L admission times in a list, newest first, on the client's clock in ms; LINDEX L − n
//     decides, LPUSH, LTRIM and PEXPIRE record an admission.
//   - peer-moving-window-2: the same design on two lists at once (the resource's and the
//     consumer's), all or nothing: the public way to get two sliding-window limits in one call.
//   - peer-first-hit-window: the first-hit window (limits' incr_expire.lua, the INCR pattern of
//     the Redis documentation): INCRBY, and PEXPIRE W when the counter is new; the caller admits
//     when the count is at most L.
//   - peer-sliding-window-counter: the sliding window counter as Cloudflare describes it, with
//     one counter per window named by the client's window index: MGET of this window's and the
//     previous window's counters, INCRBY (and PEXPIRE 2W when new) on admission.
var peerDesigns = []peerDesign{
	{"peer-redis_rate", []string{"gcra"}, prepareRedisRate},
	{"peer-token-bucket", []string{"token-bucket", "token-bucket-published"}, peerScript(peerTokenBucket, peerTokenBucketCall, replied1)},
	{"peer-moving-window", []string{"sliding-log", "sliding-log-published", "redisson", "redisson-per-client"}, peerScript(peerMovingWindow, peerMovingWindowCall, replied1)},
	{"peer-moving-window-2", []string{"resource-consumer", "resource-consumer-published"}, peerScript(peerMovingWindow2, peerMovingWindow2Call, replied1)},
	{"peer-first-hit-window", []string{"fixed-window", "fixed-window-published"}, peerScript(peerFirstHit, peerFirstHitCall, countWithin)},
	{"peer-sliding-window-counter", []string{"sliding-counter"}, peerScript(peerSlidingCounter, peerSlidingCounterCall, replied1)},
}

// peersOf returns the peer designs whose family holds name.
func peersOf(name string) []peerDesign {
	var out []peerDesign
	for _, p := range peerDesigns {
		if slices.Contains(p.family, name) {
			out = append(out, p)
		}
	}
	return out
}

// prepareRedisRate returns redis_rate v10 at benchLimit: Rate benchLimit.Limit per Period
// benchLimit.Window, Burst Capacity().
func prepareRedisRate(_ context.Context, c redis.UniversalClient, prefix string) (algorithms.Limiter, error) {
	return redisRatePeer{lim: redis_rate.NewLimiter(c), prefix: prefix, limit: redis_rate.Limit{
		Rate: int(benchLimit.Limit), Burst: int(benchLimit.Capacity()), Period: benchLimit.Window,
	}}, nil
}

// redisRatePeer is redis_rate's Limiter as an algorithms.Limiter. AllowN runs at Do (it takes a
// client, not a pipeline).
type redisRatePeer struct {
	lim    *redis_rate.Limiter
	prefix string
	limit  redis_rate.Limit
}

func (r redisRatePeer) key(req algorithms.Request) string {
	return r.prefix + "rr:{" + req.Subject + "}"
}

// Keys implements algorithms.Limiter: redis_rate puts "rate:" in front of the key it is given.
func (r redisRatePeer) Keys(req algorithms.Request) []string { return []string{"rate:" + r.key(req)} }

// Do implements algorithms.Limiter.
func (r redisRatePeer) NewCall() algorithms.Call { return algorithms.PendingCall(r.do) }

func (r redisRatePeer) do(ctx context.Context, _ redis.Cmdable, req algorithms.Request) algorithms.Pending {
	res, err := r.lim.AllowN(ctx, r.key(req), r.limit, int(max(req.Cost, 1)))
	return func() (algorithms.Decision, error) {
		if err != nil {
			return algorithms.Decision{}, fmt.Errorf("redis_rate: %w", err)
		}
		return algorithms.Decision{Allowed: res.Allowed > 0, Remaining: int64(res.Remaining), RetryAfter: max(res.RetryAfter, 0)}, nil
	}
}

// peerTokenBucket: KEYS[1] hash {tokens, ts}; ARGV now (client ms), capacity, refill per ms, cost,
// TTL ms (the time to refill completely). Replies 1 (admitted) or 0. The same file is the peer of
// testdata/token-bucket-peer.yaml.
//
//go:embed testdata/token_bucket_peer.lua
var peerTokenBucket string

func peerTokenBucketCall(req algorithms.Request, key string) ([]string, []any) {
	ms := req.ClientTime.UnixMilli()
	rate := float64(benchLimit.Limit) / float64(benchLimit.Window.Milliseconds())
	return []string{key}, []any{ms, benchLimit.Capacity(), rate, req.Cost, benchLimit.Window.Milliseconds()}
}

// peerMovingWindow: KEYS[1] list of admission times (client ms), newest first; ARGV now ms, L,
// W ms, cost. Replies 1 (admitted) or 0.
const peerMovingWindow = `local now = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
if cost > limit then return 0 end
local e = redis.call('LINDEX', KEYS[1], limit - cost)
if e and tonumber(e) > now - window then return 0 end
for i = 1, cost do
  redis.call('LPUSH', KEYS[1], ARGV[1])
end
redis.call('LTRIM', KEYS[1], 0, limit - 1)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`

func peerMovingWindowCall(req algorithms.Request, key string) ([]string, []any) {
	return []string{key}, []any{req.ClientTime.UnixMilli(), benchLimit.Limit, benchLimit.Window.Milliseconds(), req.Cost}
}

// peerMovingWindow2: KEYS[1] the resource's list, KEYS[2] the consumer's; ARGV now ms, Lr, Lc,
// W ms, cost. Replies 1 (admitted in both) or 0.
const peerMovingWindow2 = `local now = tonumber(ARGV[1])
local window = tonumber(ARGV[4])
local cost = tonumber(ARGV[5])
for i = 1, 2 do
  local limit = tonumber(ARGV[1 + i])
  if cost > limit then return 0 end
  local e = redis.call('LINDEX', KEYS[i], limit - cost)
  if e and tonumber(e) > now - window then return 0 end
end
for i = 1, 2 do
  for j = 1, cost do
    redis.call('LPUSH', KEYS[i], ARGV[1])
  end
  redis.call('LTRIM', KEYS[i], 0, tonumber(ARGV[1 + i]) - 1)
  redis.call('PEXPIRE', KEYS[i], ARGV[4])
end
return 1`

func peerMovingWindow2Call(req algorithms.Request, key string) ([]string, []any) {
	return []string{key + ":r", key + ":c:" + req.Client},
		[]any{req.ClientTime.UnixMilli(), benchLimit.Limit, benchLimit.Consumer(), benchLimit.Window.Milliseconds(), req.Cost}
}

// peerFirstHit: KEYS[1] counter; ARGV cost, W ms. Replies the count after the increment; the
// caller admits when it is at most L. The same file is the peer of testdata/fixed-window-peer.yaml.
//
//go:embed testdata/incr_expire.lua
var peerFirstHit string

func peerFirstHitCall(req algorithms.Request, key string) ([]string, []any) {
	return []string{key}, []any{req.Cost, benchLimit.Window.Milliseconds()}
}

// peerSlidingCounter: KEYS[1] this window's counter, KEYS[2] the previous window's (named by the
// client's window index); ARGV L, W ms, cost, ms into the window. Replies 1 (admitted) or 0.
const peerSlidingCounter = `local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local elapsed = tonumber(ARGV[4])
local v = redis.call('MGET', KEYS[1], KEYS[2])
local cur, prev = tonumber(v[1]) or 0, tonumber(v[2]) or 0
if prev * (window - elapsed) / window + cur + cost > limit then return 0 end
local n = redis.call('INCRBY', KEYS[1], cost)
if n == cost then
  redis.call('PEXPIRE', KEYS[1], 2 * window)
end
return 1`

func peerSlidingCounterCall(req algorithms.Request, key string) ([]string, []any) {
	ms, w := req.ClientTime.UnixMilli(), benchLimit.Window.Milliseconds()
	k := ms / w
	return []string{key + ":" + strconv.FormatInt(k, 10), key + ":" + strconv.FormatInt(k-1, 10)},
		[]any{benchLimit.Limit, w, req.Cost, ms - k*w}
}

// peerScript returns the prepare function of a scripted peer: src loaded once, called with the
// keys and arguments call builds from the request and the subject's key, its integer reply read by
// admits.
func peerScript(src string, call func(req algorithms.Request, key string) ([]string, []any), admits func(int64) bool) func(context.Context, redis.UniversalClient, string) (algorithms.Limiter, error) {
	return func(ctx context.Context, c redis.UniversalClient, prefix string) (algorithms.Limiter, error) {
		s := redis.NewScript(src)
		return scriptPeer{script: s, prefix: prefix, call: call, admits: admits}, s.Load(ctx, c).Err()
	}
}

// scriptPeer is a scripted peer design as an algorithms.Limiter; admits reads its integer reply.
type scriptPeer struct {
	script *redis.Script
	prefix string
	call   func(req algorithms.Request, key string) ([]string, []any)
	admits func(reply int64) bool
}

func (p scriptPeer) request(req algorithms.Request) algorithms.Request {
	req.Cost = max(req.Cost, 1)
	if req.ClientTime.IsZero() {
		req.ClientTime = time.Now()
	}
	return req
}

// Keys implements algorithms.Limiter.
func (p scriptPeer) Keys(req algorithms.Request) []string {
	keys, _ := p.call(p.request(req), p.prefix+"peer:{"+req.Subject+"}")
	return keys
}

// Do implements algorithms.Limiter.
func (p scriptPeer) NewCall() algorithms.Call { return algorithms.PendingCall(p.do) }

func (p scriptPeer) do(ctx context.Context, c redis.Cmdable, req algorithms.Request) algorithms.Pending {
	keys, args := p.call(p.request(req), p.prefix+"peer:{"+req.Subject+"}")
	cmd := p.script.Run(ctx, c, keys, args...)
	return func() (algorithms.Decision, error) {
		n, err := cmd.Int64()
		if err != nil {
			return algorithms.Decision{}, fmt.Errorf("peer: %w", err)
		}
		return algorithms.Decision{Allowed: p.admits(n)}, nil
	}
}

// replied1 is the admission rule of the peers that reply 1 for an admission and 0 for a denial.
func replied1(n int64) bool { return n == 1 }

// countWithin is the first-hit window's rule: the count after the increment is at most L.
func countWithin(n int64) bool { return n >= 1 && n <= benchLimit.Limit }

// floorLimiter runs one of floors, on the subject's keys when keyed (KEYS[1], and a second one,
// KEYS[2], that only floor-sliding-counter reads); it admits everything.
type floorLimiter struct {
	script *redis.Script
	prefix string
	keyed  bool
}

func (f floorLimiter) Keys(req algorithms.Request) []string {
	if !f.keyed {
		return nil
	}
	k := f.prefix + "floor:{" + req.Subject + "}"
	return []string{k, k + ":p"}
}

func (f floorLimiter) NewCall() algorithms.Call { return algorithms.PendingCall(f.do) }

func (f floorLimiter) do(ctx context.Context, c redis.Cmdable, req algorithms.Request) algorithms.Pending {
	cmd := f.script.Run(ctx, c, f.Keys(req))
	return func() (algorithms.Decision, error) {
		if err := cmd.Err(); err != nil {
			return algorithms.Decision{}, fmt.Errorf("floor: %w", err)
		}
		return algorithms.Decision{Allowed: true}, nil
	}
}

// batch is what measureBatch measured of benchRoundCalls calls.
type batch struct {
	usec    float64       // Redis usec (serverMicros)
	ir      float64       // redis-server instructions (callgrind), 0 without it
	wall    time.Duration // on the client
	allowed int
}

// measureBatch resets INFO commandstats (and the callgrind counters, when cg is not nil), sends
// benchRoundCalls requests to lim one at a time (subjects first, first+1, … modulo benchSubjects)
// and returns what they cost the server and the client, and how many were allowed.
func measureBatch(ctx context.Context, c redis.UniversalClient, cg *callgrind, lim algorithms.Limiter, first int) (batch, error) {
	var b batch
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		return b, err
	}
	if err := cg.zero(); err != nil {
		return b, err
	}
	start := time.Now()
	for i := first; i < first+benchRoundCalls; i++ {
		req := algorithms.Request{Subject: "s" + strconv.Itoa(i%benchSubjects), Client: "c1", Cost: 1, ClientTime: time.Now()}
		d, err := algorithms.Do(ctx, lim, c, req)()
		if err != nil {
			return b, err
		}
		if d.Allowed {
			b.allowed++
		}
	}
	b.wall = time.Since(start)
	var err error
	if b.ir, err = cg.instructions(); err != nil {
		return b, err
	}
	b.usec, err = serverMicros(ctx, c)
	return b, err
}

// callgrindEnv names the environment variable that turns on instruction counts in
// BenchmarkAlgorithms: the --callgrind-out-file prefix of a redis-server that runs under
// valgrind's callgrind, collecting only inside EVALSHA and EVAL, the commands whose usec
// commandstats reports for scripts. A redis-server on PATH that wraps the real one does it:
//
//	#!/bin/sh
//	exec valgrind --tool=callgrind --toggle-collect=evalShaCommand --toggle-collect=evalCommand \
//	  --callgrind-out-file=/tmp/lb-callgrind.%p /usr/bin/redis-server "$@"
//
// with LIMITBENCH_CALLGRIND=/tmp/lb-callgrind. Instruction counts do not depend on the machine's
// other load, so server-Ir/call and x-peer-Ir are a deterministic cross-check of server-µs/call
// and x-peer (for scripted designs only: plain commands are not collected). The window grows with
// the slower server (benchWindow), so that it sees each subject as often, relative to its window,
// as at full speed.
const callgrindEnv = "LIMITBENCH_CALLGRIND"

// benchCalibration is the number of rounds benchWindow's round time is the median of.
const benchCalibration = 3

// benchAttempts are the letters of the key prefixes of the participants of a sub-benchmark's
// attempts at its regime (c is the calibration's): one each, since a window set again needs
// participants prepared afresh.
const benchAttempts = "abd"

// benchWarmup is the number of unmeasured rounds before the measured ones: a window's worth at
// the regime of -algorithms-revisit, and a cycle more, so that every subject was met in the
// window before the first measured round and again in its window.
func benchWarmup() int {
	return benchCycle + int(math.Ceil(benchCycle / *benchRevisit))
}

// benchWindow returns the window at which the subjects of a sub-benchmark whose rounds take
// round each come back after *benchRevisit of it: a subject comes back every benchCycle rounds.
// The sub-benchmark times its rounds at a provisional window under a prefix of its own, and then
// checks the first, unmeasured, rounds at this window (benchWarmup): when the subjects came back
// further than 1.5 times from where they should, it sets the window again from those rounds and
// starts afresh (benchAttempts). It reports where they came back in the measured rounds
// (revisit/window). Under callgrind the window grows with the server's slowness, so the regime
// stays the same. The window is whole ms.
func benchWindow(round time.Duration) time.Duration {
	w := time.Duration(float64(round*benchCycle) / *benchRevisit)
	return max(time.Millisecond, w.Round(time.Millisecond))
}

// runRound sends round r of parts: a batch of each (measureBatch, on the subjects from
// r·benchRoundCalls), one participant after the other from participant r mod len(parts). It
// returns what each batch measured, in parts' order, and the round's wall time; on an error,
// failed is the index of the participant whose batch failed.
func runRound(ctx context.Context, c redis.UniversalClient, cg *callgrind, parts []algorithms.Limiter, r int) (ms []batch, took time.Duration, failed int, err error) {
	ms = make([]batch, len(parts))
	start := time.Now()
	for k := range parts {
		j := (k + r) % len(parts)
		if ms[j], err = measureBatch(ctx, c, cg, parts[j], r*benchRoundCalls); err != nil {
			return nil, 0, j, err
		}
	}
	return ms, time.Since(start), 0, nil
}

// callgrind reads the instruction counts of a redis-server running under callgrind; a nil
// *callgrind does nothing and reads 0.
type callgrind struct {
	pid    string
	prefix string // --callgrind-out-file without ".<pid>"
}

// newCallgrind returns the callgrind of c's server when callgrindEnv is set, else nil.
func newCallgrind(ctx context.Context, c redis.UniversalClient) (*callgrind, error) {
	prefix := os.Getenv(callgrindEnv)
	if prefix == "" {
		return nil, nil
	}
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return nil, err
	}
	for line := range strings.Lines(info) {
		if pid, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return &callgrind{pid: pid, prefix: prefix}, nil
		}
	}
	return nil, fmt.Errorf("%s: INFO server has no process_id", callgrindEnv)
}

// zero resets the counters (callgrind_control -z).
func (g *callgrind) zero() error {
	if g == nil {
		return nil
	}
	if out, err := exec.Command("callgrind_control", "-z", g.pid).CombinedOutput(); err != nil {
		return fmt.Errorf("callgrind_control -z %s: %v: %s", g.pid, err, out)
	}
	return nil
}

// instructions dumps the counters (callgrind_control -d) and returns the total of the dump it
// wrote, the instructions since the last zero.
func (g *callgrind) instructions() (float64, error) {
	if g == nil {
		return 0, nil
	}
	before, _ := filepath.Glob(g.prefix + "." + g.pid + ".*")
	if out, err := exec.Command("callgrind_control", "-d", g.pid).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("callgrind_control -d %s: %v: %s", g.pid, err, out)
	}
	after, _ := filepath.Glob(g.prefix + "." + g.pid + ".*")
	for _, f := range after {
		if slices.Contains(before, f) {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return 0, err
		}
		_ = os.Remove(f)
		for line := range strings.Lines(string(b)) {
			for _, p := range []string{"totals: ", "summary: "} {
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), p); ok {
					return strconv.ParseFloat(v, 64)
				}
			}
		}
		return 0, fmt.Errorf("callgrind dump %s: no totals", f)
	}
	return 0, fmt.Errorf("callgrind_control -d %s wrote no new %s.%s.* file", g.pid, g.prefix, g.pid)
}

// median returns the median of v (the mean of the middle two for an even count); v is sorted in
// place. It is 0 for an empty v.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	m := len(v) / 2
	if len(v)%2 == 1 {
		return v[m]
	}
	return (v[m-1] + v[m]) / 2
}

// subjectBytes gives a fresh subject its 100 permits and returns the MEMORY USAGE (SAMPLES 0,
// exact) of the keys it uses then (those of the last decision's time).
func subjectBytes(ctx context.Context, c redis.UniversalClient, lim algorithms.Limiter) (int64, error) {
	now := time.Now()
	req := algorithms.Request{Subject: "mem-" + strconv.FormatInt(now.UnixNano(), 36), Client: "c1", Cost: 1, ClientTime: now}
	var last int64
	for range benchLimit.Limit {
		d, err := algorithms.Do(ctx, lim, c, req)()
		if err != nil {
			return 0, err
		}
		last = d.TimeMicros
	}
	// The keys at the last decision's time: fixed-window's and sliding-counter's are named by the
	// window, which may have ended since.
	if last > 0 {
		req.FixedTime = time.UnixMicro(last)
	}
	var total int64
	for _, k := range lim.Keys(req) {
		n, err := c.MemoryUsage(ctx, k, 0).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("MEMORY USAGE %s: %w", k, err)
		}
		total += n
	}
	return total, nil
}

// adminCommands are not part of a decision.
var adminCommands = map[string]bool{
	"info": true, "config": true, "ping": true, "client": true, "hello": true, "cluster": true,
	"command": true, "script": true, "memory": true, "select": true, "auth": true, "scan": true,
	"del": true, "unlink": true, "dbsize": true, "exists": true, "type": true, "function": true,
}

// serverMicros returns the usec INFO commandstats counted since the last CONFIG RESETSTAT: that of
// EVALSHA, EVAL and FCALL when scripts or functions ran (commands a script calls are counted inside it, and again on
// their own lines), else the sum over every non-admin command.
func serverMicros(ctx context.Context, c redis.UniversalClient) (float64, error) {
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, err
	}
	var scripts, plain float64
	for line := range strings.Lines(info) {
		line = strings.TrimSpace(line)
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
		if !ok || !strings.HasPrefix(line, "cmdstat_") {
			continue
		}
		usec := -1.0
		for f := range strings.SplitSeq(rest, ",") {
			if v, ok := strings.CutPrefix(f, "usec="); ok {
				usec, err = strconv.ParseFloat(v, 64)
				if err != nil {
					return 0, fmt.Errorf("commandstats %q: %w", line, err)
				}
			}
		}
		if usec < 0 {
			return 0, fmt.Errorf("commandstats %q: no usec", line)
		}
		switch {
		case name == "evalsha" || name == "eval" || name == "evalsha_ro" || name == "eval_ro" || name == "fcall" || name == "fcall_ro":
			scripts += usec
		case !adminCommands[strings.SplitN(name, "|", 2)[0]]:
			plain += usec
		}
	}
	if scripts > 0 {
		return scripts, nil
	}
	return plain, nil
}
