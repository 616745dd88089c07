package gate

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/load"
)

// TestLoadDifferences: every setting of the load that differs is named with both values; other
// settings (the seed, the thresholds) are not.
func TestLoadDifferences(t *testing.T) {
	base := gateSettings(200)
	if d := LoadDifferences(base, gateSettings(200)); d != nil {
		t.Errorf("same settings: %v; want none", d)
	}
	cur := gateSettings(100)
	cur.Clients = 16
	cur.DurationS = 10
	cur.Keys = load.Keys{Count: 1000, Distribution: load.Zipf, ZipfS: 1.1}
	cur.Limit = algorithms.Limit{Limit: 50, Window: 2 * time.Second}
	cur.Cost = 2
	cur.ClientMode, cur.PipelineDepth = load.ModePipeline, 8
	cur.Wait = &algorithms.Wait{Replicas: 1}
	cur.Faults = []string{"restart master:0 at 1s"}
	cur.Thresholds = []string{"p99 < 1ms"}
	want := []LoadDifference{
		{"arrival", "constant 200/s", "constant 100/s"},
		{"clients", "8", "16"},
		{"duration", "5s", "10s"},
		{"keys", "100 subjects, uniform", "1000 subjects, zipf s=1.1"},
		{"limit", "100 per 1s (burst 100, consumer limit 100)", "50 per 2s (burst 50, consumer limit 50)"},
		{"cost", "1", "2"},
		{"client mode", "plain", "pipeline of 8"},
		{"wait", "none", algorithms.Wait{Replicas: 1}.String()},
		{"faults", "none", "restart master:0 at 1s"},
	}
	if diff := cmp.Diff(want, LoadDifferences(base, cur)); diff != "" {
		t.Errorf("LoadDifferences (-want +got):\n%s", diff)
	}
	closed := gateSettings(200)
	closed.Arrival = nil
	if d := LoadDifferences(base, closed); len(d) != 1 || d[0].Current != "closed loop" {
		t.Errorf("open against closed loop: %v; want the arrival, closed loop", d)
	}
}

// TestCompareDifferentLoad is the regression test of issue 28 item 15: a gate of two runs of one
// scenario at 200/s and 100/s called the reference's halved throughput the machine's drift. A
// different load is refused (ErrLoadMismatch, naming it); allowed, the summary names it and the
// drift note does not blame the machine alone.
func TestCompareDifferentLoad(t *testing.T) {
	fixtures := gateFixtures()
	base, cur := fixtures["baseline-reference"], fixtures["current-half-rate"]
	_, err := Compare(base, cur, DefaultPolicy())
	if !errors.Is(err, ErrLoadMismatch) || !strings.Contains(err.Error(), "arrival constant 200/s (baseline) vs constant 100/s (current)") {
		t.Fatalf("Compare = %v; want ErrLoadMismatch naming the arrival", err)
	}
	p := DefaultPolicy()
	p.AllowDifferentLoad = true
	g, err := Compare(base, cur, p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(g.Summary, "The runs' loads differ (arrival constant 200/s (baseline) vs constant 100/s (current))") {
		t.Errorf("summary %q does not name the different loads", g.Summary)
	}
	notes := strings.Join(g.Notes, "\n")
	if strings.Contains(notes, "(the machine's drift,") || !strings.Contains(notes, "the different loads and the machine's drift together") {
		t.Errorf("notes blame the machine alone:\n%s", notes)
	}
	if len(g.LoadDiffers) != 1 {
		t.Errorf("LoadDiffers = %v; want the arrival", g.LoadDiffers)
	}

	old := fixtures["baseline"]
	old.Scenario.Settings = nil
	g, err = Compare(old, fixtures["current-same"], DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(g.Notes, "\n"), "the loads were not compared") {
		t.Errorf("a result without settings: notes %q do not say the loads were not compared", g.Notes)
	}
}
