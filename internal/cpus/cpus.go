// Package cpus owns the process-wide CPU policy of a command: how many OS threads run Go code
// (GOMAXPROCS) for the load generator, pinning the load generator and the local Redis servers to
// separate CPUs, and holding the CPUs out of deep idle states. Apply sets all of it at once and
// returns its undo. Only commands and benchmarks, which own their process, call it; library code
// never changes GOMAXPROCS or this process's CPUs (it pins the redis-server children it started to
// the CPUs Apply chose, see State.RedisCPUs).
package cpus

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"

	"github.com/limitbench/limitbench/internal/redisenv"
)

// Policy is what a command asks of the process's CPUs for a run against the environment Env
// starts for Topologies.
type Policy struct {
	Env        redisenv.Config
	Topologies []redisenv.Topology
	// Procs is the load generator's GOMAXPROCS (--procs); 0 chooses: the CPUs this process is
	// pinned to when Pin moved it, else one CPU left to each local redis-server and at least one
	// for the generator, else (an external server) Go's default.
	Procs int
	// Pin leaves the last CPU this process may use to Redis and moves this process to the others,
	// when Env starts redis-server as child processes of this one (the process backend, or auto
	// with redis-server on PATH) and the process may use two CPUs or more.
	Pin bool
	// NotPinned, when Pin is false, says why (for the report); default: Redis and the load
	// generator share the machine's CPUs.
	NotPinned string
	// Awake holds every CPU out of deep idle states until the undo (see holdAwake); AwakeNote,
	// when Awake is false, says why (for the report).
	Awake     bool
	AwakeNote string
}

// State is what Apply did, in words and CPUs for reports and logs.
type State struct {
	// Procs is the GOMAXPROCS in effect; ProcsNote says why when Apply chose it ("" when it kept
	// Go's default or was given it).
	Procs     int
	ProcsNote string
	// RedisCPUs are the CPUs the local redis-servers are to be pinned to (nil: not pinned;
	// NotPinned says why), and HarnessCPUs those this process now runs on.
	RedisCPUs, HarnessCPUs []int
	NotPinned              string
	// Awake says the CPUs are held out of deep idle states; AwakeNote says so, or why not.
	Awake     bool
	AwakeNote string
}

// Apply applies p to this process and returns what it did and the function that undoes it all
// (GOMAXPROCS and the CPUs this process may use restored, idle states released).
func Apply(p Policy) (State, func()) {
	var st State
	var undo []func()
	servers := localServers(p.Env, p.Topologies)
	st.RedisCPUs, st.HarnessCPUs, st.NotPinned = pin(p, &undo)
	procs, note := p.Procs, ""
	switch {
	case procs > 0:
	case st.HarnessCPUs != nil:
		procs = len(st.HarnessCPUs)
		note = fmt.Sprintf("load generator on GOMAXPROCS %d: the CPUs it is pinned to (--procs to change)", procs)
	default:
		procs, note = generatorProcs(runtime.NumCPU(), servers)
	}
	if procs > 0 && procs != runtime.GOMAXPROCS(0) {
		prev := runtime.GOMAXPROCS(procs)
		undo = append(undo, func() { runtime.GOMAXPROCS(prev) })
	}
	st.Procs, st.ProcsNote = runtime.GOMAXPROCS(0), note
	switch {
	case !p.Awake:
		st.AwakeNote = "idle states left alone"
		if p.AwakeNote != "" {
			st.AwakeNote += ": " + p.AwakeNote
		}
	default:
		if release, err := holdAwake(); err != nil {
			st.AwakeNote = "idle states left alone: " + err.Error()
		} else {
			undo = append(undo, release)
			st.Awake = true
			st.AwakeNote = "held awake during the sweep (wake-up latency limit 0 µs)"
		}
	}
	return st, func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
}

// pin moves this process off the last CPU it may use, which it leaves to Redis, as p asks; it
// returns both sets of CPUs, or why nothing was pinned, and adds the undo to undo.
func pin(p Policy, undo *[]func()) (redis, harness []int, why string) {
	if !p.Pin {
		why = p.NotPinned
		if why == "" {
			why = "Redis and the load generator share the machine's CPUs"
		}
		return nil, nil, why
	}
	if !childProcesses(p.Env) {
		return nil, nil, fmt.Errorf("%w: backend %s does not run redis-server as a child process", redisenv.ErrCannotPin,
			p.Env.Backend).Error()
	}
	cpus, err := redisenv.ProcessCPUs(os.Getpid())
	switch {
	case err != nil:
		return nil, nil, err.Error()
	case len(cpus) < 2:
		return nil, nil, fmt.Sprintf("this process may use %d CPU(s) of %d", len(cpus), runtime.NumCPU())
	}
	rest := cpus[:len(cpus)-1]
	if err := redisenv.PinProcess(os.Getpid(), rest); err != nil {
		return nil, nil, "the load generator could not be moved: " + err.Error()
	}
	*undo = append(*undo, func() { _ = redisenv.PinProcess(os.Getpid(), cpus) })
	return cpus[len(cpus)-1:], rest, ""
}

// childProcesses reports whether Start with cfg runs redis-server as child processes of this
// process: the process backend, or auto when redis-server is on PATH (the rule auto follows).
func childProcesses(cfg redisenv.Config) bool {
	switch cfg.Backend {
	case redisenv.BackendProcess:
		return true
	case redisenv.BackendAuto, "":
		_, err := exec.LookPath("redis-server")
		return err == nil
	}
	return false
}

// localServers returns how many redis-server processes cfg starts on this machine for the
// largest of topologies: 0 for an external target. A Sentinel topology counts its master and its
// replicas (at least one) and not its three Sentinels, which are redis-server processes too but
// only exchange a few pings a second.
func localServers(cfg redisenv.Config, topologies []redisenv.Topology) int {
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
		if t == redisenv.TopologySentinel {
			n = max(n, 1+max(1, cfg.Replicas))
		}
	}
	return n
}

// generatorProcs returns the GOMAXPROCS Apply gives the load generator when it shares cpus CPUs
// with servers local redis-servers (localServers), and a note that says why; 0 and no note keep
// Go's default (an external server). --procs overrides this choice.
//
// When Redis runs on this machine, Go's scheduler keeps idle Ps' threads spinning in search of
// work whenever goroutines wake, and on a small machine those cycles come out of Redis's CPU:
// measured by BenchmarkLoadgen on 2 CPUs against one local redis-server, a closed loop of 32
// clients made 36,000 to 43,000 decisions per second with GOMAXPROCS 2 and 51,000 to 67,000 with
// GOMAXPROCS 1 (several runs on a noisy machine). So the generator leaves one CPU to each local
// redis-server, keeping at least one for itself.
func generatorProcs(cpus, servers int) (int, string) {
	if servers == 0 {
		return 0, ""
	}
	procs := max(1, cpus-servers)
	return procs, fmt.Sprintf("load generator on GOMAXPROCS %d: %d CPU(s), %d local redis-server(s) (--procs to change)", procs, cpus, servers)
}
