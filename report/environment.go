package report

import (
	"fmt"
	"runtime"

	"github.com/limitbench/limitbench/internal/cpus"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/version"
	"github.com/limitbench/limitbench/result"
)

// HarnessEnvironment returns the harness side of an environment: this machine's CPUs, the
// GOMAXPROCS in effect now and, when a command applied its CPU policy, why and how many
// redis-servers it counted on this machine (cpus.Applied), Go's and limitbench's versions, OS and
// architecture. AddTarget adds the Redis side.
func HarnessEnvironment() result.Environment {
	v := version.Get()
	env := result.Environment{
		CPUs:           runtime.NumCPU(),
		GOMAXPROCS:     runtime.GOMAXPROCS(0),
		GoVersion:      runtime.Version(),
		HarnessVersion: v.Short(),
		HarnessCommit:  v.Commit,
		HarnessDate:    v.Date,
		OS:             runtime.GOOS,
		Arch:           runtime.GOARCH,
	}
	if st, ok := cpus.Applied(); ok {
		env.GOMAXPROCSNote, env.LocalServers, env.IdleNote = st.ProcsNote, st.LocalServers, st.AwakeNote
		if st.RedisCPUs != nil {
			env.PinNote = fmt.Sprintf("redis-servers pinned to CPU(s) %v, the load generator to %v", st.RedisCPUs, st.HarnessCPUs)
		}
	}
	return env
}

// AddTarget fills the Redis side of env from info, a started environment's: backend, image,
// version, and the most nodes of any environment added so far.
func AddTarget(env *result.Environment, info redisenv.Info) {
	env.Backend = string(info.Backend)
	env.Image = info.Image
	env.RedisVersion = info.Version
	if len(info.Nodes) > env.Nodes {
		env.Nodes = len(info.Nodes)
	}
}
