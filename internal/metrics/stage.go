package metrics

import (
	"context"
	"math"
	"time"

	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/measure"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/scenarios"
)

// Labels are the labels of one series: which run, scenario, algorithm, topology and segment
// (empty outside a segmented run) the figures are of.
type Labels struct {
	RunID, Scenario, Algorithm, Topology, Segment string
}

// Stage returns the stage that feeds one measurement's figures into x under labels l (see
// measure.Stage); schedule is the measurement's fault schedule (nil without faults), whose
// faults under way are limitbench_faults_active. A nil Exporter gives a stage that does
// nothing, so that a driver adds it whether or not live metrics were asked for.
//
//   - Setup: the warmup's length (its outcomes are counted apart), and the plan's Progress
//     wrapped to read the achieved rate;
//   - Start: the plan's rate, the fault schedule's clock, the window counts of the contract and
//     the streaming verifier's definite violations so far;
//   - Observe: every outcome counted (never excused);
//   - End: the rates and active faults drop to nothing;
//   - Report: the verifier's definite and possible violations added.
func (x *Exporter) Stage(l Labels, schedule []scenarios.Fault) measure.Stage {
	if x == nil {
		return measure.Stage{}
	}
	s := x.seriesOf(l)
	return measure.Stage{
		Setup: func(_ context.Context, m *measure.Measurement) error {
			s.warm.Store(int64(m.Plan.Warmup))
			prev := m.Plan.Progress
			m.Plan.Progress = func(p load.Progress) {
				s.mu.Lock()
				s.achieved = p.Rate
				s.mu.Unlock()
				if prev != nil {
					prev(p)
				}
			}
			return nil
		},
		Start: func(_ context.Context, m *measure.Measurement, measured time.Time) {
			origin := measured.Add(-m.Plan.Warmup)
			arrival := m.Plan.Arrival
			s.mu.Lock()
			s.offered = func() float64 { return arrival.Rate(time.Since(origin)) }
			s.faults = faultClock{schedule: schedule, measured: measured}
			if r := m.Recording; r != nil && r.Stream != nil {
				s.live = r.Stream.DefiniteSoFar
			}
			s.mu.Unlock()
			s.windowPtr.Store(newWindowCounts(m.Contract, m.Plan.Keys.Count, origin))
		},
		Observe: func(o *load.Outcome) bool {
			s.observe(o)
			return false
		},
		End: func(context.Context, *measure.Measurement, error) { s.end() },
		Report: func(_ *measure.Measurement, e *result.Entry) {
			s.mu.Lock()
			s.definite += uint64(max(e.Verification.DefiniteViolations, 0))
			s.possible += uint64(max(e.Verification.PossibleViolations, 0))
			s.mu.Unlock()
		},
	}
}

// end closes a measurement's live gauges: no rate is offered, no fault is under way, and the
// window counts stop (their most so far is kept).
func (s *series) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.offered, s.achieved = nil, 0
	s.faults = faultClock{}
	s.live = nil
	if w := s.windowPtr.Swap(nil); w != nil {
		s.mostEnded = max(s.mostEnded, w.most.Load())
		s.allowance = w.allowance
	}
}

// gauges is what a series' gauges show at one instant.
type gauges struct {
	offered, achieved float64 // NaN: no load under way (or a closed loop, which has no rate)
	active            map[scenarios.FaultKind]int
	window            *windowGauges
	definite          uint64
	possible          uint64
	live              float64 // NaN: no measurement verified as it runs is under way
}

// windowGauges are the correctness gauges of the window counts.
type windowGauges struct {
	current, most uint64
	allowance     int64
	live          bool // a measurement is under way: current applies
}

func (s *series) gauges(now time.Time) gauges {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := gauges{offered: math.NaN(), achieved: math.NaN(), definite: s.definite, possible: s.possible,
		active: s.faults.active(now), live: math.NaN()}
	if s.live != nil {
		g.live = float64(s.live())
	}
	if s.offered != nil {
		g.offered, g.achieved = s.offered(), s.achieved
		if math.IsInf(g.offered, 0) {
			g.offered = math.NaN()
		}
	}
	if w := s.windowPtr.Load(); w != nil {
		g.window = &windowGauges{current: w.current(now), most: max(w.most.Load(), s.mostEnded), allowance: w.allowance, live: true}
	} else if s.allowance > 0 {
		g.window = &windowGauges{most: s.mostEnded, allowance: s.allowance}
	}
	return g
}

// faultClock says which faults of a schedule are under way: a fault that lasts (pause, network)
// from its At to At + Duration, one that acts once (a restart, a failover) for its Recovery or
// else one second, from the start of the measured part.
type faultClock struct {
	schedule []scenarios.Fault
	measured time.Time
}

func (f faultClock) active(now time.Time) map[scenarios.FaultKind]int {
	if len(f.schedule) == 0 {
		return nil
	}
	at := now.Sub(f.measured)
	out := map[scenarios.FaultKind]int{}
	for _, fl := range f.schedule {
		out[fl.Kind] += 0
		d := fl.Duration
		if d == 0 {
			d = max(fl.Recovery, time.Second)
		}
		if at >= fl.At && at < fl.At+d {
			out[fl.Kind]++
		}
	}
	return out
}
