package verify

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

// firstHitScript is the most common public design: INCRBY the cost, PEXPIRE the window on the
// first hit, admit while the count is at most the limit.
const firstHitScript = `local n = redis.call('INCRBY', KEYS[1], ARGV[3])
if n == tonumber(ARGV[3]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if n <= tonumber(ARGV[1]) then return 1 end
return 0`

// redisLog runs requests against a first-hit script on a real Redis and logs each as the
// harness does for a script that reports no time: [send, receive] on the harness clock, which
// the process backend shares with the server.
type redisLog struct {
	t   *testing.T
	c   redis.UniversalClient
	lim algorithms.Limiter

	mu       sync.Mutex
	subjects []string
	events   []Event
	base     int64
}

func newRedisLog(t *testing.T, l algorithms.Limit, subjects []string) *redisLog {
	t.Helper()
	target := redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess, Topology: redisenv.TopologySingle})
	a, err := algorithms.NewCustom(algorithms.CustomSpec{
		Name: "first-hit", Path: "first_hit.lua", Source: firstHitScript,
		Keys:    []string{"fh:{{tag}}"},
		Args:    []string{"{{limit}}", "{{window_ms}}", "{{cost}}"},
		Allowed: algorithms.ReplyRule{Op: algorithms.RuleEquals, Value: "1"},
		// The custom spec does not take first-hit-window yet; the test checks the log itself.
		Contract: algorithms.Contract{Kind: algorithms.NoContract},
	})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := a.Prepare(context.Background(), target.Client, l, "lb:")
	if err != nil {
		t.Fatal(err)
	}
	return &redisLog{t: t, c: target.Client, lim: lim, subjects: subjects, base: time.Now().UnixMicro()}
}

// do sends one request for subject s and logs it.
func (r *redisLog) do(s int) {
	sent := time.Now()
	d, err := algorithms.Do(context.Background(), r.lim, r.c, algorithms.Request{Subject: r.subjects[s], Client: "c", Cost: 1})()
	done := time.Now()
	k := Denied
	switch {
	case err != nil:
		r.t.Errorf("request: %v", err)
		k = Unknown
	case d.Allowed:
		k = Admitted
	}
	lo := sent.UnixMicro() - r.base
	hi := (done.UnixNano()+999)/1000 - r.base
	r.mu.Lock()
	r.events = append(r.events, mustEvent(lo, hi, uint32(s), 0, 1, k))
	r.mu.Unlock()
}

// log returns the admission log; Fresh, as the script's keys were new.
func (r *redisLog) log() *Log {
	return &Log{Subjects: r.subjects, Clients: []string{"c"}, Base: r.base, Events: append([]Event(nil), r.events...), Fresh: true}
}

// TestFirstHitScriptOnRedis runs INCRBY + PEXPIRE under concurrent bursts: phases of 3W, each
// with every worker sending at random instants over its first 1.5 W (two windows per subject,
// the second opened by whichever request Redis sees first after the key expired), then quiet.
// The log is never flagged under first-hit-window(L, W) with Redis's millisecond granularity,
// fresh or not; its windows are full, so it is flagged under first-hit-window(L−1, W): the
// windows after each quiet spell are known.
func TestFirstHitScriptOnRedis(t *testing.T) {
	const (
		L       = 5
		W       = 200 * time.Millisecond
		workers = 8
		phases  = 6
	)
	r := newRedisLog(t, algorithms.Limit{Limit: L, Window: W}, []string{"s0", "s1", "s2"})
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 16))
			for p := range phases {
				phase := start.Add(time.Duration(p) * 3 * W)
				var at []time.Duration
				for range 6 {
					at = append(at, time.Duration(rng.Int64N(int64(3*W/2))))
				}
				for _, d := range sortedDurations(at) {
					time.Sleep(time.Until(phase.Add(d)))
					r.do(rng.IntN(len(r.subjects)))
				}
			}
		}()
	}
	wg.Wait()
	c := algorithms.Contract{Kind: algorithms.FirstHitWindow, Limit: L, Window: W, Granularity: time.Millisecond}
	for _, fresh := range []bool{true, false} {
		log := r.log()
		log.Fresh = fresh
		rep, err := Check(c, log)
		if err != nil {
			t.Fatal(err)
		}
		l := rep.Limits[0]
		t.Logf("%s fresh %v: %d requests, %d admitted; definite %d, possible %d", c, fresh, rep.Events, rep.Admitted, l.Definite, l.Possible)
		if l.Definite > 0 {
			t.Errorf("%s fresh %v: %d definite violations of a correct first-hit script; worst %+v", c, fresh, l.Definite, l.Worst)
		}
		if v := JudgeWith(rep, Warnings{}); v.Verdict == Fail {
			t.Errorf("JudgeWith = %+v", v)
		}
	}
	tighter := c
	tighter.Limit = L - 1
	rep, err := Check(tighter, r.log())
	if err != nil {
		t.Fatal(err)
	}
	if l := rep.Limits[0]; l.Definite == 0 {
		t.Errorf("%s: no definite violation of the script's full windows (L = %d admitted after each quiet spell)", tighter, L)
	}
}

