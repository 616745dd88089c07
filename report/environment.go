package report

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/limitbench/limitbench/internal/cpus"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/result"
)

// HarnessEnvironment returns the harness side of an environment: this machine's CPUs, the
// GOMAXPROCS in effect now and, when a command applied its CPU policy, why and how many
// redis-servers it counted on this machine (cpus.Applied), Go's and limitbench's versions, OS and
// architecture. AddTarget adds the Redis side.
func HarnessEnvironment() result.Environment {
	env := result.Environment{
		CPUs:           runtime.NumCPU(),
		GOMAXPROCS:     runtime.GOMAXPROCS(0),
		GoVersion:      runtime.Version(),
		HarnessVersion: harnessVersion(),
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

// harnessVersion is the module version, or the VCS revision the binary was built from.
func harnessVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}
