package capacity

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/scenarios"
)

// SchemaVersion is the value of Result.Schema this package writes and reads.
const SchemaVersion = "limitbench/capacity/v1"

// Files of a capacity run.
const (
	File         = "capacity.json"
	MarkdownFile = "capacity.md"
	// FigureName is the stem of the plot: capacity.png and capacity.svg; FigureKind its
	// report.Figure kind.
	FigureName = "capacity"
	FigureKind = "capacity"
)

// Headroom is the share of a shard's sustainable rate the shard projection keeps free: a shard is
// planned at Sustainable × (1 − Headroom).
const Headroom = 0.3

// Phases of a capacity step.
const (
	// PhaseProbe is the closed-loop probe that finds the saturation throughput.
	PhaseProbe = "probe"
	// PhaseDouble steps double the offered rate until one fails.
	PhaseDouble = "double"
	// PhaseHalve steps halve the offered rate when the first step already failed.
	PhaseHalve = "halve"
	// PhaseBisect steps halve the interval between the last good and the first bad rate.
	PhaseBisect = "bisect"
	// PhaseConfirm steps measure again a rate whose step broke the latency objective and
	// nothing else; the rate is judged on both steps' latencies together.
	PhaseConfirm = "confirm"
)

// Result is what `limitbench capacity` found: the highest open-loop rate one algorithm sustains
// on one Redis shard under a latency objective, what a decision costs the server, what a subject
// costs in memory, and projections from both. It is what capacity.json holds.
type Result struct {
	// Schema is SchemaVersion.
	Schema    string `json:"schema"`
	Algorithm string `json:"algorithm"`
	Topology  string `json:"topology"`
	// Scenario is the load each step runs: its settings have a step's duration and warmup and no
	// arrival (each step sets its own constant rate).
	Scenario    result.Scenario    `json:"scenario"`
	Environment result.Environment `json:"environment"`
	// SLO is the objective a step must meet to be sustainable, as written ("p99 < 2ms"); empty
	// when only the throughput criterion applies.
	SLO string `json:"slo,omitempty"`
	// SLOMetric and SLOBoundUS are the objective's metric and, for a latency objective, its
	// bound in µs (drawn on the plot).
	SLOMetric  string  `json:"slo_metric,omitempty"`
	SLOBoundUS float64 `json:"slo_bound_us,omitempty"`
	// StepS is the measured length of each step, seconds; WarmupS the warmup before it.
	StepS   float64 `json:"step_s"`
	WarmupS float64 `json:"warmup_s"`
	// FollowRatio is the share of the offered rate a step must achieve (0.95).
	FollowRatio float64 `json:"follow_ratio"`
	// Resolution is the relative width of the final bisection interval (0.05: 5%).
	Resolution float64 `json:"resolution"`
	Pinning    Pinning `json:"pinning"`
	// Probe is the closed-loop probe; nil when none ran.
	Probe *Step `json:"probe,omitempty"`
	// Steps are the open-loop steps in the order they ran.
	Steps []Step `json:"steps"`
	// SustainableRPS is the highest offered rate of a good step, decisions per second; 0 when no
	// step was good.
	SustainableRPS float64 `json:"sustainable_rps"`
	// Masters is the number of Redis masters (shards) the sweep ran on; ShardRPS is
	// SustainableRPS / Masters, what one shard sustains and what the shard projection uses.
	Masters  int     `json:"masters"`
	ShardRPS float64 `json:"shard_rps"`
	// FirstBadRPS is the lowest offered rate of a bad step; 0 when every step was good.
	FirstBadRPS float64 `json:"first_bad_rps,omitempty"`
	// Bound says what limited the rate: the first bad step's reason.
	Bound string `json:"bound,omitempty"`
	// CPUUSecPerDecision is Redis CPU (user + sys) per decision at the sustainable step, µs.
	CPUUSecPerDecision float64 `json:"cpu_usec_per_decision"`
	// USecPerCall is Redis's own time per command call at the sustainable step, µs.
	USecPerCall float64 `json:"usec_per_call"`
	Memory      Memory  `json:"memory"`
	// Noise is how busy the machine was during the sweep, and whether that makes
	// SustainableRPS a figure of the machine rather than of Redis.
	Noise      Noise      `json:"noise"`
	Projection Projection `json:"projection"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt time.Time  `json:"finished_at"`
	// Notes are sentences a reader should see (a sweep cut short, a step with errors).
	Notes []string `json:"notes,omitempty"`
	// Files lists what was written beside capacity.json.
	Files []string `json:"files,omitempty"`
}

// Pinning says where Redis and the load generator ran.
type Pinning struct {
	// Pinned is true when Redis was pinned to RedisCPUs.
	Pinned bool `json:"pinned"`
	// RedisCPUs are the CPUs Redis was restricted to; HarnessCPUs those of the load generator
	// when known.
	RedisCPUs   []int `json:"redis_cpus,omitempty"`
	HarnessCPUs []int `json:"harness_cpus,omitempty"`
	// Note says it in a sentence, or why nothing was pinned.
	Note string `json:"note"`
	// CPUsAwake is true when the CPUs were kept out of deep idle states during the sweep
	// (cpus.Apply); AwakeNote says so, or why not.
	CPUsAwake bool   `json:"cpus_awake"`
	AwakeNote string `json:"awake_note,omitempty"`
}

// Step is one measurement of the sweep.
type Step struct {
	// Phase is PhaseProbe, PhaseDouble, PhaseHalve, PhaseBisect or PhaseConfirm.
	Phase string `json:"phase"`
	// OfferedRPS is the rate the step asked for (0 for the closed-loop probe).
	OfferedRPS float64 `json:"offered_rps"`
	// ScheduledRPS is the rate the generator scheduled in the measured part.
	ScheduledRPS float64 `json:"scheduled_rps,omitempty"`
	// AchievedRPS is decisions (allowed + denied) per second.
	AchievedRPS float64 `json:"achieved_rps"`
	// LatencyUS is from the intended send time (coordinated-omission corrected).
	LatencyUS load.Latency `json:"latency_us"`
	Requests  int64        `json:"requests"`
	// Errors counts failed and unknown requests.
	Errors int64 `json:"errors,omitempty"`
	// Late and Missed count ticks sent over 100 ms late or never sent; Behind says they exceed
	// 1% of the scheduled ticks.
	Late   int64 `json:"late,omitempty"`
	Missed int64 `json:"missed,omitempty"`
	Behind bool  `json:"behind,omitempty"`
	// CPUUSecPerDecision is Redis CPU per decision over the step, µs.
	CPUUSecPerDecision float64 `json:"cpu_usec_per_decision"`
	USecPerCall        float64 `json:"usec_per_call"`
	// BytesPerSubject is MEMORY USAGE of the step's keys over the subjects it touched.
	BytesPerSubject float64 `json:"bytes_per_subject,omitempty"`
	// Good says the step met the objective and the throughput criterion.
	Good bool `json:"good"`
	// Reason says why a step is not good.
	Reason string `json:"reason,omitempty"`
	// Superseded marks a step that broke the latency objective and nothing else: the confirm
	// step after it measured the rate again, and that step's Good is the rate's verdict.
	Superseded bool `json:"superseded,omitempty"`
	// Note says more about a verdict: for a confirm step, the objective's metric over both steps.
	Note string `json:"note,omitempty"`
}

// Memory is the memory figures of a capacity run. The memory step touches Subjects fresh
// subjects, RequestsPerSubject requests each, so that each holds the state it has at the limit.
type Memory struct {
	Subjects           int `json:"subjects"`
	RequestsPerSubject int `json:"requests_per_subject"`
	// Window is the limit's window in the memory step (stretched so no state expires before it
	// is read).
	Window string `json:"window,omitempty"`
	// UsedMemoryDelta is INFO used_memory after the step minus before, bytes.
	UsedMemoryDelta int64 `json:"used_memory_delta"`
	// BytesPerSubject is UsedMemoryDelta / Subjects: what projections use.
	BytesPerSubject float64 `json:"bytes_per_subject"`
	// Keys is the number of keys the step left; SampledKeys how many MEMORY USAGE read.
	Keys        int64 `json:"keys"`
	SampledKeys int64 `json:"sampled_keys"`
	// MemoryUsagePerSubject is MEMORY USAGE over the sample, scaled to every key, per subject.
	MemoryUsagePerSubject float64 `json:"memory_usage_per_subject"`
	// LoadBytesPerSubject is MEMORY USAGE per subject under the sweep's load at the sustainable
	// rate (the scenario's keys and per-subject rate), 0 when unknown.
	LoadBytesPerSubject float64 `json:"load_bytes_per_subject,omitempty"`
	// Note explains anything unusual (a negative delta, a skipped step).
	Note string `json:"note,omitempty"`
}

// Projection is what Capacity's figures imply at other scales.
type Projection struct {
	// Headroom is the share of each shard's sustainable rate kept free (0.3).
	Headroom float64            `json:"headroom"`
	Memory   []MemoryProjection `json:"memory"`
	Shards   []ShardProjection  `json:"shards"`
}

// MemoryProjection is the memory for Subjects subjects at BytesPerSubject each.
type MemoryProjection struct {
	Subjects int64   `json:"subjects"`
	Bytes    float64 `json:"bytes"`
}

// ShardProjection is the number of shards for a decision rate.
type ShardProjection struct {
	DecisionsPerSecond float64 `json:"decisions_per_second"`
	Shards             int     `json:"shards"`
}

// Project returns the projection for bytesPerSubject and a shard's sustainable rate: memory for
// 10⁴ to 10⁸ subjects, and shards for 10⁴ to 10⁷ decisions per second with Headroom. A zero
// sustainable rate gives no shard rows; a zero bytesPerSubject no memory rows.
func Project(bytesPerSubject, sustainableRPS float64) Projection {
	p := Projection{Headroom: Headroom}
	if bytesPerSubject > 0 {
		for n := int64(1e4); n <= 1e8; n *= 10 {
			p.Memory = append(p.Memory, MemoryProjection{Subjects: n, Bytes: bytesPerSubject * float64(n)})
		}
	}
	if sustainableRPS > 0 {
		for r := 1e4; r <= 1e7; r *= 10 {
			p.Shards = append(p.Shards, ShardProjection{DecisionsPerSecond: r, Shards: ShardsNeeded(r, sustainableRPS, Headroom)})
		}
	}
	return p
}

// ShardsNeeded returns ceil(rate / (sustainable × (1 − headroom))), at least 1; 0 when
// sustainable or 1 − headroom is not positive.
func ShardsNeeded(rate, sustainable, headroom float64) int {
	per := sustainable * (1 - headroom)
	if per <= 0 || rate <= 0 {
		return 0
	}
	// A tiny tolerance keeps an exact multiple (rate = k·per) from rounding up to k+1.
	n := int(math.Ceil(rate/per - 1e-9))
	return max(n, 1)
}

// Read reads a capacity.json.
func Read(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Result
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if c.Schema != SchemaVersion {
		return nil, fmt.Errorf("%s: schema %q, want %q", path, c.Schema, SchemaVersion)
	}
	return &c, nil
}

// Write writes capacity.json, capacity.md, capacity.png and capacity.svg into dir,
// listing them in c.Files. A plot that cannot be drawn (no open-loop step) is left out and said
// in c.Notes; any other error stops it.
func Write(dir string, c *Result) error {
	if c.Schema == "" {
		c.Schema = SchemaVersion
	}
	c.Files = []string{File, MarkdownFile}
	fig, err := Figure(c)
	switch {
	case errors.Is(err, errNothingToPlot):
		c.Notes = append(c.Notes, "no plot: no open-loop step was measured")
	case err != nil:
		return err
	default:
		c.Files = append(c.Files, fig.Name+".png", fig.Name+".svg")
		if err := result.WriteFile(filepath.Join(dir, fig.Name+".png"), fig.PNG); err != nil {
			return err
		}
		if err := result.WriteFile(filepath.Join(dir, fig.Name+".svg"), fig.SVG); err != nil {
			return err
		}
	}
	var md bytes.Buffer
	if err := c.WriteMarkdown(&md); err != nil {
		return err
	}
	if err := result.WriteFile(filepath.Join(dir, MarkdownFile), md.Bytes()); err != nil {
		return err
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", File, err)
	}
	return result.WriteFile(filepath.Join(dir, File), append(b, '\n'))
}

// describe returns capacity.json's scenario section: s as each step runs it, on topology, with
// o's algorithm, a step's duration and warmup, and no arrival of its own (each step sets its own
// constant rate, Step.OfferedRPS).
func describe(s *scenarios.Scenario, o Options, topology string) result.Scenario {
	d := s.Describe(s.File)
	d.Topologies = []string{topology}
	st := d.Settings
	st.DurationS, st.WarmupS, st.Arrival = o.Step.Seconds(), o.Warmup.Seconds(), nil
	st.Algorithms = []string{o.Algorithm}
	st.Custom = slices.DeleteFunc(st.Custom, func(c algorithms.CustomSpec) bool { return c.Name != o.Algorithm })
	return d
}
