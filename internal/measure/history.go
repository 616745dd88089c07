package measure

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/verify"
)

// KeepEvents is how many events (measured and warmup together) a streaming measurement keeps in
// memory besides its stream, for what the stream does not give: the violation explorer
// (verify.Excerpt), fairness, the timeline's window use, the server's bytes per key, and the
// whole-history check of a measurement whose state was lost (the stream does not yet cut its
// history at the node watch's disruptions). 16 bytes an event: 16 MiB, twice that while the
// entry is built. A longer measurement drops the kept events as soon as it passes the budget,
// and its entry says what was left out (result.WarningHistoryLeftOut), so that its memory
// follows the contract's windows, not the run's length.
const KeepEvents = 1 << 20

// history is the budget the kept logs of one measurement share.
type history struct {
	n    atomic.Int64
	over atomic.Bool
}

// keptLog is an admission log that stops keeping events (and lets go of those it holds) once the
// measurement's logs together have been offered more than KeepEvents. It counts nothing in
// load.Counts: the stream beside it counts the same outcomes.
type keptLog struct {
	log *verify.AdmissionLog // nil once the budget is spent
	h   *history
}

var (
	_ load.Aggregator = (*keptLog)(nil)
	_ load.Starter    = (*keptLog)(nil)
)

// Add implements load.Aggregator.
func (k *keptLog) Add(o *load.Outcome) {
	if k.log == nil {
		return
	}
	if k.h.over.Load() || k.h.n.Add(1) > KeepEvents {
		k.h.over.Store(true)
		k.log = nil
		return
	}
	k.log.Add(o)
}

// Fresh implements load.Aggregator.
func (k *keptLog) Fresh() load.Aggregator {
	f := &keptLog{h: k.h}
	if k.log != nil {
		f.log = k.log.Fresh().(*verify.AdmissionLog)
	}
	return f
}

// Start implements load.Starter.
func (k *keptLog) Start(t time.Time) {
	if k.log != nil {
		k.log.Start(t)
	}
}

// Merge implements load.Aggregator: nothing is merged once the budget is spent.
func (k *keptLog) Merge(other load.Aggregator) error {
	o, ok := other.(*keptLog)
	if !ok {
		return fmt.Errorf("%w: merge %T into a kept admission log", load.ErrMismatch, other)
	}
	if k.h.over.Load() || k.log == nil || o.log == nil {
		k.log = nil
		return nil
	}
	return k.log.Merge(o.log)
}

// Finish implements load.Aggregator: no counts (see keptLog).
func (k *keptLog) Finish() load.Counts { return load.Counts{} }
