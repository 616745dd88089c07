package segment

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/clock"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// splitRun is a history split into segments as generators with clocks of their own record it:
// each segment's admission logs on the server's clock (OneClock), with an origin and an offset
// of its own, and the result settings of the run.
type splitRun struct {
	parts    []Part
	logs     []*verify.AdmissionLog // each segment's measured log
	warmups  []*verify.AdmissionLog // each segment's warmup log; nil without a warmup
	settings *result.Settings
	from     int64 // where the measured part starts, µs since the Unix epoch on the server's clock
}

// serverT0 is the server's time of the runs' start, µs since the Unix epoch.
const serverT0 = 1_700_000_000_000_000

// drawSplitRun draws a history of algorithm on a few subjects and clients and splits it among
// 1 to 4 segments, each with its own clock offset and start, its logs written as sorted log
// files or, half the time, in the older, uncompressed encoding; with a warmup half the time.
func drawSplitRun(t *rapid.T, algorithm string) *splitRun {
	n := rapid.IntRange(1, 4).Draw(t, "segments")
	subjects := rapid.IntRange(1, 3).Draw(t, "subjects")
	clients := rapid.IntRange(n, n+2).Draw(t, "clients")
	limit := rapid.Int64Range(1, 4).Draw(t, "limit")
	window := time.Duration(rapid.IntRange(1, 20).Draw(t, "window_ms")) * 10 * time.Millisecond
	warmup := time.Duration(0)
	if rapid.Bool().Draw(t, "warmup") {
		warmup = 200 * time.Millisecond
	}
	duration := time.Second
	sr := &splitRun{settings: &result.Settings{
		Limit: algorithms.Limit{Limit: limit, Window: window}, Cost: 1, WarmupS: warmup.Seconds(), DurationS: duration.Seconds(),
		Clients: clients, Keys: load.Keys{Count: subjects, Distribution: load.Uniform}, Algorithms: []string{algorithm},
	}, from: serverT0 + warmup.Microseconds()}
	type gen struct {
		off    clock.Offset  // server − this generator
		jitter time.Duration // how late its origin is
	}
	gens := make([]gen, n)
	for g := range gens {
		gens[g] = gen{off: clock.Offset{Offset: time.Duration(rapid.IntRange(-50_000, 50_000).Draw(t, "offset_us")) * time.Microsecond,
			Err: time.Duration(rapid.IntRange(0, 300).Draw(t, "err_us")) * time.Microsecond},
			jitter: time.Duration(rapid.IntRange(0, 2000).Draw(t, "jitter_us")) * time.Microsecond}
		origin := time.UnixMicro(serverT0).Add(-gens[g].off.Offset + gens[g].jitter)
		l := verify.NewAdmissionLog(origin, false, &gens[g].off, false)
		l.OneClock = true
		sr.logs = append(sr.logs, l)
		if warmup > 0 {
			w := verify.NewAdmissionLog(origin, false, &gens[g].off, false)
			w.OneClock = true
			sr.warmups = append(sr.warmups, w)
		}
	}
	events := rapid.IntRange(0, 60).Draw(t, "events")
	for range events {
		g := rapid.IntRange(0, n-1).Draw(t, "segment")
		s := time.Duration(rapid.IntRange(0, int((warmup+duration)/time.Microsecond)).Draw(t, "sent_us")) * time.Microsecond
		o := load.Outcome{Subject: uint32(rapid.IntRange(0, subjects-1).Draw(t, "subject")),
			Client: uint16(rapid.IntRange(0, clients-1).Draw(t, "client")), Cost: 1,
			Sent: s - gens[g].jitter}
		o.Intended = o.Sent
		o.Received = o.Sent + time.Duration(rapid.IntRange(0, 5000).Draw(t, "rtt_us"))*time.Microsecond
		switch rapid.IntRange(0, 9).Draw(t, "class") {
		case 0:
			o.Class = load.ClassUnknown
		case 1:
			o.Class = load.ClassFailed
		default:
			o.Decision = algorithms.Decision{Allowed: rapid.IntRange(0, 3).Draw(t, "allowed") > 0, Clock: algorithms.ClockServer}
			if rapid.Bool().Draw(t, "exact") {
				// The server decided within the round trip, on its own clock.
				o.Decision.TimeMicros = serverT0 + s.Microseconds() + rapid.Int64Range(0, (o.Received-o.Sent).Microseconds()).Draw(t, "at_us")
			}
		}
		if s < warmup {
			sr.warmups[g].Add(&o)
		} else {
			sr.logs[g].Add(&o)
		}
	}
	older := make([]bool, n)
	for g := range older {
		// A segment of an older limitbench wrote its logs uncompressed, in the order recorded.
		older[g] = rapid.Bool().Draw(t, "older")
	}
	sr.build(t, algorithm, warmup, duration, older)
	return sr
}

