// Package bench holds limitbench's Go benchmarks (go test -bench) and the gate's baseline files.
package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// benchLimit is the limit every algorithm is benchmarked at.
var benchLimit = algorithms.Limit{Limit: 100, Window: time.Second}

// benchSubjects is how many subjects the calls go round: at the sequential rate of one client
// each subject stays below its limit most of the time, so most calls take the admitting path.
const benchSubjects = 1000

// benchRounds and benchRoundCalls shape one iteration of BenchmarkAlgorithms: benchRounds rounds,
// each benchRoundCalls calls of the reference and as many of the algorithm, in alternating order.
// Every figure comes from b.N·benchRounds rounds, so even `-benchtime 1x` measures
// benchRounds·benchRoundCalls calls of each (make bench's `-benchtime 2x`: 10 rounds, 1000 calls).
const (
	benchRounds     = 5
	benchRoundCalls = 100
)

// BenchmarkAlgorithms measures, for the bare INCR + PEXPIRE reference script
// (algorithms.Reference(), scripts/reference.lua) and every registered algorithm, on a single
// Redis at limit 100 per second, one client sending one request at a time:
//
//   - server-µs/call: Redis time per call from INFO commandstats: the usec of EVALSHA/EVAL for
//     scripted algorithms (which includes the commands the script calls), else the sum over the
//     commands sent; the median over the rounds;
//   - x-reference: server-µs/call divided by that of the reference script in the same round, the
//     median over the rounds. The reference runs inside every sub-benchmark, so the ratio is there
//     whatever -bench selects, and the round-by-round median is little moved by the bursts of a
//     loaded machine. The target for gcra, token-bucket and fixed-window is at most 1.5.
//     The "reference" row compares the reference with a second copy of itself: its distance from 1
//     is the noise of the ratio;
//   - client-µs/call: wall time of one call of the algorithm as the client sees it (round trip
//     included), the mean over every call;
//   - allowed/call: the share of the algorithm's calls that were allowed. The subjects are many
//     enough that it is about 1: the algorithms take their admitting path, as the reference (which
//     admits everything) always does, and both see the same subjects in the same order;
//   - bytes/subject: MEMORY USAGE of the keys of one subject that has just used its 100 permits.
//
// The "floor" rows are not algorithms (floors): each sends only the Redis commands that any
// server-clock limiter ("floor"), or one algorithm's admitting path ("floor-<algorithm>"), cannot
// do without, and nothing else, so its x-reference is the least that limiter, or that design of
// the algorithm, can cost on this machine and Redis.
//
// Each round resets INFO commandstats (CONFIG RESETSTAT) before each batch and reads it after, so
// ns/op is the time of one iteration (benchRounds rounds of both scripts), not of one call.
// Compare algorithms by x-reference, which survives a change of machine.
func BenchmarkAlgorithms(b *testing.B) {
	env := redistest.Single(b)
	ctx := context.Background()
	c := env.Target.Client
	type benchCase struct {
		name    string
		prepare func(prefix string) (algorithms.Limiter, error)
	}
	prepareFor := func(a algorithms.Algorithm) func(string) (algorithms.Limiter, error) {
		return func(prefix string) (algorithms.Limiter, error) { return a.Prepare(ctx, c, benchLimit, prefix) }
	}
	cases := []benchCase{{algorithms.ReferenceName, prepareFor(algorithms.Reference())}}
	for _, f := range floors {
		cases = append(cases, benchCase{f.name, func(prefix string) (algorithms.Limiter, error) {
			s := redis.NewScript(f.src)
			return floorLimiter{script: s, prefix: prefix, keyed: f.keyed}, s.Load(ctx, c).Err()
		}})
	}
	for _, a := range algorithms.All() {
		cases = append(cases, benchCase{a.Describe().Name, prepareFor(a)})
	}
	for i, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			// Prefixes of one length for every algorithm: MEMORY USAGE counts the key names.
			prefix := fmt.Sprintf("%sa%02d:", env.Prefix, i)
			lim, err := bc.prepare(prefix)
			if err != nil {
				b.Fatal(err)
			}
			ref, err := algorithms.Reference().Prepare(ctx, c, benchLimit, prefix+"r:")
			if err != nil {
				b.Fatal(err)
			}
			bytes, err := subjectBytes(ctx, c, lim)
			if err != nil {
				b.Fatal(err)
			}
			var (
				perCall, ratios []float64 // one per round
				wall            time.Duration
				round, allowed  int
			)
			for b.Loop() {
				for range benchRounds {
					first := round * benchRoundCalls
					var refU, limU float64
					var w time.Duration
					var n int
					if round%2 == 0 {
						refU, _, _, err = measureBatch(ctx, c, ref, first)
						if err == nil {
							limU, w, n, err = measureBatch(ctx, c, lim, first)
						}
					} else {
						limU, w, n, err = measureBatch(ctx, c, lim, first)
						if err == nil {
							refU, _, _, err = measureBatch(ctx, c, ref, first)
						}
					}
					if err != nil {
						b.Fatal(err)
					}
					round++
					wall += w
					allowed += n
					perCall = append(perCall, limU/benchRoundCalls)
					if refU > 0 {
						ratios = append(ratios, limU/refU)
					}
				}
			}
			b.ReportMetric(median(perCall), "server-µs/call")
			if len(ratios) > 0 {
				b.ReportMetric(median(ratios), "x-reference")
			}
			b.ReportMetric(float64(wall.Microseconds())/float64(round*benchRoundCalls), "client-µs/call")
			b.ReportMetric(float64(allowed)/float64(round*benchRoundCalls), "allowed/call")
			b.ReportMetric(float64(bytes), "bytes/subject")
		})
	}
}

