package gate

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
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
func driftRun(drift []float64, slowdown float64, refNoise []float64) *result.Result {
	r := gateResult(2, gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 6, slowdown: slowdown, drift: drift}))
	r.Reference = "reference"
	ref := sampleSpec{n: 6, drift: drift, noise: gateJitter[4:], efficiency: 1, bytes: 60, cpu: 10}
	if refNoise != nil {
		ref.drift, ref.noise = nil, refNoise
	}
	r.Entries = append([]result.Entry{gateEntry("reference", "single", verify.Pass, ref)}, r.Entries...)
	return r
}

// TestPairingWithReference checks deliverable 3 of issue 13: on one machine each row compares raw
// figures or per-repeat ratios to the reference measured in the same round, whichever detects
// smaller changes, and says which.
func TestPairingWithReference(t *testing.T) {
	tests := []struct {
		name        string
		baseline    *result.Result
		current     *result.Result
		wantFigures Figures
		want        Verdict // of gcra's row of metric
		// metric is the row checked; cpu when empty.
		metric result.Metric
		// driftDecides: the raw figures have the smaller MDE, and only their drift makes the
		// row compare ratios.
		driftDecides bool
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
			// Each run is quiet, so raw figures alone would look more precise than ratios (which
			// add the reference's own jitter), but the whole current run is 15% slower: the
			// reference's own change between the runs shows the drift, which raw figures would
			// carry into a false regression and ratios cancel.
			name:         "quiet runs, the current one on a machine 15% slower",
			baseline:     driftRun(nil, 1, nil),
			current:      driftRun([]float64{1.15}, 1, nil),
			wantFigures:  FiguresRelative,
			want:         Insignificant,
			metric:       result.Throughput,
			driftDecides: true,
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
			m := tt.metric
			if m == "" {
				m = result.CPU
			}
			r := rowOf(t, g, "gcra", m)
			if r.Figures != tt.wantFigures || r.Verdict != tt.want {
				t.Errorf("%s row compares %s figures, verdict %s; want %s, %s (row %+v)", m, r.Figures, r.Verdict, tt.wantFigures, tt.want, r)
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
			if score := func(c Candidate) float64 { return c.MDE + math.Abs(c.Drift) }; chosen.MDE != r.MDE || !(score(chosen) < score(other)) {
				t.Errorf("chosen %+v, other %+v, row MDE %v; want the chosen one with the smaller MDE + |drift|", chosen, other, r.MDE)
			}
			if tt.driftDecides && !(other.MDE < chosen.MDE && math.Abs(other.Drift) > 10) {
				t.Errorf("chosen %+v, other %+v; want the raw figures to have the smaller MDE and a drift over 10%%", chosen, other)
			}
			for _, row := range g.Rows {
				if row.Algorithm == "reference" {
					t.Errorf("the reference was gated: %+v", row)
				}
				if row.Metric == result.Efficiency && row.Figures != FiguresRaw {
					t.Errorf("efficiency compared %s figures; want raw", row.Figures)
				}
			}
			var md bytes.Buffer
			if err := g.Markdown(&md); err != nil {
				t.Fatal(err)
			}
			wantCell := "| " + string(m) + " (" + r.Unit + ") |"
			if tt.wantFigures == FiguresRelative {
				wantCell = "| " + string(m) + " (×ref) |"
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
	cur := gateResult(2, gateEntry("gcra", "single", verify.Pass, sampleSpec{n: 6}))
	g, err := Compare(base, cur, DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	if r := rowOf(t, g, "gcra", result.CPU); r.Figures != FiguresRaw || len(r.Candidates) != 1 {
		t.Errorf("cpu row = %+v; want raw figures, one candidate", r)
	}
	if notes := strings.Join(g.Notes, "\n"); !strings.Contains(notes, "current: no reference samples for relative figures: the result names no reference script: raw figures only") {
		t.Errorf("notes %q do not say why the figures are raw", notes)
	}
}

// TestPairedGolden renders a report that shows every feature of the Markdown: rows on ratios to
// the reference and on raw figures, the reference's drift, a regression, an inconclusive row and
// the detectable change; testdata/paired.md holds it (-update rewrites it). The baseline and the
// current run share the machine, which drifts from round to round and is 30% busier during the
// current run; gcra is 25% costlier, token-bucket unchanged but noisy.
func TestPairedGolden(t *testing.T) {
	run := func(drift []float64, slowdown float64, noise []float64) *result.Result {
		r := driftRun(drift, slowdown, nil)
		r.Entries = append(r.Entries, gateEntry("token-bucket", "single", verify.Pass, sampleSpec{n: 6, bytes: 120, noise: noise, drift: drift}))
		return r
	}
	g, err := Compare(run(baselineDrift, 1, gateNoise), run(currentDrift, 1.25, gateNoise[2:]), DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := g.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "paired.md")
	if *update {
		if err := os.WriteFile(golden, md.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), md.String()); diff != "" {
		t.Errorf("Markdown mismatch (-%s +got); run with -update:\n%s", golden, diff)
	}
}