// build writes the partial results of sr's segments, whose logs are complete, for a run of
// algorithm with the given warmup and duration: each segment's logs as sorted log files, or in
// the older, uncompressed encoding where older says so.
func (sr *splitRun) build(t interface{ Fatal(...any) }, algorithm string, warmup, duration time.Duration, older []bool) {
	n := len(sr.logs)
	for g := range n {
		e := result.Entry{Algorithm: algorithm, Topology: "single"}
		var errs []error
		enc := func(a interface{ MarshalBinary() ([]byte, error) }) []byte {
			b, err := a.MarshalBinary()
			errs = append(errs, err)
			return b
		}
		pt := &result.Partial{WarmupNS: int64(warmup), BinNS: int64(100 * time.Millisecond), DurationNS: int64(duration),
			Histograms: enc(load.NewHistograms(time.Second)), Timeline: enc(load.NewTimeline(warmup, 100*time.Millisecond, duration)),
			Errors: enc(load.NewErrors()), Log: result.LogFile(&e, false), MeasuredFromUS: sr.from}
		write := (*verify.AdmissionLog).SortedLog
		if older[g] {
			write = (*verify.AdmissionLog).MarshalBinary
		}
		var err error
		pt.LogData, err = write(sr.logs[g])
		errs = append(errs, err)
		if warmup > 0 {
			pt.WarmupLog = result.LogFile(&e, true)
			pt.WarmupLogData, err = write(sr.warmups[g])
			errs = append(errs, err)
		}
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		e.Partial = pt
		sr.parts = append(sr.parts, Part{Dir: fmt.Sprintf("s%d", g), Result: &result.Result{
			Scenario: result.Scenario{Name: "split", Settings: sr.settings},
			Segment:  &result.Segment{RunID: "split", Index: g, Count: n, ScenarioHash: "h"},
			Entries:  []result.Entry{e}}})
	}
}

// steadySplitRun is a steady load split among 3 segments with clocks of their own: rate
// decisions a second for d, round-robin over 10 subjects and the segments, each admitted and
// decided at an exact server time, every tenth denied.
func steadySplitRun(t *testing.T, d time.Duration, rate int) *splitRun {
	const n, subjects = 3, 10
	sr := &splitRun{settings: &result.Settings{Limit: algorithms.Limit{Limit: 100, Window: 100 * time.Millisecond}, Cost: 1,
		DurationS: d.Seconds(), Clients: n, Keys: load.Keys{Count: subjects, Distribution: load.Uniform}, Algorithms: []string{"sliding-log"}},
		from: serverT0}
	offs := make([]clock.Offset, n)
	for g := range n {
		offs[g] = clock.Offset{Offset: time.Duration(g*7) * time.Millisecond, Err: 50 * time.Microsecond}
		l := verify.NewAdmissionLog(time.UnixMicro(serverT0).Add(-offs[g].Offset), false, &offs[g], false)
		l.OneClock = true
		sr.logs = append(sr.logs, l)
	}
	total := int(d.Seconds() * float64(rate))
	for i := range total {
		g := i % n
		s := time.Duration(i) * time.Second / time.Duration(rate)
		o := load.Outcome{Subject: uint32(i % subjects), Client: uint16(g), Cost: 1, Sent: s, Intended: s, Received: s + 300*time.Microsecond,
			Decision: algorithms.Decision{Allowed: i%10 != 0, Clock: algorithms.ClockServer, TimeMicros: serverT0 + s.Microseconds() + 100}}
		sr.logs[g].Add(&o)
	}
	sr.build(t, "sliding-log", 0, d, make([]bool, n))
	return sr
}

