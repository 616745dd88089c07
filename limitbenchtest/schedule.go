package limitbenchtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/hunt"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/trace"
)

// Workers is the most calls of the limiter a play has in flight at once.
const Workers = 64

// Request is one request of a Schedule.
type Request struct {
	// At is when it is sent, from the schedule's time zero.
	At time.Duration
	// Client and Subject name who asks and for what (the limiter is given the subject).
	Client, Subject string
	// Permits is what it asks for, in [1, 65535].
	Permits int64
}

// Schedule is a list of requests, in order of At, played open loop: each is sent at its offset,
// whatever happened to the ones before.
type Schedule struct {
	Requests []Request
	// Every and Offset place time zero on the Unix clock: a play starts at the first instant u at
	// or after it is asked to with u mod Every = Offset (Every 0: at once), so that offsets are
	// phases of the contract's windows.
	Every, Offset time.Duration
	// Skews gives clients clocks that are off by their offset: ClientNow, called by the limiter
	// on a request of that client, returns this process's time plus it. Nil: no client's clock
	// is off.
	Skews map[string]time.Duration
}

// Constant returns perSecond requests a second (> 0) for d, from client "c0" for subject "s0",
// one permit each, evenly spaced from time zero.
func Constant(perSecond float64, d time.Duration) Schedule {
	var s Schedule
	for i := 0; ; i++ {
		at := time.Duration(float64(i) / perSecond * float64(time.Second))
		if at >= d {
			return s
		}
		s.Requests = append(s.Requests, Request{At: at, Client: "c0", Subject: "s0", Permits: 1})
	}
}

// Boundaries returns a schedule aimed at c's boundaries, placed on the Unix clock where
// limitbench's hunt places its schedules (hunt.FrameOf): a boundary of c's period P (the fixed
// window, a coarse clock's tick, the window or the refill period) falls at offset Lead =
// D/2, D = min(P, 2 s). The allowance (the limit, or a token bucket's capacity) and one more
// are asked for from D/5 to D/20 before the boundary and again from D/100 to D/20 after it
// (a play that runs late still straddles the boundary), then, when P is at most 5 s, within a
// millisecond either side of the next boundary: a limiter that resets or refills at once on
// a boundary of the Unix clock admits twice its allowance in a span c allows far less in.
// Asked for on one subject by one client, one permit each. Seed varies the instants within
// those spans; the same arguments give the same schedule. It fails when c is not a contract
// limitbench can check.
func Boundaries(c algorithms.Contract, seed uint64) (Schedule, error) {
	t, err := targetOf(c, false, nil)
	if err != nil {
		return Schedule{}, err
	}
	frame := hunt.FrameOf(t, hunt.Bounds{})
	p, lead := frame.Every, frame.Every-frame.Offset
	n := c.Limit
	if c.Kind == algorithms.TokenBucket {
		n = c.Capacity
	}
	if p <= 0 || n < 1 || n >= 10_000 {
		return Schedule{}, fmt.Errorf("limitbenchtest: boundaries of %s: no period or an allowance outside [1, 9999]", c)
	}
	s := Schedule{Every: frame.Every, Offset: frame.Offset}
	rng := rand.New(rand.NewPCG(seed, 0x6c62))
	burst := func(from, to time.Duration) {
		ats := make([]time.Duration, n+1)
		for i := range ats {
			ats[i] = from + time.Duration(rng.Int64N(int64(to-from)+1))
		}
		slices.Sort(ats)
		for _, at := range ats {
			s.Requests = append(s.Requests, Request{At: at, Client: "c0", Subject: "s0", Permits: 1})
		}
	}
	d := min(p, 2*time.Second) // lead is d/2
	burst(lead-d/5, lead-d/20)
	burst(lead+d/100, lead+d/20)
	if p <= 5*time.Second {
		burst(lead+p-time.Millisecond, lead+p-10*time.Microsecond)
		burst(lead+p+10*time.Microsecond, lead+p+time.Millisecond)
	}
	return s, nil
}

// Skewed returns limitbench's schedule of clients whose clocks are off by the given offsets
// (each within ±24 h, at least one not zero), which first appear just after the others drained
// the limiter: it breaks a limiter that trusts the caller's time (read with ClientNow), and
// is a schedule like another for one that reads its own clock.
func Skewed(c algorithms.Contract, skews []time.Duration, seed uint64) (Schedule, error) {
	return familySchedule(c, skews, "skewed-newcomer", seed)
}

// familySchedule returns the named hunt family's schedule for a limiter of contract c.
func familySchedule(c algorithms.Contract, skews []time.Duration, name string, seed uint64) (Schedule, error) {
	t, err := targetOf(c, false, skews)
	if err != nil {
		return Schedule{}, err
	}
	f, _ := hunt.FamilyNamed(name)
	if !f.Applies(t) {
		return Schedule{}, fmt.Errorf("limitbenchtest: schedule %s does not apply to %s with clock offsets %v", name, c, skews)
	}
	b := hunt.Bounds{}
	return fromTrace(f.Make(t, b, seed), hunt.FrameOf(t, b)), nil
}

