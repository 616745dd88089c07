package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/limitbench/limitbench/internal/load"
)

// CapacitySchemaVersion is the value of Capacity.Schema this package writes and reads.
const CapacitySchemaVersion = "limitbench/capacity/v1"

// Files of a capacity run.
const (
	CapacityFile         = "capacity.json"
	CapacityMarkdownFile = "capacity.md"
	// CapacityFigureName is the stem of the plot: capacity.png and capacity.svg.
	CapacityFigureName = "capacity"
	KindCapacity       = "capacity"
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

// Capacity is what `limitbench capacity` found: the highest open-loop rate one algorithm sustains
// on one Redis shard under a latency objective, what a decision costs the server, what a subject
// costs in memory, and projections from both. It is what capacity.json holds.
type Capacity struct {
	// Schema is CapacitySchemaVersion.
	Schema    string `json:"schema"`
	Algorithm string `json:"algorithm"`
	Topology  string `json:"topology"`
	// Scenario is the load each step runs; its arrival is replaced by each step's constant rate.
	Scenario    Scenario    `json:"scenario"`
	Environment Environment `json:"environment"`
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
	Probe *CapacityStep `json:"probe,omitempty"`
	// Steps are the open-loop steps in the order they ran.
	Steps []CapacityStep `json:"steps"`
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
	USecPerCall float64        `json:"usec_per_call"`
	Memory      CapacityMemory `json:"memory"`
	Projection  Projection     `json:"projection"`
	StartedAt   time.Time      `json:"started_at"`
	FinishedAt  time.Time      `json:"finished_at"`
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
	// (runner.HoldCPUsAwake); AwakeNote says so, or why not.
	CPUsAwake bool   `json:"cpus_awake"`
	AwakeNote string `json:"awake_note,omitempty"`
}

// CapacityStep is one measurement of the sweep.
type CapacityStep struct {
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

// CapacityMemory is the memory figures of a capacity run. The memory step touches Subjects fresh
// subjects, RequestsPerSubject requests each, so that each holds the state it has at the limit.
type CapacityMemory struct {
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

// ReadCapacity reads a capacity.json.
func ReadCapacity(path string) (*Capacity, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Capacity
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if c.Schema != CapacitySchemaVersion {
		return nil, fmt.Errorf("%s: schema %q, want %q", path, c.Schema, CapacitySchemaVersion)
	}
	return &c, nil
}

// WriteCapacity writes capacity.json, capacity.md, capacity.png and capacity.svg into dir,
// listing them in c.Files. A plot that cannot be drawn (no open-loop step) is left out and said
// in c.Notes; any other error stops it.
func WriteCapacity(dir string, c *Capacity) error {
	if c.Schema == "" {
		c.Schema = CapacitySchemaVersion
	}
	c.Files = []string{CapacityFile, CapacityMarkdownFile}
	fig, err := CapacityFigure(c)
	switch {
	case errors.Is(err, errNothingToPlot):
		c.Notes = append(c.Notes, "no plot: no open-loop step was measured")
	case err != nil:
		return err
	default:
		c.Files = append(c.Files, fig.Name+".png", fig.Name+".svg")
		if err := writeFile(filepath.Join(dir, fig.Name+".png"), fig.PNG); err != nil {
			return err
		}
		if err := writeFile(filepath.Join(dir, fig.Name+".svg"), fig.SVG); err != nil {
			return err
		}
	}
	var md bytes.Buffer
	if err := c.WriteMarkdown(&md); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, CapacityMarkdownFile), md.Bytes()); err != nil {
		return err
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", CapacityFile, err)
	}
	return writeFile(filepath.Join(dir, CapacityFile), append(b, '\n'))
}

// summaryRows are the headline figures, label and value, shared by the text and Markdown forms.
func (c *Capacity) summaryRows() [][2]string {
	rows := [][2]string{
		{"algorithm", fmt.Sprintf("%s on %s (%s, Redis %s)", c.Algorithm, c.Topology, c.Environment.Backend, c.Environment.RedisVersion)},
	}
	slo := c.SLO
	if slo == "" {
		slo = "none"
	}
	rows = append(rows, [2]string{"objective", fmt.Sprintf("%s; achieved ≥ %.0f%% of offered; generator on schedule", slo, c.FollowRatio*100)})
	rows = append(rows, [2]string{"sustainable rate", Rate(c.SustainableRPS) + "/s" + c.boundText()})
	if c.Masters > 1 {
		rows = append(rows, [2]string{"per shard", fmt.Sprintf("%s/s (%d masters)", Rate(c.ShardRPS), c.Masters)})
	}
	if c.Probe != nil {
		rows = append(rows, [2]string{"closed-loop saturation", fmt.Sprintf("%s/s (%d clients, p99 %s)",
			Rate(c.Probe.AchievedRPS), c.Scenario.Clients, Micros(c.Probe.LatencyUS.P99))})
	}
	rows = append(rows,
		[2]string{"Redis CPU per decision", fmt.Sprintf("%.2f µs (Redis's own time per call %.2f µs)", c.CPUUSecPerDecision, c.USecPerCall)},
		[2]string{"bytes per subject", c.memoryText()},
		[2]string{"CPU pinning", c.Pinning.Note},
		[2]string{"CPU idle states", c.Pinning.awakeText()},
		[2]string{"steps", fmt.Sprintf("%d of %gs each (after %gs warmup), bisected to %.0f%%", len(c.Steps), c.StepS, c.WarmupS, c.Resolution*100)},
	)
	return rows
}

// awakeText says what was done with the CPUs' idle states; results written before the field
// existed say nothing.
func (p Pinning) awakeText() string {
	if p.AwakeNote == "" {
		return "not recorded"
	}
	return p.AwakeNote
}

func (c *Capacity) boundText() string {
	if c.FirstBadRPS == 0 {
		return " (no step failed)"
	}
	return fmt.Sprintf(" (%s/s failed: %s)", Rate(c.FirstBadRPS), c.Bound)
}

func (c *Capacity) memoryText() string {
	m := c.Memory
	if m.Subjects == 0 {
		s := "not measured"
		if m.Note != "" {
			s += ": " + m.Note
		}
		return s
	}
	s := fmt.Sprintf("%s (used_memory delta over %d subjects, %d request(s) each); MEMORY USAGE %s",
		Bytes(m.BytesPerSubject), m.Subjects, m.RequestsPerSubject, Bytes(m.MemoryUsagePerSubject))
	if m.LoadBytesPerSubject > 0 {
		s += fmt.Sprintf("; under the sweep's load %s", Bytes(m.LoadBytesPerSubject))
	}
	if m.Note != "" {
		s += "; " + m.Note
	}
	return s
}

// WriteText writes the summary, the steps and the projection as aligned plain text, for a
// terminal.
func (c *Capacity) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	for _, r := range c.summaryRows() {
		fmt.Fprintf(tw, "%s:\t%s\n", r[0], r[1])
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "PHASE\tOFFERED/s\tACHIEVED/s\tP50\tP99\tCPU µs/decision\tRESULT")
	for _, s := range c.allSteps() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.2f\t%s\n", s.Phase, offeredText(s), Rate(s.AchievedRPS),
			Micros(s.LatencyUS.P50), Micros(s.LatencyUS.P99), s.CPUUSecPerDecision, stepResult(s))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "SUBJECTS\tMEMORY\t\tDECISIONS/s\tSHARDS")
	p := c.Projection
	for i := 0; i < max(len(p.Memory), len(p.Shards)); i++ {
		var a, b, d, e string
		if i < len(p.Memory) {
			a, b = Count(p.Memory[i].Subjects), Bytes(p.Memory[i].Bytes)
		}
		if i < len(p.Shards) {
			d, e = Rate(p.Shards[i].DecisionsPerSecond), fmt.Sprint(p.Shards[i].Shards)
		}
		fmt.Fprintf(tw, "%s\t%s\t\t%s\t%s\n", a, b, d, e)
	}
	if len(p.Shards) > 0 {
		fmt.Fprintf(tw, "shards = ceil(rate / (%s × %.1f)), %.0f%% headroom\n", Rate(c.ShardRPS), 1-p.Headroom, p.Headroom*100)
	}
	for _, n := range c.Notes {
		fmt.Fprintf(tw, "note: %s\n", n)
	}
	return tw.Flush()
}

