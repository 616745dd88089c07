package load

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxShareCount bounds Share.Count.
const MaxShareCount = 1000

// Share is one generator's segment of a load: segment Index of Count (0 <= Index < Count). The
// zero Share, and any Share with Count 1, is the whole load.
//
// Open loop, the segment sends the schedule's ticks Index, Index + Count, Index + 2·Count, ...
// (each keeps its global tick number, so its subject and client are those the unsegmented run
// gives it); closed loop, it runs the clients (workers) c with c mod Count == Index. The Count
// segments of one plan and seed therefore send, together, exactly the ticks one unsegmented Run
// sends, and every segment draws from the same subjects.
type Share struct {
	Index, Count int
}

// ParseShare parses "I/N" (0 <= I < N <= MaxShareCount).
func ParseShare(s string) (Share, error) {
	i, n, ok := strings.Cut(s, "/")
	if !ok {
		return Share{}, fmt.Errorf("segment %q: want I/N, such as 0/3", s)
	}
	index, err1 := strconv.Atoi(strings.TrimSpace(i))
	count, err2 := strconv.Atoi(strings.TrimSpace(n))
	if err1 != nil || err2 != nil {
		return Share{}, fmt.Errorf("segment %q: want I/N with whole numbers, such as 0/3", s)
	}
	sh := Share{Index: index, Count: count}
	if count < 1 {
		return Share{}, fmt.Errorf("segment %s: the number of segments must be in [1, %d]", sh, MaxShareCount)
	}
	return sh, sh.Validate()
}

// Validate returns why s is not a segment, or nil. The zero Share is valid.
func (s Share) Validate() error {
	if s == (Share{}) {
		return nil
	}
	if s.Count < 1 || s.Count > MaxShareCount {
		return fmt.Errorf("segment %s: the number of segments must be in [1, %d]", s, MaxShareCount)
	}
	if s.Index < 0 || s.Index >= s.Count {
		return fmt.Errorf("segment %s: the segment must be in [0, %d]", s, s.Count-1)
	}
	return nil
}

// Whole reports whether s is the whole load (not segmented).
func (s Share) Whole() bool { return s.Count <= 1 }

// String renders s as "I/N".
func (s Share) String() string { return strconv.Itoa(s.Index) + "/" + strconv.Itoa(s.Count) }

// Tick returns the global tick number of the segment's k-th tick: Index + k·Count (k itself for
// the whole load).
func (s Share) Tick(k uint64) uint64 {
	if s.Whole() {
		return k
	}
	return uint64(s.Index) + k*uint64(s.Count)
}

// Of returns how many of the global ticks 0 .. m−1 are the segment's.
func (s Share) Of(m uint64) uint64 {
	if s.Whole() {
		return m
	}
	i, n := uint64(s.Index), uint64(s.Count)
	if m <= i {
		return 0
	}
	return (m-i-1)/n + 1
}

// Runs reports whether closed-loop client (worker) c is the segment's.
func (s Share) Runs(c int) bool { return s.Whole() || c%s.Count == s.Index }

// Add adds o's counts to c: the counts of two segments of one run add up to the run's.
func (c *Counts) Add(o Counts) { c.add(o) }

// Behind reports whether a run that scheduled scheduled ticks, missed missed and sent late late
// fell behind its schedule: missed + late over BehindLimit of scheduled (see Result.Behind).
func Behind(scheduled, missed, late uint64) bool { return behind(scheduled, missed, late) }
