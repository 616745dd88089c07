package gate

import (
	"bytes"
	"strings"
	"testing"

	"github.com/limitbench/limitbench/report"
)

// The machine's load per repeat during two runs on one machine: it swings by ±20% from round to
// round, and the current run's machine is 30% busier on the whole (another job started).
var (
	baselineDrift = []float64{1.00, 1.20, 0.85, 1.10, 0.90, 1.15}
	currentDrift  = []float64{1.30 * 1.10, 1.30 * 0.85, 1.30 * 1.20, 1.30 * 0.90, 1.30 * 1.15, 1.30 * 1.00}
)

// driftRun returns a run of gcra (slowed down by slowdown) and the reference script, both measured
// in every round under the machine's drift, each with its own small jitter; refNoise, when set,
// gives the reference its own noise instead (a reference that does not follow the machine).
func driftRun(drift []float64, slowdown float64, refNoise []float64) *report.Result {
	r := gateResult(2, gateEntry("gcra", "single", report.Pass, sampleSpec{n: 6, slowdown: slowdown, drift: drift}))
	r.Reference = "reference"
	ref := sampleSpec{n: 6, drift: drift, noise: gateJitter[4:], efficiency: 1, bytes: 60, cpu: 10}
	if refNoise != nil {
		ref.drift, ref.noise = nil, refNoise
	}
	r.Entries = append([]report.Entry{gateEntry("reference", "single", report.Pass, ref)}, r.Entries...)
	return r
}

// TestPairingWithReference checks deliverable 3 of issue 13: on one machine each row compares raw
// figures or per-repeat ratios to the reference measured in the same round, whichever detects
// smaller changes, and says which.
func TestPairingWithReference(t *testing.T) {
	tests := []struct {
		name        string
		baseline    *report.Result
		current     *report.Result
		wantFigures Figures
		want        Verdict // of gcra's cpu row
	}{
		{
			// Raw figures move with the machine: spread ±20% and a 30% shift between the runs.
			// The ratios cancel both, so they are compared, and the same code is not flagged.
			name:        "drift shared with the reference, same code",
			baseline:    driftRun(baselineDrift, 1, nil),
			current:     driftRun(currentDrift, 1, nil),
			wantFigures: FiguresRelative,
			want:        Insignificant,
		},
		{
			name:        "drift shared with the reference, 25% slower code",
			baseline:    driftRun(baselineDrift, 1, nil),
			current:     driftRun(currentDrift, 1.25, nil),
			wantFigures: FiguresRelative,
			want:        Regression,
		},
		{
			// A reference with noise of its own would only add it to the ratios: raw figures.
			name:        "quiet machine, noisy reference",
			baseline:    driftRun(nil, 1, gateNoise),
			current:     driftRun(nil, 1.25, gateNoise[1:]),
			wantFigures: FiguresRaw,
			want:        Regression,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := Compare(tt.baseline, tt.current, DefaultPolicy())
			if err != nil {
				t.Fatal(err)
			}
			if !g.SameMachine {
				t.Fatalf("SameMachine = false; the case is about one machine")
			}
			r := rowOf(t, g, "gcra", MetricCPU)
			if r.Figures != tt.wantFigures || r.Verdict != tt.want {
				t.Errorf("cpu row compares %s figures, verdict %s; want %s, %s (row %+v)", r.Figures, r.Verdict, tt.wantFigures, tt.want, r)
			}
			if len(r.Candidates) != 2 {
				t.Fatalf("candidates = %+v; want raw and relative", r.Candidates)
			}
			var chosen, other Candidate
			for _, c := range r.Candidates {
				if c.Figures == r.Figures {
					chosen = c
				} else {
					other = c
				}
			}
			if chosen.MDE != r.MDE || !(chosen.MDE < other.MDE) {
				t.Errorf("chosen %+v, other %+v, row MDE %v; want the chosen one with the smaller MDE", chosen, other, r.MDE)
			}
			for _, row := range g.Rows {
				if row.Algorithm == "reference" {
					t.Errorf("the reference was gated: %+v", row)
				}
				if row.Metric == MetricEfficiency && row.Figures != FiguresRaw {
					t.Errorf("efficiency compared %s figures; want raw", row.Figures)
				}
			}
			var md bytes.Buffer
			if err := g.Markdown(&md); err != nil {
				t.Fatal(err)
			}
			wantCell := "| cpu (µs/decision) |"
			if tt.wantFigures == FiguresRelative {
				wantCell = "| cpu (×ref) |"
				if !strings.Contains(g.Summary, "on ratios to the reference") {
					t.Errorf("summary %q does not say rows compare ratios to the reference", g.Summary)
				}
			}
			if !strings.Contains(md.String(), wantCell) || !strings.Contains(md.String(), "per-repeat ratios to the reference script `reference` measured in the same round") {
				t.Errorf("Markdown does not say which figures were compared (want %q):\n%s", wantCell, md.String())
			}
		})
	}
}

// TestPairingWithoutReference: on one machine a result without reference samples is compared on
// raw figures, and a note says why when only one side has them.
func TestPairingWithoutReference(t *testing.T) {
	base := driftRun(nil, 1, nil)
	cur := gateResult(2, gateEntry("gcra", "single", report.Pass, sampleSpec{n: 6}))
	g, err := Compare(base, cur, DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	if r := rowOf(t, g, "gcra", MetricCPU); r.Figures != FiguresRaw || len(r.Candidates) != 1 {
		t.Errorf("cpu row = %+v; want raw figures, one candidate", r)
	}
	if notes := strings.Join(g.Notes, "\n"); !strings.Contains(notes, "current: no reference samples for relative figures: the result names no reference script: raw figures only") {
		t.Errorf("notes %q do not say why the figures are raw", notes)
	}
}
