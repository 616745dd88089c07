package measure

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// Checkpoints returns the stage that checkpoints a measurement while its load runs (a long
// run's periodic result.json): every `every` from the load's start (warmup included) until its
// end, it calls fn, on a goroutine of its own, with the entry of the measurement so far (see
// SoFar). fn is never called once the load is over: End waits for a call under way. With every
// <= 0 or a nil fn the stage does nothing.
//
// What it costs the load: a copy of the measured aggregators every `every`, each worker shard's
// lock held while its share is copied (load.Peek); the workers' path is unchanged.
func Checkpoints(every time.Duration, fn func(e *result.Entry)) Stage {
	if every <= 0 || fn == nil {
		return Stage{}
	}
	peek := new(load.Peek)
	var stop chan struct{}
	var running sync.WaitGroup
	return Stage{
		Setup: func(_ context.Context, m *Measurement) error {
			m.Plan.Peek = peek
			return nil
		},
		Start: func(_ context.Context, m *Measurement, _ time.Time) {
			stop = make(chan struct{})
			done := stop
			running.Go(func() {
				t := time.NewTicker(every)
				defer t.Stop()
				for {
					select {
					case <-done:
						return
					case <-t.C:
					}
					if e, ok := m.SoFar(peek); ok {
						fn(&e)
					}
				}
			})
		},
		End: func(context.Context, *Measurement, error) {
			if stop != nil {
				close(stop)
				running.Wait()
				stop = nil
			}
		},
	}
}

// SoFar returns the entry of the measurement as far as its load has gone, read through peek
// (its plan's Peek) without stopping it; ok is false when the load is not under way. The entry
// is marked InProgress: load's counts, rates, latency (with its histograms), errors and timeline
// of the measured part so far; the verification the streaming verifier supports so far (see
// VerificationSoFar); no accuracy, server cost, late or dropped requests, excerpt or node
// watch, which only the measurement's end gives. Safe to call from any goroutine while the load
// runs.
func (m *Measurement) SoFar(peek *load.Peek) (e result.Entry, ok bool) {
	snap, ok, err := peek.Snapshot()
	if !ok || err != nil { // an error is a broken Snapshotter: no checkpoint rather than a wrong one
		return result.Entry{}, false
	}
	var (
		hist *load.Histograms
		tl   *load.Timeline
		errs *load.Errors
	)
	for _, a := range snap.Measured {
		switch a := a.(type) {
		case *load.Histograms:
			hist = cmpOr(hist, a)
		case *load.Timeline:
			tl = cmpOr(tl, a)
		case *load.Errors:
			errs = cmpOr(errs, a)
		}
	}
	measured := max(0, min(snap.Elapsed, m.Plan.Warmup+m.Plan.Duration)-snap.Warmup)
	e = result.Entry{Algorithm: m.name(), Topology: m.Spec.Topology, InProgress: true, DurationS: measured.Seconds()}
	_, e.Custom = m.Spec.Algorithm.(*customAlgorithm)
	if tl != nil {
		for _, b := range tl.Bins {
			e.Requests += int64(b.Offered)
			e.Allowed += int64(b.Admitted)
			e.Denied += int64(b.Denied)
			e.Errors += int64(b.Failed)
			e.Unknown += int64(b.Unknown)
		}
		e.Timeline = result.Timeline{Series: tl.Series()}
	}
	if hist != nil {
		_ = e.SetHistograms(hist.Latency(), hist.Service()) // see Recording.Entry
	}
	if errs != nil {
		e.ErrorClasses = errs.Classes(snap.Warmup)
	}
	if s := measured.Seconds(); s > 0 {
		e.ThroughputRPS = result.Round3(float64(e.Allowed+e.Denied) / s)
		offered := float64(snap.Scheduled)
		if _, closed := m.Plan.Arrival.(load.ClosedLoop); closed {
			offered = float64(e.Requests)
		}
		e.OfferedRPS = result.Round3(offered / s)
	}
	e.Verification = m.VerificationSoFar()
	return e, true
}

// VerificationSoFar is the verification section of a measurement still going: never a pass.
// With the streaming verifier, its definite violations so far (verify.StreamLog.DefiniteSoFar)
// make it fail, since more requests cannot undo a definite violation; otherwise it is
// inconclusive, saying why. Safe to call from any goroutine while the load runs.
func (m *Measurement) VerificationSoFar() verify.Summary {
	v := verify.Summary{Verdict: verify.Inconclusive, Contract: m.Contract.String()}
	if m.Recording == nil || m.Recording.Stream == nil {
		v.Reasons = []string{"checkpoint of a measurement still going: it keeps its whole history and is verified at its end only"}
		return v
	}
	n := m.Recording.Stream.DefiniteSoFar()
	v.DefiniteViolations = n
	if n == 0 {
		v.Reasons = []string{"checkpoint of a measurement still going: no definite violation found so far; the verdict comes at its end"}
		return v
	}
	v.Verdict = verify.Fail
	v.Reasons = []string{fmt.Sprintf("checkpoint of a measurement still going: %d definite violation(s) found so far, which more "+
		"requests cannot undo (a loss of the limiter's state seen at its end may still attribute some to the loss)", n)}
	return v
}

// cmpOr returns a unless it is nil, else b.
func cmpOr[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}
