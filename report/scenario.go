package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/result"
)

// scenarioRows returns the Scenario section of the reports: r's scenario (result.Scenario, which
// describes it once, structured) in words, one row per aspect, and when the run took place.
// Rows without a value are left out, so a result written before settings were recorded shows
// its name and seed.
func scenarioRows(r *result.Result) []row {
	var rows []row
	add := func(k, val string) {
		if val != "" {
			rows = append(rows, row{k, val})
		}
	}
	s := r.Scenario
	name := s.Name
	if s.File != "" {
		name += " (" + s.File + ")"
	}
	add("scenario", name)
	add("seed", strconv.FormatInt(s.Seed, 10))
	if st := s.Settings; st != nil {
		if st.DurationS > 0 {
			add("duration", Number(st.DurationS)+" s per algorithm × topology")
		}
		add("load", loadText(st))
		add("keys", st.Keys.String())
		add("limit", limitText(st))
		if st.WarmupS > 0 {
			add("warmup", Number(st.WarmupS)+" s before each measurement (measured, not verified)")
		}
		add("clock skew", st.ClockSkew.String())
		add("algorithms", strings.Join(st.Algorithms, ", "))
		add("expected to be flagged", strings.Join(st.Expect.Violations, ", "))
		add("tolerated (may violate)", strings.Join(st.Expect.MayViolate, ", "))
		add("thresholds", strings.Join(st.Thresholds, "; "))
	}
	add("wait for replicas", waitText(r))
	if !r.StartedAt.IsZero() {
		when := r.StartedAt.UTC().Format(time.RFC3339)
		if !r.FinishedAt.IsZero() {
			when += " to " + r.FinishedAt.UTC().Format(time.RFC3339)
		}
		add("run", when)
	}
	return rows
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
