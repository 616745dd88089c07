package verify

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/clock"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

const (
	ms  = time.Millisecond
	day = 24 * time.Hour
)

// decided is an outcome that reached a decision.
func decided(allowed bool, intended, sent, received time.Duration) load.Outcome {
	return load.Outcome{Cost: 1, Intended: intended, Sent: sent, Received: received, Decision: algorithms.Decision{Allowed: allowed}}
}

// newClient is a client of env with a connection for each of clients.
func newClient(env *redistest.Env, clients int) redis.UniversalClient {
	return env.Target.NewClient(redisenv.ClientOptions{PoolSize: clients})
}

// event is a Event spelled out, its times absolute.
type event struct {
	Lo, Hi  int64
	Subject uint32
	Client  uint16
	Permits uint16
	Kind    Kind
}

// events returns the events of log with absolute times.
func events(log *Log) []event {
	var out []event
	for _, e := range log.Events {
		out = append(out, event{log.Base + e.Lo(), log.Base + e.Hi(), e.Subject, e.Client, e.Permits, e.Kind()})
	}
	return out
}

// spanned returns d with its time known only to [TimeMicros, TimeMicros + span].
func spanned(d algorithms.Decision, span int64) algorithms.Decision {
	d.TimeSpanMicros = span
	return d
}

func TestAdmissionLog(t *testing.T) {
	start := time.UnixMicro(1_000_000_000_000_000)
	origin := start.UnixMicro()
	server := func(allowed bool, tMicros int64) algorithms.Decision {
		return algorithms.Decision{Allowed: allowed, TimeMicros: tMicros, Clock: algorithms.ClockServer}
	}
	client := algorithms.Decision{Allowed: true, TimeMicros: origin + 999_999, Clock: algorithms.ClockClient}
	base := load.Outcome{Subject: 3, Client: 2, Cost: 1, Sent: 1000 * time.Microsecond, Received: 1500*time.Microsecond + 1}
	with := func(class load.Class, d algorithms.Decision) *load.Outcome {
		o := base
		o.Class, o.Decision = class, d
		return &o
	}
	wide := event{Lo: origin + 1000, Hi: origin + 1502, Subject: 3, Client: 2, Permits: 1}
	ev := func(e event, k Kind, lo, hi int64) event {
		e.Kind = k
		if lo != 0 {
			e.Lo, e.Hi = lo, hi
		}
		return e
	}
	ext := &clock.Offset{Offset: 10 * ms, Err: 100 * time.Microsecond}
	tests := []struct {
		name           string
		shared         bool
		offset         *clock.Offset
		clientClock    bool
		o              *load.Outcome
		want           event
		narrowed, miss uint64
	}{
		{"client clock never narrowed", true, nil, true, with(load.ClassOK, client), ev(wide, Admitted, 0, 0), 0, 0},
		{"no clock information", false, nil, false, with(load.ClassOK, server(true, origin+1200)), ev(wide, Admitted, 0, 0), 0, 0},
		{"shared clock narrows to the server time", true, nil, false, with(load.ClassOK, server(true, origin+1200)), ev(wide, Admitted, origin+1200, origin+1200), 1, 0},
		{"shared clock denied", true, nil, false, with(load.ClassOK, server(false, origin+1200)), ev(wide, Denied, origin+1200, origin+1200), 1, 0},
		{"shared clock mismatch counted", true, nil, false, with(load.ClassOK, server(true, origin+5000)), ev(wide, Admitted, origin+5000, origin+5000), 1, 1},
		// Regression: an external server's times were moved to the harness clock, where a fixed
		// window aligned on the server's clock straddles two, and a correct fixed-window limiter
		// was flagged. The log now stays on the server's clock.
		{"external: the server time, on the server's clock", false, ext, false,
			with(load.ClassOK, server(true, origin+10_000+1450)), ev(wide, Admitted, origin+11_450, origin+11_450), 1, 0},
		{"external: inconsistent server time counted, still used", false, &clock.Offset{Offset: -10 * ms, Err: 100 * time.Microsecond}, false,
			with(load.ClassOK, server(true, origin+1200)), ev(wide, Admitted, origin+1200, origin+1200), 1, 1},
		{"external: unknown moved to the server's clock ± error", false, ext, false,
			with(load.ClassUnknown, algorithms.Decision{}), ev(wide, Unknown, origin+1000+9900, origin+1502+10_100), 0, 0},
		{"external: client clock stays on the harness clock", false, ext, true,
			with(load.ClassOK, client), ev(wide, Admitted, 0, 0), 0, 0},
		{"shared clock narrows to a time known to an interval", true, nil, false,
			with(load.ClassOK, spanned(server(true, origin+1100), 200)), ev(wide, Admitted, origin+1100, origin+1300), 1, 0},
		{"shared clock keeps [send, receive] when a time's interval is wider", true, nil, false,
			with(load.ClassOK, spanned(server(true, origin), 2_000_000)), ev(wide, Admitted, 0, 0), 0, 0},
		{"shared clock: an interval far outside is a mismatch, still used", true, nil, false,
			with(load.ClassOK, spanned(server(true, origin+3000), 100)), ev(wide, Admitted, origin+3000, origin+3100), 1, 1},
		{"failed", true, nil, false, with(load.ClassFailed, algorithms.Decision{}), ev(wide, Failed, 0, 0), 0, 0},
		{"unknown", true, nil, false, with(load.ClassUnknown, algorithms.Decision{}), ev(wide, Unknown, 0, 0), 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewAdmissionLog(start, tt.shared, tt.offset, tt.clientClock)
			l.Add(tt.o)
			if diff := cmp.Diff([]event{tt.want}, events(l.Log(nil, nil))); diff != "" {
				t.Errorf("Events (-want +got):\n%s", diff)
			}
			if l.Narrowed != tt.narrowed || l.Mismatched != tt.miss {
				t.Errorf("Narrowed, Mismatched = %d, %d; want %d, %d", l.Narrowed, l.Mismatched, tt.narrowed, tt.miss)
			}
		})
	}
}

