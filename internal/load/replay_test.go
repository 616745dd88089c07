package load

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"pgregory.net/rapid"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
	"github.com/limitbench/limitbench/internal/trace"
)

// requestLog is a limiter that records every Request it is given, then defers to inner.
type requestLog struct {
	inner *testLimiter
	mu    sync.Mutex
	reqs  []sentRequest
}

type sentRequest struct {
	req algorithms.Request
	at  time.Time
}

func (l *requestLog) Keys(req algorithms.Request) []string { return l.inner.Keys(req) }

func (l *requestLog) NewCall() algorithms.Call { return algorithms.PendingCall(l.do) }

func (l *requestLog) do(ctx context.Context, c redis.Cmdable, req algorithms.Request) algorithms.Pending {
	l.mu.Lock()
	l.reqs = append(l.reqs, sentRequest{req, time.Now()})
	l.mu.Unlock()
	return l.inner.do(ctx, c, req)
}

// replayTrace returns a trace of n rows over span: 7 clients (client c's clock off by c hours,
// a few behind), 5 subjects, costs 1 to 3, several rows at one instant.
func replayTrace(n int, span time.Duration) *trace.Trace {
	t := &trace.Trace{}
	for c := range 7 {
		t.Clients = append(t.Clients, fmt.Sprintf("client-%d", c))
		t.Skew = append(t.Skew, time.Duration(c-2)*time.Hour)
	}
	for s := range 5 {
		t.Subjects = append(t.Subjects, fmt.Sprintf("user:%d", s))
	}
	for i := range n {
		t.Rows = append(t.Rows, trace.Row{
			At:      span * time.Duration(i/3*3) / time.Duration(n), // three rows at each instant
			Client:  uint16(i * 5 % 7),
			Subject: uint32(i * 3 % 5),
			Cost:    uint16(1 + i%3),
		})
	}
	return t
}

