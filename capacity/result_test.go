package capacity

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/result"
)

func TestShardsNeeded(t *testing.T) {
	tests := []struct {
		rate, sustainable, headroom float64
		want                        int
	}{
		{10_000, 20_000, 0.3, 1},     // 10k / 14k
		{14_000, 20_000, 0.3, 1},     // exactly one shard's planned rate
		{14_001, 20_000, 0.3, 2},     // just over
		{100_000, 20_000, 0.3, 8},    // 100k / 14k = 7.14
		{1_000_000, 20_000, 0.3, 72}, // 71.4
		{10_000_000, 20_000, 0.3, 715},
		{1, 20_000, 0.3, 1},
		{10_000, 0, 0.3, 0},
		{10_000, 20_000, 1, 0},
		{0, 20_000, 0.3, 0},
	}
	for _, tt := range tests {
		if got := ShardsNeeded(tt.rate, tt.sustainable, tt.headroom); got != tt.want {
			t.Errorf("ShardsNeeded(%g, %g, %g) = %d; want %d", tt.rate, tt.sustainable, tt.headroom, got, tt.want)
		}
	}
}

func TestProject(t *testing.T) {
	got := Project(72, 20_000)
	want := Projection{
		Headroom: 0.3,
		Memory: []MemoryProjection{
			{1e4, 72e4}, {1e5, 72e5}, {1e6, 72e6}, {1e7, 72e7}, {1e8, 72e8},
		},
		Shards: []ShardProjection{{1e4, 1}, {1e5, 8}, {1e6, 72}, {1e7, 715}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Project(72, 20000) mismatch (-want +got):\n%s", d)
	}
	if p := Project(0, 0); len(p.Memory) != 0 || len(p.Shards) != 0 {
		t.Errorf("Project(0, 0) = %+v; want no rows", p)
	}
}

// capacityFixture is a small finished sweep.
func capacityFixture() *Result {
	lat := func(p99 float64) load.Latency {
		return load.Latency{P50: p99 / 4, P90: p99 / 2, P99: p99, P999: p99 * 2, Max: p99 * 3}
	}
	start := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	c := &Result{
		Algorithm: "gcra", Topology: "single",
		Scenario: result.Scenario{Name: "capacity", Seed: 1, Settings: &result.Settings{Clients: 32,
			Keys: load.Keys{Count: 1000, Distribution: load.Uniform}}},
		Environment: result.Environment{Backend: "process", RedisVersion: "7.0.15", CPUs: 2},
		SLO:         "p99 < 2ms", SLOMetric: "p99", SLOBoundUS: 2000,
		StepS: 2, WarmupS: 0.5, FollowRatio: 0.95, Resolution: 0.05,
		Pinning: Pinning{Pinned: true, RedisCPUs: []int{1}, HarnessCPUs: []int{0},
			Note: "Redis pinned to CPU 1, load generator to CPU 0", CPUsAwake: true,
			AwakeNote: "held awake while the command runs (wake-up latency limit 0 µs)"},
		Probe: &Step{Phase: PhaseProbe, AchievedRPS: 16000, LatencyUS: lat(9000), Good: true},
		Steps: []Step{
			{Phase: PhaseDouble, OfferedRPS: 4000, AchievedRPS: 4000, LatencyUS: lat(400), Good: true},
			{Phase: PhaseDouble, OfferedRPS: 8000, AchievedRPS: 7990, LatencyUS: lat(700), Good: true},
			{Phase: PhaseDouble, OfferedRPS: 16000, AchievedRPS: 14000, LatencyUS: lat(40000), Reason: "achieved 87% of offered"},
			{Phase: PhaseBisect, OfferedRPS: 12000, AchievedRPS: 11990, LatencyUS: lat(1500), Good: true},
			{Phase: PhaseBisect, OfferedRPS: 14000, AchievedRPS: 13950, LatencyUS: lat(3000), Reason: "p99 3ms ≥ 2ms"},
		},
		SustainableRPS: 12000, Masters: 1, ShardRPS: 12000, FirstBadRPS: 14000, Bound: "p99 3ms ≥ 2ms",
		CPUUSecPerDecision: 21.5, USecPerCall: 3.2,
		Memory: Memory{Subjects: 10000, RequestsPerSubject: 2, UsedMemoryDelta: 720000, BytesPerSubject: 72,
			Keys: 10000, SampledKeys: 500, MemoryUsagePerSubject: 64, LoadBytesPerSubject: 66},
		StartedAt: start, FinishedAt: start.Add(50 * time.Second),
	}
	c.Projection = Project(c.Memory.BytesPerSubject, c.ShardRPS)
	return c
}

func TestWriteCapacityRoundTrip(t *testing.T) {
	dir := t.TempDir()
	c := capacityFixture()
	if err := Write(dir, c); err != nil {
		t.Fatalf("Write: %v", err)
	}
	want := []string{File, MarkdownFile, "capacity.png", "capacity.svg"}
	if d := cmp.Diff(want, c.Files); d != "" {
		t.Errorf("Files mismatch (-want +got):\n%s", d)
	}
	for _, f := range want {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Size() == 0 {
			t.Errorf("%s: %v, size %d", f, err, st.Size())
		}
	}
	png, _ := os.ReadFile(filepath.Join(dir, "capacity.png"))
	if !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("capacity.png is not a PNG")
	}
	svg, _ := os.ReadFile(filepath.Join(dir, "capacity.svg"))
	if !bytes.Contains(svg, []byte("<svg")) {
		t.Errorf("capacity.svg is not an SVG")
	}
	got, err := Read(filepath.Join(dir, File))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if d := cmp.Diff(c, got); d != "" {
		t.Errorf("round trip mismatch (-wrote +read):\n%s", d)
	}
	md, _ := os.ReadFile(filepath.Join(dir, MarkdownFile))
	for _, w := range []string{"# Capacity of gcra", "| sustainable rate | 12,000/s", "| 10,000,000 | 1191 |",
		"| 100,000,000 | 6.71 GiB |", "![Achieved rate and p99 against offered rate](capacity.png)", "Redis pinned to CPU 1"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("capacity.md lacks %q:\n%s", w, md)
		}
	}
}

