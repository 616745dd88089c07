package hunt

import (
	"context"
	"time"

	"github.com/limitbench/limitbench/internal/trace"
	"github.com/limitbench/limitbench/verify"
)

// confirm replays the reproducer of v Budget.Confirm times and, unless every replay breaks the
// contract, walks back along the schedules shrinking kept, 1, 2, 4, ... steps, then to the
// violation as found, until one does; between that one and the last that did not, it bisects
// for the fewest steps back that hold. It makes that schedule v.Shrunk's Trace. About
// 2·log2(Steps) + 2 batches are replayed at most, and none is started after deadline (read with
// now): the walk then ends with the fewest steps back that held so far, or, when none did, with
// the violation as found.
func (s *search) confirm(ctx context.Context, v *Violation, now func() time.Time, deadline time.Time) error {
	sr := v.Shrunk
	path := sr.Path
	if len(path) == 0 {
		path = []*trace.Trace{sr.Trace}
	}
	last := len(path) - 1
	c := &Confirmation{Replays: s.budget.Confirm}
	broke := map[int]int{}
	try := func(back int) (bool, error) {
		t := path[last-back]
		trial := func(ctx context.Context, batch []*trace.Trace) ([]verify.Measurement, error) {
			return s.trial(ctx, Progress{Phase: "confirm", Trials: len(batch), Rows: len(t.Rows)}, batch)
		}
		a, err := replay(ctx, trial, s.cfg.Target.Contract, s.cfg.Target.Algorithm, []*trace.Trace{t}, c.Replays)
		if err != nil {
			return false, err
		}
		broke[back] = a[0].Broke
		return a[0].Holds(), nil
	}
	// Exponential steps back until one holds (hi), the one before it failing (lo).
	lo, hi := -1, -1
	for b := 0; ; b = min(last, max(1, 2*b)) {
		ok, err := try(b)
		if err != nil {
			return err
		}
		if ok {
			hi = b
			break
		}
		lo = b
		if b == last || ctx.Err() != nil || !now().Before(deadline) {
			break
		}
	}
	// Bisect between the last that failed and the first that held.
	for hi > 0 && hi-lo > 1 && ctx.Err() == nil && now().Before(deadline) {
		mid := lo + (hi-lo)/2
		ok, err := try(mid)
		if err != nil {
			return err
		}
		if ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	back := hi
	if back < 0 {
		back = last // nothing held: the violation as found
	}
	c.Back, c.Broke = back, broke[back]
	sr.Trace, sr.To = path[last-back], SizeOf(path[last-back])
	sr.Minimal = sr.Minimal && back == 0
	v.Confirmation = c
	return nil
}
