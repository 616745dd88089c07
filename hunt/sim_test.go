package hunt

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/trace"
	"github.com/limitbench/limitbench/scenarios"
	"github.com/limitbench/limitbench/verify"
)

// This file holds the tests' stand-in for Redis: a trial that replays a trace through a pure-Go
// limiter, on a clock given as an argument, and the limiters, correct and deliberately flawed.

// limiter decides one request. trueUs is the decision's time on the server's (and harness's)
// clock, clientUs on the client's (trueUs plus the client's offset), both µs since the epoch.
type limiter interface {
	decide(subject, client string, cost int64, trueUs, clientUs int64) bool
}

// simEpoch is the wall time near which every simulated trial starts (at its frame).
var simEpoch = time.Unix(1_700_000_000, 123_456_000)

// simRTT is a simulated round trip: a request sent at t is decided at t + simRTT/2 and its reply
// is back at t + simRTT.
const simRTT = 200 * time.Microsecond

// simTrial returns a Trial that replays each trace through a fresh limiter from mk, starting at
// the first instant after simEpoch that frame allows. It logs what the harness would: a
// server-clock decision at its exact time, a client-clock one as [sent, received] on the
// harness's clock. calls, when not nil, counts the traces run.
func simTrial(tg Target, frame arrival.Align, mk func() limiter, calls *int) Trial {
	start := frame.Start(simEpoch).UnixMicro()
	return func(ctx context.Context, batch []*trace.Trace) ([]verify.Measurement, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out := make([]verify.Measurement, len(batch))
		for i, tr := range batch {
			if calls != nil {
				*calls++
			}
			if err := tr.Validate(); err != nil {
				return nil, fmt.Errorf("simulated trial of an invalid trace: %w", err)
			}
			lim := mk()
			log := &verify.Log{Subjects: tr.Subjects, Clients: tr.Clients, Base: start}
			m := verify.Measurement{Log: log, Start: start}
			faults := tr.Faults
			// strike carries out the faults due by x (µs from start): one that loses the state
			// gives the limiter a fresh start; the others do nothing here.
			strike := func(x int64) {
				for len(faults) > 0 && faults[0].At.Microseconds() <= x {
					f := faults[0]
					faults = faults[1:]
					at := start + f.At.Microseconds()
					m.Faults = append(m.Faults, verify.InjectedFault{Name: f.Kind, Kind: f.Kind, Target: "master",
						Lo: at, Hi: at + f.Duration.Microseconds(), Until: at + f.Duration.Microseconds()})
					if scenarios.FaultKind(f.Kind).LosesState() {
						lim = mk()
						m.Disruptions = append(m.Disruptions, verify.Disruption{Lo: at, Hi: at, Node: "sim", Kind: "restarted",
							What: "the simulated limiter started anew", StateLost: true})
					}
				}
			}
			for _, r := range tr.Rows {
				sent := r.At.Microseconds()
				x := sent + simRTT.Microseconds()/2
				strike(x)
				ok := lim.decide(tr.Subjects[r.Subject], tr.Clients[r.Client], int64(r.Cost),
					start+x, start+x+tr.SkewAt(r.Client, r.At).Microseconds())
				k := verify.Denied
				if ok {
					k = verify.Admitted
				}
				lo, hi := x, x
				if tg.Clock == algorithms.ClockClient {
					lo, hi = sent, sent+simRTT.Microseconds()
				}
				e, err := verify.NewEvent(lo, hi, r.Subject, r.Client, r.Cost, k)
				if err != nil {
					return nil, err
				}
				log.Events = append(log.Events, e)
			}
			strike(math.MaxInt64)
			out[i] = m
		}
		return out, nil
	}
}

// serverModel is a registered reference model deciding on the server's clock: a corrected
// algorithm.
type serverModel struct{ m algorithms.Model }

func (s serverModel) decide(subject, client string, cost, trueUs, _ int64) bool {
	return s.m.Decide(subject, client, cost, trueUs)
}

// minuteKey is fixed-window-published's clock flaw: the counter's key is the subject and the
// minute of the hour on the client's clock; a counter lives 59 s of server time after the last
// admission refreshed it. (Its other flaw, GET then INCR not atomic, needs concurrency; see
// snapshotRace.)
type minuteKey struct {
	limit    int64
	counters map[string]*minuteCounter
}

