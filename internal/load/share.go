package load

// Share selects one generator's part of a schedule: a segment of a segmented run
// (internal/segment.Segment, the one type for a generator's share, which implements it). A nil
// Share is the whole schedule. The pacer and the workers ask it which ticks and which workers are
// theirs and nothing else; load does not own segments, so the type lives with the merge of their
// partial results and load declares only what it needs of it.
//
// Open loop, the segment sends the schedule's ticks Tick(0), Tick(1), ... (each keeps its global
// tick number, so its subject and client are those the unsegmented run gives it); closed loop, it
// runs the clients (workers) c for which Runs(c). The segments of one plan and seed must
// together send exactly the ticks one unsegmented Run sends, each once.
type Share interface {
	// Tick returns the global tick number of the segment's k-th tick.
	Tick(k uint64) uint64
	// Of returns how many of the global ticks 0 .. m−1 are the segment's.
	Of(m uint64) uint64
	// Runs reports whether closed-loop client (worker) c is the segment's.
	Runs(c int) bool
}

// tick returns the global tick number of the k-th tick p's share sends: k for the whole schedule.
func (p *Plan) tick(k uint64) uint64 {
	if p.Share == nil {
		return k
	}
	return p.Share.Tick(k)
}

// of returns how many of the global ticks 0 .. m−1 p's share sends.
func (p *Plan) of(m uint64) uint64 {
	if p.Share == nil {
		return m
	}
	return p.Share.Of(m)
}

// runs reports whether p's share runs closed-loop client c.
func (p *Plan) runs(c int) bool { return p.Share == nil || p.Share.Runs(c) }

// Add adds o's counts to c: the counts of two segments of one run add up to the run's.
func (c *Counts) Add(o Counts) { c.add(o) }

// Behind reports whether a run that scheduled scheduled ticks, missed missed and sent late late
// fell behind its schedule: missed + late over BehindLimit of scheduled (see Result.Behind).
func Behind(scheduled, missed, late uint64) bool { return behind(scheduled, missed, late) }
