package verify

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/limitbench/limitbench/algorithms"
)

// arrival is a history's events in the order a stream may receive them: each arrives some
// delay after its Lo (at most horizon), and advances promise, after an event, that none of Lo
// below it will come.
type arrival struct {
	events   []Event
	advances []int64 // after events[i], Advance(advances[i]) when it is not math.MinInt64
}

// arrive draws an arrival order of log's events: delays of up to horizon µs after each Lo, and
// an Advance after some events to the latest frontier their order allows.
func arrive(t *rapid.T, log *Log, horizon int64) arrival {
	type at struct {
		e Event
		t int64
	}
	ev := make([]at, len(log.Events))
	for i, e := range log.Events {
		ev[i] = at{e, e.Lo() + rapid.Int64Range(0, horizon).Draw(t, fmt.Sprint("delay", i))}
	}
	slices.SortStableFunc(ev, func(a, b at) int { return cmp.Compare(a.t, b.t) })
	var a arrival
	for i, x := range ev {
		a.events = append(a.events, x.e)
		next := int64(minAdvance)
		if rapid.IntRange(0, 2).Draw(t, fmt.Sprint("advance", i)) == 0 {
			// Every event still to come arrives at or after x.t, so its Lo ≥ x.t − horizon.
			next = x.t - horizon
		}
		a.advances = append(a.advances, next)
	}
	return a
}

// streamCases is how many cases each differential test of the streaming checker runs by default
// (a fifth with -short): go test -run 'TestStream|TestMeasurementStream' -rapid.checks=20000
// runs 20,000 each.
const streamCases = 2000

// minAdvance marks no Advance in arrival.advances.
const minAdvance = -1 << 62

// streamCheck runs log's events through a Stream in the order a gives, and returns its report.
func streamCheck(c algorithms.Contract, log *Log, a arrival) (Report, *Stream, error) {
	hdr := *log
	hdr.Events = nil
	s, err := NewStream(c, &hdr)
	if err != nil {
		return Report{}, nil, err
	}
	for i, e := range a.events {
		s.Add(e)
		if a.advances[i] != minAdvance {
			s.Advance(a.advances[i])
		}
	}
	rep, err := s.Finish()
	return rep, s, err
}

// genStreamContract draws a contract of kinds for the differential test, maybe with another
// limit beside it.
func genStreamContract(t *rapid.T, kinds []algorithms.ContractKind) algorithms.Contract {
	draw := func(label string) algorithms.Contract {
		kind := rapid.SampledFrom(kinds).Draw(t, label+"kind")
		if kind == algorithms.FirstHitWindow {
			c := genFirstHit(t, label)
			c.Limit = rapid.Int64Range(1, 4).Draw(t, label+"fhlimit")
			c.Window = us(rapid.Int64Range(1, 25).Draw(t, label+"fhwindow"))
			c.Granularity = us(rapid.Int64Range(0, 2).Draw(t, label+"fhg"))
			return c
		}
		c := genContract(t, label)
		for c.Kind != kind {
			c = genContract(t, label+"again")
		}
		return c
	}
	c := draw("")
	if rapid.IntRange(0, 3).Draw(t, "also") == 0 {
		a := draw("also")
		c.Also = []algorithms.Contract{a}
	}
	return c
}

// checkStreamEqual fails t when the stream's report differs from Check's on the same log.
func checkStreamEqual(t *rapid.T, c algorithms.Contract, log *Log, horizon int64) {
	want, werr := Check(c, cloneLog(log))
	a := arrive(t, log, horizon)
	got, _, gerr := streamCheck(c, log, a)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%s: Check error %v; stream error %v", c, werr, gerr)
	}
	if werr != nil {
		return
	}
	if d := gocmp.Diff(want, got); d != "" {
		t.Fatalf("%s G %s, base %d fresh %v from %d, events %v, arriving %v advancing %v:\nstream differs from Check (-Check +stream):\n%s",
			c, c.Granularity, log.Base, log.Fresh, log.From, log.Events, a.events, a.advances, d)
	}
}

// TestStreamWindowsMatchCheck: for sliding-window and fixed-window limits, a Stream fed a
// history's events in any order its promises allow reports exactly what Check reports.
func TestStreamWindowsMatchCheck(t *testing.T) {
	kinds := []algorithms.ContractKind{algorithms.SlidingWindow, algorithms.FixedWindow}
	checkN(t, streamCases, func(t *rapid.T) {
		c := genStreamContract(t, kinds)
		log := genLog(t, 40)
		checkStreamEqual(t, c, log, rapid.Int64Range(0, 30).Draw(t, "horizon"))
	})
}

// TestStreamBucketMatchesCheck: the same for token-bucket limits, with sliding and fixed
// windows beside them.
func TestStreamBucketMatchesCheck(t *testing.T) {
	kinds := []algorithms.ContractKind{algorithms.TokenBucket, algorithms.TokenBucket, algorithms.SlidingWindow, algorithms.FixedWindow}
	checkN(t, streamCases, func(t *rapid.T) {
		c := genStreamContract(t, kinds)
		log := genLog(t, 40)
		if rapid.Bool().Draw(t, "wide") {
			log = genWideLog(t, 200, rapid.Int64Range(1, 3).Draw(t, "step"))
		}
		checkStreamEqual(t, c, log, rapid.Int64Range(0, 30).Draw(t, "horizon"))
	})
}

// TestStreamFirstHitMatchesCheck: the same for first-hit-window limits, fresh or not, with and
// without From, with other limits beside them.
func TestStreamFirstHitMatchesCheck(t *testing.T) {
	kinds := []algorithms.ContractKind{algorithms.FirstHitWindow, algorithms.FirstHitWindow, algorithms.FirstHitWindow, algorithms.TokenBucket, algorithms.SlidingWindow}
	checkN(t, streamCases, func(t *rapid.T) {
		c := genStreamContract(t, kinds)
		log := genLog(t, 40)
		if rapid.Bool().Draw(t, "wide") {
			log = genWideLog(t, 200, rapid.Int64Range(1, 3).Draw(t, "step"))
		}
		log.Fresh = rapid.Bool().Draw(t, "fresh")
		if rapid.Bool().Draw(t, "from") {
			log.From = log.Base + rapid.Int64Range(1, 200).Draw(t, "at")
		}
		checkStreamEqual(t, c, log, rapid.Int64Range(0, 30).Draw(t, "horizon"))
	})
}
