package measure

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/result"
)

// Functions returns the stage of a measurement's function libraries: with call CallFCall, the
// built-in algorithm's Lua is loaded as a Redis Function library and called with FCALL
// (algorithms.WithFunctions), and the entry says so (Call); after the measurement every library
// it loaded is deleted, a custom algorithm's own library too (algorithms.Custom.Unload). A
// library that cannot be deleted is a warning of kind "function".
//
// Every driver passes it, so that a run, a capacity step, a hunt trial and a segment honour the
// scenario's call mode and leave no library behind alike. (Issue 28.3 lands here: a library this
// run did not load is neither replaced nor deleted; the stage is where that is decided.)
func Functions(call algorithms.CallMode) Stage {
	f := &functions{}
	if call == algorithms.CallFCall {
		f.fns = &algorithms.Functions{}
	}
	return Stage{PrepareContext: f.context, Report: f.report, Release: f.release}
}

// functions is the state of a Functions stage: the libraries built-in algorithms loaded, nil
// when they are called with EVALSHA.
type functions struct{ fns *algorithms.Functions }

func (f *functions) context(ctx context.Context) context.Context {
	return algorithms.WithFunctions(ctx, f.fns) // ctx itself when f.fns is nil
}

func (f *functions) report(_ *Measurement, e *result.Entry) {
	if f.fns != nil && len(f.fns.Libraries()) > 0 {
		e.Call = string(algorithms.CallFCall)
	}
}

func (f *functions) release(ctx context.Context, m *Measurement) {
	if f.fns != nil {
		if err := f.fns.Delete(ctx); err != nil {
			m.Warn(result.Warning{Kind: "function", Message: err.Error()})
		}
	}
	if u, ok := m.Spec.Algorithm.(interface {
		Unload(context.Context, redis.UniversalClient) error
	}); ok {
		if err := u.Unload(ctx, m.Spec.Target.Client); err != nil {
			m.Warn(result.Warning{Kind: "function", Message: fmt.Sprintf("the function library could not be removed: %v", err)})
		}
	}
}
