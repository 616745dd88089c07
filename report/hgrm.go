package report

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// HGRMTicksPerHalfDistance is the number of percentile lines per halving of the distance to 100%,
// HdrHistogram's default for its percentile-distribution output.
const HGRMTicksPerHalfDistance = 5

// MicrosPerMilli scales histograms recorded in microseconds to the milliseconds .hgrm files hold.
const MicrosPerMilli = 1000.0

// ErrHGRM reports text that is not in the HdrHistogram percentile-distribution format.
var ErrHGRM = errors.New("report: not an .hgrm percentile distribution")

// WriteHGRM writes h in the HdrHistogram percentile-distribution format that Java's
// Histogram.outputPercentileDistribution and the HdrHistogram plotter use: a header line, one line
// per percentile tick (Value, Percentile as a fraction, TotalCount, 1/(1-Percentile); the last line,
// at 100%, has no fourth column), and the Mean/StdDeviation, Max/Total count and
// Buckets/SubBuckets footer. Values and the footer's Mean, StdDeviation and Max are divided by scale
// (MicrosPerMilli turns microseconds into milliseconds) and printed with 3 decimals. Each value is
// the highest value equivalent to the one at its percentile, as HdrHistogram reports it.
func WriteHGRM(w io.Writer, h *hdrhistogram.Histogram, scale float64) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%12s %14s %10s %14s\n\n", "Value", "Percentile", "TotalCount", "1/(1-Percentile)")
	if h.TotalCount() > 0 {
		for _, b := range h.CumulativeDistributionWithTicks(HGRMTicksPerHalfDistance) {
			q := b.Quantile / 100
			v := float64(b.ValueAt) / scale
			if b.Quantile >= 100 {
				fmt.Fprintf(bw, "%12.3f %2.12f %10d\n", v, 1.0, b.Count)
				continue
			}
			fmt.Fprintf(bw, "%12.3f %2.12f %10d %14.2f\n", v, q, b.Count, 1/(1-q))
		}
	}
	buckets, subBuckets := hdrGeometry(h)
	fmt.Fprintf(bw, "#[Mean    = %12.3f, StdDeviation   = %12.3f]\n", h.Mean()/scale, h.StdDev()/scale)
	fmt.Fprintf(bw, "#[Max     = %12.3f, Total count    = %12d]\n", float64(h.Max())/scale, h.TotalCount())
	fmt.Fprintf(bw, "#[Buckets = %12d, SubBuckets     = %12d]\n", buckets, subBuckets)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write hgrm: %w", err)
	}
	return nil
}

// hdrGeometry returns the bucket and sub-bucket counts of h, as HdrHistogram computes them:
// subBucketCount = 2^⌈log2(2·10^digits)⌉ and len(counts) = (buckets+1)·subBucketCount/2.
func hdrGeometry(h *hdrhistogram.Histogram) (buckets, subBuckets int) {
	digits := h.SignificantFigures()
	subBuckets = 1 << int(math.Ceil(math.Log2(2*math.Pow10(int(digits)))))
	n := len(h.Export().Counts)
	return n/(subBuckets/2) - 1, subBuckets
}

// HGRM is a parsed percentile distribution. Values are in the file's unit (milliseconds for the
// files limitbench writes).
type HGRM struct {
	// Lines holds the percentile lines in file order.
	Lines []HGRMLine
	// Mean, StdDev and Max come from the footer.
	Mean, StdDev, Max float64
	// TotalCount, Buckets and SubBuckets come from the footer.
	TotalCount          int64
	Buckets, SubBuckets int
}

// HGRMLine is one line of a percentile distribution.
type HGRMLine struct {
	Value float64
	// Quantile is the percentile as a fraction, 0 to 1.
	Quantile   float64
	TotalCount int64
}

// ValueAtQuantile returns the value of the first line whose percentile is at least q, where q is
// 0 to 100 like hdrhistogram's ValueAtQuantile; it returns the last value for q above every line
// and 0 for an empty distribution.
func (d *HGRM) ValueAtQuantile(q float64) float64 {
	for _, l := range d.Lines {
		if l.Quantile*100 >= q {
			return l.Value
		}
	}
	if len(d.Lines) == 0 {
		return 0
	}
	return d.Lines[len(d.Lines)-1].Value
}

// ReadHGRM parses a percentile distribution written by WriteHGRM or HdrHistogram's Java, C or Go
// implementations (blank lines and the header are skipped; the footer is required). Errors wrap
// ErrHGRM and name the line.
func ReadHGRM(r io.Reader) (*HGRM, error) {
	var d HGRM
	footer := 0
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "#["):
			if err := parseFooter(line, &d); err != nil {
				return nil, fmt.Errorf("%w: line %d: %w", ErrHGRM, n, err)
			}
			footer++
			continue
		case strings.HasPrefix(line, "Value"):
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 || len(f) > 4 {
			return nil, fmt.Errorf("%w: line %d: want 3 or 4 columns, got %q", ErrHGRM, n, line)
		}
		var l HGRMLine
		var err1, err2, err3 error
		l.Value, err1 = strconv.ParseFloat(f[0], 64)
		l.Quantile, err2 = strconv.ParseFloat(f[1], 64)
		l.TotalCount, err3 = strconv.ParseInt(f[2], 10, 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrHGRM, n, err)
		}
		d.Lines = append(d.Lines, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read hgrm: %w", err)
	}
	if footer != 3 {
		return nil, fmt.Errorf("%w: want 3 footer lines, got %d", ErrHGRM, footer)
	}
	return &d, nil
}

// parseFooter reads one "#[A = x, B = y]" line into d.
func parseFooter(line string, d *HGRM) error {
	body := strings.TrimSuffix(strings.TrimPrefix(line, "#["), "]")
	for _, part := range strings.Split(body, ",") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return fmt.Errorf("footer field %q has no '='", part)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		var err error
		switch k {
		case "Mean":
			d.Mean, err = strconv.ParseFloat(v, 64)
		case "StdDeviation":
			d.StdDev, err = strconv.ParseFloat(v, 64)
		case "Max":
			d.Max, err = strconv.ParseFloat(v, 64)
		case "Total count":
			d.TotalCount, err = strconv.ParseInt(v, 10, 64)
		case "Buckets":
			d.Buckets, err = strconv.Atoi(v)
		case "SubBuckets":
			d.SubBuckets, err = strconv.Atoi(v)
		default:
			return fmt.Errorf("unknown footer field %q", k)
		}
		if err != nil {
			return fmt.Errorf("footer field %s: %w", k, err)
		}
	}
	return nil
}