// targetOf returns the hunt target of a limiter under test with contract c: one that reads its
// own clock, or its clients' when skews are given.
func targetOf(c algorithms.Contract, cost bool, skews []time.Duration) (hunt.Target, error) {
	t := hunt.Target{Algorithm: "the limiter under test", Contract: c, Clock: algorithms.ClockServer, Cost: cost}
	if len(skews) > 0 {
		t.Clock, t.Skews = algorithms.ClockClient, skews
	}
	if err := t.Validate(); err != nil {
		return hunt.Target{}, fmt.Errorf("limitbenchtest: %w", err)
	}
	return t, nil
}

// ReadSchedule reads a schedule from a trace file limitbench reads (.csv or .jsonl: rows of
// offset, client, subject and cost), such as the reproducer a failed check writes. The file
// does not say where time zero lies on the Unix clock: set Every and Offset as the failure
// said.
func ReadSchedule(path string) (Schedule, error) {
	tr, err := trace.Read(path)
	if err != nil {
		return Schedule{}, fmt.Errorf("limitbenchtest: %w", err)
	}
	return fromTrace(tr, arrival.Align{}), nil
}

// fromTrace returns tr as a Schedule whose time zero is a.
func fromTrace(tr *trace.Trace, a arrival.Align) Schedule {
	s := Schedule{Requests: make([]Request, len(tr.Rows)), Every: a.Every, Offset: a.Offset}
	for i, r := range tr.Rows {
		s.Requests[i] = Request{At: r.At, Client: tr.Clients[r.Client], Subject: tr.Subjects[r.Subject], Permits: int64(r.Cost)}
	}
	for i, d := range tr.Skew {
		if d != 0 {
			if s.Skews == nil {
				s.Skews = map[string]time.Duration{}
			}
			s.Skews[tr.Clients[i]] = d
		}
	}
	return s
}

// trace returns s as a trace limitbench reads, or an error naming what does not fit one.
func (s Schedule) trace() (*trace.Trace, error) {
	tr := &trace.Trace{Rows: make([]trace.Row, len(s.Requests))}
	clients, subjects := map[string]int{}, map[string]int{}
	index := func(names *[]string, seen map[string]int, name string) int {
		i, ok := seen[name]
		if !ok {
			i = len(*names)
			seen[name] = i
			*names = append(*names, name)
		}
		return i
	}
	for i, q := range s.Requests {
		if q.Permits < 1 || q.Permits > trace.MaxCost {
			return nil, fmt.Errorf("limitbenchtest: request %d: permits %d outside [1, %d]", i, q.Permits, trace.MaxCost)
		}
		c, sub := index(&tr.Clients, clients, q.Client), index(&tr.Subjects, subjects, q.Subject)
		tr.Rows[i] = trace.Row{At: q.At, Client: uint16(min(c, trace.MaxClients)), Subject: uint32(min(sub, trace.MaxSubjects)), Cost: uint16(q.Permits)}
	}
	if len(s.Skews) > 0 {
		tr.Skew = make([]time.Duration, len(tr.Clients))
		for i, name := range tr.Clients {
			tr.Skew[i] = s.Skews[name]
		}
	}
	if len(tr.Clients) > trace.MaxClients || len(tr.Subjects) > trace.MaxSubjects {
		return nil, fmt.Errorf("limitbenchtest: %d clients and %d subjects: a trace holds at most %d and %d", len(tr.Clients), len(tr.Subjects), trace.MaxClients, trace.MaxSubjects)
	}
	if err := tr.Validate(); err != nil {
		return nil, fmt.Errorf("limitbenchtest: %w", err)
	}
	return tr, nil
}

// GoString returns s as a Go literal, for a regression test that replays it.
func (s Schedule) GoString() string {
	var b strings.Builder
	b.WriteString("limitbenchtest.Schedule{")
	if s.Every != 0 {
		fmt.Fprintf(&b, "Every: %d, Offset: %d, ", s.Every, s.Offset)
	}
	if len(s.Skews) > 0 {
		fmt.Fprintf(&b, "Skews: %#v, ", s.Skews)
	}
	b.WriteString("Requests: []limitbenchtest.Request{\n")
	for _, q := range s.Requests {
		fmt.Fprintf(&b, "\t{At: %d, Client: %q, Subject: %q, Permits: %d}, // %v\n", q.At, q.Client, q.Subject, q.Permits, q.At)
	}
	b.WriteString("}}")
	return b.String()
}

// skewKey is the context key of a request's client clock offset.
type skewKey struct{}

// ClientNow returns the time on the clock of the client whose request ctx belongs to, in a
// play of a Schedule with Skews: this process's time plus the client's offset. Outside such
// a request it is time.Now.
func ClientNow(ctx context.Context) time.Time {
	d, _ := ctx.Value(skewKey{}).(time.Duration)
	return time.Now().Add(d)
}

// play sends s's requests through r at their offsets from s's time zero, on up to Workers
// goroutines, and returns when every call returned. It stops sending when ctx is done.
func (s Schedule) play(ctx context.Context, r *Recorder) error {
	start := arrival.Align{Every: s.Every, Offset: s.Offset}.Start(time.Now())
	sem := make(chan struct{}, Workers)
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, q := range s.Requests {
		if wait := time.Until(start.Add(q.At)); wait > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
		}
		sem <- struct{}{}
		qctx := ctx
		if d := s.Skews[q.Client]; d != 0 {
			qctx = context.WithValue(ctx, skewKey{}, d)
		}
		wg.Go(func() {
			defer func() { <-sem }()
			_, _ = r.Allow(qctx, q.Client, q.Subject, q.Permits)
		})
	}
	return nil
}
