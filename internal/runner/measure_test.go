package runner

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/internal/verify"
)

// withWarmup puts the warmup's events before the measured ones on the measured log's Base, so
// that their absolute times are kept when the two logs' Bases differ, and refuses a warmup
// event that does not fit there.
func TestWithWarmupRebases(t *testing.T) {
	const start = 1_700_000_000_000_000
	ev := func(lo, hi int64, k verify.Kind) verify.Event {
		e, err := verify.NewEvent(lo, hi, 0, 0, 1, k)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	names := []string{"s"}
	res := &run{
		start: start + 1000,
		// The warmup at start + 10 and + 20 µs, the measured part at start + 1000 and + 1500.
		warm: &verify.Log{Subjects: names, Clients: names, Base: start,
			Events: []verify.Event{ev(10, 10, verify.Admitted), ev(20, 30, verify.Denied)}},
		log: &verify.Log{Subjects: names, Clients: names, Base: start + 1000,
			Events: []verify.Event{ev(0, 0, verify.Admitted), ev(500, 500, verify.Denied)}},
	}
	log, err := withWarmup(res)
	if err != nil {
		t.Fatalf("withWarmup: %v", err)
	}
	type abs struct {
		Lo, Hi int64
		Kind   verify.Kind
	}
	var got []abs
	for _, e := range log.Events {
		got = append(got, abs{log.Base + e.Lo(), log.Base + e.Hi(), e.Kind()})
	}
	want := []abs{{start + 10, start + 10, verify.Admitted}, {start + 20, start + 30, verify.Denied},
		{start + 1000, start + 1000, verify.Admitted}, {start + 1500, start + 1500, verify.Denied}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events, absolute (-want +got):\n%s", diff)
	}
	if log.Base != start+1000 || log.From != start+1000 {
		t.Errorf("Base %d, From %d; want both %d (the measured part's start)", log.Base, log.From, start+1000)
	}

	res.warm.Base = start - 7*24*time.Hour.Microseconds()
	if _, err := withWarmup(res); !errors.Is(err, verify.ErrBadLog) {
		t.Errorf("withWarmup of a warmup 7 days earlier = %v; want ErrBadLog", err)
	}
}
