package measure

import (
	"context"
	"time"

	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// Stage is something a driver adds to a measurement without a branch inside Do: a segment's
// barrier and shifted clock (internal/segment), a fault schedule (Faults), function libraries
// (Functions), the server's cost (Cost), an aligned start (Align), a batch of trials that start
// together (Trials). Each field is an action at one step of the lifecycle (see the package doc);
// nil fields do nothing, and Do runs the actions of one step in the order the stages were given
// (Release in the reverse order). A Stage belongs to one measurement: its constructors return a
// fresh one for each.
type Stage struct {
	// Setup acts before the algorithm is prepared (step 3): it may set the Measurement's
	// Plan.Share, OneClock and Client (a Dialer through proxies).
	Setup func(ctx context.Context, m *Measurement) error
	// PrepareContext gives the context the algorithm is prepared in (step 4), such as one that
	// makes built-in scripts Redis Functions.
	PrepareContext func(ctx context.Context) context.Context
	// Begin acts once the limiter is prepared and the clock measured (step 6): it may read the
	// server's figures, wrap the Limiter, adjust the Clock and wrap the Sinks.
	Begin func(ctx context.Context, m *Measurement) error
	// Meet decides when the load starts (step 7): it waits, or sets the Plan's Start.
	Meet func(ctx context.Context, m *Measurement) error
	// Start is called when the load's clock starts (step 8, load.Plan.OnStart: its connections
	// open, its first tick not yet sent) with when its measured part begins, on the harness's
	// clock. It must return at once.
	Start func(ctx context.Context, m *Measurement, measured time.Time)
	// Observe sees every outcome of the load (warmup included) from the workers, concurrently,
	// before the guard; it returns true to excuse it from the guard (Redis unreachable on
	// purpose: a restart under way). It must not block.
	Observe func(o *load.Outcome) (excused bool)
	// End is called once the load is over (step 9) with load.Run's error.
	End func(ctx context.Context, m *Measurement, err error)
	// Verify adds to what the verifier is given (step 10): fault windows, disruptions.
	Verify func(m *Measurement, vm *verify.Measurement)
	// Report adds to the entry (step 11); it runs even when Redis was lost during the load.
	Report func(m *Measurement, e *result.Entry)
	// Finish acts once the load is over and Redis answers (step 13): it may read the server's
	// figures into the entry.
	Finish func(ctx context.Context, m *Measurement, e *result.Entry) error
	// Release undoes what the stage did (step 14), whatever happened before; a warning goes
	// through Measurement.Warn.
	Release func(ctx context.Context, m *Measurement)
	// Leave, set, makes the prefix shared with other generators (a segment): it is not claimed
	// (step 1), and its keys are removed at step 14 only when Leave reports that this
	// generator was the last to leave.
	Leave func(ctx context.Context, m *Measurement) (last bool)
}
