package report

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/google/go-cmp/cmp"
)

// sampleHistogram is the histogram behind testdata/sample.hgrm: latencies in microseconds, four of
// 1 ms, three of 2 ms, two of 5 ms and one of 10 ms.
//
// The sample was checked by hand: cumulative counts are 4 (40%), 7 (70%), 9 (90%) and 10 (100%);
// with 3 significant digits 5000 µs shares a bucket with 5000–5003 and 10000 µs with 10000–10007, so
// the reported values are 5.003 and 10.007 ms; the mean of the buckets' middle values
// (4·1000 + 3·2000 + 2·5002 + 10004)/10 = 3000.8 µs; the standard deviation is 2758.1 µs; 60 s at 3
// digits needs 16 buckets of 2048 sub-buckets.
func sampleHistogram(t *testing.T) *hdrhistogram.Histogram {
	t.Helper()
	h := hdrhistogram.New(1, 60_000_000, 3)
	for _, r := range []struct{ v, n int64 }{{1000, 4}, {2000, 3}, {5000, 2}, {10000, 1}} {
		if err := h.RecordValues(r.v, r.n); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func TestWriteHGRMMatchesHandCheckedSample(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHGRM(&buf, sampleHistogram(t), MicrosPerMilli); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "sample.hgrm"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), buf.String()); diff != "" {
		t.Errorf("WriteHGRM(sample) differs from testdata/sample.hgrm (-want +got):\n%s", diff)
	}
}

func TestReadHGRMGivesSamePercentiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	lognormal := hdrhistogram.New(1, 60_000_000, 3)
	for range 20000 {
		v := int64(math.Exp(6 + 0.8*rng.NormFloat64())) // around 400 µs, long tail
		if err := lognormal.RecordValue(v); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		h    *hdrhistogram.Histogram
	}{
		{"sample", sampleHistogram(t)},
		{"lognormal", lognormal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteHGRM(&buf, tc.h, MicrosPerMilli); err != nil {
				t.Fatal(err)
			}
			d, err := ReadHGRM(&buf)
			if err != nil {
				t.Fatal(err)
			}
			// Every line is the histogram's value at that line's percentile: the value where the
			// cumulative count first reaches rank ⌈q·N⌉. (ValueAtQuantile rounds the rank to nearest
			// instead, so ask it for exactly that rank.)
			n := float64(tc.h.TotalCount())
			for _, l := range d.Lines {
				rank := max(1, math.Ceil(l.Quantile*n-1e-9))
				want := float64(tc.h.ValueAtQuantile(100*rank/n)) / MicrosPerMilli
				if l.Quantile < 1 && math.Abs(l.Value-want) > 0.0005 {
					t.Errorf("line at %v: value %v ms; histogram says %v ms", l.Quantile, l.Value, want)
				}
			}
			// The summary percentiles read back equal the histogram's: exactly at ticks (50, 90)
			// and bracketed by neighbouring lines elsewhere.
			for _, q := range []float64{50, 90, 99, 99.9} {
				got := d.ValueAtQuantile(q)
				want := float64(tc.h.ValueAtQuantile(q)) / MicrosPerMilli
				if got < want-0.0005 {
					t.Errorf("ValueAtQuantile(%v) = %v ms; below the histogram's %v ms", q, got, want)
				}
				if q == 50 || q == 90 {
					if math.Abs(got-want) > 0.0005 {
						t.Errorf("ValueAtQuantile(%v) = %v ms; want %v ms", q, got, want)
					}
				}
			}
			if d.TotalCount != tc.h.TotalCount() {
				t.Errorf("TotalCount = %d; want %d", d.TotalCount, tc.h.TotalCount())
			}
			if want := float64(tc.h.Max()) / MicrosPerMilli; math.Abs(d.Max-want) > 0.0005 {
				t.Errorf("Max = %v; want %v", d.Max, want)
			}
			if want := tc.h.Mean() / MicrosPerMilli; math.Abs(d.Mean-want) > 0.0005 {
				t.Errorf("Mean = %v; want %v", d.Mean, want)
			}
		})
	}
}

func TestReadHGRMRejectsMalformed(t *testing.T) {
	for _, tc := range []struct{ name, text string }{
		{"empty", ""},
		{"no footer", "       1.000 0.5 4 2.00\n"},
		{"bad number", "  x 0.5 4 2.00\n#[Mean = 1, StdDeviation = 0]\n#[Max = 1, Total count = 1]\n#[Buckets = 1, SubBuckets = 2]\n"},
		{"bad footer", "#[Mean = 1, Bogus = 0]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ReadHGRM(bytes.NewBufferString(tc.text)); err == nil {
				t.Errorf("ReadHGRM(%q) = nil error; want one", tc.text)
			}
		})
	}
}