func TestAdmissionLogMerge(t *testing.T) {
	start := time.UnixMicro(0)
	a, b := NewAdmissionLog(start, true, nil, false), NewAdmissionLog(start, true, nil, false)
	for _, s := range []time.Duration{5, 1, 3} {
		o := decided(true, 0, s*time.Microsecond, s*time.Microsecond)
		a.Add(&o)
	}
	o := decided(true, 0, 2*time.Microsecond, 2*time.Microsecond)
	o.Decision.Clock, o.Decision.TimeMicros = algorithms.ClockServer, 2
	b.Add(&o)
	a.Merge(b)
	if a.Len() != 4 || a.Narrowed != 1 {
		t.Errorf("after Merge: Len %d, Narrowed %d; want 4, 1", a.Len(), a.Narrowed)
	}
	var got []int64
	for _, e := range events(a.Log(nil, nil)) {
		got = append(got, e.Lo)
	}
	// Many chunks: the order is kept across chunk boundaries.
	if diff := cmp.Diff([]int64{5, 1, 3, 2}, got); diff != "" {
		t.Errorf("merged Lo (-want +got):\n%s", diff)
	}
}

func TestAdmissionLogChunks(t *testing.T) {
	a, b := NewAdmissionLog(time.UnixMicro(0), false, nil, false), NewAdmissionLog(time.UnixMicro(0), false, nil, false)
	const n = 3*logChunk + 17
	for i := range n {
		o := decided(true, 0, time.Duration(i)*time.Microsecond, time.Duration(i)*time.Microsecond)
		if i%3 == 0 {
			b.Add(&o)
		} else {
			a.Add(&o)
		}
	}
	a.Merge(b)
	o := decided(true, 0, n*time.Microsecond, n*time.Microsecond)
	a.Add(&o)
	ev := a.Events()
	if len(ev) != n+1 || a.Len() != n+1 {
		t.Fatalf("len(Events()) = %d, Len() = %d; want %d", len(ev), a.Len(), n+1)
	}
	seen := make([]bool, n+1)
	for _, e := range ev {
		seen[e.Lo()] = true
	}
	for i, ok := range seen {
		if !ok {
			t.Fatalf("event %d lost", i)
		}
	}
}

