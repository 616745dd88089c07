package segment

import (
	"errors"
	"testing"
	"time"

	"github.com/limitbench/limitbench/internal/load"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in           string
		index, count int
		wantErr      bool
	}{
		{in: "0/1", index: 0, count: 1},
		{in: "2/3", index: 2, count: 3},
		{in: " 1 / 4 ", index: 1, count: 4},
		{in: "3/3", wantErr: true},
		{in: "-1/3", wantErr: true},
		{in: "0/0", wantErr: true},
		{in: "1", wantErr: true},
		{in: "a/b", wantErr: true},
		{in: "0/1001", wantErr: true},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if (err != nil) != tt.wantErr || (!tt.wantErr && (got.Index != tt.index || got.Count != tt.count)) {
			t.Errorf("Parse(%q) = %v, %v; want %d/%d, error %v", tt.in, got, err, tt.index, tt.count, tt.wantErr)
		}
	}
}

// TestSegmentsPartition: the segments' ticks partition the whole schedule, Of counts them, and
// every closed-loop client is one segment's.
func TestSegmentsPartition(t *testing.T) {
	for n := 1; n <= 5; n++ {
		seen := map[uint64]int{}
		var total uint64
		clients := map[int]int{}
		for i := range n {
			g := &Segment{Index: i, Count: n}
			for k := uint64(0); g.Tick(k) < 100; k++ {
				seen[g.Tick(k)]++
			}
			total += g.Of(100)
			for c := range 10 {
				if g.Runs(c) {
					clients[c]++
				}
			}
		}
		if len(seen) != 100 || total != 100 {
			t.Errorf("%d segments cover %d distinct ticks of 100, Of sums to %d", n, len(seen), total)
		}
		for tick, c := range seen {
			if c != 1 {
				t.Errorf("%d segments: tick %d sent %d times", n, tick, c)
			}
		}
		for c := range 10 {
			if clients[c] != 1 {
				t.Errorf("%d segments: client %d run by %d segments", n, c, clients[c])
			}
		}
	}
}

// TestCheck: a closed loop needs a client for every segment; an open loop splits at any count.
func TestCheck(t *testing.T) {
	closed := load.Plan{Arrival: load.ClosedLoop{}, Duration: time.Second, Clients: 2}
	if err := (&Segment{Index: 0, Count: 3}).Check(closed); !errors.Is(err, load.ErrBadPlan) {
		t.Errorf("closed loop of 2 clients in 3 segments: Check = %v; want ErrBadPlan", err)
	}
	closed.Clients = 3
	if err := (&Segment{Index: 2, Count: 3}).Check(closed); err != nil {
		t.Errorf("closed loop of 3 clients, segment 2/3: %v", err)
	}
	open := load.Plan{Arrival: load.Constant(10), Duration: time.Second, Clients: 1}
	if err := (&Segment{Index: 4, Count: 5}).Check(open); err != nil {
		t.Errorf("open loop, segment 4/5: %v", err)
	}
}
