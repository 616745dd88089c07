package metrics

import (
	"sync/atomic"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/load"
)

// maxWindowSubjects bounds the subjects whose admissions are counted per window (8 bytes of memory
// each): admissions to subjects past it are not counted, so the gauge can fall
// short but never overstate.
const maxWindowSubjects = 1 << 22

// A slot packs a subject's window: the window's number (its low epochBits bits) above the
// permits admitted in it (countBits bits, saturating).
const (
	countBits = 24
	countMask = 1<<countBits - 1
	epochMask = 1<<(64-countBits) - 1
)

// windowCounts counts, per subject, the permits admitted in the current window of a grid of
// the contract's width aligned to Unix time on the harness's clock (see the package doc).
type windowCounts struct {
	width     int64 // ns
	allowance int64 // permits one window may hold
	origin    int64 // Unix ns of the load's offset 0
	slots     []atomic.Uint64
	most      atomic.Uint64 // the most permits one subject had in one window so far
}

// allowanceOf returns the width and allowance of c's first limit, and false when the gauge does
// not apply to c (no window, or not counted per subject).
func allowanceOf(c algorithms.Contract) (width time.Duration, allowance int64, ok bool) {
	if c.Scope != algorithms.PerSubject {
		return 0, 0, false
	}
	switch c.Kind {
	case algorithms.SlidingWindow, algorithms.FixedWindow, algorithms.FirstHitWindow:
		return c.Window, c.Limit, c.Window > 0
	case algorithms.TokenBucket:
		// A closed interval of one refill period holds at most C + RefillPermits.
		return c.RefillPer, c.Capacity + c.RefillPermits, c.RefillPer > 0
	}
	return 0, 0, false
}

// newWindowCounts returns the counts for contract c with subjects subjects (0: unknown), or nil
// when the gauge does not apply to c.
func newWindowCounts(c algorithms.Contract, subjects int, origin time.Time) *windowCounts {
	width, allowance, ok := allowanceOf(c)
	if !ok {
		return nil
	}
	if subjects <= 0 || subjects > maxWindowSubjects {
		subjects = min(max(subjects, 1<<16), maxWindowSubjects)
	}
	return &windowCounts{width: int64(width), allowance: allowance, origin: origin.UnixNano(),
		slots: make([]atomic.Uint64, subjects)}
}

func (w *windowCounts) epoch(unixNs int64) uint64 { return uint64(unixNs/w.width) & epochMask }

// add counts an admitted outcome in its subject's window (by its reply's time).
func (w *windowCounts) add(o *load.Outcome) {
	if int(o.Subject) >= len(w.slots) {
		return
	}
	slot, e := &w.slots[o.Subject], w.epoch(w.origin+int64(o.Received))
	for {
		old := slot.Load()
		n := uint64(o.Cost)
		if old>>countBits == e {
			n = min(old&countMask+n, countMask)
		}
		if slot.CompareAndSwap(old, e<<countBits|n) {
			for m := w.most.Load(); n > m && !w.most.CompareAndSwap(m, n); m = w.most.Load() {
			}
			return
		}
	}
}

// current returns the most permits one subject has in the window now is in.
func (w *windowCounts) current(now time.Time) uint64 {
	e := w.epoch(now.UnixNano())
	var most uint64
	for i := range w.slots {
		if v := w.slots[i].Load(); v>>countBits == e {
			most = max(most, v&countMask)
		}
	}
	return most
}
