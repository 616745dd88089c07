//go:build linux || darwin

package bench_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/verify"
)

// verifyLog builds an admission log as the load engine would under a load of twice the limit:
// n admissions of subjects chosen uniformly among subjects, sent at rate per second by 64
// clients, each with a denial of the same subject sent beside it (so 2n events), appended in
// the order their replies arrived. width is the interval width in µs (0: exact server times);
// an interval is between width/2 and width wide, so with width well above 1e6/rate µs many
// intervals nest inside others. Times are relative to the log's Base, as load.AdmissionLog makes
// them.
func verifyLog(n, subjects int, rate, width int64) *verify.Log {
	rng := rand.New(rand.NewPCG(1, 2))
	const origin = 1_700_000_000_000_000
	log := &verify.Log{Base: origin, Events: make([]verify.Event, 0, 2*n)}
	for i := range subjects {
		log.Subjects = append(log.Subjects, fmt.Sprintf("subject-%d", i))
	}
	for i := range 64 {
		log.Clients = append(log.Clients, fmt.Sprintf("client-%d", i))
	}
	step := 1_000_000 / rate
	event := func(i int, subject uint32, kind verify.Kind) verify.Event {
		sent := int64(i)*step + rng.Int64N(step+1)
		lo, hi := sent, sent
		if width > 0 {
			hi = sent + width/2 + rng.Int64N(width/2+1)
		}
		e, err := verify.NewEvent(lo, hi, subject, uint16(rng.IntN(64)), 1, kind)
		if err != nil {
			panic(err)
		}
		return e
	}
	for i := range n {
		subject := uint32(rng.IntN(subjects))
		log.Events = append(log.Events, event(i, subject, verify.Admitted), event(i, subject, verify.Denied))
	}
	// Replies arrive out of order by up to 128 requests.
	for i := range log.Events {
		j := min(len(log.Events)-1, i+rng.IntN(128))
		log.Events[i], log.Events[j] = log.Events[j], log.Events[i]
	}
	return log
}

// cpuTime returns the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// heapLive returns the bytes of live heap objects after a full collection.
func heapLive() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkCheck measures verify.Check on logs of a million admissions under a load of twice
// the limit (a denial beside every admission), against the targets: at least 5 million
// admissions checked per second on one core, and at most 32 bytes held in memory per admission.
//
// Speed: admissions/s of wall time and admissions/cpu-s of the process's CPU time (the target is
// about the latter: wall time on a shared machine counts other processes too; run with -cpu 1).
// Each iteration checks the log in its arrival order (restored with the timer stopped), as a
// run would.
//
// Memory, measured, not computed from type sizes: log-B/admission is the live heap the log
// takes (its events of 16 bytes, denials included, so 32 bytes per admission at twice the limit,
// and names), measured with runtime.MemStats after a collection before and after building it;
// check-B/admission is what Check allocates per admission (its sort needs only small digit
// tables, and a buffer of at most 64 KiB for a per-client limit after a per-subject one; its
// sweep buffers are sized by the largest scope),
// an upper bound on what it holds at its peak; held-B/admission is their sum, the peak memory
// per admission of a run's log while it is checked. The hot-nested cases are the worst case:
// one subject takes every admission, and intervals 400 to 800 µs wide at 10 µs apart nest, so
// the Hi order has to be sorted and the token-bucket definite sweep needs its segment tree. In
// many-keys, 100,000 subjects are each admitted about 10 times, far below their limit: no
// scope can violate, and Check only sorts and counts.
func BenchmarkCheck(b *testing.B) {
	const n = 1 << 20
	sliding := algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 100, Window: time.Second}
	fixed := algorithms.Contract{Kind: algorithms.FixedWindow, Limit: 100, Window: time.Second}
	bucket := algorithms.Contract{Kind: algorithms.TokenBucket, Capacity: 100, RefillPermits: 100, RefillPer: time.Second}
	two := sliding
	two.Also = []algorithms.Contract{{Kind: algorithms.SlidingWindow, Limit: 10, Window: time.Second, Scope: algorithms.PerClient}}
	firstHit := algorithms.Contract{Kind: algorithms.FirstHitWindow, Limit: 100, Window: time.Second}
	// One subject admitted 100,000 times a second keeps these.
	hotSliding := algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 100_000, Window: time.Second}
	hotFirstHit := algorithms.Contract{Kind: algorithms.FirstHitWindow, Limit: 100_000, Window: time.Second}
	hotBucket := algorithms.Contract{Kind: algorithms.TokenBucket, Capacity: 1000, RefillPermits: 100_000, RefillPer: time.Second}
	cases := []struct {
		name     string
		c        algorithms.Contract
		subjects int
		width    int64
	}{
		{"sliding-window/exact", sliding, 1000, 0},
		{"sliding-window/intervals", sliding, 1000, 400},
		{"fixed-window/intervals", fixed, 1000, 400},
		{"token-bucket/exact", bucket, 1000, 0},
		{"token-bucket/intervals", bucket, 1000, 400},
		{"two-limits/intervals", two, 1000, 400},
		{"sliding-window/hot-nested", hotSliding, 1, 800},
		{"token-bucket/hot-nested", hotBucket, 1, 800},
		{"sliding-window/many-keys", sliding, 100_000, 400},
		{"first-hit-window/exact", firstHit, 1000, 0},
		{"first-hit-window/intervals", firstHit, 1000, 400},
		{"first-hit-window/hot-nested", hotFirstHit, 1, 800},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			before := heapLive()
			orig := verifyLog(n, tc.subjects, 100_000, tc.width)
			logBytes := heapLive() - before
			log := &verify.Log{Subjects: orig.Subjects, Clients: orig.Clients, Base: orig.Base, Events: make([]verify.Event, len(orig.Events))}
			var checked, allocated uint64
			var cpu time.Duration
			var ms runtime.MemStats
			for b.Loop() {
				b.StopTimer()
				copy(log.Events, orig.Events)
				runtime.ReadMemStats(&ms)
				start := ms.TotalAlloc
				c0 := cpuTime()
				b.StartTimer()
				rep, err := verify.Check(tc.c, log)
				b.StopTimer()
				cpu += cpuTime() - c0
				if err != nil {
					b.Fatal(err)
				}
				if rep.Admitted != n || rep.Denied != n {
					b.Fatalf("Admitted, Denied = %d, %d; want %d each", rep.Admitted, rep.Denied, n)
				}
				runtime.ReadMemStats(&ms)
				allocated += ms.TotalAlloc - start
				checked += n
				b.StartTimer()
			}
			runtime.KeepAlive(orig)
			checkBytes := float64(allocated) / float64(checked)
			b.ReportMetric(float64(checked)/b.Elapsed().Seconds(), "admissions/s")
			b.ReportMetric(float64(checked)/cpu.Seconds(), "admissions/cpu-s")
			b.ReportMetric(float64(logBytes)/n, "log-B/admission")
			b.ReportMetric(checkBytes, "check-B/admission")
			b.ReportMetric(float64(logBytes)/n+checkBytes, "held-B/admission")
		})
	}
}
