package load

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestBinFor(t *testing.T) {
	const s = time.Second
	tests := []struct {
		d       time.Duration
		windows []time.Duration
		want    time.Duration
	}{
		{2 * s, []time.Duration{s}, 20 * ms},                      // the demo: 100 bins instead of 2
		{2 * s, nil, 20 * ms},                                     // no contract: the same
		{100 * ms, nil, 2 * ms},                                   // MinDuration: 50 bins
		{3 * s, []time.Duration{s}, 50 * ms},                      // 60 bins
		{10 * s, []time.Duration{s}, 200 * ms},                    // 50 bins
		{10 * s, []time.Duration{100 * ms}, 100 * ms},             // never wider than the window
		{10 * s, []time.Duration{s, 0, 50 * ms}, 50 * ms},         // the narrowest window; 0 ignored
		{60 * s, []time.Duration{s}, s},                           // 60 bins of the window
		{60 * s, []time.Duration{60 * s}, s},                      // a 60 s window: still 50 bins or more
		{5 * time.Minute, []time.Duration{s}, s},                  // 300 bins
		{time.Hour, []time.Duration{s}, s},                        // 3,600 bins: the cap exactly
		{time.Hour, []time.Duration{100 * ms}, s},                 // the cap wins over the window
		{24 * time.Hour, []time.Duration{s}, 50 * s},              // the cap: 1,728 bins
		{2345 * ms, nil, 5 * ms},                                  // 20 ms does not divide: 469 whole bins
		{2*s + 1, nil, 20 * ms},                                   // nothing divides: the widest, last bin partial
		{5 * s, []time.Duration{4 * ms}, 2 * ms},                  // a round width under the window
		{10800 * ms, []time.Duration{4 * ms}, 4 * ms},             // no round width in [3 ms, 4 ms]: the window
		{10 * s, []time.Duration{4 * ms}, 4 * ms},                 // none in [2.78 ms, 4 ms] either
		{s, []time.Duration{500 * time.Microsecond}, ms},          // the floor wins over a sub-ms window
		{10 * s, []time.Duration{500 * time.Microsecond}, 5 * ms}, // and the cap: 2,000 whole bins
		{0, nil, DefaultBin},
		{-s, nil, DefaultBin},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %v", tt.d, tt.windows), func(t *testing.T) {
			if got := BinFor(tt.d, tt.windows...); got != tt.want {
				t.Errorf("BinFor(%s, %v) = %s (%d bins); want %s", tt.d, tt.windows, got, (tt.d+got-1)/max(got, 1), tt.want)
			}
		})
	}
}

// TestBinForBounds: for any run length and windows, the bin is at least MinBin, gives at most
// MaxBins bins, and, unless those two bounds forbid it, at least MinBins bins and no wider than
// the narrowest window.
func TestBinForBounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := time.Duration(rapid.Int64Range(int64(MinDuration), int64(MaxSpan)).Draw(t, "d"))
		if rapid.Bool().Draw(t, "whole ms") {
			d = d.Truncate(ms)
		}
		windows := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) time.Duration {
			return time.Duration(rapid.Int64Range(1, 3_600_000).Draw(t, "window ms")) * ms
		}), 0, 3).Draw(t, "windows")
		w := BinFor(d, windows...)
		bins := (d + w - 1) / w
		if w < MinBin || bins > MaxBins {
			t.Fatalf("BinFor(%s, %v) = %s: %d bins; want >= %s and <= %d bins", d, windows, w, bins, MinBin, MaxBins)
		}
		hi := d / MinBins
		for _, x := range windows {
			hi = min(hi, x)
		}
		if lo := max((d+MaxBins-1)/MaxBins, MinBin); lo <= hi && w > hi {
			t.Fatalf("BinFor(%s, %v) = %s; want <= %s (%d bins at least, the narrowest window)", d, windows, w, hi, MinBins)
		}
	})
}
