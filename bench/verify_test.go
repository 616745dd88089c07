//go:build linux || darwin

package bench_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/verify"
)

// verifyLog builds an admission log as the load engine would: n admissions of subjects chosen
// uniformly among subjects, sent at rate per second by 64 clients and appended in the order
// their replies arrived. width is the interval width in µs (0: exact server times).
func verifyLog(n, subjects int, rate, width int64) *verify.Log {
	rng := rand.New(rand.NewPCG(1, 2))
	log := &verify.Log{Events: make([]verify.Event, 0, n)}
	for i := range subjects {
		log.Subjects = append(log.Subjects, fmt.Sprintf("subject-%d", i))
	}
	for i := range 64 {
		log.Clients = append(log.Clients, fmt.Sprintf("client-%d", i))
	}
	const origin = 1_700_000_000_000_000
	step := 1_000_000 / rate
	for i := range n {
		sent := origin + int64(i)*step + rng.Int64N(step+1)
		lo, hi := sent, sent
		if width > 0 {
			hi = sent + width/2 + rng.Int64N(width/2+1)
		}
		log.Events = append(log.Events, verify.Event{
			Lo: lo, Hi: hi,
			Subject: uint32(rng.IntN(subjects)), Client: uint16(rng.IntN(64)),
			Permits: 1, Kind: verify.Admitted,
		})
	}
	// Replies arrive out of order by up to 64 requests.
	for i := range log.Events {
		j := min(len(log.Events)-1, i+rng.IntN(64))
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

// BenchmarkCheck measures verify.Check on a million admissions: admissions/s of wall time and
// admissions/cpu-s of CPU time (the target, at least 5 million per second on one core, is about
// the latter: wall time on a shared machine counts other processes too; run with -cpu 1), the
// bytes the log holds per admission (target: at most 32), and the bytes Check allocates per
// admission on top of it. Each iteration checks the log in its arrival order (restored with the
// timer stopped), as a run would.
func BenchmarkCheck(b *testing.B) {
	const n = 1 << 20
	sliding := algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 100, Window: time.Second}
	fixed := algorithms.Contract{Kind: algorithms.FixedWindow, Limit: 100, Window: time.Second}
	bucket := algorithms.Contract{Kind: algorithms.TokenBucket, Capacity: 100, RefillPermits: 100, RefillPer: time.Second}
	two := sliding
	two.Also = []algorithms.Contract{{Kind: algorithms.SlidingWindow, Limit: 10, Window: time.Second, Scope: algorithms.PerClient}}
	cases := []struct {
		name  string
		c     algorithms.Contract
		width int64
	}{
		{"sliding-window/exact", sliding, 0},
		{"sliding-window/intervals", sliding, 400},
		{"fixed-window/intervals", fixed, 400},
		{"token-bucket/exact", bucket, 0},
		{"token-bucket/intervals", bucket, 400},
		{"two-limits/intervals", two, 400},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			orig := verifyLog(n, 1000, 100_000, tc.width)
			log := &verify.Log{Subjects: orig.Subjects, Clients: orig.Clients, Events: make([]verify.Event, n)}
			var checked, allocated uint64
			var cpu time.Duration
			var ms runtime.MemStats
			for b.Loop() {
				b.StopTimer()
				copy(log.Events, orig.Events)
				runtime.ReadMemStats(&ms)
				before := ms.TotalAlloc
				c0 := cpuTime()
				b.StartTimer()
				rep, err := verify.Check(tc.c, log)
				b.StopTimer()
				cpu += cpuTime() - c0
				if err != nil {
					b.Fatal(err)
				}
				if rep.Admitted != n {
					b.Fatalf("Admitted = %d; want %d", rep.Admitted, n)
				}
				runtime.ReadMemStats(&ms)
				allocated += ms.TotalAlloc - before
				checked += n
				b.StartTimer()
			}
			b.ReportMetric(float64(checked)/b.Elapsed().Seconds(), "admissions/s")
			b.ReportMetric(float64(checked)/cpu.Seconds(), "admissions/cpu-s")
			b.ReportMetric(float64(unsafe.Sizeof(verify.Event{})), "bytes/admission")
			b.ReportMetric(float64(allocated)/float64(checked), "alloc-bytes/admission")
		})
	}
}
