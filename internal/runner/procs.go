package runner

import (
	"fmt"

	"github.com/limitbench/limitbench/internal/redisenv"
)

// LocalServers returns how many redis-server processes cfg starts on this machine for the
// largest of topologies: 0 for an external target.
func LocalServers(cfg redisenv.Config, topologies []redisenv.Topology) int {
	if cfg.Backend == redisenv.BackendExternal {
		return 0
	}
	n := 1
	for _, t := range topologies {
		if t == redisenv.TopologyCluster {
			masters := cfg.Masters
			if masters == 0 {
				masters = 3
			}
			n = max(n, masters*(1+cfg.Replicas))
		}
	}
	return n
}

// GeneratorProcs returns the GOMAXPROCS the commands (and benchmarks) give the load generator
// when it shares cpus CPUs with servers local redis-servers (LocalServers), and a note that says
// why; 0 and no note keep Go's default (an external server). The library never sets GOMAXPROCS:
// the command that owns the process does, and its --procs flag overrides this choice.
//
// When Redis runs on this machine, Go's scheduler keeps idle Ps' threads spinning in search of
// work whenever goroutines wake, and on a small machine those cycles come out of Redis's CPU:
// measured by BenchmarkLoadgen on 2 CPUs against one local redis-server, a closed loop of 32
// clients made 36,000 to 43,000 decisions per second with GOMAXPROCS 2 and 51,000 to 67,000 with
// GOMAXPROCS 1 (several runs on a noisy machine). So the generator leaves one CPU to each local
// redis-server, keeping at least one for itself.
func GeneratorProcs(cpus, servers int) (int, string) {
	if servers == 0 {
		return 0, ""
	}
	procs := max(1, cpus-servers)
	return procs, fmt.Sprintf("load generator on GOMAXPROCS %d: %d CPU(s), %d local redis-server(s) (--procs to change)", procs, cpus, servers)
}
