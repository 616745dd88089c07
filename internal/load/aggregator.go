package load

import (
	"errors"
	"time"
)

// Aggregator consumes the outcomes of a run: Histograms, Timeline and the verifier's admission
// log are aggregators. An aggregator is not safe for concurrent use: Run gives each worker shard
// a set of its own (made with Fresh), feeds it under the shard's lock, and merges the shards'
// aggregators into the ones it was given when the run is over.
//
// Every aggregator merges exactly: the outcomes of a run split in any way over several
// aggregators of one kind (worker shards, or generators of a segmented run whose encoded
// aggregators are decoded and merged) and merged give the aggregator of the unsplit run.
type Aggregator interface {
	// Add records o. The pointer is valid only during the call.
	Add(o *Outcome)
	// Merge moves everything other holds into this aggregator. other must be of the same kind
	// and settings (made by Fresh, or decoded from the same kind's encoding), else Merge returns
	// an error wrapping ErrMismatch and changes nothing; other must not be used afterwards.
	Merge(other Aggregator) error
	// Fresh returns an empty aggregator of the same kind and settings, for another shard.
	Fresh() Aggregator
	// Finish is called once, on the merged aggregator, when the run is over. It returns what the
	// aggregator adds to the run's Counts: outcomes it dropped, values it clamped, and for an
	// admission log the decision times it narrowed and those that mismatched the harness clock
	// (Dropped, Clamped, Narrowed, ClockMismatch; every other count zero).
	Finish() Counts
}

// Starter is implemented by aggregators that need the wall time of the run's offset 0 (an
// admission log places its events on the Unix clock). Run calls Start on every aggregator of
// every shard that implements it, once, before the first Add.
type Starter interface {
	Start(start time.Time)
}

// ErrMismatch means two aggregators cannot be merged: they are of different kinds, or of one
// kind with different settings (a timeline's bins, a histogram's range, a log's clock).
var ErrMismatch = errors.New("aggregators do not match")

// Sinks are the aggregators Run feeds. Measured receive every outcome of the measured part,
// Warmup every outcome of the warmup (see Plan.Warmup); either may be empty, and with both empty
// Run records nothing but Counts. Of what the warmup's aggregators Finish with, only Dropped is
// counted.
type Sinks struct {
	Measured, Warmup []Aggregator
}

// empty reports whether s holds no aggregator.
func (s Sinks) empty() bool { return len(s.Measured) == 0 && len(s.Warmup) == 0 }

// fresh returns an empty set of the same aggregators, for another shard.
func (s Sinks) fresh() Sinks {
	out := Sinks{Measured: make([]Aggregator, len(s.Measured)), Warmup: make([]Aggregator, len(s.Warmup))}
	for i, a := range s.Measured {
		out.Measured[i] = a.Fresh()
	}
	for i, a := range s.Warmup {
		out.Warmup[i] = a.Fresh()
	}
	return out
}

// start calls Start on every aggregator of s that implements Starter.
func (s Sinks) start(t time.Time) {
	for _, set := range [][]Aggregator{s.Measured, s.Warmup} {
		for _, a := range set {
			if st, ok := a.(Starter); ok {
				st.Start(t)
			}
		}
	}
}

// merge merges o's aggregators into s's, kind by kind. Aggregators Run made with fresh always
// match, so an error means a broken Fresh.
func (s Sinks) merge(o Sinks) error {
	var errs []error
	for i, a := range s.Measured {
		errs = append(errs, a.Merge(o.Measured[i]))
	}
	for i, a := range s.Warmup {
		errs = append(errs, a.Merge(o.Warmup[i]))
	}
	return errors.Join(errs...)
}

// finish finishes every aggregator of s and returns what they add to Counts.
func (s Sinks) finish() Counts {
	var c Counts
	for _, a := range s.Measured {
		f := a.Finish()
		c.Dropped += f.Dropped
		c.Clamped += f.Clamped
		c.Narrowed += f.Narrowed
		c.ClockMismatch += f.ClockMismatch
	}
	for _, a := range s.Warmup {
		c.Dropped += a.Finish().Dropped
	}
	return c
}
