package verify

import (
	"sort"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/clock"
	"github.com/limitbench/limitbench/internal/load"
)

// TestLogClockNeverFlagsACorrectLimiter drives every corrected algorithm's reference model on
// a server clock that is off from the harness's (as an external server's is), records each
// request as the load engine does (harness send and receive times, the server's decision time,
// a measured offset within its error) and checks the log against the contract: a correct
// limiter must show no definite violation, whatever the offset, its error, the timing or the
// share of timed-out requests.
//
// Regression: the log used to move server times to the harness's clock, where a fixed window
// aligned on the server's clock straddles two, and a correct fixed-window limiter at twice its
// limit was flagged with an external server 5 ms ahead.
func TestLogClockNeverFlagsACorrectLimiter(t *testing.T) {
	var algs []algorithms.Algorithm
	for _, a := range algorithms.All() {
		if a.Describe().Flaw == "" && a.Describe().Clock == algorithms.ClockServer {
			algs = append(algs, a)
		}
	}
	if len(algs) == 0 {
		t.Fatal("no corrected server-clock algorithm is registered")
	}
	rapid.Check(t, func(rt *rapid.T) {
		a := rapid.SampledFrom(algs).Draw(rt, "algorithm")
		window := time.Duration(rapid.IntRange(5, 200).Draw(rt, "window_ms")) * time.Millisecond
		limit := algorithms.Limit{Limit: int64(rapid.IntRange(1, 8).Draw(rt, "limit")), Window: window}
		model := a.Model(limit)
		contract, err := a.Contract(limit)
		if model == nil || err != nil {
			rt.Skipf("%s: no model or contract (%v)", a.Describe().Name, err)
		}
		// The server's clock is trueOffset ahead of the harness's; the harness measured it
		// within measureErr.
		trueOffset := time.Duration(rapid.Int64Range(-int64(50*time.Millisecond), int64(50*time.Millisecond)).Draw(rt, "offset"))
		measureErr := time.Duration(rapid.Int64Range(1, int64(500*time.Microsecond)).Draw(rt, "err"))
		miss := time.Duration(rapid.Int64Range(-int64(measureErr), int64(measureErr)).Draw(rt, "miss"))
		start := time.Unix(1_700_000_000, int64(rapid.IntRange(0, 999_999_999).Draw(rt, "start_ns")))
		l := NewAdmissionLog(start, false, &clock.Offset{Offset: trueOffset + miss, Err: measureErr}, false)

		subjects := rapid.IntRange(1, 3).Draw(rt, "subjects")
		n := rapid.IntRange(1, 300).Draw(rt, "requests")
		outs := make([]load.Outcome, n)
		at := make([]time.Duration, n) // when each request ran on the server, from start
		var sent time.Duration
		for i := range outs {
			sent += time.Duration(rapid.Int64Range(0, int64(window/4)).Draw(rt, "gap"))
			service := time.Duration(rapid.Int64Range(int64(time.Microsecond), int64(2*time.Millisecond)).Draw(rt, "service"))
			at[i] = sent + time.Duration(rapid.Int64Range(0, int64(service)).Draw(rt, "at"))
			outs[i] = load.Outcome{Subject: uint32(rapid.IntRange(0, subjects-1).Draw(rt, "subject")), Cost: 1,
				Intended: sent, Sent: sent, Received: sent + service}
			if rapid.IntRange(0, 19).Draw(rt, "timeout") == 0 {
				outs[i].Class = load.ClassUnknown
			}
		}
		// The server runs the requests one at a time in the order they reach it, so the times
		// the model sees never decrease.
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return at[order[a]] < at[order[b]] })
		for _, i := range order {
			o := &outs[i]
			if o.Class == load.ClassUnknown {
				continue
			}
			serverMicros := start.Add(at[i] + trueOffset).UnixMicro()
			allowed := model.Decide(string(rune('a'+o.Subject)), "c0", 1, serverMicros)
			o.Decision = algorithms.Decision{Allowed: allowed, TimeMicros: serverMicros, Clock: algorithms.ClockServer}
		}
		for i := range outs {
			l.Add(&outs[i])
		}
		log := l.Log([]string{"a", "b", "c"}, []string{"c0"})
		rep, err := Check(contract, log)
		if err != nil {
			rt.Fatalf("Check: %v", err)
		}
		if d := rep.Definite(); d > 0 {
			rt.Fatalf("%s, %s, offset %s (measured %s ± %s): %d definite violations of a correct limiter",
				a.Describe().Name, contract, trueOffset, trueOffset+miss, measureErr, d)
		}
		if l.Mismatched > 0 {
			rt.Fatalf("%d server times counted as inconsistent with a measured offset that is right within its error", l.Mismatched)
		}
	})
}