// An outcome whose times are further from the log's Origin than an Event can hold (about 6.36
// days) is counted in Dropped, not lost silently, and the events that fit are kept.
func TestAdmissionLogDropsWhatDoesNotFit(t *testing.T) {
	start := time.UnixMicro(1_700_000_000_000_000)
	tests := []struct {
		name    string
		server  *clock.Offset
		sent    time.Duration
		dropped uint64
	}{
		{"a second in", nil, time.Second, 0},
		{"six days in", nil, 6 * day, 0},
		{"seven days in", nil, 7 * day, 1},
		{"a server clock seven days behind", &clock.Offset{Offset: -7 * day}, time.Second, 1},
		{"a server clock six days ahead", &clock.Offset{Offset: 6 * day}, time.Second, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewAdmissionLog(start, false, tt.server, false)
			o := load.Outcome{Subject: 1, Client: 2, Cost: 1, Sent: tt.sent, Received: tt.sent + time.Millisecond,
				Decision: algorithms.Decision{Allowed: true}}
			l.Add(&o)
			if l.Dropped != tt.dropped || uint64(l.Len()) != 1-tt.dropped {
				t.Fatalf("Dropped %d, Len %d; want %d, %d", l.Dropped, l.Len(), tt.dropped, 1-tt.dropped)
			}
			if tt.dropped > 0 {
				return
			}
			got := events(l.Log(nil, nil))
			lo := start.UnixMicro() + tt.sent.Microseconds()
			if tt.server != nil {
				lo += tt.server.Offset.Microseconds()
			}
			if len(got) != 1 || got[0].Lo != lo {
				t.Errorf("events %+v; want one at %d", got, lo)
			}
		})
	}
}

// Merge moves the events of a log with another Origin onto its own, keeping their absolute times,
// and counts those that no longer fit.
func TestAdmissionLogMergeOrigins(t *testing.T) {
	a := NewAdmissionLog(time.UnixMicro(1_700_000_000_000_000), true, nil, false)
	b := NewAdmissionLog(time.UnixMicro(1_700_000_000_000_000).Add(6*day), true, nil, false)
	add := func(l *AdmissionLog, sent time.Duration) {
		o := decided(true, 0, sent, sent)
		l.Add(&o)
	}
	add(a, time.Second)
	add(b, time.Second)    // 6 days after a's Origin: fits
	add(b, 2*time.Second)  // likewise
	add(b, day)            // 7 days after: does not
	add(b, 12*time.Second) // fits
	a.Merge(b)
	if a.Len() != 4 || a.Dropped != 1 {
		t.Errorf("after Merge: Len %d, Dropped %d; want 4, 1", a.Len(), a.Dropped)
	}
	var got []int64
	for _, e := range events(a.Log(nil, nil)) {
		got = append(got, e.Lo-a.Origin)
	}
	six := (6 * day).Microseconds()
	if diff := cmp.Diff([]int64{1e6, six + 1e6, six + 2e6, six + 12e6}, got); diff != "" {
		t.Errorf("merged Lo from a's Origin (-want +got):\n%s", diff)
	}
}

// incrLimiter admits every request with one INCR and reports no decision time, so that its
// events keep [Sent, Received] on the log's clock.
type incrLimiter struct{ prefix string }

func (l incrLimiter) Keys(req algorithms.Request) []string {
	return []string{l.prefix + "{" + req.Subject + "}"}
}

func (l incrLimiter) NewCall() algorithms.Call { return algorithms.PendingCall(l.do) }

func (l incrLimiter) do(ctx context.Context, c redis.Cmdable, req algorithms.Request) algorithms.Pending {
	cmd := c.Incr(ctx, l.Keys(req)[0])
	return func() (algorithms.Decision, error) {
		if err := cmd.Err(); err != nil {
			return algorithms.Decision{}, err
		}
		return algorithms.Decision{Allowed: true}, nil
	}
}

// A run whose events cannot be placed on the log's clock (an external server's clock measured
// seven days off) says so: every request is counted in Counts.Dropped, which makes its verdict
// inconclusive (Warnings.Dropped), and none is in the log.
func TestRunCountsEventsThatDoNotFit(t *testing.T) {
	env := redistest.Single(t)
	p := load.Plan{Arrival: load.Constant(200), Duration: 200 * time.Millisecond, Clients: 2}
	log := NewAdmissionLog(time.Time{}, false, &clock.Offset{Offset: 7 * day}, false)
	res, err := load.Run(context.Background(), newClient(env, 2), incrLimiter{env.Prefix}, p, load.Sinks{Measured: []load.Aggregator{log}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Counts.Requests == 0 || res.Counts.Dropped != res.Counts.Requests || log.Len() != 0 {
		t.Errorf("Requests %d, Dropped %d, log %d; want every request dropped from the log and counted",
			res.Counts.Requests, res.Counts.Dropped, log.Len())
	}
	checked := log.Log(res.Subjects, res.Clients)
	if checked.Base != res.Start.UnixMicro() {
		t.Errorf("Log.Base = %d; want the run's start, %d", checked.Base, res.Start.UnixMicro())
	}
	rep, err := Check(algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 1, Window: time.Second}, checked)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if v := JudgeWith(rep, Warnings{Dropped: res.Counts.Dropped}); v.Verdict != Inconclusive {
		t.Errorf("JudgeWith = %+v; want inconclusive", v)
	}
}
