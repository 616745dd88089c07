package verify

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/clock"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

// aggregators is the set of aggregators a measurement feeds: latency histograms, the timeline and
// the admission log.
type aggregators struct {
	hist *load.Histograms
	tl   *load.Timeline
	log  *AdmissionLog
}

func (a aggregators) all() []load.Aggregator { return []load.Aggregator{a.hist, a.tl, a.log} }

func (a aggregators) add(o *load.Outcome) {
	for _, x := range a.all() {
		x.Add(o)
	}
}

func (a aggregators) fresh() aggregators {
	return aggregators{a.hist.Fresh().(*load.Histograms), a.tl.Fresh().(*load.Timeline), a.log.Fresh().(*AdmissionLog)}
}

// shipped returns a's aggregators as another machine would receive them: encoded and decoded.
func (a aggregators) shipped(t interface{ Fatalf(string, ...any) }) aggregators {
	out := aggregators{&load.Histograms{}, &load.Timeline{}, &AdmissionLog{}}
	for i, x := range a.all() {
		b, err := x.(interface{ MarshalBinary() ([]byte, error) }).MarshalBinary()
		if err != nil {
			t.Fatalf("MarshalBinary: %v", err)
		}
		if err := out.all()[i].(interface{ UnmarshalBinary([]byte) error }).UnmarshalBinary(b); err != nil {
			t.Fatalf("UnmarshalBinary: %v", err)
		}
	}
	return out
}

func (a aggregators) merge(t interface{ Fatalf(string, ...any) }, o aggregators) {
	for i, x := range a.all() {
		if err := x.Merge(o.all()[i]); err != nil {
			t.Fatalf("Merge: %v", err)
		}
	}
}

// same fails t unless a and b hold the same histograms, timeline and admission log (its events
// as a multiset: a merge keeps them, not their order).
func same(t interface{ Fatalf(string, ...any) }, a, b aggregators) {
	if !a.hist.Equal(b.hist) {
		t.Fatalf("histograms differ")
	}
	norm := func(tl *load.Timeline) load.Timeline {
		c := *tl
		if len(c.Bins) == 0 {
			c.Bins = nil
		}
		return c
	}
	if d := cmp.Diff(norm(a.tl), norm(b.tl)); d != "" {
		t.Fatalf("timelines differ (-unsplit +merged):\n%s", d)
	}
	sameLog(t, a.log, b.log, false)
}

// TestShardsMergeToTheUnsplitRun: the outcomes of a run split in any way over several sets of
// aggregators (worker shards, or the generators of a segmented run, each set encoded and decoded
// as a partial result would ship it) and merged in any order give the histograms, timeline and
// admission log of the unsplit run.
func TestShardsMergeToTheUnsplitRun(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var server *clock.Offset
		if rapid.Bool().Draw(t, "external") {
			server = &clock.Offset{Offset: 3 * ms, Err: 100 * time.Microsecond}
		}
		start := time.UnixMicro(1_700_000_000_000_000)
		unsplit := aggregators{load.NewHistograms(2 * time.Second),
			load.NewTimeline(time.Duration(rapid.Int64Range(0, int64(time.Second)).Draw(t, "warmup")), 250*ms, 4*time.Second),
			NewAdmissionLog(start, server == nil, server, false)}
		parts := make([]aggregators, rapid.IntRange(1, 6).Draw(t, "parts"))
		for i := range parts {
			parts[i] = unsplit.fresh()
			parts[i].log.Start(start)
		}
		for range rapid.IntRange(0, 400).Draw(t, "outcomes") {
			sent := time.Duration(rapid.Int64Range(0, int64(5*time.Second)).Draw(t, "sent"))
			o := load.Outcome{Subject: rapid.Uint32Range(0, 20).Draw(t, "subject"), Client: rapid.Uint16Range(0, 7).Draw(t, "client"),
				Cost: rapid.Uint16Range(1, 3).Draw(t, "cost"), Intended: sent - time.Duration(rapid.Int64Range(0, int64(ms)).Draw(t, "late")),
				Sent: sent, Received: sent + time.Duration(rapid.Int64Range(0, int64(3*time.Second)).Draw(t, "service")),
				Class: load.Class(rapid.IntRange(0, 2).Draw(t, "class"))}
			o.Decision = algorithms.Decision{Allowed: rapid.Bool().Draw(t, "allowed"), Clock: algorithms.ClockServer,
				TimeMicros: start.UnixMicro() + sent.Microseconds() + rapid.Int64Range(-2000, 4000).Draw(t, "at")}
			unsplit.add(&o)
			parts[rapid.IntRange(0, len(parts)-1).Draw(t, "part")].add(&o)
		}
		order := rapid.Permutation(parts).Draw(t, "merge order")
		merged := order[0].shipped(t)
		for _, p := range order[1:] {
			merged.merge(t, p.shipped(t))
		}
		same(t, unsplit, merged)
	})
}

// TestRunShardsMergeToTheUnsplitRun: the aggregators load.Run fed through its worker shards and
// merged hold what one set fed every outcome of the run in one piece holds.
func TestRunShardsMergeToTheUnsplitRun(t *testing.T) {
	env := redistest.Single(t)
	alg, err := algorithms.Lookup("gcra")
	if err != nil {
		t.Fatal(err)
	}
	lim, err := alg.Prepare(context.Background(), env.Target.Client, algorithms.Limit{Limit: 50, Window: 100 * ms}, env.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	p := load.Plan{Arrival: load.Constant(2000), Duration: 500 * ms, Clients: 16, Keys: load.Keys{Count: 5}, Seed: 4, Bin: 100 * ms}
	run := aggregators{load.NewHistograms(0), load.NewTimeline(0, p.Bin, p.Duration), NewAdmissionLog(time.Time{}, true, nil, false)}
	var mu sync.Mutex
	var outs []load.Outcome
	p.OnOutcome = func(o *load.Outcome) {
		mu.Lock()
		outs = append(outs, *o)
		mu.Unlock()
	}
	res, err := load.Run(context.Background(), newClient(env, 16), lim, p, load.Sinks{Measured: run.all()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts.Requests < 500 || uint64(len(outs)) != res.Counts.Requests {
		t.Fatalf("%d requests, %d outcomes seen; want about 1000, one per request", res.Counts.Requests, len(outs))
	}
	unsplit := run.fresh()
	unsplit.log.Start(res.Start)
	for i := range outs {
		unsplit.add(&outs[i])
	}
	same(t, unsplit, run)
}