// WriteMarkdown writes the same as WriteText as a Markdown document.
func (c *Capacity) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Capacity of %s on one %s shard\n\n", c.Algorithm, c.Topology)
	b.WriteString("| | |\n|---|---|\n")
	for _, r := range c.summaryRows() {
		fmt.Fprintf(&b, "| %s | %s |\n", r[0], MarkdownCell(r[1]))
	}
	b.WriteString("\n## Steps\n\n| phase | offered/s | achieved/s | p50 | p99 | CPU µs/decision | result |\n|---|--:|--:|--:|--:|--:|---|\n")
	for _, s := range c.allSteps() {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.2f | %s |\n", s.Phase, offeredText(s), Rate(s.AchievedRPS),
			Micros(s.LatencyUS.P50), Micros(s.LatencyUS.P99), s.CPUUSecPerDecision, MarkdownCell(stepResult(s)))
	}
	p := c.Projection
	if len(p.Memory) > 0 {
		b.WriteString("\n## Memory\n\n| subjects | memory |\n|--:|--:|\n")
		for _, m := range p.Memory {
			fmt.Fprintf(&b, "| %s | %s |\n", Count(m.Subjects), Bytes(m.Bytes))
		}
	}
	if len(p.Shards) > 0 {
		fmt.Fprintf(&b, "\n## Shards\n\nshards = ceil(rate / (%s × %.1f)): %.0f%% headroom on each shard's sustainable rate.\n\n| decisions/s | shards |\n|--:|--:|\n",
			Rate(c.ShardRPS), 1-p.Headroom, p.Headroom*100)
		for _, s := range p.Shards {
			fmt.Fprintf(&b, "| %s | %d |\n", Rate(s.DecisionsPerSecond), s.Shards)
		}
	}
	if slices.Contains(c.Files, CapacityFigureName+".png") {
		fmt.Fprintf(&b, "\n![Achieved rate and p99 against offered rate](%s.png)\n", CapacityFigureName)
	}
	for i, n := range c.Notes {
		if i == 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "- note: %s\n", MarkdownCell(n))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// allSteps returns the probe (if any) then the steps.
