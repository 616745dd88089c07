package report

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// fullCapacity is capacityFixture with every field of capacity.json set.
func fullCapacity(t *testing.T) *Capacity {
	c := capacityFixture()
	c.Scenario = fullResult(t).Scenario
	c.Environment = fullResult(t).Environment
	c.Masters, c.ShardRPS = 3, 4000
	c.Steps = append(c.Steps,
		CapacityStep{Phase: PhaseBisect, OfferedRPS: 13000, ScheduledRPS: 12990, AchievedRPS: 12950, LatencyUS: c.Steps[0].LatencyUS,
			Requests: 26000, Errors: 3, Late: 40, Missed: 12, Behind: true, CPUUSecPerDecision: 20.5, USecPerCall: 3.1,
			BytesPerSubject: 70, Reason: "p99 2.5ms broke \"p99 < 2ms\"", Superseded: true},
		CapacityStep{Phase: PhaseConfirm, OfferedRPS: 13000, ScheduledRPS: 13000, AchievedRPS: 12990, LatencyUS: c.Steps[0].LatencyUS,
			Requests: 26000, CPUUSecPerDecision: 20.25, USecPerCall: 3, BytesPerSubject: 69, Good: true,
			Note: "over both steps p99 1.9ms"})
	c.Memory.Window = "10m0s"
	c.Memory.Note = "used_memory did not grow"
	c.Notes = []string{"the 3 masters shared 2 CPU(s)", "stopped after 24 steps"}
	c.Files = []string{CapacityFile, CapacityMarkdownFile, "capacity.png", "capacity.svg"}
	c.Schema = CapacitySchemaVersion
	return c
}

// TestCapacityGolden: capacity.json, capacity.md and the terminal table of a sweep with every
// field set are testdata/capacity.*, and capacity.json read back and written again is the same.
func TestCapacityGolden(t *testing.T) {
	c := fullCapacity(t)
	dir := t.TempDir()
	if err := WriteCapacity(dir, c); err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := c.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	outputs := map[string][]byte{"capacity.txt": text.Bytes()}
	for _, f := range []string{CapacityFile, CapacityMarkdownFile} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		outputs[f] = b
	}
	for name, got := range outputs {
		golden := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s:\n%s", name, golden, firstDiff(want, got))
		}
	}

	back, err := ReadCapacity(filepath.Join("testdata", CapacityFile))
	if err != nil {
		t.Fatal(err)
	}
	again := t.TempDir()
	if err := WriteCapacity(again, back); err != nil {
		t.Fatal(err)
	}
	round, err := os.ReadFile(filepath.Join(again, CapacityFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := outputs[CapacityFile]; !bytes.Equal(round, want) {
		t.Errorf("capacity.json read and written again differs:\n%s", firstDiff(want, round))
	}
}
