package measure

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
	"github.com/limitbench/limitbench/verify"
)

// retainedPeak is a stage that samples, every 10 ms of the load, the events the measurement's
// stream holds, and keeps the largest count. Its Setup gives the load's client short timeouts,
// so that the stream's horizon (inFlight) is well under the runs' lengths.
type retainedPeak struct {
	mu   sync.Mutex
	peak int64
	stop chan struct{}
	done sync.WaitGroup
}

func (p *retainedPeak) stage() Stage {
	return Stage{
		Setup: func(_ context.Context, m *Measurement) error {
			m.Client.PoolTimeout, m.Client.DialTimeout = 100*time.Millisecond, 100*time.Millisecond
			m.Client.WriteTimeout, m.Client.ReadTimeout = 100*time.Millisecond, 100*time.Millisecond
			return nil
		},
		Start: func(_ context.Context, m *Measurement, _ time.Time) {
			p.stop = make(chan struct{})
			p.done.Go(func() {
				t := time.NewTicker(10 * time.Millisecond)
				defer t.Stop()
				for {
					select {
					case <-p.stop:
						return
					case <-t.C:
						n := m.Recording.Stream.Retained()
						p.mu.Lock()
						p.peak = max(p.peak, n)
						p.mu.Unlock()
					}
				}
			})
		},
		End: func(context.Context, *Measurement, error) { close(p.stop); p.done.Wait() },
	}
}

// streamRun measures gcra (100 per second, 5 subjects: pressed, half denied) at a steady
// 1,000 requests per second for d, and returns the measurement and the stream's peak of retained
// events.
func streamRun(t *testing.T, d time.Duration) (*Measurement, int64) {
	t.Helper()
	a, err := algorithms.Lookup("gcra")
	if err != nil {
		t.Fatal(err)
	}
	spec := Spec{Target: redistest.Single(t).Target, Topology: "single", Algorithm: a,
		Limit: algorithms.Limit{Limit: 100, Window: time.Second}, Prefix: KeyPrefix(NewRunID(), "gcra", "s"),
		Plan: load.Plan{Arrival: load.Constant(1000), Warmup: 500 * time.Millisecond, Duration: d, Clients: 4,
			Keys: load.Keys{Count: 5}, LateAfter: time.Minute}}
	var p retainedPeak
	m, err := Do(context.Background(), spec, p.stage())
	if err != nil {
		t.Fatal(err)
	}
	if m.Recording.Stream == nil || m.Result.Counts.Dropped != 0 {
		t.Fatalf("stream %v, %d outcomes dropped or late", m.Recording.Stream, m.Result.Counts.Dropped)
	}
	return m, p.peak
}

// TestStreamRetainedFollowsTheWindow: a measurement verifies as it runs, so the events its
// stream holds follow the contract's window and the requests' horizon, not the run's length: a
// steady load twice as long must not retain twice as much (events counted, not time), and what
// is retained is well under what the longer run sent (the requests in flight, the batches and
// the window make about a second; a stall of the machine a second or two more: at most 3 s of a
// 6 s run).
func TestStreamRetainedFollowsTheWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("two runs of seconds")
	}
	_, short := streamRun(t, 3*time.Second)
	m, long := streamRun(t, 6*time.Second)
	sent := int64(m.Result.Counts.Requests)
	t.Logf("peak retained: %d events over 3 s, %d over 6 s (%d sent)", short, long, sent)
	if short == 0 || long == 0 {
		t.Fatalf("no retained events sampled (%d, %d)", short, long)
	}
	// A stall of a loaded machine holds back a second or two of events at any time, which a
	// short run may miss: growth is only growth past the few seconds the stream may hold.
	if float64(long) > 1.5*float64(short) && long > 3*1000 {
		t.Errorf("a run twice as long retained %d events against %d, more than 3 s of its requests: the stream grows with the run", long, short)
	}
	if float64(long) > 0.7*float64(sent) {
		t.Errorf("the 6 s run retained %d of its %d events at its peak", long, sent)
	}
}

// TestStreamMatchesWholeHistory: through a real run, the entry's verification and accuracy (the
// stream's) are those the whole-history checker gives on the history the measurement kept
// beside it (within KeepEvents), and the timeline's limit line is the same.
func TestStreamMatchesWholeHistory(t *testing.T) {
	m, _ := streamRun(t, 2*time.Second)
	if !m.Recording.Kept() {
		t.Fatal("a 2 s run at 1,000 requests per second did not keep its history")
	}
	vm := m.Verification
	wantV, wantA := vm.Sections()
	if d := cmp.Diff(wantV, m.Entry.Verification); d != "" {
		t.Errorf("verification: stream differs from the whole history (-whole +stream):\n%s", d)
	}
	if d := cmp.Diff(wantA, m.Entry.Accuracy); d != "" {
		t.Errorf("accuracy: stream differs from the whole history (-whole +stream):\n%s", d)
	}
	want := binLimits(vm.Contract, vm.BinLimits, m.Recording.Timeline.Width, len(m.Entry.Timeline.Series.Offered))
	if d := cmp.Diff(want, m.Entry.Timeline.Limit); d != "" {
		t.Errorf("timeline limit (-whole +stream):\n%s", d)
	}
	if m.Entry.Verification.Verdict == verify.Inconclusive {
		t.Logf("inconclusive: %v", m.Entry.Verification.Reasons)
	}
}
