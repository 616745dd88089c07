package hunt

import (
	"context"
	"fmt"
	"math"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/trace"
)

// replay runs each trace of batch r times in one call of trial (each trace's replays side by
// side) and answers, per trace in batch order, how many of its replays broke c definitely
// (scored above 1 within an epoch, as the search judges: see judge) and the lowest score among
// them. name is the algorithm, for the error when
// trial returns the wrong number of logs.
func replay(ctx context.Context, trial Trial, c algorithms.Contract, name string, batch []*trace.Trace, r int) ([]Answer, error) {
	traces := make([]*trace.Trace, 0, len(batch)*r)
	for _, t := range batch {
		for range r {
			traces = append(traces, t)
		}
	}
	ms, err := trial(ctx, traces)
	if err != nil {
		return nil, err
	}
	if len(ms) != len(traces) {
		return nil, fmt.Errorf("hunt %s: trial returned %d logs for %d schedules", name, len(ms), len(traces))
	}
	out := make([]Answer, len(batch))
	for i := range batch {
		a := Answer{Replays: r, Score: math.Inf(1)}
		for k := range r {
			j, err := judge(c, ms[i*r+k], false)
			if err != nil {
				return nil, err
			}
			ap := j.Approach
			a.Score = min(a.Score, ap.Score)
			if ap.Score > 1 {
				a.Broke++
			}
		}
		out[i] = a
	}
	return out, nil
}