// TestRunReplaysTrace: a trace of 10,000 rows is replayed row by row: every row is sent once,
// at the intended time it names, as its client, for its subject and cost, with its client's
// clock offset, and after a jump of a client's clock with the jump's; a warmup takes the rows
// before it. A machine too loaded to keep up (under -race
// beside other tests) may leave rows of the measured part unsent at the end: each is then
// counted missed, never dropped silently, and the rows sent are checked as above.
func TestRunReplaysTrace(t *testing.T) {
	env := redistest.Single(t)
	lim := &requestLog{inner: newLimiter(t, env, 1_000_000)}
	c := newClient(env, 8)
	tr := replayTrace(10_000, 2*time.Second)
	// Client 6's clock (4h ahead) jumps to 5h behind a second in (between two rows' instants).
	tr.Jumps = []trace.Jump{{At: time.Second + 100*time.Microsecond, Client: 6, Skew: -5 * time.Hour}}
	if err := tr.Validate(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[uint64]Outcome{}
	p := Plan{
		Arrival:  Replay(tr),
		Warmup:   200 * ms,
		Duration: 2*time.Second + ms,
		Clients:  8,
		OnOutcome: func(o *Outcome) {
			mu.Lock()
			defer mu.Unlock()
			if _, dup := seen[o.Tick]; dup {
				t.Errorf("row %d sent twice", o.Tick)
			}
			seen[o.Tick] = *o
		},
	}
	res, err := Run(context.Background(), c, lim, p, Sinks{})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	missed := int(res.Counts.Missed)
	if len(seen)+missed != len(tr.Rows) {
		t.Fatalf("%d rows sent and %d missed; want all %d accounted for (counts %+v)", len(seen), missed, len(tr.Rows), res.Counts)
	}
	if missed > 0 {
		t.Logf("the machine fell behind: %d of %d rows missed, %d late", missed, len(tr.Rows), res.Counts.Late)
	}
	warm := 0
	for i, row := range tr.Rows {
		o, sent := seen[uint64(i)]
		if !sent {
			if row.At < p.Warmup {
				t.Errorf("row %d of the warmup was never sent", i)
			}
			continue
		}
		if o.Intended != row.At || o.Client != row.Client || o.Subject != row.Subject || o.Cost != row.Cost {
			t.Fatalf("row %d: outcome intended %s client %d subject %d cost %d; want %s %d %d %d",
				i, o.Intended, o.Client, o.Subject, o.Cost, row.At, row.Client, row.Subject, row.Cost)
		}
		if o.Class != ClassOK {
			t.Errorf("row %d: %v", i, o.Err)
		}
		if row.At < p.Warmup {
			warm++
		}
	}
	if res.Counts.Warmup != uint64(warm) || res.Counts.Requests != uint64(len(tr.Rows)-warm-missed) {
		t.Errorf("counts %+v; want %d warmup and %d measured", res.Counts, warm, len(tr.Rows)-warm-missed)
	}
	if res.Scheduled != uint64(len(tr.Rows)-warm) {
		t.Errorf("scheduled %d; want %d", res.Scheduled, len(tr.Rows)-warm)
	}
	if res.Counts.Late > uint64(BehindLimit*float64(len(tr.Rows))) {
		// A loaded 2-core machine may legitimately fall behind; say so rather than fail.
		t.Logf("late: %d of %d rows", res.Counts.Late, len(tr.Rows))
	}
	if strings.Join(res.Clients, ",") != strings.Join(tr.Clients, ",") || strings.Join(res.Subjects, ",") != strings.Join(tr.Subjects, ",") {
		t.Errorf("result names clients %v subjects %v; want the trace's %v %v", res.Clients, res.Subjects, tr.Clients, tr.Subjects)
	}
	// The requests the limiter saw: per (client, subject, cost), as many as the trace has rows,
	// each with its client's clock offset.
	type key struct {
		client, subject string
		cost            int64
	}
	want := map[key]int{}
	for i, row := range tr.Rows {
		if _, sent := seen[uint64(i)]; sent {
			want[key{tr.Clients[row.Client], tr.Subjects[row.Subject], int64(row.Cost)}]++
		}
	}
	skews := map[string][]time.Duration{} // each client's offsets: its own, then its jumps'
	for i, name := range tr.Clients {
		skews[name] = []time.Duration{tr.Skew[i]}
	}
	for _, j := range tr.Jumps {
		skews[tr.Clients[j.Client]] = append(skews[tr.Clients[j.Client]], j.Skew)
	}
	sentWith := map[time.Duration]int{}
	for _, s := range lim.reqs {
		want[key{s.req.Client, s.req.Subject, s.req.Cost}]--
		d := s.req.ClientTime.Sub(s.at)
		k := slices.IndexFunc(skews[s.req.Client], func(o time.Duration) bool { return (d - o).Abs() <= time.Minute })
		if k < 0 {
			t.Fatalf("request of %s: client time %s off; want one of its clock offsets %v", s.req.Client, d, skews[s.req.Client])
		}
		sentWith[skews[s.req.Client][k]]++
	}
	for _, j := range tr.Jumps {
		if sentWith[tr.SkewOf(j.Client)] == 0 || sentWith[j.Skew] == 0 {
			t.Errorf("client %s: %d requests with its offset %s before its clock jumped, %d with %s after; want some of each",
				tr.Clients[j.Client], sentWith[tr.SkewOf(j.Client)], tr.SkewOf(j.Client), sentWith[j.Skew], j.Skew)
		}
	}
	for k, n := range want {
		if n != 0 {
			t.Errorf("%+v: %d more rows than requests", k, n)
		}
	}
}

// TestPlanRefusesLoadWithTrace: a trace names its rows' subjects, clients' clocks and costs, so
// a plan that also sets keys, skew, cost or seed is refused, naming each.
func TestPlanRefusesLoadWithTrace(t *testing.T) {
	tr := replayTrace(10, time.Second)
	p := Plan{Arrival: Replay(tr), Duration: 2 * time.Second, Clients: 2, Keys: Keys{Count: 3}, Skew: Skew{Spread: time.Second},
		Cost: 2, Seed: 1}
	err := p.Validate()
	if !errors.Is(err, ErrBadPlan) {
		t.Fatalf("Validate() = %v; want ErrBadPlan", err)
	}
	for _, want := range []string{"keys", "skew", "cost", "seed"} {
		if !strings.Contains(err.Error(), want+" cannot be combined with a trace") {
			t.Errorf("Validate() = %v; want a problem naming %s", err, want)
		}
	}
	if err := (Plan{Arrival: Replay(tr), Duration: 2 * time.Second, Clients: 2}).Validate(); err != nil {
		t.Errorf("trace alone: Validate() = %v; want nil", err)
	}
	bad := tr.Clone()
	bad.Rows[3].Cost = 0
	if err := (Plan{Arrival: Replay(bad), Duration: 2 * time.Second, Clients: 2}).Validate(); !errors.Is(err, trace.ErrInvalid) {
		t.Errorf("invalid trace: Validate() = %v; want trace.ErrInvalid", err)
	}
}

// genReplay draws a valid trace of one client and subject whose rows are what a pacer reads:
// offsets that never decrease, some rows at one instant.
func genReplay(t *rapid.T) *trace.Trace {
	tr := &trace.Trace{Clients: []string{"c"}, Subjects: []string{"s"}}
	at := time.Duration(0)
	for i := range rapid.IntRange(1, 60).Draw(t, "rows") {
		if rapid.IntRange(0, 3).Draw(t, fmt.Sprint("same", i)) > 0 {
			at += time.Duration(rapid.Int64Range(0, 2e9).Draw(t, fmt.Sprint("gap", i)))
		}
		tr.Rows = append(tr.Rows, trace.Row{At: at, Cost: 1})
	}
	return tr
}

// TestReplayRows: the pacer of a trace schedules exactly its rows, in order, each at its offset,
// and stops after the last.
func TestReplayRows(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tr := genReplay(t)
		p := Replay(tr)
		if p.Len() != uint64(len(tr.Rows)) {
			t.Fatalf("Len = %d; want %d rows", p.Len(), len(tr.Rows))
		}
		for k := range p.Len() {
			r, ok := p.Row(k)
			at, ok2 := p.At(k)
			if !ok || !ok2 || r != tr.Rows[k] || at != r.At {
				t.Fatalf("row %d = %+v, %v, at %s; want %+v", k, r, ok, at, tr.Rows[k])
			}
		}
		if _, ok := p.Row(p.Len()); ok {
			t.Fatalf("a row past the end")
		}
		if _, stop := p.Pace(tr.Span()+time.Hour, p.Len()); !stop {
			t.Fatalf("the pacer does not stop after the last row")
		}
		if got := Scheduled(p, tr.Span()+1); got != p.Len() {
			t.Fatalf("Scheduled = %d; want %d", got, p.Len())
		}
	})
}

