package scenarios

import (
	"fmt"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/result"
)

// Overrides are command-line changes to a loaded scenario. A nil field leaves the scenario as it is.
type Overrides struct {
	// Duration replaces duration (--duration).
	Duration *time.Duration
	// Rate replaces the arrival schedule, whatever its form, with this constant rate across all
	// clients (--rate); a closed-loop scenario becomes open loop.
	Rate *float64
	// Clients replaces clients (--clients).
	Clients *int
	// Seed replaces seed (--seed).
	Seed *int64
	// Call replaces call (--call).
	Call *algorithms.CallMode
	// Topologies replaces topologies (--topology).
	Topologies []redisenv.Topology
	// WaitReplicas replaces wait_replicas (--wait-replicas; 0 sends no WAIT, and leaves out the
	// scenario's wait_timeout and wait_short with it).
	WaitReplicas *int
	// WaitShort replaces wait_short (--wait-short): admit or deny.
	WaitShort *string
	// SpeedOnly replaces speed_only (--speed-only): true covers every algorithm, false none.
	SpeedOnly *bool
	// Algorithms replaces the algorithms list (--algorithms). Each name is a built-in algorithm,
	// "all", or the name of one of the scenario's custom entries (which is kept with its script).
	// Expectations and algorithm-scoped thresholds that name an algorithm no longer run are dropped.
	Algorithms []string
}

// Apply changes s as o says and validates the result. Problems with a value set by a flag name
// the flag instead of a line of the file.
func (s *Scenario) Apply(o Overrides) error {
	return s.apply(o, algorithms.Names())
}

func (s *Scenario) apply(o Overrides, builtins []string) error {
	if s.flags == nil {
		s.flags = map[string]string{}
	}
	if o.Duration != nil {
		s.Duration = *o.Duration
		s.flags["duration"] = "--duration"
	}
	if o.SpeedOnly != nil {
		s.SpeedOnly = nil
		if *o.SpeedOnly {
			s.SpeedOnly = result.SpeedOnly{result.AllAlgorithms}
		}
		s.flags["speed_only"] = "--speed-only"
	}
	if o.Rate != nil {
		s.Arrival = &arrival.Arrival{Rate: *o.Rate}
		for f := range s.pos {
			if isUnder(f, "arrival") {
				delete(s.pos, f)
			}
		}
		s.flags["arrival"] = "--rate"
		s.flags["arrival.rate"] = "--rate"
	}
	if o.Clients != nil {
		s.Clients = *o.Clients
		s.flags["clients"] = "--clients"
	}
	if o.Seed != nil {
		s.Seed = *o.Seed
		s.flags["seed"] = "--seed"
	}
	if o.Call != nil {
		s.Call = *o.Call
		s.flags["call"] = "--call"
	}
	if o.WaitReplicas != nil {
		s.Wait.Replicas = *o.WaitReplicas
		s.flags["wait_replicas"] = "--wait-replicas"
		if s.Wait.Replicas == 0 {
			s.Wait.Timeout, s.Wait.DenyShort, s.waitShort = 0, false, ""
			delete(s.pos, "wait_timeout")
			delete(s.pos, "wait_short")
		}
	}
	if o.WaitShort != nil {
		s.waitShort = *o.WaitShort
		s.Wait.DenyShort = s.waitShort == WaitShortDeny
		s.flags["wait_short"] = "--wait-short"
	}
	if o.Topologies != nil {
		s.Topologies = append([]redisenv.Topology(nil), o.Topologies...)
		s.flags["topologies"] = "--topology"
	}
	if o.Algorithms != nil {
		s.selectAlgorithms(o.Algorithms)
		s.flags["algorithms"] = "--algorithms"
		run := s.names(builtins)
		keep := func(names []string) []string {
			var out []string
			for _, n := range names {
				if contains(run, n) {
					out = append(out, n)
				}
			}
			return out
		}
		s.Expect.Violations = keep(s.Expect.Violations)
		s.Expect.MayViolate = keep(s.Expect.MayViolate)
		if !s.SpeedOnly.Covers(result.AllAlgorithms) {
			s.SpeedOnly = keep(s.SpeedOnly)
		}
		var ts []Threshold
		for _, t := range s.Thresholds {
			if t.Algorithm == "" || contains(run, t.Algorithm) {
				ts = append(ts, t)
			}
		}
		s.Thresholds = ts
	}
	return s.validate(builtins, nil)
}

// selectAlgorithms replaces the algorithms list with names, each a custom entry of the list
// (kept with its script) or a built-in name. A kept custom entry's fields keep their places in
// the file under its new index, and every other entry's places go, so that a problem of an
// entry names that entry (issue 28: an entry that was not selected was blamed by its index).
func (s *Scenario) selectAlgorithms(names []string) {
	customs := map[string]int{}
	for i, e := range s.Algorithms {
		if e.Custom != nil {
			customs[e.Name] = i
		}
	}
	old := s.Algorithms
	pos := map[string]position{}
	for f, at := range s.pos {
		if !isUnder(f, "algorithms") || f == "algorithms" {
			pos[f] = at
		}
	}
	s.Algorithms = nil
	for _, n := range names {
		e := AlgorithmEntry{Name: n}
		if i, ok := customs[n]; ok {
			e.Custom = old[i].Custom
			from, to := fmt.Sprintf("algorithms[%d]", i), fmt.Sprintf("algorithms[%d]", len(s.Algorithms))
			for f, at := range s.pos {
				if isUnder(f, from) {
					pos[to+f[len(from):]] = at
				}
			}
		}
		s.Algorithms = append(s.Algorithms, e)
	}
	s.pos = pos
}
