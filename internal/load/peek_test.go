package load

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

// TestSnapshotIsACopy: each Snapshotter's Snapshot holds what the aggregator held when it was
// taken, is untouched by what the aggregator gets afterwards, and merges like its kind.
func TestSnapshotIsACopy(t *testing.T) {
	outcome := func(i int) *Outcome {
		o := &Outcome{Intended: time.Duration(i) * 10 * ms, Sent: time.Duration(i) * 10 * ms, Cost: 1}
		o.Received = o.Sent + time.Duration(100+i)*time.Microsecond
		switch i % 3 {
		case 0:
			o.Decision.Allowed = true
		case 2:
			o.Err, o.Class = errors.New("boom"), ClassUnknown
		}
		return o
	}
	for _, tt := range []struct {
		name  string
		fresh func() Snapshotter
		equal func(a, b Aggregator) bool
	}{
		{"histograms", func() Snapshotter { return NewHistograms(0) }, func(a, b Aggregator) bool {
			return a.(*Histograms).Equal(b.(*Histograms))
		}},
		{"timeline", func() Snapshotter { return NewTimeline(0, 50*ms, time.Second) }, func(a, b Aggregator) bool {
			x, y := a.(*Timeline), b.(*Timeline)
			return x.Origin == y.Origin && x.Width == y.Width && x.Dropped == y.Dropped && equalBins(x.Bins, y.Bins)
		}},
		{"errors", func() Snapshotter { return NewErrors() }, func(a, b Aggregator) bool {
			x, y := a.(*Errors), b.(*Errors)
			return x.Total() == y.Total() && len(x.Classes(0)) == len(y.Classes(0))
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, ref := tt.fresh(), tt.fresh()
			for i := range 30 {
				a.Add(outcome(i))
				ref.Add(outcome(i))
			}
			snap := a.Snapshot()
			if !tt.equal(snap, ref) {
				t.Fatalf("Snapshot after 30 outcomes differs from an aggregator of the same 30")
			}
			for i := 30; i < 60; i++ {
				a.Add(outcome(i))
			}
			if !tt.equal(snap, ref) {
				t.Errorf("Snapshot changed when the aggregator got 30 more outcomes")
			}
			// The snapshot merges like its kind: with the other 30 it is the whole.
			rest := tt.fresh()
			for i := 30; i < 60; i++ {
				rest.Add(outcome(i))
			}
			if err := snap.Merge(rest); err != nil {
				t.Fatalf("Merge into a snapshot: %v", err)
			}
			if !tt.equal(snap, a) {
				t.Errorf("snapshot of 30 merged with the other 30 differs from the aggregator of 60")
			}
		})
	}
}

func equalBins(a, b []Bin) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestPeekDuringRun: a Peek reads a run under way from another goroutine, as often as it likes
// (run with -race), and sees the measured part grow, each copy consistent with itself (the
// histograms hold the timeline's decisions); none before the run's clock starts or once it is
// over, and what it saw last is no more than the run's own result.
func TestPeekDuringRun(t *testing.T) {
	env := redistest.Single(t)
	lim := newLimiter(t, env, 1<<40)
	c := newClient(env, 8)
	peek := &Peek{}
	if _, ok, _ := peek.Snapshot(); ok {
		t.Fatal("Snapshot before the run = ok; want none under way")
	}
	p := Plan{Arrival: Constant(2000), Warmup: 200 * ms, Duration: 1200 * ms, Clients: 8, Keys: Keys{Count: 5}, Seed: 1, Bin: 100 * ms,
		Peek: peek}
	started := make(chan struct{})
	p.OnStart = func(time.Time) { close(started) }
	var wg sync.WaitGroup
	var snaps []Snapshot
	var snapErr error
	stop := make(chan struct{})
	wg.Go(func() {
		<-started
		for {
			s, ok, err := peek.Snapshot()
			if err != nil {
				snapErr = err
				return
			}
			if ok {
				snaps = append(snaps, s)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * ms):
			}
		}
	})
	res, rec, err := recorded(context.Background(), c, lim, p)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if snapErr != nil {
		t.Fatalf("Snapshot: %v", snapErr)
	}
	if _, ok, _ := peek.Snapshot(); ok {
		t.Error("Snapshot after the run = ok; want none under way")
	}
	if len(snaps) < 3 { // each takes a while under -race: 8 shards of four histograms
		t.Fatalf("%d snapshots over a 1.4 s run, one every 20 ms; want at least 3", len(snaps))
	}
	var prev uint64
	var prevElapsed time.Duration
	for i, s := range snaps {
		if len(s.Measured) != 3 || s.Measured[2] != nil {
			t.Fatalf("snapshot %d: %d aggregators, the collector's %v; want 3, the collector's nil (not a Snapshotter)", i, len(s.Measured), s.Measured[2])
		}
		h, tl := s.Measured[0].(*Histograms), s.Measured[1].(*Timeline)
		var offered, decided uint64
		for _, b := range tl.Bins {
			offered += b.Offered
			decided += b.Admitted + b.Denied
		}
		if got := uint64(h.Latency().TotalCount()); got != decided {
			t.Errorf("snapshot %d: histograms hold %d decisions, the timeline %d", i, got, decided)
		}
		if offered < prev || s.Elapsed < prevElapsed {
			t.Errorf("snapshot %d: %d requests at %s after %d at %s; want them to grow", i, offered, s.Elapsed, prev, prevElapsed)
		}
		if s.Elapsed < s.Warmup && offered > 0 {
			t.Errorf("snapshot %d: %d measured requests %s into a %s warmup", i, offered, s.Elapsed, s.Warmup)
		}
		prev, prevElapsed = offered, s.Elapsed
	}
	if prev == 0 || prev > res.Counts.Requests {
		t.Errorf("the last snapshot saw %d measured requests, the run %d; want some, and no more", prev, res.Counts.Requests)
	}
	if got := uint64(rec.hist.Latency().TotalCount()); got != res.Counts.Allowed+res.Counts.Denied {
		t.Errorf("after peeking, the run's histograms hold %d; want every decision (%d)", got, res.Counts.Allowed+res.Counts.Denied)
	}
}

// BenchmarkShardSnapshot is what a Peek holds one worker shard's lock for: a copy of the
// histograms (default range), the timeline of an hour in 1 s bins and the error tally.
func BenchmarkShardSnapshot(b *testing.B) {
	h, tl, e := NewHistograms(0), NewTimeline(0, time.Second, time.Hour), NewErrors()
	for i := range 100000 {
		o := &Outcome{Intended: time.Duration(i) * 36 * ms, Sent: time.Duration(i) * 36 * ms, Decision: algorithms.Decision{Allowed: i%2 == 0}}
		o.Received = o.Sent + time.Duration(50+i%5000)*time.Microsecond
		h.Add(o)
		tl.Add(o)
	}
	for b.Loop() {
		_ = h.Snapshot()
		_ = tl.Snapshot()
		_ = e.Snapshot()
	}
}