// TestMergeRetainedFollowsTheWindow: the merge advances the streaming checker as it reads, so
// the events it holds at once follow the contract's window and the segments, not the run's
// length: a steady load merged over 10 s and over 40 s holds the same peak (within 10% and a
// few hundred events of slack for the reorder bins); events, not time, are counted.
func TestMergeRetainedFollowsTheWindow(t *testing.T) {
	defer func() { mergeRetained = nil }()
	peak := func(d time.Duration) int64 {
		var p int64
		mergeRetained = func(n int64) { p = max(p, n) }
		sr := steadySplitRun(t, d, 2000)
		res, _, err := Merge(sr.parts)
		if err != nil {
			t.Fatal(err)
		}
		if a := res.Entries[0].Accuracy; a.IdealAllowed == 0 {
			t.Fatalf("%v: nothing verified: accuracy %+v", d, a)
		}
		return p
	}
	short, long := peak(10*time.Second), peak(40*time.Second)
	if short == 0 || float64(long) > 1.1*float64(short)+500 {
		t.Errorf("the merge held at most %d events over 10 s and %d over 40 s; want the same, and some", short, long)
	}
	t.Logf("peak retained: %d events over 10 s, %d over 40 s", short, long)
}

// wholeCheck returns the verification and accuracy that the whole-history checker gives the
// split run's history, its segments' logs merged into one (it empties them).
func (sr *splitRun) wholeCheck(t *rapid.T, algorithm string) (verify.Summary, verify.AccuracySummary) {
	a, err := algorithms.Lookup(algorithm)
	if err != nil {
		t.Fatal(err)
	}
	c, err := a.Contract(sr.settings.Limit)
	if err != nil {
		t.Fatal(err)
	}
	subjects, clients := sr.settings.Keys.Names(), clientNames(sr.settings.Clients)
	base := sr.logs[0].Origin // Merge empties the logs merged
	merged := sr.logs[0].Fresh().(*verify.AdmissionLog)
	for _, l := range sr.logs {
		if err := merged.Merge(l); err != nil {
			t.Fatal(err)
		}
	}
	m := verify.Measurement{Contract: c, Model: a.Model(sr.settings.Limit), Log: merged.Log(subjects, clients), Start: sr.from}
	if sr.warmups != nil {
		w := sr.warmups[0].Fresh().(*verify.AdmissionLog)
		w.Origin = base
		for _, l := range sr.warmups {
			if err := w.Merge(l); err != nil {
				t.Fatal(err)
			}
		}
		m.Warmup = w.Log(subjects, clients)
	}
	return m.Sections()
}

// splitAlgorithms are the algorithms the split-history tests draw from: every kind of contract a
// built-in algorithm has (sliding and fixed windows, token buckets; first-hit windows are custom
// scripts', which merge does not take) and every scope (per subject, per subject and client, per
// consumer across subjects, and two at once).
var splitAlgorithms = []string{"sliding-log", "fixed-window", "token-bucket", "gcra", "resource-consumer", "redisson-per-client"}

