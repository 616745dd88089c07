//go:build linux || darwin

package verify

import (
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/limitbench/limitbench/algorithms"
)

// benchEvents makes n admissions and n denials, at rate admissions a second spread round the
// subjects (a denial of the same subject beside each), each decided within width µs of its
// send (0: exactly), and returns them in an arrival order that swaps each with one of the next
// 128 (replies out of order).
func benchEvents(n, subjects int, rate, width int64) []Event {
	rng := rand.New(rand.NewPCG(11, 13))
	ev := make([]Event, 0, 2*n)
	for i := range 2 * n {
		sent := int64(i/2) * 1_000_000 / rate
		k := Admitted
		if i%2 == 1 {
			k = Denied
		}
		ev = append(ev, mustEvent(sent, sent+width-rng.Int64N(width/2+1), uint32(i/2%subjects), uint16(i%64), 1, k))
	}
	for i := range ev {
		j := min(len(ev)-1, i+rng.IntN(128))
		ev[i], ev[j] = ev[j], ev[i]
	}
	return ev
}

// processCPU returns the CPU time, user and system, the process has used so far (0 when
// getrusage fails).
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkStream measures the streaming checker (issue 30's target: at least 5 million
// verifier events per second per core): a Stream fed a million admissions and a million
// denials at 100,000 admissions a second over 1,000 subjects (twice each limit's rate), in
// their arrival order, with an Advance every 256 events to 2 ms behind. It reports events/s of
// wall time and events/cpu-s of the process's CPU time (the target is about the latter: wall
// time on a shared machine counts other processes too; run with -cpu 1):
//
//	go test -run '^$' -bench BenchmarkStream -benchtime 3x -cpu 1 ./verify/
func BenchmarkStream(b *testing.B) {
	const n = 1 << 20
	w := time.Second
	cases := []struct {
		name  string
		c     algorithms.Contract
		width int64
	}{
		{"sliding-window/exact", algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 100, Window: w}, 0},
		{"sliding-window/intervals", algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 100, Window: w}, 400},
		{"fixed-window/intervals", algorithms.Contract{Kind: algorithms.FixedWindow, Limit: 100, Window: w}, 400},
		{"token-bucket/exact", algorithms.Contract{Kind: algorithms.TokenBucket, Capacity: 100, RefillPermits: 100, RefillPer: w}, 0},
		{"token-bucket/intervals", algorithms.Contract{Kind: algorithms.TokenBucket, Capacity: 100, RefillPermits: 100, RefillPer: w}, 400},
		{"first-hit-window/intervals", algorithms.Contract{Kind: algorithms.FirstHitWindow, Limit: 100, Window: w}, 400},
	}
	subjects := make([]string, 1000)
	for i := range subjects {
		subjects[i] = "s"
	}
	clients := make([]string, 64)
	for i := range clients {
		clients[i] = "c"
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			ev := benchEvents(n, len(subjects), 100_000, tc.width)
			var cpu time.Duration
			var events, retained int64
			for b.Loop() {
				runtime.GC()
				c0 := processCPU()
				s, err := NewStream(tc.c, &Log{Subjects: subjects, Clients: clients, Base: 1_700_000_000_000_000})
				if err != nil {
					b.Fatal(err)
				}
				for i := range ev {
					s.Add(ev[i])
					if i&255 == 255 {
						s.Advance(ev[i].Lo() - 2000)
					}
					if i&4095 == 4095 {
						retained = max(retained, s.Retained())
					}
				}
				if _, err := s.Finish(); err != nil {
					b.Fatal(err)
				}
				cpu += processCPU() - c0
				events += int64(len(ev))
			}
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(events)/cpu.Seconds(), "events/cpu-s")
			b.ReportMetric(float64(retained), "retained-events")
		})
	}
}