func sortedDurations(d []time.Duration) []time.Duration {
	for i := 1; i < len(d); i++ {
		for j := i; j > 0 && d[j] < d[j-1]; j-- {
			d[j], d[j-1] = d[j-1], d[j]
		}
	}
	return d
}

// TestFirstHitScriptFailsFixedWindow: a first-hit script under a bursty load breaks the
// epoch-aligned fixed-window(L, W), definitely, while keeping first-hit-window(L, W). With
// W = 1 s and k the next whole second: one request at k + 0.2 s opens the script's window
// [k + 0.2, k + 1.2); L−1 requests at k + 1.1 s are admitted in it; L requests at k + 1.4 s
// open the next window and are admitted: 2L−1 admissions in the aligned window [k+1, k+2).
// That is sound to flag only when every admission's interval lies inside that window, which
// the margins of 100 ms and more leave to the machine; the test says so when it did not.
func TestFirstHitScriptFailsFixedWindow(t *testing.T) {
	const (
		L = 5
		W = time.Second
	)
	r := newRedisLog(t, algorithms.Limit{Limit: L, Window: W}, []string{"s0"})
	k := time.Now().Truncate(W).Add(W)
	burst := func(at time.Duration, n int) {
		time.Sleep(time.Until(k.Add(at)))
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() { defer wg.Done(); r.do(0) }()
		}
		wg.Wait()
	}
	burst(200*time.Millisecond, 1)
	burst(1100*time.Millisecond, L-1)
	burst(1400*time.Millisecond, L)
	log := r.log()
	var admitted int
	lo, hi := k.Add(W).UnixMicro()-log.Base, k.Add(2*W).UnixMicro()-log.Base
	for _, e := range log.Events {
		if e.Kind() == Admitted && e.Lo() >= lo && e.Hi() < hi {
			admitted++
		}
	}
	if admitted != 2*L-1 {
		t.Skipf("the machine was too slow for the schedule: %d admissions decided inside [k+1s, k+2s) instead of %d (events %v)", admitted, 2*L-1, log.Events)
	}
	fixed := algorithms.Contract{Kind: algorithms.FixedWindow, Limit: L, Window: W}
	rep, err := Check(fixed, cloneLog(log))
	if err != nil {
		t.Fatal(err)
	}
	if l := rep.Limits[0]; l.Definite != 1 || l.Worst.Excess != L-1 {
		t.Errorf("%s: definite %d, worst %+v; want 1 window over by %d", fixed, l.Definite, l.Worst, L-1)
	}
	if v := JudgeWith(rep, Warnings{}); v.Verdict != Fail {
		t.Errorf("JudgeWith = %+v; want fail", v)
	}
	fh := algorithms.Contract{Kind: algorithms.FirstHitWindow, Limit: L, Window: W, Granularity: time.Millisecond}
	rep, err = Check(fh, cloneLog(log))
	if err != nil {
		t.Fatal(err)
	}
	if l := rep.Limits[0]; l.Definite != 0 {
		t.Errorf("%s: %d definite violations; worst %+v", fh, l.Definite, l.Worst)
	}
	if v := JudgeWith(rep, Warnings{}); v.Verdict != Pass {
		t.Errorf("JudgeWith = %+v; want pass", v)
	}
}
