package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/result"
)

// The Scenario and Environment sections of report.md and report.html, one row per aspect.

// scenarioRows returns the Scenario section of the reports: r's scenario (result.Scenario, which
// describes it once, structured) in words, one row per aspect, and when the run took place.
// Rows without a value are left out, so a result written before settings were recorded shows
// its name and seed.
func scenarioRows(r *result.Result) []row {
	var rows rowList
	s := r.Scenario
	name := s.Name
	if s.File != "" {
		name += " (" + s.File + ")"
	}
	rows.add("scenario", name)
	rows.add("seed", strconv.FormatInt(s.Seed, 10))
	if st := s.Settings; st != nil {
		if st.DurationS > 0 {
			rows.add("duration", Number(st.DurationS)+" s per algorithm × topology")
		}
		rows.add("load", loadText(st))
		rows.add("keys", st.Keys.String())
		rows.add("limit", limitText(st))
		if st.WarmupS > 0 {
			rows.add("warmup", Number(st.WarmupS)+" s before each measurement (measured, not verified)")
		}
		rows.add("clock skew", st.ClockSkew.String())
		rows.add("algorithms", strings.Join(st.Algorithms, ", "))
		rows.add("expected to be flagged", strings.Join(st.Expect.Violations, ", "))
		rows.add("tolerated (may violate)", strings.Join(st.Expect.MayViolate, ", "))
		rows.add("thresholds", strings.Join(st.Thresholds, "; "))
	}
	rows.add("wait for replicas", waitText(r))
	if !r.StartedAt.IsZero() {
		when := r.StartedAt.UTC().Format(time.RFC3339)
		if !r.FinishedAt.IsZero() {
			when += " to " + r.FinishedAt.UTC().Format(time.RFC3339)
		}
		rows.add("run", when)
	}
	return rows
}

// environmentRows returns the Environment section of the reports: the Redis r ran on, the
// machine that drove it and its CPU policy, the harness, and the reference script.
func environmentRows(r *result.Result) []row {
	var rows rowList
	env := r.Environment
	backend := env.Backend
	if env.Image != "" {
		backend += " (" + env.Image + ")"
	}
	rows.add("backend", backend)
	rows.add("topology", env.Topology)
	redis := env.RedisVersion
	if env.Nodes > 0 {
		redis += fmt.Sprintf(", %d %s", env.Nodes, Plural(int64(env.Nodes), "node", "nodes"))
	}
	rows.add("Redis", strings.TrimPrefix(redis, ", "))
	machine := []string{}
	if env.CPUs > 0 {
		machine = append(machine, fmt.Sprintf("%d CPUs", env.CPUs))
	}
	if env.GOMAXPROCS > 0 {
		machine = append(machine, fmt.Sprintf("GOMAXPROCS %d", env.GOMAXPROCS))
	}
	if env.OS != "" {
		machine = append(machine, env.OS+"/"+env.Arch)
	}
	rows.add("machine", strings.Join(machine, ", "))
	rows.add("CPU idle states", env.IdleNote)
	rows.add("CPU pinning", env.PinNote)
	rows.add("harness", strings.TrimSpace(env.HarnessVersion+" "+env.GoVersion))
	if r.Reference != "" {
		rows.add("reference script", r.Reference)
	}
	return rows
}

// rowList collects the rows of a section, leaving out those without a value.
type rowList []row

func (l *rowList) add(k, val string) {
	if val != "" {
		*l = append(*l, row{k, val})
	}
}

// loadText describes st's load in words: the loop, the arrival profile of an open loop, the
// clients and the client mode, as in "open loop, constant 200/s, 8 clients, pipeline(4)".
func loadText(st *result.Settings) string {
	parts := []string{"closed loop"}
	if st.Arrival != nil {
		parts = []string{"open loop", st.Arrival.String()}
	}
	if st.Clients > 0 {
		parts = append(parts, strconv.Itoa(st.Clients)+" clients")
	}
	switch {
	case st.ClientMode == load.ModePipeline:
		parts = append(parts, fmt.Sprintf("pipeline(%d)", st.PipelineDepth))
	case st.ClientMode != "":
		parts = append(parts, string(st.ClientMode))
	}
	return strings.Join(parts, ", ")
}

// limitText describes a scenario's limit: "20 per 1 s (burst 20, consumer limit 20), cost 1".
func limitText(st *result.Settings) string {
	l := st.Limit
	if l.Limit == 0 {
		return ""
	}
	s := fmt.Sprintf("%s per %s s (burst %s, consumer limit %s)", Count(l.Limit), Number(l.Window.Seconds()), Count(l.Capacity()), Count(l.Consumer()))
	if st.Cost > 0 {
		s += fmt.Sprintf(", %s %s per request", Count(st.Cost), Plural(st.Cost, "permit", "permits"))
	}
	return s
}