func TestReadCapacityWrongSchema(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(p, []byte(`{"schema":"limitbench/result/v1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(p); err == nil || !strings.Contains(err.Error(), "schema") {
		t.Errorf("Read(result schema) = %v; want a schema error", err)
	}
}

func TestCapacityText(t *testing.T) {
	var b bytes.Buffer
	c := capacityFixture()
	if err := c.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, w := range []string{
		"sustainable rate:", "12,000/s (14,000/s failed: p99 3ms ≥ 2ms)",
		"closed-loop saturation:", "16,000/s",
		"Redis CPU per decision:", "21.50 µs",
		"bytes per subject:", "72 B (used_memory delta over 10000 subjects, 2 request(s) each); MEMORY USAGE 64 B",
		"CPU pinning:", "Redis pinned to CPU 1",
		"CPU idle states:", "held awake while the command runs",
		"closed loop", "bad: achieved 87% of offered",
		"100,000", "703 KiB",
		"shards = ceil(rate / (12,000 × 0.7)), 30% headroom",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("text lacks %q:\n%s", w, out)
		}
	}
}

func TestCapacityFigureNoSteps(t *testing.T) {
	c := capacityFixture()
	c.Steps = nil
	dir := t.TempDir()
	if err := Write(dir, c); err != nil {
		t.Fatalf("Write without steps: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "capacity.png")); !os.IsNotExist(err) {
		t.Errorf("capacity.png written without steps: %v", err)
	}
	if len(c.Notes) == 0 || !strings.Contains(c.Notes[0], "no plot") {
		t.Errorf("Notes = %q; want a no-plot note", c.Notes)
	}
}
