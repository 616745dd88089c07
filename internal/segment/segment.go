package segment

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/result"
)

// MaxCount bounds Segment.Count.
const MaxCount = 1000

// DefaultLead is how long after the first generator arrives at the barrier the load starts.
const DefaultLead = 5 * time.Second

// Segment is one generator's share of a segmented run: segment Index of Count (0 <= Index <
// Count), and how it meets the others. It sends its share of every measurement's schedule (it
// is the load.Share of the plan: ticks Index, Index + Count, ..., each keeping its global tick
// number, so its subject and client are those the unsegmented run gives it; closed loop, the
// clients c with c mod Count == Index), on the key prefixes of RunID (shared by every segment,
// so that all hit the same subjects), meets the other generators at a barrier in the Redis under
// test or at StartAt, and records every decision time on the server's clock (its measured
// offset, with the offset's error in each interval) so that Merge verifies the segments'
// histories as one. The Count segments of one scenario and seed send, together, exactly what one
// unsegmented run sends.
type Segment struct {
	Index, Count int
	// RunID is shared by the run's segments (required to run).
	RunID string
	// StartAt, when set, is when every segment starts each measurement's load: the first at
	// StartAt, the next ones at the barrier. Zero: at the barrier only.
	StartAt time.Time
	// Lead is how long after the first generator arrives at a measurement's barrier its load
	// starts (default DefaultLead): the other generators must arrive within it, else they
	// start late, and say so.
	Lead time.Duration
	// ClockOffset is added to this generator's clock: the time it gives client-clock
	// algorithms and the times it records (testing only: it imitates machines whose clocks
	// differ). Merged results must not depend on it for server-clock algorithms.
	ClockOffset time.Duration

	met bool // a measurement has met the others (StartAt applies to the first only)
}

var _ load.Share = (*Segment)(nil)

// Parse parses "I/N" (0 <= I < N <= MaxCount) into a Segment with Index and Count.
func Parse(s string) (*Segment, error) {
	i, n, ok := strings.Cut(s, "/")
	if !ok {
		return nil, fmt.Errorf("segment %q: want I/N, such as 0/3", s)
	}
	index, err1 := strconv.Atoi(strings.TrimSpace(i))
	count, err2 := strconv.Atoi(strings.TrimSpace(n))
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("segment %q: want I/N with whole numbers, such as 0/3", s)
	}
	g := &Segment{Index: index, Count: count}
	return g, g.Validate()
}

// Validate returns why g is not a segment, or nil.
func (g *Segment) Validate() error {
	if g.Count < 1 || g.Count > MaxCount {
		return fmt.Errorf("segment %s: the number of segments must be in [1, %d]", g, MaxCount)
	}
	if g.Index < 0 || g.Index >= g.Count {
		return fmt.Errorf("segment %s: the segment must be in [0, %d]", g, g.Count-1)
	}
	return nil
}

// Check returns why p cannot be split into g's segments, or nil: a closed loop needs a client
// for every segment (each segment runs clients of its own).
func (g *Segment) Check(p load.Plan) error {
	if _, closed := p.Arrival.(load.ClosedLoop); closed && p.Clients < g.Count {
		return fmt.Errorf("%w: a closed loop of %d clients cannot be split into %d segments (each segment runs clients of its own)",
			load.ErrBadPlan, p.Clients, g.Count)
	}
	p.Share = g
	return p.Validate()
}

// String renders g as "I/N".
func (g *Segment) String() string { return strconv.Itoa(g.Index) + "/" + strconv.Itoa(g.Count) }

// Tick implements load.Share: the global tick number of the segment's k-th tick, Index + k·Count.
func (g *Segment) Tick(k uint64) uint64 { return uint64(g.Index) + k*uint64(g.Count) }

// Of implements load.Share: how many of the global ticks 0 .. m−1 are the segment's.
func (g *Segment) Of(m uint64) uint64 {
	i, n := uint64(g.Index), uint64(g.Count)
	if m <= i {
		return 0
	}
	return (m-i-1)/n + 1
}

// Runs implements load.Share: whether closed-loop client c is the segment's.
func (g *Segment) Runs(c int) bool { return c%g.Count == g.Index }

// DefaultRunID returns the run id segments share when none is given: "seg-" and the first 12 hex
// digits of the scenario's hash (which covers its seed).
func DefaultRunID(scenarioHash string) string {
	if len(scenarioHash) < 12 {
		return scenarioHash
	}
	return "seg-" + scenarioHash[:12]
}

// Info returns the record of g in the result of a run of it on a scenario whose hash is hash.
func (g *Segment) Info(hash string) *result.Segment {
	start := "barrier"
	if !g.StartAt.IsZero() {
		start = "start-at " + g.StartAt.UTC().Format(time.RFC3339Nano)
	}
	return &result.Segment{RunID: g.RunID, Index: g.Index, Count: g.Count, ScenarioHash: hash, Start: start,
		TestClockOffsetUS: g.ClockOffset.Microseconds()}
}
