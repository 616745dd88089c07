package load

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

// every is the segment i of n of a schedule, as internal/segment.Segment is: ticks i, i+n, ...,
// and the closed-loop clients c with c mod n == i.
type every struct{ i, n int }

func (s every) Tick(k uint64) uint64 { return uint64(s.i) + k*uint64(s.n) }
func (s every) Of(m uint64) uint64 {
	if m <= uint64(s.i) {
		return 0
	}
	return (m-uint64(s.i)-1)/uint64(s.n) + 1
}
func (s every) Runs(c int) bool { return c%s.n == s.i }

// TestRunSegments runs one schedule whole and in three segments against one Redis: the segments
// together send exactly the whole run's ticks, with the same subjects and clients.
func TestRunSegments(t *testing.T) {
	env := redistest.Single(t)
	lim := newLimiter(t, env, 1_000_000)
	c := newClient(env, 4)
	plan := func(s Share, seq *sequence) Plan {
		return Plan{Arrival: Constant(300), Duration: 300 * ms, Clients: 4, Keys: Keys{Count: 20, Distribution: Zipf, ZipfS: 1.1},
			Seed: 5, Share: s, OnOutcome: seq.add}
	}
	whole := &sequence{got: map[uint64][2]uint32{}}
	res, _, err := recorded(context.Background(), c, lim, plan(nil, whole))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	// The segments run at once, as generators on several machines do, from one agreed start.
	parts := &sequence{got: map[uint64][2]uint32{}}
	var scheduled atomic.Uint64
	start := time.Now().Add(100 * ms)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			p := plan(every{i, 3}, parts)
			p.Start = start
			// Each generator has a client of its own: a worker holds its connection for the run.
			own := newClient(env, 4)
			defer own.Close()
			r, _, err := recorded(context.Background(), own, lim, p)
			if err != nil {
				t.Errorf("Run segment %d: %v", i, err)
				return
			}
			if !r.Start.Equal(start) {
				t.Errorf("segment %d started at %v; want %v", i, r.Start, start)
			}
			scheduled.Add(r.Scheduled)
		})
	}
	wg.Wait()
	if scheduled.Load() != res.Scheduled || res.Scheduled != 90 {
		t.Errorf("segments scheduled %d ticks, the whole run %d; want 90 each", scheduled.Load(), res.Scheduled)
	}
	// A loaded machine may miss a tick at the end of either run: compare the common ticks, and
	// require nearly all.
	if len(whole.got) < 85 || len(parts.got) < 85 {
		t.Fatalf("whole run sent %d ticks, segments %d; want about 90", len(whole.got), len(parts.got))
	}
	for k, v := range parts.got {
		if w, ok := whole.got[k]; ok && w != v {
			t.Errorf("tick %d: segments sent (subject, client) %v, the whole run %v", k, v, w)
		}
		if k >= 90 {
			t.Errorf("segments sent tick %d, beyond the schedule", k)
		}
	}
}

func TestPlanValidateShare(t *testing.T) {
	p := Plan{Arrival: ClosedLoop{}, Duration: time.Second, Clients: 2, Share: every{2, 3}}
	if err := p.Validate(); err == nil {
		t.Errorf("closed loop of 2 clients, segment 2/3: Validate = nil; want an error (no client is the segment's)")
	}
	p.Clients = 3
	if err := p.Validate(); err != nil {
		t.Errorf("closed loop of 3 clients, segment 2/3: %v", err)
	}
}
