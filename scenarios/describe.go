package scenarios

import (
	"fmt"
	"slices"

	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/result"
)

// Describe returns result.json's scenario section for s loaded from file (as the user named it):
// its name, description, seed and topologies, and its effective settings, each
// concept in its owner's type. It is the only description of the scenario a result holds; the
// reports put it in words.
func (s *Scenario) Describe(file string) result.Scenario {
	rs := result.Scenario{
		Name:        s.Name,
		Description: s.Description,
		File:        file,
		Seed:        s.Seed,
		Settings:    s.settings(),
	}
	for _, t := range s.Topologies {
		rs.Topologies = append(rs.Topologies, string(t))
	}
	return rs
}

// settings returns the effective settings of s, for result.json: "all" expanded into the
// algorithms it names, with the custom scripts among them, the thresholds as written and each
// fault of the schedule in words.
func (s *Scenario) settings() *result.Settings {
	st := &result.Settings{
		Limit: s.Limit, Cost: s.Cost, WarmupS: s.Warmup.Seconds(), DurationS: s.Duration.Seconds(),
		Clients: s.Clients, ClientMode: s.ClientMode, Arrival: s.Arrival, Keys: s.Keys, ClockSkew: s.ClockSkew,
		Expect: result.Expect{
			Violations: slices.Clone(s.Expect.Violations), MayViolate: slices.Clone(s.Expect.MayViolate),
		},
		SpeedOnly: s.SpeedOnly,
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