type minuteCounter struct{ n, expires int64 }

func newMinuteKey(limit int64) *minuteKey {
	return &minuteKey{limit: limit, counters: map[string]*minuteCounter{}}
}

func (m *minuteKey) decide(subject, _ string, _, trueUs, clientUs int64) bool {
	minute := time.UnixMicro(clientUs).UTC().Minute()
	key := subject + ":" + strconv.Itoa(minute)
	c := m.counters[key]
	if c == nil || c.expires <= trueUs {
		c = &minuteCounter{}
		m.counters[key] = c
	}
	if c.n >= m.limit {
		return false
	}
	c.n++
	c.expires = trueUs + 59_000_000
	return true
}

// secondsBucket is token-bucket-published: the client's time in whole seconds, stored even when
// older than the stored one, floating-point tokens, both keys kept 60 s of server time.
type secondsBucket struct {
	rate, capacity float64 // tokens per second, tokens
	state          map[string]*bucketState
}

type bucketState struct {
	tokens  float64
	last    int64 // whole seconds
	expires int64 // server µs
}

func newSecondsBucket(l algorithms.Limit) *secondsBucket {
	return &secondsBucket{rate: l.RatePerSecond(), capacity: float64(l.Capacity()), state: map[string]*bucketState{}}
}

func (b *secondsBucket) decide(subject, _ string, cost, trueUs, clientUs int64) bool {
	st := b.state[subject]
	if st == nil || st.expires <= trueUs {
		st = &bucketState{tokens: b.capacity}
		b.state[subject] = st
	}
	now := int64(math.Floor(float64(clientUs) / 1e6))
	cur := math.Min(b.capacity, st.tokens+float64(max(0, now-st.last))*b.rate)
	ok := float64(cost) <= cur
	if ok {
		cur -= float64(cost)
	}
	st.tokens, st.last, st.expires = cur, now, trueUs+60_000_000
	return ok
}

// firstHitWindow is a window that starts at the first request after the previous window ended
// and lasts W, admitting L per window: correct for first-hit-window(L, W), flawed when held to
// sliding-window(L, W).
type firstHitWindow struct {
	limit, window int64
	state         map[string]*[2]int64 // start, count
}

func newFirstHit(l algorithms.Limit) *firstHitWindow {
	return &firstHitWindow{limit: l.Limit, window: l.Window.Microseconds(), state: map[string]*[2]int64{}}
}

func (f *firstHitWindow) decide(subject, _ string, cost, trueUs, _ int64) bool {
	st := f.state[subject]
	if st == nil || trueUs >= st[0]+f.window {
		st = &[2]int64{trueUs, 0}
		f.state[subject] = st
	}
	if st[1]+cost > f.limit {
		return false
	}
	st[1] += cost
	return true
}

// wholeRefill is a token bucket that refills in whole intervals of the epoch: Limit tokens at
// each multiple of Window, capped at the capacity. Under steady load it looks right; a burst
// across a refill point breaks token-bucket(C, L/W).
type wholeRefill struct {
	l     algorithms.Limit
	state map[string]*[2]int64 // tokens, interval index
}

func newWholeRefill(l algorithms.Limit) *wholeRefill {
	return &wholeRefill{l: l, state: map[string]*[2]int64{}}
}

func (w *wholeRefill) decide(subject, _ string, cost, trueUs, _ int64) bool {
	k := trueUs / w.l.Window.Microseconds()
	st := w.state[subject]
	if st == nil {
		st = &[2]int64{w.l.Capacity(), k}
		w.state[subject] = st
	}
	st[0] = min(w.l.Capacity(), st[0]+(k-st[1])*w.l.Limit)
	st[1] = k
	if st[0] < cost {
		return false
	}
	st[0] -= cost
	return true
}

// snapshotRace is a fixed window whose check and increment are two steps: every request decided
// at one instant reads the counter as it was before that instant (the GET-then-INCR race of
// fixed-window-published, with the requests of one instant as the concurrent ones).
type snapshotRace struct {
	limit, window int64
	state         map[string]*[3]int64 // window index, count, count before the current instant
	at            map[string]int64
}

