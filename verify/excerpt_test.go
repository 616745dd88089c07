package verify

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/algorithms"
)

// excerptLog is a log of two subjects and three clients: subject a over-admits in (100, 130]
// (4 permits where sliding-window(3, 50 µs) allows 3), subject b never does.
func excerptLog() *Log {
	log := &Log{Subjects: []string{"a", "b"}, Clients: []string{"c0", "c1", "c2"}, Base: 1_000}
	add := func(lo, hi int64, s uint32, c uint16, k Kind) {
		log.Events = append(log.Events, mustEvent(lo, hi, s, c, 1, k))
	}
	add(0, 0, 0, 0, Admitted)
	add(100, 100, 0, 0, Admitted)
	add(110, 112, 0, 1, Admitted)
	add(120, 120, 0, 2, Admitted)
	add(125, 126, 0, 1, Denied)
	add(130, 130, 0, 0, Admitted)
	add(140, 141, 0, 2, Unknown)
	add(300, 300, 0, 1, Denied) // beyond the span
	add(105, 105, 1, 0, Admitted)
	add(115, 115, 1, 1, Admitted)
	return log
}

// TestExcerptAroundWorstViolation: the excerpt holds the subject that broke the contract, one
// lane per client in order of appearance, its requests within a window on each side of the
// violating set in time order, and nothing of the other subject; the log is left as it was.
func TestExcerptAroundWorstViolation(t *testing.T) {
	c := algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 3, Window: 50 * time.Microsecond}
	log := excerptLog()
	before := append([]Event(nil), log.Events...)
	const start = 1_050 // the measured part starts 50 µs after Base
	x, err := NewExcerpt(c, log, start, 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, log.Events, cmp.AllowUnexported(Event{})); diff != "" {
		t.Errorf("NewExcerpt changed the log (-before +after):\n%s", diff)
	}
	first := int64(80)
	want := &Excerpt{
		Violation: "definite", Contract: "sliding-window(3, 50µs)", Kind: algorithms.SlidingWindow, Limit: 3, WindowUS: 50,
		Scope: "subject", Subject: "a", FromUS: 50, ToUS: 80, Permits: 4, Allowed: 3, FirstUS: &first,
		SpanFromUS: 0, SpanToUS: 130,
		Lanes: []string{"c0", "c1", "c2"}, LaneClients: []int{0, 1, 2},
		Requests: []ExcerptRequest{
			{Lane: 0, Lo: 50, Hi: 50, K: "a", Permits: 1, S: true},
			{Lane: 1, Lo: 60, Hi: 62, K: "a", Permits: 1, S: true},
			{Lane: 2, Lo: 70, Hi: 70, K: "a", Permits: 1, S: true},
			{Lane: 1, Lo: 75, Hi: 76, K: "d", Permits: 1, S: true},
			{Lane: 0, Lo: 80, Hi: 80, K: "a", Permits: 1, S: true},
			{Lane: 2, Lo: 90, Hi: 91, K: "u", Permits: 1, S: true},
		},
	}
	if diff := cmp.Diff(want, x); diff != "" {
		t.Errorf("NewExcerpt (-want +got):\n%s", diff)
	}
}

// TestExcerptCap: over the cap, the requests farthest from the violating set are left out and
// counted; the scope's admissions inside the set are kept first.
func TestExcerptCap(t *testing.T) {
	c := algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 3, Window: 50 * time.Microsecond}
	x, err := NewExcerpt(c, excerptLog(), 1_050, 4)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, r := range x.Requests {
		got = append(got, r.Lo)
	}
	if diff := cmp.Diff([]int64{50, 60, 70, 80}, got); diff != "" {
		t.Errorf("requests kept (-want +got):\n%s", diff)
	}
	if x.Omitted != 2 || x.CountPartial {
		t.Errorf("Omitted, CountPartial = %d, %v; want 2, false", x.Omitted, x.CountPartial)
	}
	x, err = NewExcerpt(c, excerptLog(), 1_050, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !x.CountPartial {
		t.Error("an admission of the violating set left out, and CountPartial is false")
	}
}

// TestExcerptNoneOrPossible: a log that keeps its contract gives no excerpt; one that breaks it
// only in some placements gives a possible one; a per-client scope marks its client's requests
// only.
func TestExcerptNoneOrPossible(t *testing.T) {
	c := algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 4, Window: 50 * time.Microsecond}
	if x, err := NewExcerpt(c, excerptLog(), 1_050, 0); err != nil || x != nil {
		t.Errorf("NewExcerpt of a kept contract = %+v, %v; want nil, nil", x, err)
	}
	if x, err := NewExcerpt(algorithms.Contract{Kind: algorithms.NoContract}, excerptLog(), 0, 0); err != nil || x != nil {
		t.Errorf("NewExcerpt without a contract = %+v, %v; want nil, nil", x, err)
	}
	log := &Log{Subjects: []string{"a"}, Clients: []string{"c0", "c1"}}
	log.Events = []Event{mustEvent(0, 0, 0, 0, 1, Admitted), mustEvent(40, 60, 0, 0, 1, Admitted), mustEvent(45, 45, 0, 1, 1, Admitted)}
	pc := algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 1, Window: 50 * time.Microsecond, Scope: algorithms.PerClient}
	x, err := NewExcerpt(pc, log, 0, 0)
	if err != nil || x == nil {
		t.Fatalf("NewExcerpt = %+v, %v; want a possible violation", x, err)
	}
	if x.Violation != "possible" || x.Client != "c0" || x.Scope != "subject+client" {
		t.Errorf("Violation, Client, Scope = %q, %q, %q; want possible, c0, subject+client", x.Violation, x.Client, x.Scope)
	}
	for _, r := range x.Requests {
		if r.S != (x.Lanes[r.Lane] == "c0") {
			t.Errorf("request %+v on lane %s: S = %v", r, x.Lanes[r.Lane], r.S)
		}
	}
}