// TestMergeStreamsAsTheWholeHistory: a history split among segments at random, each segment's
// logs written as sorted log files and merged by time into the streaming checker, gets the
// verification and accuracy that the whole-history checker gives the same history merged in
// memory, for every kind of contract a built-in algorithm has (splitAlgorithms); the stream is
// advanced after every few events, as it is after every thousand in a long merge; some segments'
// logs are in the older encoding.
func TestMergeStreamsAsTheWholeHistory(t *testing.T) {
	defer func(n int) { mergeAdvance = n }(mergeAdvance)
	rapid.Check(t, func(t *rapid.T) {
		algorithm := rapid.SampledFrom(splitAlgorithms).Draw(t, "algorithm")
		mergeAdvance = rapid.SampledFrom([]int{1, 2, 7, 1 << 10}).Draw(t, "advance_every")
		sr := drawSplitRun(t, algorithm)
		wantV, wantA := sr.wholeCheck(t, algorithm)
		res, _, err := Merge(sr.parts)
		if err != nil {
			t.Fatal(err)
		}
		e := res.Entries[0]
		if d := cmp.Diff(wantV, e.Verification); d != "" {
			t.Errorf("merged verification differs from the whole history's (-whole +merged):\n%s", d)
		}
		if d := cmp.Diff(wantA, e.Accuracy); d != "" {
			t.Errorf("merged accuracy differs from the whole history's (-whole +merged):\n%s", d)
		}
	})
}

// TestShardsJoinAsTheWholeMerge: the shards of a sharded merge (MergeShard, 2 to 4 shards)
// joined (Join) give the verdict, violations, worst excess and accuracy of the unsharded merge
// of the same segments, for every built-in algorithm's kind of contract and scope; the
// efficiency within the shards' rounding (0.001).
func TestShardsJoinAsTheWholeMerge(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		algorithm := rapid.SampledFrom(splitAlgorithms).Draw(t, "algorithm")
		sr := drawSplitRun(t, algorithm)
		k := rapid.IntRange(2, 4).Draw(t, "shards")
		whole, _, err := Merge(sr.parts)
		if err != nil {
			t.Fatal(err)
		}
		var shards []Part
		for i := range k {
			r, failures, err := MergeShard(sr.parts, Shard{Index: i, Count: k})
			if err != nil || failures != nil || r.Shard == nil || r.Shard.Index != i {
				t.Fatalf("MergeShard %d/%d: %v, failures %v, shard %+v", i, k, err, failures, r.Shard)
			}
			shards = append(shards, Part{Dir: fmt.Sprintf("shard-%d", i), Result: r})
		}
		joined, _, err := Join(shards)
		if err != nil {
			t.Fatal(err)
		}
		w, j := whole.Entries[0], joined.Entries[0]
		wv, jv := w.Verification, j.Verification
		if jv.Verdict != wv.Verdict || jv.DefiniteViolations != wv.DefiniteViolations || jv.PossibleViolations != wv.PossibleViolations ||
			jv.WorstExcess != wv.WorstExcess {
			t.Errorf("joined: %s, %d definite, %d possible, worst %d (%q); the whole merge: %s, %d, %d, %d (%q)",
				jv.Verdict, jv.DefiniteViolations, jv.PossibleViolations, jv.WorstExcess, jv.Reasons,
				wv.Verdict, wv.DefiniteViolations, wv.PossibleViolations, wv.WorstExcess, wv.Reasons)
		}
		wa, ja := w.Accuracy, j.Accuracy
		if ja.IdealAllowed != wa.IdealAllowed || ja.FalseDenials != wa.FalseDenials || ja.MaxWindowRatio != wa.MaxWindowRatio ||
			math.Abs(ja.Efficiency-wa.Efficiency) > 0.001+1e-9 {
			t.Errorf("joined accuracy %+v; the whole merge's %+v", ja, wa)
		}
		if d := cmp.Diff(w.Timeline.Limit, j.Timeline.Limit, cmpopts.EquateApprox(0, 0.01)); d != "" {
			t.Errorf("joined timeline limit (-whole +joined):\n%s", d)
		}
	})
}
