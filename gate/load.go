package gate

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/limitbench/limitbench/result"
)

// LoadDifference is one setting of the load in which two runs of a scenario differ, in words.
type LoadDifference struct {
	// Setting names it: "arrival", "clients", "duration", "keys", "limit", "cost", "client mode",
	// "wait" or "faults".
	Setting string `json:"setting"`
	// Baseline and Current are its values, as `limitbench report` writes them.
	Baseline string `json:"baseline"`
	Current  string `json:"current"`
}

func (d LoadDifference) String() string {
	return fmt.Sprintf("%s %s (baseline) vs %s (current)", d.Setting, d.Baseline, d.Current)
}

// LoadDifferences returns the settings of the load in which baseline and current differ, in a
// fixed order: the arrival (rate, or its schedule), the clients, the measured duration, the keys,
// the limit, the cost, the client mode, the WAIT after each request and the faults. These decide
// what a run's figures measure: a run at twice the rate has, as it should, about twice the
// throughput, which says nothing about the code. Nil when they are the same.
func LoadDifferences(baseline, current *result.Settings) []LoadDifference {
	var out []LoadDifference
	for _, s := range loadSettings {
		if b, c := s.value(baseline), s.value(current); b != c {
			out = append(out, LoadDifference{Setting: s.name, Baseline: b, Current: c})
		}
	}
	return out
}

// loadSettings are the settings LoadDifferences compares, each with its value in words.
var loadSettings = []struct {
	name  string
	value func(*result.Settings) string
}{
	{"arrival", func(s *result.Settings) string {
		if s.Arrival == nil {
			return "closed loop"
		}
		return s.Arrival.String()
	}},
	{"clients", func(s *result.Settings) string { return strconv.Itoa(s.Clients) }},
	{"duration", func(s *result.Settings) string { return strconv.FormatFloat(s.DurationS, 'g', -1, 64) + "s" }},
	{"keys", func(s *result.Settings) string { return s.Keys.String() }},
	{"limit", func(s *result.Settings) string {
		l := s.Limit
		return fmt.Sprintf("%d per %s (burst %d, consumer limit %d)", l.Limit, l.Window, l.Capacity(), l.Consumer())
	}},
	{"cost", func(s *result.Settings) string { return strconv.FormatInt(max(s.Cost, 1), 10) }},
	{"client mode", func(s *result.Settings) string {
		if s.PipelineDepth > 0 {
			return fmt.Sprintf("%s of %d", s.ClientMode, s.PipelineDepth)
		}
		return string(s.ClientMode)
	}},
	{"wait", func(s *result.Settings) string {
		if s.Wait == nil || !s.Wait.Enabled() {
			return "none"
		}
		return s.Wait.String()
	}},
	{"faults", func(s *result.Settings) string {
		if len(s.Faults) == 0 {
			return "none"
		}
		return strings.Join(s.Faults, "; ")
	}},
}

// compareLoads returns the differences of the loads of baseline and current, or, when a result
// does not record its settings, a note that says the loads were not compared; an error wrapping
// ErrLoadMismatch when they differ and p does not allow it.
func compareLoads(baseline, current *result.Result, p Policy) ([]LoadDifference, string, error) {
	b, c := baseline.Scenario.Settings, current.Scenario.Settings
	if b == nil || c == nil {
		return nil, "a result does not record its settings (written before they were): the loads were not compared", nil
	}
	loads := LoadDifferences(b, c)
	if len(loads) > 0 && !p.AllowDifferentLoad {
		return nil, "", fmt.Errorf("%w: %s; a change of the load changes every figure, whatever the code does (--allow-different-load compares them anyway)",
			ErrLoadMismatch, describeLoads(loads))
	}
	return loads, "", nil
}

// describeLoads is the text of the load differences for a headline or an error.
func describeLoads(diffs []LoadDifference) string {
	parts := make([]string, len(diffs))
	for i, d := range diffs {
		parts[i] = d.String()
	}
	return strings.Join(parts, ", ")
}