// floors are the scripts of the "floor" rows. Each sends the Redis commands that a server-clock
// limiter, or one algorithm's admitting path, cannot do without: TIME, and the reads and writes of
// the algorithm's state (fixed-window: HINCRBY; gcra: GET, SET … PXAT; token-bucket: HMGET, HSET,
// PEXPIREAT), with arguments taken as they are from TIME's reply, and replies with one string of
// them, as the algorithms do; it does no arithmetic, number conversion or formatting, which the
// algorithms cannot avoid. Without arithmetic a key can only expire at the end of the second, so
// a floor's subject often still has its key when it comes round again, where gcra's and
// token-bucket's (gone 10 ms after one admission at limit 100) never do; by instruction counts
// (callgrind) that changes these floors by about 3%.
var floors = []struct {
	name, src string
	keyed     bool // the script takes the subject's key as KEYS[1]
}{
	{"floor", `local t = redis.call('TIME')
return '1 ' .. t[1] .. ' ' .. t[2]`, false},
	{"floor-fixed-window", `local t = redis.call('TIME')
redis.call('HINCRBY', KEYS[1], t[1], '1')
return '1 1 ' .. t[1] .. ' ' .. t[1] .. ' ' .. t[2]`, true},
	{"floor-gcra", `local t = redis.call('TIME')
redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], t[2], 'PXAT', t[1] .. '999')
return '1 ' .. t[2] .. ' ' .. t[1] .. ' ' .. t[2]`, true},
	{"floor-token-bucket", `local t = redis.call('TIME')
redis.call('HMGET', KEYS[1], 't', 'ts')
redis.call('HSET', KEYS[1], 't', t[2], 'ts', t[1])
redis.call('PEXPIREAT', KEYS[1], t[1] .. '999')
return '1 ' .. t[2] .. ' ' .. t[1] .. ' ' .. t[1] .. ' ' .. t[2]`, true},
}

// floorLimiter runs one of floors, on the subject's key when keyed; it admits everything.
type floorLimiter struct {
	script *redis.Script
	prefix string
	keyed  bool
}

func (f floorLimiter) Keys(req algorithms.Request) []string {
	if !f.keyed {
		return nil
	}
	return []string{f.prefix + "floor:{" + req.Subject + "}"}
}

func (f floorLimiter) Do(ctx context.Context, c redis.Cmdable, req algorithms.Request) algorithms.Pending {
	cmd := f.script.Run(ctx, c, f.Keys(req))
	return func() (algorithms.Decision, error) {
		if _, err := cmd.Text(); err != nil {
			return algorithms.Decision{}, fmt.Errorf("floor: %w", err)
		}
		return algorithms.Decision{Allowed: true}, nil
	}
}

// measureBatch resets INFO commandstats, sends benchRoundCalls requests to lim one at a time
// (subjects first, first+1, … modulo benchSubjects) and returns the Redis usec they took
// (serverMicros), their wall time on the client and how many were allowed.
func measureBatch(ctx context.Context, c redis.UniversalClient, lim algorithms.Limiter, first int) (float64, time.Duration, int, error) {
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		return 0, 0, 0, err
	}
	allowed := 0
	start := time.Now()
	for i := first; i < first+benchRoundCalls; i++ {
		req := algorithms.Request{Subject: "s" + strconv.Itoa(i%benchSubjects), Client: "c1", Cost: 1, ClientTime: time.Now()}
		d, err := lim.Do(ctx, c, req)()
		if err != nil {
			return 0, 0, 0, err
		}
		if d.Allowed {
			allowed++
		}
	}
	wall := time.Since(start)
	usec, err := serverMicros(ctx, c)
	return usec, wall, allowed, err
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
// exact) of the keys it uses then.
func subjectBytes(ctx context.Context, c redis.UniversalClient, lim algorithms.Limiter) (int64, error) {
	now := time.Now()
	req := algorithms.Request{Subject: "mem-" + strconv.FormatInt(now.UnixNano(), 36), Client: "c1", Cost: 1, ClientTime: now}
	for range benchLimit.Limit {
		if _, err := lim.Do(ctx, c, req)(); err != nil {
			return 0, err
		}
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
	"del": true, "unlink": true, "dbsize": true, "exists": true, "type": true,
}

// serverMicros returns the usec INFO commandstats counted since the last CONFIG RESETSTAT: that of
// EVALSHA and EVAL when scripts ran (commands a script calls are counted inside it, and again on
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
		case name == "evalsha" || name == "eval" || name == "evalsha_ro" || name == "eval_ro":
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
