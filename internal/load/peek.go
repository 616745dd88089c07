package load

import (
	"fmt"
	"sync"
	"time"
)

// Snapshotter is an Aggregator whose contents can be copied while the run feeds it: Snapshot
// returns an independent aggregator of the same kind and settings holding what this one holds
// now, which Merge takes like any other of its kind. Run calls it under its shard's lock, the
// lock the workers hold to feed the shard, so it must be quick (a copy: no I/O, no waiting).
// Histograms, Timeline and Errors are Snapshotters.
type Snapshotter interface {
	Aggregator
	Snapshot() Aggregator
}

// Peek reads the measured aggregators of a run under way (Plan.Peek) without stopping it: the
// workers keep their path as it is (no lock, no atomic added), and a Snapshot takes each worker
// shard's lock only for the time it copies that shard's aggregators. The zero value is ready to
// use; a Peek serves one Run at a time and is safe for concurrent use.
type Peek struct {
	mu  sync.Mutex
	run *runner // the run under way once its clock started; nil before and after
}

// Snapshot is what Peek.Snapshot saw of a run under way.
type Snapshot struct {
	// Elapsed is the time since the run's offset 0, warmup included, when the copy was done:
	// every outcome it holds came back before then.
	Elapsed time.Duration
	// Warmup is the plan's warmup (Elapsed below it: nothing measured yet).
	Warmup time.Duration
	// Scheduled is the number of ticks the pacer scheduled in the measured part before Elapsed
	// (this generator's share of them), as Result.Scheduled counts them; 0 in a closed loop.
	Scheduled uint64
	// Measured holds, in the order of Sinks.Measured, a copy of each measured aggregator with
	// every worker shard's share merged (what Run's own would hold had the run ended now), or
	// nil for an aggregator that is not a Snapshotter.
	Measured []Aggregator
}

// Snapshot copies the measured aggregators of the run under way (see Snapshot); ok is false
// when no run is under way (not started, or over).
func (p *Peek) Snapshot() (s Snapshot, ok bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock() // held until the copy is done: Run merges the shards only after detach
	r := p.run
	if r == nil {
		return Snapshot{}, false, nil
	}
	s = Snapshot{Warmup: r.warm}
	// Each shard's copy is merged before the next is taken, so that a snapshot holds two sets of
	// copies at most, however many shards the run has (4 per CPU).
	for i, sh := range r.shards {
		c := make([]Aggregator, len(sh.sinks.Measured))
		sh.mu.Lock()
		for j, a := range sh.sinks.Measured {
			if sn, ok := a.(Snapshotter); ok {
				c[j] = sn.Snapshot()
			}
		}
		sh.mu.Unlock()
		if i == 0 {
			s.Measured = c
			continue
		}
		for j, a := range c {
			if a == nil || s.Measured[j] == nil {
				continue
			}
			if err := s.Measured[j].Merge(a); err != nil {
				return Snapshot{}, false, fmt.Errorf("load: merge the shards' snapshots: %w", err)
			}
		}
	}
	s.Elapsed = time.Since(r.start)
	if stop := min(s.Elapsed, r.end); !r.closed && stop > r.warm {
		s.Scheduled = r.p.of(Scheduled(r.p.Arrival, stop)) - r.p.of(Scheduled(r.p.Arrival, r.warm))
	}
	return s, true, nil
}

// attach makes r the run p reads; detach ends it, waiting for a Snapshot under way.
func (p *Peek) attach(r *runner) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.run = r
	p.mu.Unlock()
}

func (p *Peek) detach() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.run = nil
	p.mu.Unlock()
}

var (
	_ Snapshotter = (*Histograms)(nil)
	_ Snapshotter = (*Timeline)(nil)
	_ Snapshotter = (*Errors)(nil)
)

// Snapshot implements Snapshotter: a copy of h (four histogram copies, about 140 KB each for
// the default range).
func (h *Histograms) Snapshot() Aggregator {
	c := *h
	c.LatencyAllowed, c.LatencyDenied = h.LatencyAllowed.Clone(), h.LatencyDenied.Clone()
	c.ServiceAllowed, c.ServiceDenied = h.ServiceAllowed.Clone(), h.ServiceDenied.Clone()
	return &c
}

// Snapshot implements Snapshotter: a copy of t.
func (t *Timeline) Snapshot() Aggregator {
	c := *t
	c.Bins = append([]Bin(nil), t.Bins...)
	return &c
}

// Snapshot implements Snapshotter: a copy of e.
func (e *Errors) Snapshot() Aggregator {
	c := &Errors{}
	for k, t := range e.classes {
		c.add(k, t.count, t.first, t.at)
	}
	return c
}
