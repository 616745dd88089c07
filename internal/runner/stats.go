package runner

import (
	"bufio"
	"context"
	"strconv"
	"strings"

	"github.com/limitbench/limitbench/internal/redisenv"
)

// serverStats is what the masters of a target report about themselves, summed over masters.
type serverStats struct {
	// calls and usec are summed over INFO commandstats, leaving out the commands the harness
	// itself sends to measure (see adminCommands).
	calls, usec int64
	// cpu is used_cpu_user + used_cpu_sys, seconds.
	cpu float64
	// memory is used_memory, bytes.
	memory int64
}

// adminCommands are the commands the harness sends around a measurement; they are left out of
// the per-decision cost.
var adminCommands = map[string]bool{
	"info": true, "config": true, "scan": true, "memory": true, "ping": true, "script": true,
	"cluster": true, "client": true, "hello": true, "auth": true, "command": true, "dbsize": true,
	"unlink": true, "time": true, "select": true, "readonly": true,
}

// snapshot reads INFO commandstats, cpu and memory from every master of t.
func snapshot(ctx context.Context, t *redisenv.Target) (serverStats, error) {
	var s serverStats
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
				s.calls += statField(v, "calls")
				s.usec += statField(v, "usec")
			case k == "used_cpu_user" || k == "used_cpu_sys":
				f, _ := strconv.ParseFloat(v, 64)
				s.cpu += f
			case k == "used_memory":
				n, _ := strconv.ParseInt(v, 10, 64)
				s.memory += n
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
