package load

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
	"github.com/limitbench/limitbench/internal/verify"
)

const day = 24 * time.Hour

// An outcome whose times are further from the log's Origin than an Event can hold (about 6.36
// days) is counted in Dropped, not lost silently, and the events that fit are kept.
func TestAdmissionLogDropsWhatDoesNotFit(t *testing.T) {
	start := time.UnixMicro(1_700_000_000_000_000)
	tests := []struct {
		name    string
		server  *ClockOffset
		sent    time.Duration
		dropped uint64
	}{
		{"a second in", nil, time.Second, 0},
		{"six days in", nil, 6 * day, 0},
		{"seven days in", nil, 7 * day, 1},
		{"a server clock seven days behind", &ClockOffset{Offset: -7 * day}, time.Second, 1},
		{"a server clock six days ahead", &ClockOffset{Offset: 6 * day}, time.Second, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewAdmissionLog(start, false, tt.server, false)
			o := Outcome{Subject: 1, Client: 2, Cost: 1, Sent: tt.sent, Received: tt.sent + time.Millisecond,
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

// noTimeLimiter is the test limiter without decision times: a script that reports none, whose
// events keep [Sent, Received] on the log's clock.
type noTimeLimiter struct{ *testLimiter }

func (l noTimeLimiter) Do(ctx context.Context, c redis.Cmdable, req algorithms.Request) algorithms.Pending {
	p := l.testLimiter.Do(ctx, c, req)
	return func() (algorithms.Decision, error) {
		d, err := p()
		d.TimeMicros = 0
		return d, err
	}
}

// A run whose events cannot be placed on the log's clock (an external server's clock measured
// seven days off) says so: every request is counted in Counts.Dropped, which makes its verdict
// inconclusive (verify.Warnings.Dropped), and none is in the log.
func TestRunCountsEventsThatDoNotFit(t *testing.T) {
	env := redistest.Single(t)
	lim := noTimeLimiter{newLimiter(t, env, 1<<40)}
	p := Plan{Arrival: Constant(200), Duration: 200 * time.Millisecond, Clients: 2,
		ServerClock: &ClockOffset{Offset: 7 * day}}
	res, rec, err := recorded(context.Background(), newClient(env, 2), lim, p)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Counts.Requests == 0 || res.Counts.Dropped != res.Counts.Requests || len(rec.log.Events()) != 0 {
		t.Errorf("Requests %d, Dropped %d, log %d; want every request dropped from the log and counted",
			res.Counts.Requests, res.Counts.Dropped, len(rec.log.Events()))
	}
	log := rec.log.Log(res.Subjects, res.Clients)
	if log.Base != res.Start.UnixMicro() {
		t.Errorf("Log.Base = %d; want the run's start, %d", log.Base, res.Start.UnixMicro())
	}
	rep, err := verify.Check(algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 1, Window: time.Second}, log)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if v := verify.JudgeWith(rep, verify.Warnings{Dropped: res.Counts.Dropped}); v.Outcome != verify.Inconclusive {
		t.Errorf("JudgeWith = %+v; want inconclusive", v)
	}
}
