package capacity

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/limitbench/limitbench/internal/golden"
	"github.com/limitbench/limitbench/result"
)

// fullCapacity is capacityFixture with every field of capacity.json set.
func fullCapacity(t *testing.T) *Result {
	c := capacityFixture()
	// The scenario and environment sections of the result schema's golden result.json.
	full, err := result.Read(filepath.Join("..", "result", "testdata", "full-result.json"))
	if err != nil {
		t.Fatal(err)
	}
	c.Scenario, c.Environment = full.Scenario, full.Environment
	c.Masters, c.ShardRPS = 3, 4000
	c.Steps = append(c.Steps,
		Step{Phase: PhaseBisect, OfferedRPS: 13000, ScheduledRPS: 12990, AchievedRPS: 12950, LatencyUS: c.Steps[0].LatencyUS,
			Requests: 26000, Errors: 3, Late: 40, Missed: 12, Behind: true, CPUUSecPerDecision: 20.5, USecPerCall: 3.1,
			BytesPerSubject: 70, Reason: "p99 2.5ms broke \"p99 < 2ms\"", Superseded: true},
		Step{Phase: PhaseConfirm, OfferedRPS: 13000, ScheduledRPS: 13000, AchievedRPS: 12990, LatencyUS: c.Steps[0].LatencyUS,
			Requests: 26000, CPUUSecPerDecision: 20.25, USecPerCall: 3, BytesPerSubject: 69, Good: true,
			Note: "over both steps p99 1.9ms"})
	c.Memory.Window = "10m0s"
	c.Noise = Noise{CPUMeasured: true, CPUNote: "", StealPct: 0.4, OtherCPUPct: 61.5, ProbeP99US: 412000, ServiceUS: 5,
		Clients: 32, ProbeRatio: 2575, Spread: 1.1}
	c.Noise.judge()
	c.Memory.Note = "used_memory did not grow"
	c.Notes = []string{"the 3 masters shared 2 CPU(s)", "stopped after 24 steps"}
	c.Files = []string{File, MarkdownFile, "capacity.png", "capacity.svg"}
	c.Schema = SchemaVersion
	return c
}

// TestCapacityGolden: capacity.json, capacity.md and the terminal table of a sweep with every
// field set are testdata/capacity.*, and capacity.json read back and written again is the same.
func TestCapacityGolden(t *testing.T) {
	c := fullCapacity(t)
	dir := t.TempDir()
	if err := Write(dir, c); err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := c.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	outputs := map[string][]byte{"capacity.txt": text.Bytes()}
	for _, f := range []string{File, MarkdownFile} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		outputs[f] = b
	}
	for name, got := range outputs {
		golden.Check(t, filepath.Join("testdata", name), got)
	}

	back, err := Read(filepath.Join("testdata", File))
	if err != nil {
		t.Fatal(err)
	}
	again := t.TempDir()
	if err := Write(again, back); err != nil {
		t.Fatal(err)
	}
	round, err := os.ReadFile(filepath.Join(again, File))
	if err != nil {
		t.Fatal(err)
	}
	if want := outputs[File]; !bytes.Equal(round, want) {
		t.Errorf("capacity.json read and written again differs:\n%s", golden.FirstDiff(want, round))
	}
}
