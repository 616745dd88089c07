package load

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/limitbench/limitbench/internal/redisenv/redistest"
	"github.com/limitbench/limitbench/internal/trace"
)

func TestShare(t *testing.T) {
	tests := []struct {
		in      string
		want    Share
		wantErr bool
	}{
		{in: "0/1", want: Share{0, 1}},
		{in: "2/3", want: Share{2, 3}},
		{in: " 1 / 4 ", want: Share{1, 4}},
		{in: "3/3", wantErr: true},
		{in: "-1/3", wantErr: true},
		{in: "0/0", wantErr: true},
		{in: "1", wantErr: true},
		{in: "a/b", wantErr: true},
		{in: "0/1001", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseShare(tt.in)
		if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
			t.Errorf("ParseShare(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
	// The segments' ticks partition the whole schedule, and Of counts them.
	for n := 1; n <= 5; n++ {
		seen := map[uint64]int{}
		var total uint64
		for i := range n {
			s := Share{i, n}
			for k := uint64(0); s.Tick(k) < 100; k++ {
				seen[s.Tick(k)]++
			}
			total += s.Of(100)
		}
		if len(seen) != 100 || total != 100 {
			t.Errorf("%d segments cover %d distinct ticks of 100, Of sums to %d", n, len(seen), total)
		}
		for tick, c := range seen {
			if c != 1 {
				t.Errorf("%d segments: tick %d sent %d times", n, tick, c)
			}
		}
	}
}

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
	res, _, err := recorded(context.Background(), c, lim, plan(Share{}, whole))
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
			p := plan(Share{i, 3}, parts)
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
	p := Plan{Arrival: ClosedLoop{}, Duration: time.Second, Clients: 2, Share: Share{0, 3}}
	if err := p.Validate(); err == nil {
		t.Errorf("closed loop of 2 clients in 3 segments: Validate = nil; want an error")
	}
	p.Share = Share{3, 3}
	if err := p.Validate(); err == nil {
		t.Errorf("segment 3/3: Validate = nil; want an error")
	}
	p.Clients, p.Share = 3, Share{2, 3}
	if err := p.Validate(); err != nil {
		t.Errorf("closed loop of 3 clients in 3 segments: %v", err)
	}
}

// TestShareOfATrace: a Share of a trace's whole pacer sends the rows ReplaySegment gives the
// same segment, at the same offsets, so segmented replays and hunts split their rows alike.
func TestShareOfATrace(t *testing.T) {
	var b strings.Builder
	b.WriteString("offset,client,subject\n")
	for i := range 10 {
		fmt.Fprintf(&b, "%dms,c%d,s%d\n", 10*i, i%3, i%4)
	}
	tr, err := trace.Parse("t.csv", trace.CSV, strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	whole := Replay(tr)
	for n := 1; n <= 4; n++ {
		for i := range n {
			seg, err := ReplaySegment(tr, i, n)
			if err != nil {
				t.Fatal(err)
			}
			sh := Share{i, n}
			for k := uint64(0); ; k++ {
				want, wok := seg.At(k)
				got, gok := whole.At(sh.Tick(k))
				if want != got || wok != gok {
					t.Fatalf("segment %d/%d row %d: Share gives (%s, %v), ReplaySegment (%s, %v)", i, n, k, got, gok, want, wok)
				}
				if seg.Index(k) != sh.Tick(k) && wok {
					t.Fatalf("segment %d/%d row %d: index %d, tick %d", i, n, k, seg.Index(k), sh.Tick(k))
				}
				if !wok {
					break
				}
			}
		}
	}
}
