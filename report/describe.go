package report

import (
	"fmt"
	"runtime"
	"slices"

	"github.com/limitbench/limitbench/internal/cpus"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/version"
	"github.com/limitbench/limitbench/scenarios"
)

// DescribeScenario returns the scenario section of a result for s loaded from file (as the user
// named it): its name, description and seed, its load in words (loop, mode, arrival, keys, skew)
// and its effective settings, each concept in its own type.
func DescribeScenario(s *scenarios.Scenario, file string) Scenario {
	rs := Scenario{
		Name:             s.Name,
		Description:      s.Description,
		File:             file,
		Seed:             s.Seed,
		DurationS:        s.Duration.Seconds(),
		Clients:          s.Clients,
		Loop:             "closed",
		Mode:             string(s.ClientMode),
		Keys:             s.Keys.String(),
		ExpectViolations: slices.Clone(s.Expect.Violations),
	}
	if s.ClientMode == load.ModePipeline {
		rs.Mode = fmt.Sprintf("pipeline(%d)", s.PipelineDepth)
	}
	if s.Arrival != nil {
		rs.Loop = "open"
		rs.Arrival = s.Arrival.String()
	}
	rs.Skew = s.ClockSkew.String()
	for _, t := range s.Topologies {
		rs.Topologies = append(rs.Topologies, string(t))
	}
	for _, e := range s.ResolveAlgorithms() {
		rs.Algorithms = append(rs.Algorithms, e.Name)
	}
	rs.Settings = settingsOf(s)
	return rs
}

// settingsOf returns the effective settings of s, for result.json.
func settingsOf(s *scenarios.Scenario) *Settings {
	st := &Settings{
		Limit: s.Limit, Cost: s.Cost, WarmupS: s.Warmup.Seconds(), DurationS: s.Duration.Seconds(),
		Clients: s.Clients, ClientMode: s.ClientMode, Arrival: s.Arrival, Keys: s.Keys, ClockSkew: s.ClockSkew,
		Expect: scenarios.Expect{
			Violations: slices.Clone(s.Expect.Violations), MayViolate: slices.Clone(s.Expect.MayViolate),
		},
	}
	if s.ClientMode == load.ModePipeline {
		st.PipelineDepth = s.PipelineDepth
	}
	for _, e := range s.ResolveAlgorithms() {
		st.Algorithms = append(st.Algorithms, e.Name)
		if c := e.Custom; c != nil {
			st.Custom = append(st.Custom, *c)
		}
	}
	for _, th := range s.Thresholds {
		st.Thresholds = append(st.Thresholds, th.Text)
	}
	if s.Persistence != redisenv.PersistenceNone {
		st.Persistence = string(s.Persistence)
	}
	for _, f := range s.Faults {
		st.Faults = append(st.Faults, fmt.Sprintf("%s, recovery %s", f.Name(), f.Recovery))
	}
	if s.Wait.Enabled() {
		w := s.Wait
		st.Wait = &w
	}
	return st
}

// HarnessEnvironment returns the harness side of an environment: this machine's CPUs, the
// GOMAXPROCS in effect now and, when a command applied its CPU policy, why and how many
// redis-servers it counted on this machine (cpus.Applied), Go's and limitbench's versions, OS and
// architecture. AddTarget adds the Redis side.
func HarnessEnvironment() Environment {
	v := version.Get()
	env := Environment{
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
func (env *Environment) AddTarget(info redisenv.Info) {
	env.Backend = string(info.Backend)
	env.Image = info.Image
	env.RedisVersion = info.Version
	if len(info.Nodes) > env.Nodes {
		env.Nodes = len(info.Nodes)
	}
}
