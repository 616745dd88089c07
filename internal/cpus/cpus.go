// Package cpus owns the process-wide CPU policy of a command: how many OS threads run Go code
// (GOMAXPROCS) for the load generator, pinning the load generator and the local Redis servers to
// separate CPUs, and holding the CPUs out of deep idle states. Apply sets all of it at once and
// returns its undo; Applied tells a result what it did. Redis is on this machine when the
// environment starts it, and when an external target's address is a loopback one, localhost or an
// address of this machine: the generator then leaves a CPU to each such server either way. Only
// commands and benchmarks, which own their process, call Apply; library code never changes
// GOMAXPROCS or this process's CPUs (it pins the redis-server children it started to the CPUs
// Apply chose, see State.RedisCPUs).
package cpus

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sync"

	"github.com/limitbench/limitbench/internal/redisenv"
)

// Policy is what a command asks of the process's CPUs for a run against the environment Env
// starts for Topologies.
type Policy struct {
	Env        redisenv.Config
	Topologies []redisenv.Topology
	// Procs is the load generator's GOMAXPROCS (--procs); 0 chooses: the CPUs this process is
	// pinned to when Pin moved it, else one CPU left to each redis-server on this machine and at
	// least one for the generator, else (Redis on another machine) Go's default. Redis is on this
	// machine when Env starts it (process and container backends), and for an external target
	// whose address is a loopback one (127.0.0.0/8, ::1), localhost, or an address of this
	// machine: each such seed counts as a server (see localAddr).
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
	// Procs is the GOMAXPROCS in effect; ProcsNote says why, in one line for the output: given by
	// --procs, the CPUs the generator is pinned to, the CPUs left to the redis-servers on this
	// machine, or Go's default against a Redis elsewhere.
	Procs     int
	ProcsNote string
	// LocalServers is how many redis-servers the policy counted on this machine (0: Redis runs
	// elsewhere).
	LocalServers int
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
	servers, where := localServers(p.Env, p.Topologies, net.InterfaceAddrs)
	st.LocalServers = servers
	st.RedisCPUs, st.HarnessCPUs, st.NotPinned = pin(p, &undo)
	procs, note := p.Procs, ""
	switch {
	case procs > 0:
		note = fmt.Sprintf("load generator on GOMAXPROCS %d: --procs (%s)", procs, where)
	case st.HarnessCPUs != nil:
		procs = len(st.HarnessCPUs)
		note = fmt.Sprintf("load generator on GOMAXPROCS %d: the CPUs it is pinned to (--procs to change)", procs)
	default:
		procs, note = generatorProcs(runtime.NumCPU(), servers, where)
	}
	if procs > 0 && procs != runtime.GOMAXPROCS(0) {
		prev := runtime.GOMAXPROCS(procs)
		undo = append(undo, func() { runtime.GOMAXPROCS(prev) })
	}
	st.Procs, st.ProcsNote = runtime.GOMAXPROCS(0), note
	if procs == 0 {
		st.ProcsNote = fmt.Sprintf("load generator on GOMAXPROCS %d, Go's default: %s (--procs to change)", st.Procs, where)
	}
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
			st.AwakeNote = "held awake while the command runs (wake-up latency limit 0 µs)"
		}
	}
	undo = append(undo, record(st))
	return st, func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
}

// applied is the State of the Apply in effect, for Applied.
var applied struct {
	sync.Mutex
	st State
	ok bool
}

// record makes st the State Applied returns and returns the undo that restores the one before.
func record(st State) func() {
	applied.Lock()
	defer applied.Unlock()
	prev, ok := applied.st, applied.ok
	applied.st, applied.ok = st, true
	return func() {
		applied.Lock()
		defer applied.Unlock()
		applied.st, applied.ok = prev, ok
	}
}

// Applied returns what the Apply in effect did (the last one not undone), for a result's
// description of the machine; false when no Apply is in effect.
func Applied() (State, bool) {
	applied.Lock()
	defer applied.Unlock()
	return applied.st, applied.ok
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

// generatorProcs returns the GOMAXPROCS Apply gives the load generator when it shares cpus CPUs
// with servers redis-servers on this machine (localServers, which says where), and a note that
// says why; 0 and no note keep Go's default (Redis on another machine). --procs overrides this
// choice.
//
// When Redis runs on this machine, Go's scheduler keeps idle Ps' threads spinning in search of
// work whenever goroutines wake, and on a small machine those cycles come out of Redis's CPU:
// measured by BenchmarkLoadgen on 2 CPUs against one local redis-server, a closed loop of 32
// clients made 36,000 to 43,000 decisions per second with GOMAXPROCS 2 and 51,000 to 67,000 with
// GOMAXPROCS 1 (several runs on a noisy machine). So the generator leaves one CPU to each local
// redis-server, keeping at least one for itself. A server reached on a loopback address is no
// different: through an external URL on 127.0.0.1, Go's default GOMAXPROCS 2 made depth-16
// throughput 0.83 of redis-benchmark's where the process backend made about 1.0.
func generatorProcs(cpus, servers int, where string) (int, string) {
	if servers == 0 {
		return 0, ""
	}
	procs := max(1, cpus-servers)
	return procs, fmt.Sprintf("load generator on GOMAXPROCS %d: %d CPU(s), %s (--procs to change)", procs, cpus, where)
}
