package gate

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/limitbench/limitbench/result"
)

func TestRowBound(t *testing.T) {
	for _, tt := range []struct {
		name   string
		r      Row
		lo, hi float64
		ok     bool
	}{
		{"percent", Row{OldMedian: 1000, DeltaUnit: "%", DeltaLow: -21.5, DeltaHigh: -18.5}, 785, 815, true},
		{"points", Row{OldMedian: 0.98, DeltaUnit: "pt", DeltaLow: -2, DeltaHigh: 1}, 0.96, 0.99, true},
		{"negative median keeps order", Row{OldMedian: -10, DeltaUnit: "%", DeltaLow: -10, DeltaHigh: 10}, -11, -9, true},
		{"infinite end", Row{OldMedian: 10, DeltaUnit: "%", DeltaLow: 0, DeltaHigh: math.Inf(1)}, 0, 0, false},
	} {
		lo, hi, ok := tt.r.Bound()
		if ok != tt.ok || ok && (math.Abs(lo-tt.lo) > 1e-9 || math.Abs(hi-tt.hi) > 1e-9) {
			t.Errorf("%s: Bound() = (%g, %g, %v); want (%g, %g, %v)", tt.name, lo, hi, ok, tt.lo, tt.hi, tt.ok)
		}
	}
	r := Row{Scenario: "s", Algorithm: "gcra", Topology: "single", Metric: result.CPU, Figures: FiguresRelative}
	if r.Benchmark() != "s/gcra/single" || r.Measure() != "cpu-ratio" {
		t.Errorf("Benchmark, Measure = %q, %q; want s/gcra/single, cpu-ratio", r.Benchmark(), r.Measure())
	}
	if r.Figures = FiguresRaw; r.Measure() != "cpu" {
		t.Errorf("raw Measure = %q; want cpu", r.Measure())
	}
}

// slowerReport is the gate's report of testdata's baseline against current-slower.
func slowerReport(t *testing.T) *Report {
	t.Helper()
	fx := gateFixtures()
	g, err := Compare(fx["baseline"], fx["current-slower"], DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestBMF: one benchmark per algorithm × topology, one measure per row with a figure, the
// current median between the interval's bounds' ends; no verdict rows.
func TestBMF(t *testing.T) {
	g := slowerReport(t)
	var b bytes.Buffer
	if err := g.BMF(&b); err != nil {
		t.Fatal(err)
	}
	var got map[string]map[string]BMFValue
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("BMF is not JSON of the format: %v\n%s", err, b.String())
	}
	n := 0
	for _, r := range g.Rows {
		m, ok := got[r.Benchmark()][r.Measure()]
		if r.Metric == result.Verdict {
			if ok {
				t.Errorf("%s %s: a verdict row in BMF", r.Benchmark(), r.Measure())
			}
			continue
		}
		n++
		lo, hi, _ := r.Bound()
		switch {
		case !ok:
			t.Errorf("%s %s: missing from BMF:\n%s", r.Benchmark(), r.Measure(), b.String())
		case m.Value != r.NewMedian || m.Lower == nil || m.Upper == nil || *m.Lower != lo || *m.Upper != hi:
			t.Errorf("%s %s = %+v; want value %g in [%g, %g]", r.Benchmark(), r.Measure(), m, r.NewMedian, lo, hi)
		}
	}
	count := 0
	for _, ms := range got {
		count += len(ms)
	}
	if count != n || n == 0 {
		t.Errorf("BMF holds %d measures; want %d, one per row with a figure", count, n)
	}
}

// TestBenchmarkAction: github-action-benchmark's entries, one per row with a figure, each
// saying which way is better.
func TestBenchmarkAction(t *testing.T) {
	g := slowerReport(t)
	var b bytes.Buffer
	if err := g.BenchmarkAction(&b); err != nil {
		t.Fatal(err)
	}
	var got []BenchmarkActionEntry
	dec := json.NewDecoder(&b)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("not github-action-benchmark's custom JSON: %v", err)
	}
	rows := g.numericRows()
	if len(got) != len(rows) || len(rows) == 0 {
		t.Fatalf("%d entries; want %d, one per row with a figure", len(got), len(rows))
	}
	for i, r := range rows {
		e := got[i]
		better := "smaller is better"
		if r.Metric == result.Throughput || r.Metric == result.Efficiency {
			better = "bigger is better"
		}
		if e.Name != r.Benchmark()+" "+r.Measure() || e.Value != r.NewMedian || e.Unit == "" || !strings.HasPrefix(e.Range, "99% CI ") ||
			!strings.HasSuffix(e.Extra, "gate: "+string(r.Verdict)+"; "+better) {
			t.Errorf("entry %d = %+v; want %s %s, value %g, a 99%% CI range, extra ending in the verdict and %q", i, e, r.Benchmark(), r.Measure(), r.NewMedian, better)
		}
	}
}
