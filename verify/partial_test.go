package verify

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestDefiniteSurvivesMissingEvents: what a partial merge (segment.Merge without some segments)
// relies on. A definite violation found in part of a history is definite in the whole history, for
// every contract whose windows do not start at a key's first request: the events left out can only
// add to a window's count.
func TestDefiniteSurvivesMissingEvents(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genContract(t, "")
		whole := genLog(t, 12)
		part := cloneLog(whole)
		part.Events = part.Events[:0]
		for i, e := range whole.Events {
			if rapid.Bool().Draw(t, fmt.Sprintf("keep%d", i)) {
				part.Events = append(part.Events, e)
			}
		}
		got, err := Check(c, cloneLog(part))
		if err != nil {
			t.Fatalf("Check(part): %v", err)
		}
		all, err := Check(c, cloneLog(whole))
		if err != nil {
			t.Fatalf("Check(whole): %v", err)
		}
		if got.Limits[0].Definite > 0 && all.Limits[0].Definite == 0 {
			t.Fatalf("%s: %d definite violations in part of the history, none in the whole", c, got.Limits[0].Definite)
		}
	})
}

// TestFirstHitPartMayViolateAlone: under a first-hit window, part of a history can break the
// contract where the whole does not (a request left out would have started the key's window
// earlier), which is why a partial merge makes such violations possible, not definite.
func TestFirstHitPartMayViolateAlone(t *testing.T) {
	const W = 10 * time.Microsecond
	c := firstHit(1, W)
	other := mustEvent(0, 0, 0, 1, 1, Denied) // client 1's request opens the window [0, 10)
	mine := []Event{adm(5), adm(12)}          // client 0's: one in [0, 10), one in [12, 22)
	whole := &Log{Subjects: []string{"a"}, Clients: []string{"x", "y"}, Fresh: true, Events: append([]Event{other}, mine...)}
	part := &Log{Subjects: []string{"a"}, Clients: []string{"x", "y"}, Fresh: true, Events: append([]Event(nil), mine...)}
	for _, tt := range []struct {
		name string
		log  *Log
		want int64
	}{{"whole", whole, 0}, {"without client 1", part, 1}} {
		rep, err := Check(c, tt.log)
		if err != nil {
			t.Fatal(err)
		}
		if got := rep.Limits[0].Definite; got != tt.want {
			t.Errorf("%s: %d definite violations; want %d", tt.name, got, tt.want)
		}
	}
}
