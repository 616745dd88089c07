package measure

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/result"
)

// Cost is the stage that reads what a measurement's decisions cost the server: INFO
// commandstats, cpu and memory of every master just before the load (Begin) and once the load
// is over and Redis answers (Finish), and the keys under the prefix with their memory (MEMORY
// USAGE of a sample). It sets the entry's Server section: µs of command time per call, CPU µs
// per decision and bytes per subject decided. The readings stay in the Cost for a driver that
// needs them (capacity's memory step reads used_memory and the keys' memory). A Cost belongs to
// one measurement; its zero value is ready to use.
type Cost struct {
	// Before and After are the masters' figures around the load.
	Before, After Stats
	// Keys counts the keys under the prefix after the load; Bytes estimates their memory from
	// MEMORY USAGE of up to MemorySample keys per master. KeysErr is why they could not be read
	// (they are then what was read before the error).
	Keys, Bytes int64
	KeysErr     error
}

// Stage returns c as the stage a measurement runs.
func (c *Cost) Stage() Stage { return Stage{Begin: c.begin, Finish: c.finish} }

// begin reads the masters' figures before the load.
func (c *Cost) begin(ctx context.Context, m *Measurement) error {
	var err error
	if c.Before, err = ReadStats(ctx, m.Spec.Target); err != nil {
		return fmt.Errorf("read server stats: %w", err)
	}
	return nil
}

// finish reads the masters' figures and the keys after the load and sets e's Server section.
func (c *Cost) finish(ctx context.Context, m *Measurement, e *result.Entry) error {
	var err error
	if c.After, err = ReadStats(ctx, m.Spec.Target); err != nil {
		return fmt.Errorf("read server stats: %w", err)
	}
	srv := serverCost(c.Before, c.After, m.Result)
	c.Keys, c.Bytes, c.KeysErr = KeyMemory(ctx, m.Spec.Target, m.Spec.Prefix)
	if c.KeysErr == nil && c.Keys > 0 {
		srv.Keys = c.Keys
		if n := m.Verification.Log.SubjectsDecided(); n > 0 {
			srv.BytesPerKey = math.Round(float64(c.Bytes) / float64(n))
		}
	}
	e.Server = srv
	return nil
}

// Stats is what the masters of a target report about themselves, summed over masters.
type Stats struct {
	// Calls and USec are summed over INFO commandstats, leaving out the commands the harness
	// itself sends to measure (see adminCommands).
	Calls, USec int64
	// CPU is used_cpu_user + used_cpu_sys, seconds.
	CPU float64
	// Memory is used_memory, bytes.
	Memory int64
}

// adminCommands are the commands the harness sends around a measurement; they are left out of
// the per-decision cost.
var adminCommands = map[string]bool{
	"info": true, "config": true, "scan": true, "memory": true, "ping": true, "script": true, "function": true,
	"cluster": true, "client": true, "hello": true, "auth": true, "command": true, "dbsize": true,
	"unlink": true, "time": true, "select": true, "readonly": true,
}

// ReadStats reads INFO commandstats, cpu and memory from every master of t.
func ReadStats(ctx context.Context, t *redisenv.Target) (Stats, error) {
	var s Stats
	infos, err := t.InfoAll(ctx, "all")
	if err != nil {
		return s, err
	}
	for _, raw := range infos {
		sc := bufio.NewScanner(strings.NewReader(raw))
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			switch {
			case strings.HasPrefix(k, "cmdstat_"):
				name := strings.TrimPrefix(k, "cmdstat_")
				if adminCommands[strings.SplitN(name, "|", 2)[0]] {
					continue
				}
				s.Calls += statField(v, "calls")
				s.USec += statField(v, "usec")
			case k == "used_cpu_user" || k == "used_cpu_sys":
				f, _ := strconv.ParseFloat(v, 64)
				s.CPU += f
			case k == "used_memory":
				n, _ := strconv.ParseInt(v, 10, 64)
				s.Memory += n
			}
		}
	}
	return s, nil
}

// statField returns the integer field name of a commandstats value such as
// "calls=10,usec=52,usec_per_call=5.20,rejected_calls=0,failed_calls=0"; 0 when absent.
func statField(v, name string) int64 {
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(kv, "=")
		if ok && k == name {
			n, _ := strconv.ParseInt(val, 10, 64)
			return n
		}
	}
	return 0
}

// serverCost turns two stats snapshots around a measurement into per-decision costs.
func serverCost(before, after Stats, res *load.Result) result.Server {
	var srv result.Server
	n := float64(res.Counts.Requests + res.Counts.Warmup)
	if n == 0 {
		return srv
	}
	if d := after.USec - before.USec; d > 0 {
		srv.USecPerCall = result.Round3(float64(d) / n)
	}
	if d := after.CPU - before.CPU; d > 0 {
		srv.CPUUSecPerDecision = result.Round3(d * 1e6 / n)
	}
	return srv
}

// MemorySample is the most keys per master whose MEMORY USAGE KeyMemory reads; the total is
// scaled from them.
const MemorySample = 500

// KeyMemory counts the keys under prefix on every master and estimates their memory from MEMORY
// USAGE of up to MemorySample keys per master, scaled to all of them.
func KeyMemory(ctx context.Context, tgt *redisenv.Target, prefix string) (keys, bytes int64, err error) {
	type part struct{ keys, sampled, bytes int64 }
	var mu sync.Mutex
	parts := map[*redis.Client]*part{}
	err = tgt.ScanPrefix(ctx, prefix, func(ctx context.Context, c *redis.Client, batch []string) error {
		mu.Lock()
		p := parts[c]
		if p == nil {
			p = &part{}
			parts[c] = p
		}
		mu.Unlock()
		// One master's batches come one after the other: p is this goroutine's alone.
		for _, k := range batch {
			p.keys++
			if p.sampled < MemorySample {
				if n, err := c.MemoryUsage(ctx, k, 0).Result(); err == nil {
					p.sampled++
					p.bytes += n
				}
			}
		}
		return nil
	})
	for _, p := range parts {
		keys += p.keys
		if p.sampled > 0 {
			bytes += p.bytes * p.keys / p.sampled
		}
	}
	return keys, bytes, err
}