func newSnapshotRace(l algorithms.Limit) *snapshotRace {
	return &snapshotRace{limit: l.Limit, window: l.Window.Microseconds(), state: map[string]*[3]int64{}, at: map[string]int64{}}
}

func (s *snapshotRace) decide(subject, _ string, _, trueUs, _ int64) bool {
	k := trueUs / s.window
	st := s.state[subject]
	if st == nil || st[0] != k {
		st = &[3]int64{k, 0, 0}
		s.state[subject] = st
	}
	if s.at[subject] != trueUs {
		s.at[subject] = trueUs
		st[2] = st[1]
	}
	if st[2] >= s.limit {
		return false
	}
	st[1]++
	return true
}

// sameInstantLeak is a sliding log with a fast path gone wrong: a request at the same
// microsecond as the three before it is admitted without a look at the log. No arrival process
// with continuous gaps ever sends four requests at one microsecond; a copy of a row does.
type sameInstantLeak struct {
	m      algorithms.Model
	last   map[string]int64
	streak map[string]int
}

func newSameInstantLeak(l algorithms.Limit) *sameInstantLeak {
	a, _ := algorithms.Lookup("sliding-log") // registered
	return &sameInstantLeak{m: a.Model(l), last: map[string]int64{}, streak: map[string]int{}}
}

func (s *sameInstantLeak) decide(subject, client string, cost, trueUs, _ int64) bool {
	if s.last[subject] == trueUs {
		s.streak[subject]++
	} else {
		s.last[subject], s.streak[subject] = trueUs, 0
	}
	if s.streak[subject] >= 3 {
		return true
	}
	return s.m.Decide(subject, client, cost, trueUs)
}

// overByOne is a fixed window that admits one request too many per window.
type overByOne struct{ snapshotRace }

func (o *overByOne) decide(subject, _ string, _, trueUs, _ int64) bool {
	k := trueUs / o.window
	st := o.state[subject]
	if st == nil || st[0] != k {
		st = &[3]int64{k, 0, 0}
		o.state[subject] = st
	}
	if st[1] > o.limit {
		return false
	}
	st[1]++
	return true
}

// equalsOnly is resource-consumer-published's counting flaw: a log per subject of the whole
// seconds of the server's clock at which permits were admitted, over the window's whole
// seconds, that refuses a request only when the count equals the limit, whatever it costs.
type equalsOnly struct {
	limit, seconds int64
	logs           map[string][]int64
}

func newEqualsOnly(l algorithms.Limit) *equalsOnly {
	return &equalsOnly{limit: l.Limit, seconds: int64((l.Window + time.Second - 1) / time.Second), logs: map[string][]int64{}}
}

func (e *equalsOnly) decide(subject, _ string, cost, trueUs, _ int64) bool {
	sec := trueUs / 1_000_000
	log := slices.DeleteFunc(e.logs[subject], func(s int64) bool { return s <= sec-e.seconds })
	e.logs[subject] = log
	if int64(len(log)) == e.limit {
		return false
	}
	for range cost {
		e.logs[subject] = append(e.logs[subject], sec)
	}
	return true
}

// anchoredRefill is a token bucket that adds R tokens every P counted from the bucket's first
// request (a discrete refill anchored at the limiter's own instant, not at the epoch), capped at
// C: a burst that straddles a refill instant, on a full bucket, gets C + R at once.
type anchoredRefill struct {
	capacity, r, p int64 // tokens, tokens per refill, µs per refill
	state          map[string]*[2]int64
}

func newAnchoredRefill(capacity, r int64, p time.Duration) *anchoredRefill {
	return &anchoredRefill{capacity: capacity, r: r, p: p.Microseconds(), state: map[string]*[2]int64{}}
}

func (a *anchoredRefill) decide(subject, _ string, cost, trueUs, _ int64) bool {
	st := a.state[subject] // tokens, the last refill instant
	if st == nil {
		st = &[2]int64{a.capacity, trueUs}
		a.state[subject] = st
	}
	if n := (trueUs - st[1]) / a.p; n > 0 {
		st[0] = min(a.capacity, st[0]+n*a.r)
		st[1] += n * a.p
	}
	if st[0] < cost {
		return false
	}
	st[0] -= cost
	return true
}

