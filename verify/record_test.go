package verify_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/verify"
)

// Each constructor states the contract its text names, and the text parses back to it.
func TestContractConstructors(t *testing.T) {
	for _, tt := range []struct {
		c    algorithms.Contract
		want string
	}{
		{verify.SlidingWindow(10, time.Second), "sliding-window(10, 1s)"},
		{verify.FixedWindow(5, time.Minute), "fixed-window(5, 1m0s)"},
		{verify.FirstHitWindow(3, 500*time.Millisecond), "first-hit-window(3, 500ms)"},
		{verify.TokenBucket(20, 10, time.Second), "token-bucket(20, 10/1s)"},
		{verify.GCRA(20, 10, time.Second), "token-bucket(20, 10/1s)"},
	} {
		if got := tt.c.String(); got != tt.want {
			t.Errorf("String() = %q; want %q", got, tt.want)
		}
		back, err := algorithms.ParseContract(tt.want)
		if err != nil {
			t.Fatalf("ParseContract(%q): %v", tt.want, err)
		}
		if diff := cmp.Diff(back, tt.c); diff != "" {
			t.Errorf("ParseContract(%q) differs from the constructor's (-parsed +built):\n%s", tt.want, diff)
		}
	}
}

// Times are widened to whole µs (sent down, received up), names become indices in the order
// they first appear, and the Base is the first send time.
func TestRecorderLog(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 1500, time.UTC) // 1.5 µs past the second
	var r verify.Recorder
	for _, rec := range []struct {
		subject, client string
		sent, received  time.Duration
		k               verify.Kind
	}{
		{"alice", "c1", 0, 100 * time.Nanosecond, verify.Admitted},
		{"bob", "c1", 2 * time.Microsecond, 2 * time.Microsecond, verify.Denied},
		{"alice", "c2", -1700 * time.Nanosecond, time.Millisecond, verify.Unknown},
	} {
		if err := r.Record(rec.subject, rec.client, 1, t0.Add(rec.sent), t0.Add(rec.received), rec.k); err != nil {
			t.Fatal(err)
		}
	}
	l := r.Log()
	base := t0.UnixMicro() // 1 µs past the second
	if l.Base != base {
		t.Errorf("Base = %d; want %d", l.Base, base)
	}
	var got []string
	for _, e := range l.Events {
		got = append(got, fmt.Sprintf("%s %s/%s [%d, %d]", e.Kind(), l.Subjects[e.Subject], l.Clients[e.Client], e.Lo(), e.Hi()))
	}
	want := []string{
		"admitted alice/c1 [0, 1]",    // 1.5 µs to 1.6 µs
		"denied bob/c1 [2, 3]",        // 3.5 µs exactly: rounded out both ways
		"unknown alice/c2 [-2, 1001]", // −0.2 µs to 1001.5 µs
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"alice", "bob"}, l.Subjects); diff != "" {
		t.Errorf("Subjects (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"c1", "c2"}, l.Clients); diff != "" {
		t.Errorf("Clients (-want +got):\n%s", diff)
	}
}

// A bad request is refused with ErrBadLog and leaves the log as it was.
func TestRecorderRefuses(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	var r verify.Recorder
	for _, tt := range []struct {
		name           string
		permits        int64
		sent, received time.Time
		k              verify.Kind
	}{
		{"zero permits", 0, t0, t0, verify.Admitted},
		{"too many permits", 1 << 16, t0, t0, verify.Admitted},
		{"received before sent", 1, t0, t0.Add(-time.Nanosecond), verify.Admitted},
		{"no kind", 1, t0, t0, 0},
		{"too far from the base", 1, t0, t0.Add(7 * 24 * time.Hour), verify.Admitted},
	} {
		if tt.name == "too far from the base" {
			if err := r.Record("s", "c", 1, t0, t0, verify.Denied); err != nil {
				t.Fatal(err)
			}
			t0 = t0.Add(7 * 24 * time.Hour)
			tt.sent, tt.received = t0, t0
		}
		err := r.Record("other", "other", tt.permits, tt.sent, tt.received, tt.k)
		if !errors.Is(err, verify.ErrBadLog) {
			t.Errorf("%s: err = %v; want ErrBadLog", tt.name, err)
		}
	}
	l := r.Log()
	if len(l.Events) != 1 || len(l.Subjects) != 1 || len(l.Clients) != 1 {
		t.Errorf("log after refusals: %d events, subjects %q, clients %q; want the one good request", len(l.Events), l.Subjects, l.Clients)
	}
}

// Recorded from many goroutines, a limiter that admits everything breaks sliding-window(10, 1s)
// definitely, and Check says by how much.
func TestRecorderCheck(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	var r verify.Recorder
	var wg sync.WaitGroup
	for i := range 15 {
		wg.Go(func() {
			at := t0.Add(time.Duration(i) * time.Millisecond)
			if err := r.Record("s", fmt.Sprint("c", i%3), 1, at, at.Add(100*time.Microsecond), verify.Admitted); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	rep, err := verify.Check(verify.SlidingWindow(10, time.Second), r.Log())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Definite() == 0 || rep.Limits[0].Worst.Excess != 5 || rep.Limits[0].Worst.Subject != "s" {
		t.Errorf("Check: definite %d, worst %+v; want a definite violation of excess 5 for s", rep.Definite(), rep.Limits[0].Worst)
	}
}
