package scenarios

import (
	"time"

	"github.com/limitbench/limitbench/internal/load"
)

// ArrivalKind names the form of an open-loop schedule.
type ArrivalKind string

// The arrival forms.
const (
	Constant ArrivalKind = "rate"
	RampUp   ArrivalKind = "ramp"
	Stepped  ArrivalKind = "steps"
	Spiked   ArrivalKind = "spike"
)

// Arrival is an open-loop schedule: how many requests per second all clients together start, as a
// function of the time since the schedule began (the start of warmup). Exactly one of Rate, Ramp,
// Steps and Spike is set. Rates are per second, across all clients, and may be fractional.
type Arrival struct {
	// Rate is a constant rate (> 0).
	Rate float64
	// Ramp changes the rate linearly over the whole run (warmup and duration).
	Ramp *Ramp
	// Steps are played in order, each for its own time; after the last the list starts again, so a
	// short list describes a periodic load.
	Steps []Step
	// Spike is a base rate with one or more bursts at the peak rate.
	Spike *Spike
	// Align places the start of the schedule on the Unix clock; the zero value starts at once.
	Align Align
}

// Ramp goes from From requests per second at the start of the run to To at its end (both ≥ 0, not
// both 0).
type Ramp struct {
	From, To float64
}

// Step is one stretch of a stepped schedule: Rate (≥ 0) for For (> 0).
type Step struct {
	For  time.Duration
	Rate float64
}

// Spike is Base requests per second (≥ 0), raised to Peak (> 0) during [At, At+For) and, when Every
// is set, again during [At+k·Every, At+k·Every+For) for every k ≥ 1. For must not exceed Every.
type Spike struct {
	Base, Peak float64
	At, For    time.Duration
	Every      time.Duration
}

// Align puts the schedule's time zero at a Unix time u with u mod Every = Offset, waiting up to Every
// before the run starts. Aligned to the limit's window, a schedule's times become window phases: with
// every 1s, a spike at 1900ms for 200ms (every 2s) straddles a whole second, where fixed windows turn
// over.
// Every = 0 disables alignment; 0 ≤ Offset < Every.
type Align struct {
	Every, Offset time.Duration
}

// Start returns the first instant at or after now that is aligned, or now when a is zero.
func (a Align) Start(now time.Time) time.Time {
	if a.Every <= 0 {
		return now
	}
	ns := now.UnixNano()
	phase := ((ns-int64(a.Offset))%int64(a.Every) + int64(a.Every)) % int64(a.Every)
	if phase == 0 {
		return now
	}
	return now.Add(a.Every - time.Duration(phase))
}

// Kind returns which form a is.
func (a *Arrival) Kind() ArrivalKind {
	switch {
	case a.Ramp != nil:
		return RampUp
	case len(a.Steps) > 0:
		return Stepped
	case a.Spike != nil:
		return Spiked
	}
	return Constant
}

// RateAt returns the rate, in requests per second, at time t since the schedule began; span is the
// length of the whole schedule (Scenario.TotalDuration), which only a ramp needs.
func (a *Arrival) RateAt(t, span time.Duration) float64 {
	switch a.Kind() {
	case RampUp:
		if span <= 0 || t >= span {
			return a.Ramp.To
		}
		if t <= 0 {
			return a.Ramp.From
		}
		return a.Ramp.From + (a.Ramp.To-a.Ramp.From)*float64(t)/float64(span)
	case Stepped:
		var period time.Duration
		for _, s := range a.Steps {
			period += s.For
		}
		if period <= 0 {
			return 0
		}
		t %= period
		for _, s := range a.Steps {
			if t < s.For {
				return s.Rate
			}
			t -= s.For
		}
		return a.Steps[len(a.Steps)-1].Rate
	case Spiked:
		sp := a.Spike
		d := t - sp.At
		if d < 0 {
			return sp.Base
		}
		if sp.Every > 0 {
			d %= sp.Every
		}
		if d < sp.For {
			return sp.Peak
		}
		return sp.Base
	}
	return a.Rate
}

// Segments returns the schedule over [0, span) as consecutive pieces (the pacer's segments) whose lengths add up to span
// (span is Scenario.TotalDuration): one piece for a constant rate or a ramp, the steps repeated
// as often as span needs (the last copy cut short), and a spike's base and peak pieces in turn.
// RateAt(t, span) equals the rate of the piece that holds t. It returns nil when span <= 0.
func (a *Arrival) Segments(span time.Duration) []load.Segment {
	if span <= 0 {
		return nil
	}
	var out []load.Segment
	var at time.Duration
	add := func(from, to float64, d time.Duration) {
		if d > span-at {
			// Cut the piece at span; a ramp's end rate is interpolated.
			to = from + (to-from)*float64(span-at)/float64(d)
			d = span - at
		}
		if d > 0 {
			out = append(out, load.Segment{From: from, To: to, Duration: d})
			at += d
		}
	}
	switch a.Kind() {
	case Constant:
		add(a.Rate, a.Rate, span)
	case RampUp:
		add(a.Ramp.From, a.Ramp.To, span)
	case Stepped:
		var period time.Duration
		for _, s := range a.Steps {
			period += s.For
		}
		if period <= 0 {
			return nil
		}
		for at < span {
			for _, s := range a.Steps {
				add(s.Rate, s.Rate, s.For)
			}
		}
	case Spiked:
		sp := a.Spike
		add(sp.Base, sp.Base, sp.At)
		for at < span {
			add(sp.Peak, sp.Peak, sp.For)
			if sp.Every <= 0 {
				add(sp.Base, sp.Base, span-at)
				break
			}
			add(sp.Base, sp.Base, sp.Every-sp.For)
		}
	}
	return out
}