// pttlZero is a first-hit window (INCR, PEXPIRE W on the first hit) whose caller admits a
// request when the script's denial reply, the key's PTTL, is 0: Redis keeps a key through the
// millisecond it expires in and reports PTTL 0 there, so a request in that millisecond of a full
// window is admitted.
type pttlZero struct {
	limit, windowMs int64
	state           map[string]*[2]int64 // count, the millisecond the key expires in
}

func newPTTLZero(l algorithms.Limit) *pttlZero {
	return &pttlZero{limit: l.Limit, windowMs: l.Window.Milliseconds(), state: map[string]*[2]int64{}}
}

func (p *pttlZero) decide(subject, _ string, cost, trueUs, _ int64) bool {
	ms := trueUs / 1000
	st := p.state[subject]
	if st == nil || ms > st[1] { // the key is gone once the millisecond it expires in has passed
		st = &[2]int64{0, ms + p.windowMs}
		p.state[subject] = st
	}
	st[0] += cost
	return st[0] <= p.limit || st[1]-ms == 0
}

// demoLimit is the demo's limit: 20 per second.
var demoLimit = algorithms.Limit{Limit: 20, Window: time.Second}

// demoSkews are the demo's clock offsets.
var demoSkews = []time.Duration{0, 2 * time.Second, -2 * time.Second}

// subjectCase is one limiter and the target it is held to.
type subjectCase struct {
	name   string
	target Target
	mk     func() limiter
	// rows is the fewest rows that break the contract (flawed limiters).
	rows int
}

// mustTarget is TargetOf for a registered algorithm.
func mustTarget(t testing.TB, name string, l algorithms.Limit, skews []time.Duration) Target {
	t.Helper()
	a, err := algorithms.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := TargetOf(a, l, skews)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// flawedCases are limiters that break the contracts they are held to.
func flawedCases(t testing.TB) []subjectCase {
	l := demoLimit
	sliding := algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: l.Limit, Window: l.Window}
	bucket := algorithms.Contract{Kind: algorithms.TokenBucket, Capacity: l.Capacity(), RefillPermits: l.Limit, RefillPer: l.Window}
	fixed := algorithms.Contract{Kind: algorithms.FixedWindow, Limit: l.Limit, Window: l.Window}
	// The fewest rows: L+1 where the flaw admits a whole window more at one instant (two
	// minute keys; a refill at an epoch boundary; reads of one instant that all see the count
	// before it); for the first-hit window a request to open it, one more inside it and L in
	// the next, since (t0, t0+W] must hold L+1 for every placement; for the bucket at 1 s
	// granularity, C + 2 s·r + 1 at one instant (the widening lets 2 s of refill through).
	return []subjectCase{
		{"fixed-window-published (client minute)", mustTarget(t, "fixed-window-published", l, demoSkews),
			func() limiter { return newMinuteKey(l.Limit) }, 21},
		{"token-bucket-published (skew)", mustTarget(t, "token-bucket-published", l, demoSkews),
			func() limiter { return newSecondsBucket(l) }, 61},
		{"first-hit window held to sliding-window", Target{Algorithm: "first-hit", Contract: sliding, Clock: algorithms.ClockServer, Cost: true},
			func() limiter { return newFirstHit(l) }, 22},
		{"bucket refilled in whole intervals", Target{Algorithm: "whole-refill", Contract: bucket, Clock: algorithms.ClockServer, Cost: true},
			func() limiter { return newWholeRefill(l) }, 21},
		{"fixed window read then written", Target{Algorithm: "snapshot-race", Contract: fixed, Clock: algorithms.ClockServer},
			func() limiter { return newSnapshotRace(l) }, 21},
	}
}

// correctCases are the registered reference models, each held to its algorithm's contract,
// with clock offsets allowed (server-clock algorithms ignore them).
func correctCases(t testing.TB) []subjectCase {
	var out []subjectCase
	l := algorithms.Limit{Limit: 20, Window: time.Second, Burst: 25, ConsumerLimit: 8}
	for _, a := range algorithms.All() {
		if a.Model(l) == nil {
			continue
		}
		name := a.Describe().Name
		out = append(out, subjectCase{name: name, target: mustTarget(t, name, l, demoSkews),
			mk: func() limiter { return serverModel{a.Model(l)} }})
	}
	if len(out) < 5 {
		t.Fatalf("only %d algorithms with a model", len(out))
	}
	return out
}
