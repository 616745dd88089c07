// Package bench holds limitbench's Go benchmarks (go test -bench) and the gate's baseline files.
package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
	"github.com/limitbench/limitbench/scripts"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// benchLimit is the limit every algorithm is benchmarked at.
var benchLimit = algorithms.Limit{Limit: 100, Window: time.Second}

// benchSubjects is how many subjects the calls go round: at the sequential rate of one client
// each subject stays below its limit most of the time, so most calls take the admitting path.
const benchSubjects = 1000

// BenchmarkAlgorithms measures, for every registered algorithm and for the bare INCR + PEXPIRE
// reference script (scripts/reference.lua), on a single Redis at limit 100 per second:
//
//   - server-µs/decision: Redis CPU per decision from INFO commandstats (reset with CONFIG
//     RESETSTAT before the loop): the usec of EVALSHA/EVAL for scripted algorithms (which
//     includes the commands the script calls), else the sum over the commands sent;
//   - client-ns/decision: wall time per decision of one client sending one request at a time
//     (ns/op, which also includes the round trip);
//   - bytes/subject: MEMORY USAGE of the keys of one subject that has just used its 100 permits;
//   - x-reference: server-µs/decision divided by that of the reference in the same run (the issue's
//     target for gcra, token-bucket and fixed-window is at most 1.5).
//
// Compare algorithms by their ratio to "reference", which survives a change of machine.
func BenchmarkAlgorithms(b *testing.B) {
	env := redistest.Single(b)
	ctx := context.Background()
	c := env.Target.Client
	ref, err := newReference(ctx, c, env.Prefix)
	if err != nil {
		b.Fatal(err)
	}
	var refPerDecision float64 // server µs per decision of the reference, once measured
	run := func(b *testing.B, lim algorithms.Limiter, isRef bool) {
		bytes, err := subjectBytes(ctx, c, lim)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.ConfigResetStat(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		start := time.Now()
		for i := 0; b.Loop(); i++ {
			req := algorithms.Request{Subject: "s" + strconv.Itoa(i%benchSubjects), Client: "c1", Cost: 1, ClientTime: time.Now()}
			if _, err := lim.Do(ctx, c, req)(); err != nil {
				b.Fatal(err)
			}
		}
		elapsed := time.Since(start)
		b.StopTimer()
		usec, err := serverMicros(ctx, c)
		if err != nil {
			b.Fatal(err)
		}
		perDecision := usec / float64(b.N)
		b.ReportMetric(perDecision, "server-µs/decision")
		if isRef {
			refPerDecision = perDecision
		} else if refPerDecision > 0 {
			b.ReportMetric(perDecision/refPerDecision, "x-reference")
		}
		b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N), "client-ns/decision")
		b.ReportMetric(float64(bytes), "bytes/subject")
	}
	b.Run("reference", func(b *testing.B) { run(b, ref, true) })
	for _, a := range algorithms.All() {
		name := a.Describe().Name
		b.Run(name, func(b *testing.B) {
			lim, err := a.Prepare(ctx, c, benchLimit, env.Prefix+name+":")
			if err != nil {
				b.Fatal(err)
			}
			run(b, lim, false)
		})
	}
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

// reference is the bare INCR + PEXPIRE script as a Limiter that admits everything.
type reference struct {
	script *redis.Script
	prefix string
}

func newReference(ctx context.Context, c redis.UniversalClient, prefix string) (*reference, error) {
	src, err := scripts.FS.ReadFile("reference.lua")
	if err != nil {
		return nil, err
	}
	s := redis.NewScript(string(src))
	if err := s.Load(ctx, c).Err(); err != nil {
		return nil, fmt.Errorf("load reference.lua: %w", err)
	}
	return &reference{script: s, prefix: prefix}, nil
}

func (r *reference) Keys(req algorithms.Request) []string {
	return []string{r.prefix + "ref:{" + req.Subject + "}"}
}

func (r *reference) Do(ctx context.Context, c redis.Cmdable, req algorithms.Request) algorithms.Pending {
	cmd := r.script.Run(ctx, c, r.Keys(req), benchLimit.Window.Milliseconds())
	return func() (algorithms.Decision, error) {
		if _, err := cmd.Int64(); err != nil {
			return algorithms.Decision{}, fmt.Errorf("reference: %w", err)
		}
		return algorithms.Decision{Allowed: true}, nil
	}
}
