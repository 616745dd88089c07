package metrics

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/limitbench/limitbench/internal/load"
)

// shardCount is how many shards one series' counters are spread over: outcomes of different
// logical clients land on different cache lines, so that workers rarely share one.
const shardCount = 16

// bucketCount is len(LatencyBuckets).
const bucketCount = 16

// LatencyBuckets are the upper bounds, in seconds, of the latency histograms' buckets (service
// time, intended-time latency and generator lateness): 100 µs to 10 s.
var LatencyBuckets = [bucketCount]float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
	2.5, 5, 10}

// bucketBounds are LatencyBuckets in nanoseconds, for the hot path.
var bucketBounds = func() []int64 {
	out := make([]int64, len(LatencyBuckets))
	for i, b := range LatencyBuckets {
		out[i] = int64(b * 1e9)
	}
	return out
}()

// histogram is one shard's share of a latency histogram: a count per bucket (the last one
// above every bound) and the sum in nanoseconds.
type histogram struct {
	counts [bucketCount + 1]atomic.Uint64
	sumNs  atomic.Int64
}

func (h *histogram) observe(d time.Duration) {
	ns := max(int64(d), 0)
	i := 0
	for i < len(bucketBounds) && ns > bucketBounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sumNs.Add(ns)
}

// shard is one share of a series' counters; padded so that two shards never share a cache line.
type shard struct {
	requests, admitted, denied, failed, unknown, warmup atomic.Uint64
	admittedPermits                                     atomic.Uint64
	service, latency, lateness                          histogram
	_                                                   [64]byte
}

// errorKey is one class of error: load.Class (failed or unknown) and load.ErrorKindOf.
type errorKey struct{ class, kind string }

// series is the live figures of one label set (one algorithm on one topology of one run):
// what every measurement with these labels observed.
type series struct {
	labels Labels
	shards [shardCount]shard

	errMu  sync.Mutex
	errors map[errorKey]uint64

	// Set once per measurement (Begin, Start), read at gathering.
	mu       sync.Mutex
	faults   faultClock
	offered  func() float64 // the plan's rate now; nil between measurements
	achieved float64        // requests per second in the last progress interval
	definite uint64         // definite violations of the measurements finished so far
	possible uint64
	// live is the definite violations the streaming verifier has found so far in the
	// measurement under way (verify.StreamLog.DefiniteSoFar); nil between measurements and
	// for a measurement verified after its load.
	live func() int64
	// mostEnded and allowance are the window counts' most and allowance of the measurements
	// that ended.
	mostEnded uint64
	allowance int64

	// windowPtr is the correctness counts of the measurement under way (nil without a
	// contract they apply to, and between measurements).
	windowPtr atomic.Pointer[windowCounts]

	// warm is the warmup of the measurement under way, in nanoseconds from the load's start:
	// outcomes intended before it are the warmup's.
	warm atomic.Int64
}

func newSeries(l Labels) *series { return &series{labels: l, errors: map[errorKey]uint64{}} }

// observe counts one outcome. It takes no lock unless the outcome is an error.
func (s *series) observe(o *load.Outcome) {
	sh := &s.shards[int(o.Client)%shardCount]
	if int64(o.Intended) < s.warm.Load() {
		sh.warmup.Add(1)
		return
	}
	sh.requests.Add(1)
	sh.service.observe(o.Service())
	sh.latency.observe(o.Latency())
	sh.lateness.observe(o.Sent - o.Intended)
	switch o.Class {
	case load.ClassOK:
		if !o.Decision.Allowed {
			sh.denied.Add(1)
			return
		}
		sh.admitted.Add(1)
		sh.admittedPermits.Add(uint64(o.Cost))
		if w := s.windowNow(); w != nil {
			w.add(o)
		}
		return
	case load.ClassFailed:
		sh.failed.Add(1)
	default:
		sh.unknown.Add(1)
	}
	k := errorKey{o.Class.String(), load.ErrorKindOf(o.Err)}
	s.errMu.Lock()
	s.errors[k]++
	s.errMu.Unlock()
}

// windowNow returns the window counts of the measurement under way, or nil.
func (s *series) windowNow() *windowCounts { return s.windowPtr.Load() }

// totals sums the shards.
type totals struct {
	requests, admitted, denied, failed, unknown, warmup, admittedPermits uint64
	service, latency, lateness                                           histSnapshot
}

// histSnapshot is a histogram summed over the shards: cumulative counts per bound, as
// Prometheus has them, and the sum in seconds.
type histSnapshot struct {
	cumulative []uint64 // per LatencyBuckets bound
	count      uint64
	sum        float64
}

func (s *series) totals() totals {
	var t totals
	var svc, lat, late [bucketCount + 1]uint64
	var svcSum, latSum, lateSum int64
	for i := range s.shards {
		sh := &s.shards[i]
		t.requests += sh.requests.Load()
		t.admitted += sh.admitted.Load()
		t.denied += sh.denied.Load()
		t.failed += sh.failed.Load()
		t.unknown += sh.unknown.Load()
		t.warmup += sh.warmup.Load()
		t.admittedPermits += sh.admittedPermits.Load()
		for j := range svc {
			svc[j] += sh.service.counts[j].Load()
			lat[j] += sh.latency.counts[j].Load()
			late[j] += sh.lateness.counts[j].Load()
		}
		svcSum += sh.service.sumNs.Load()
		latSum += sh.latency.sumNs.Load()
		lateSum += sh.lateness.sumNs.Load()
	}
	t.service, t.latency, t.lateness = snapshot(svc[:], svcSum), snapshot(lat[:], latSum), snapshot(late[:], lateSum)
	return t
}

func snapshot(counts []uint64, sumNs int64) histSnapshot {
	h := histSnapshot{cumulative: make([]uint64, len(LatencyBuckets)), sum: float64(sumNs) / 1e9}
	for i, c := range counts {
		h.count += c
		if i < len(LatencyBuckets) {
			h.cumulative[i] = h.count
		}
	}
	return h
}

// errorCounts returns a copy of the error counts.
func (s *series) errorCounts() map[errorKey]uint64 {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	out := make(map[errorKey]uint64, len(s.errors))
	for k, v := range s.errors {
		out[k] = v
	}
	return out
}
