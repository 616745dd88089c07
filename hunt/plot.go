package hunt

import (
	"cmp"
	"slices"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/verify"
)

// PlotBins is the fewest bins a Plot aims for over its trial's extent.
const PlotBins = 50

// MaxPlotBins is the most bins a Plot has (a trial with a long quiet stretch gets wider bins).
const MaxPlotBins = 400

// Plot is the trial of an entry's best schedule, as the report draws it: the permits requested
// and admitted per time bin, the contract's allowance for one bin, and the window the
// verifier picked out (the worst violation, or the closest approach when there is none) with the
// admissions it holds. Everything comes from the trial's own admission log (Candidate.Log);
// nothing is recomputed from a model of the limiter. Times are seconds from the trial's time zero
// (Log.Base, on the log's clock: an event of a client whose clock is ahead lies later).
type Plot struct {
	// OriginUs is the trial's time zero, µs since the Unix epoch on the log's clock.
	OriginUs int64 `json:"origin_us"`
	// BinS is the width of a bin; FirstS the start of the first bin (a multiple of BinS, negative
	// when a skewed client's decision lies before time zero). Bin i is [FirstS + i·BinS,
	// FirstS + (i+1)·BinS).
	BinS   float64 `json:"bin_s"`
	FirstS float64 `json:"first_s"`
	// Requested sums the permits of every request decided in a bin (admitted, denied, failed or
	// unknown), Admitted those of the admitted ones; a request counts in the bin of the midpoint
	// of its decision interval. Both have one element per bin.
	Requested []int64 `json:"requested"`
	Admitted  []int64 `json:"admitted"`
	// AllowedPerBin is what the contract allows over one bin at its long-run rate: L·bin/W for
	// the window kinds, r·bin for token-bucket. It is a guide, not a bound: a window contract
	// allows L at once, and a bucket its capacity.
	AllowedPerBin float64 `json:"allowed_per_bin"`
	// Window is the set of admissions the verifier picked out; nil when nothing was admitted.
	Window *PlotWindow `json:"window,omitempty"`
}

// PlotWindow is one set of admissions of one scope over [LoS, HiS]: the worst definite violation
// (Violation set) or the closest approach.
type PlotWindow struct {
	// Limit is the limit the set is measured against (without its Also).
	Limit     string `json:"limit"`
	Violation bool   `json:"violation"`
	// Subject and Client name the scope; a name that is not part of the scope is empty.
	Subject string `json:"subject,omitempty"`
	Client  string `json:"client,omitempty"`
	// LoS and HiS bound the set (widened by the contract's granularity, as the verifier does).
	LoS float64 `json:"lo_s"`
	HiS float64 `json:"hi_s"`
	// Permits is what the verifier counted in the set, Allowed what the contract allows it.
	Permits int64   `json:"permits"`
	Allowed float64 `json:"allowed"`
	// AllowedAtLo and AllowedPerS give the allowance of the part of the set up to time t:
	// AllowedAtLo + AllowedPerS·(t − LoS). For the window kinds it is flat (AllowedPerS 0,
	// AllowedAtLo = Allowed); for token-bucket(C, r) it is C + r·(t − LoS).
	AllowedAtLo float64 `json:"allowed_at_lo"`
	AllowedPerS float64 `json:"allowed_per_s"`
	// Steps are the admissions of the scope whose widened decision intervals lie in [LoS, HiS],
	// in time order: at AtS (the midpoint of the decision interval) the running total of their
	// permits reaches Permits.
	Steps []PlotStep `json:"steps"`
}

// PlotStep is one point of a running total.
type PlotStep struct {
	AtS     float64 `json:"at_s"`
	Permits int64   `json:"permits"`
}

// plotWhere is the set a Plot marks, in µs since the Unix epoch.
type plotWhere struct {
	lim              algorithms.Contract
	violation        bool
	subject, client  string
	lo, hi, permits  int64
	allowed          float64
	bucketC, bucketR float64 // token-bucket: capacity and permits per second
}

// plotOf returns the plot of log with w marked (w.lim.Kind empty: no window). The log's events are
// read, not changed.
func plotOf(log *verify.Log, c algorithms.Contract, w plotWhere) *Plot {
	ev := log.Events
	if len(ev) == 0 {
		return nil
	}
	mid := func(e verify.Event) int64 { return e.Lo() + (e.Hi()-e.Lo())/2 }
	first, last := mid(ev[0]), mid(ev[0])
	for _, e := range ev {
		first, last = min(first, mid(e)), max(last, mid(e))
	}
	bin := plotBin(time.Duration(last-first) * time.Microsecond)
	binUs := bin.Microseconds()
	start := floorDiv(first, binUs) * binUs
	n := int((last-start)/binUs) + 1
	p := &Plot{OriginUs: log.Base, BinS: bin.Seconds(), FirstS: float64(start) / 1e6, Requested: make([]int64, n), Admitted: make([]int64, n),
		AllowedPerBin: ratePerS(c) * bin.Seconds()}
	for _, e := range ev {
		i := int((mid(e) - start) / binUs)
		p.Requested[i] += int64(e.Permits)
		if e.Kind() == verify.Admitted {
			p.Admitted[i] += int64(e.Permits)
		}
	}
	if w.lim.Kind == "" {
		return p
	}
	base := log.Base
	sec := func(us int64) float64 { return float64(us-base) / 1e6 }
	pw := &PlotWindow{Limit: w.lim.String(), Violation: w.violation, Subject: w.subject, Client: w.client,
		LoS: sec(w.lo), HiS: sec(w.hi), Permits: w.permits, Allowed: w.allowed, AllowedAtLo: w.allowed, Steps: []PlotStep{}}
	if w.lim.Kind == algorithms.TokenBucket {
		pw.AllowedAtLo, pw.AllowedPerS = w.bucketC, w.bucketR
	}
	g := w.lim.Granularity.Microseconds()
	var in []verify.Event
	for _, e := range ev {
		if e.Kind() != verify.Admitted || e.Lo()+base-g < w.lo || e.Hi()+base+g > w.hi {
			continue
		}
		if (w.subject != "" && log.Subjects[e.Subject] != w.subject) || (w.client != "" && log.Clients[e.Client] != w.client) {
			continue
		}
		in = append(in, e)
	}
	slices.SortStableFunc(in, func(a, b verify.Event) int { return cmp.Compare(mid(a), mid(b)) })
	var total int64
	for _, e := range in {
		total += int64(e.Permits)
		pw.Steps = append(pw.Steps, PlotStep{AtS: float64(mid(e)) / 1e6, Permits: total})
	}
	p.Window = pw
	return p
}

// plotBin returns the bin for a trial whose decisions span extent: the widest of 1, 2 or 5 times
// a power of ten of milliseconds that gives at least PlotBins bins (1 ms at the least, and wider
// when that would make more than MaxPlotBins).
func plotBin(extent time.Duration) time.Duration {
	bin := time.Millisecond
	for _, m := range []time.Duration{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000} {
		b := m * time.Millisecond
		if extent/b >= PlotBins {
			bin = b
		}
	}
	for extent/bin >= MaxPlotBins {
		bin *= 2
	}
	return bin
}

// ratePerS returns c's long-run allowance in permits per second: L/W or r.
func ratePerS(c algorithms.Contract) float64 {
	switch c.Kind {
	case algorithms.TokenBucket:
		if c.RefillPer > 0 {
			return float64(c.RefillPermits) / c.RefillPer.Seconds()
		}
	default:
		if c.Window > 0 {
			return float64(c.Limit) / c.Window.Seconds()
		}
	}
	return 0
}

// floorDiv is a / b rounded toward −∞ (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