func (c *Capacity) allSteps() []CapacityStep {
	var out []CapacityStep
	if c.Probe != nil {
		out = append(out, *c.Probe)
	}
	return append(out, c.Steps...)
}

func offeredText(s CapacityStep) string {
	if s.Phase == PhaseProbe {
		return "closed loop"
	}
	return Rate(s.OfferedRPS)
}

func stepResult(s CapacityStep) string {
	switch {
	case s.Phase == PhaseProbe:
		return "saturation"
	case s.Good && s.Note != "":
		return "good: " + s.Note
	case s.Good:
		return "good"
	case s.Superseded:
		return "bad: " + s.Reason + "; measured again"
	}
	return "bad: " + s.Reason
}

var errNothingToPlot = errors.New("nothing to plot")

// CapacityFigure draws the sweep: on top, achieved against offered rate (with the line where
// they are equal, the closed-loop saturation and the sustainable rate); below, p99 latency from
// the intended send time against offered rate, with the objective when it bounds a latency.
func CapacityFigure(c *Capacity) (Figure, error) {
	steps := make([]CapacityStep, 0, len(c.Steps))
	for _, s := range c.Steps {
		if s.OfferedRPS > 0 {
			steps = append(steps, s)
		}
	}
	if len(steps) == 0 {
		return Figure{}, errNothingToPlot
	}
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].OfferedRPS < steps[j].OfferedRPS })
	xmax := steps[len(steps)-1].OfferedRPS * 1.05
	algColor := AlgorithmColor(c.Algorithm)
	grey := color.RGBA{R: 0x99, G: 0x99, B: 0x99, A: 0xff}
	red := color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	dashed := []vg.Length{vg.Points(5), vg.Points(3)}
	title := fmt.Sprintf("Capacity of %s on one Redis shard (%s, %s)", c.Algorithm, c.Topology, c.Environment.Backend)

	top := newPlot(title, "", "achieved decisions/s")
	bottom := newPlot("", "offered rate (requests/s)", "p99 latency (ms, log scale)")
	for _, p := range []*plot.Plot{top, bottom} {
		p.X.Min, p.X.Max = 0, xmax
		p.Legend.TextStyle.Font.Size = vg.Points(10)
		p.Legend.Padding = vg.Points(2)
	}
	// Achieved runs from bottom left to top right, latency rises to the right: the legends go
	// where the data is not.
	top.Y.Min = 0
	top.Legend.Top, top.Legend.Left = false, false
	top.Legend.YOffs = vg.Points(8)
	bottom.Legend.Top, bottom.Legend.Left = false, false
	bottom.Legend.YOffs = vg.Points(8)
	bottom.Y.Scale = plot.LogScale{}
	bottom.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	line := func(p *plot.Plot, name string, xys plotter.XYs, col color.Color, width vg.Length, dashes []vg.Length) {
		l, err := plotter.NewLine(xys)
		if err != nil {
			return // NaN or Inf: leave the series out rather than fail
		}
		l.Color, l.Width, l.Dashes = col, width, dashes
		p.Add(l)
		if name != "" {
			p.Legend.Add(name, l)
		}
	}
	points := func(p *plot.Plot, name string, xys plotter.XYs) {
		lp, sc, err := plotter.NewLinePoints(xys)
		if err != nil {
			return
		}
		lp.Color, lp.Width = algColor, vg.Points(1.8)
		sc.Color, sc.Shape, sc.Radius = algColor, draw.CircleGlyph{}, vg.Points(3)
		p.Add(lp, sc)
		p.Legend.Add(name, lp, sc)
	}
	bad := func(p *plot.Plot, xys plotter.XYs) {
		if len(xys) == 0 {
			return
		}
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return
		}
		sc.Color, sc.Shape, sc.Radius = red, draw.CrossGlyph{}, vg.Points(5)
		p.Add(sc)
		p.Legend.Add("step failed", sc)
	}

	var achieved, p99, badA, badL plotter.XYs
	ymax := 0.0
	for _, s := range steps {
		achieved = append(achieved, plotter.XY{X: s.OfferedRPS, Y: s.AchievedRPS})
		lat := math.Max(s.LatencyUS.P99, 1) / MicrosPerMilli // the log scale needs > 0
		p99 = append(p99, plotter.XY{X: s.OfferedRPS, Y: lat})
		if !s.Good {
			badA = append(badA, plotter.XY{X: s.OfferedRPS, Y: s.AchievedRPS})
			badL = append(badL, plotter.XY{X: s.OfferedRPS, Y: lat})
		}
		ymax = math.Max(ymax, s.AchievedRPS)
	}
	line(top, "achieved = offered", plotter.XYs{{X: 0, Y: 0}, {X: xmax, Y: xmax}}, grey, vg.Points(1), dashed)
	if c.Probe != nil && c.Probe.AchievedRPS > 0 {
		sat := c.Probe.AchievedRPS
		line(top, fmt.Sprintf("closed-loop saturation %s/s", Rate(sat)), plotter.XYs{{X: 0, Y: sat}, {X: xmax, Y: sat}}, color.Black, vg.Points(1), []vg.Length{vg.Points(2), vg.Points(2)})
		ymax = math.Max(ymax, sat)
	}
	points(top, "achieved", achieved)
	bad(top, badA)
	top.Y.Max = ymax * 1.1

	points(bottom, "p99", p99)
	bad(bottom, badL)
	if c.SLOBoundUS > 0 {
		slo := c.SLOBoundUS / MicrosPerMilli
		line(bottom, "objective "+c.SLO, plotter.XYs{{X: 0, Y: slo}, {X: xmax, Y: slo}}, red, vg.Points(1.2), dashed)
	}
	lo, hi := latencyRange(p99, c.SLOBoundUS/MicrosPerMilli)
	bottom.Y.Min, bottom.Y.Max = lo/1.5, hi*1.5
	if c.SustainableRPS > 0 {
		x := c.SustainableRPS
		line(top, fmt.Sprintf("sustainable %s/s", Rate(x)), plotter.XYs{{X: x, Y: 0}, {X: x, Y: top.Y.Max}}, algColor, vg.Points(1), dashed)
		line(bottom, "", plotter.XYs{{X: x, Y: bottom.Y.Min}, {X: x, Y: bottom.Y.Max}}, algColor, vg.Points(1), dashed)
	}

	spec := figureSpec{
		Figure: Figure{Name: CapacityFigureName, Kind: KindCapacity, Title: title, Topology: c.Topology,
			Algorithm: c.Algorithm, Algorithms: []string{c.Algorithm}},
		w: 10 * vg.Inch, h: 7 * vg.Inch,
		draw: func(dc draw.Canvas) {
			tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Points(10)}
			cs := plot.Align([][]*plot.Plot{{top}, {bottom}}, tiles, dc)
			top.Draw(cs[0][0])
			bottom.Draw(cs[1][0])
		},
	}
	if err := spec.render(); err != nil {
		return Figure{}, err
	}
	return spec.Figure, nil
}

// latencyRange returns the smallest and largest of the p99 values and the objective (ms; 0 for
// none).
func latencyRange(p99 plotter.XYs, sloMS float64) (lo, hi float64) {
	lo, hi = math.Inf(1), 0
	for _, p := range p99 {
		lo, hi = math.Min(lo, p.Y), math.Max(hi, p.Y)
	}
	if sloMS > 0 {
		lo, hi = math.Min(lo, sloMS), math.Max(hi, sloMS)
	}
	return lo, hi
}