// TestTracePacer: the pacer of a trace, as a table of instants.
func TestTracePacer(t *testing.T) {
	ms := time.Millisecond
	tr := &trace.Trace{Rows: []trace.Row{{Cost: 1}, {At: 10 * ms, Cost: 1}, {At: 10 * ms, Cost: 1}, {At: 1500 * ms, Cost: 1}},
		Clients: []string{"c"}, Subjects: []string{"s"}}
	p := Replay(tr)
	paces := []struct {
		elapsed time.Duration
		hits    uint64
		wait    time.Duration
		stop    bool
	}{
		{0, 0, 0, false},
		{0, 1, 10 * ms, false},
		{4 * ms, 1, 6 * ms, false},
		{10 * ms, 2, 0, false},
		{20 * ms, 3, 1480 * ms, false},
		{2 * time.Second, 3, 0, false},
		{2 * time.Second, 4, 0, true},
	}
	for _, c := range paces {
		wait, stop := p.Pace(c.elapsed, c.hits)
		if wait != c.wait || stop != c.stop {
			t.Errorf("Pace(%s, %d) = (%s, %v); want (%s, %v)", c.elapsed, c.hits, wait, stop, c.wait, c.stop)
		}
	}
	rates := map[time.Duration]float64{0: 1, 10 * ms: 3, 999 * ms: 3, time.Second: 2, 1100 * ms: 0, 1500 * ms: 1, 3 * time.Second: 0}
	for at, want := range rates {
		if got := p.Rate(at); got != want {
			t.Errorf("Rate(%s) = %v; want %v", at, got, want)
		}
	}
}

// TestSettled: Plan.Settled's promise, in an open and a closed loop on a real Redis: every
// outcome recorded after a call was sent at or after the offset it gave, and the offsets keep
// up with the run (the last is within a second of its end), so a streaming verifier holds
// little.
func TestSettled(t *testing.T) {
	env := redistest.Single(t)
	for _, closed := range []bool{false, true} {
		t.Run(fmt.Sprint("closed=", closed), func(t *testing.T) {
			lim := newLimiter(t, env, 1_000_000)
			c := newClient(env, 8)
			var mu sync.Mutex
			var seq int
			var last time.Duration // the offset of the latest call
			calls, broken := 0, 0
			p := Plan{Arrival: Constant(2000), Duration: time.Second, Clients: 8,
				Settled: func(d time.Duration) {
					mu.Lock()
					defer mu.Unlock()
					seq++
					calls++
					if d < last {
						t.Errorf("Settled went back from %s to %s", last, d)
					}
					last = d
				},
				OnOutcome: func(o *Outcome) {
					mu.Lock()
					defer mu.Unlock()
					seq++
					if o.Sent < last {
						broken++
						if broken < 5 {
							t.Errorf("an outcome sent at %s was recorded after Settled(%s)", o.Sent, last)
						}
					}
				}}
			if closed {
				p.Arrival = ClosedLoop{}
			}
			if _, err := Run(context.Background(), c, lim, p, Sinks{}); err != nil {
				t.Fatal(err)
			}
			if calls < 5 || last < p.Duration-time.Second/2 {
				t.Errorf("%d calls, the last at %s; want about one per %s up to the end (%s)", calls, last, settleEvery, p.Duration)
			}
		})
	}
}
