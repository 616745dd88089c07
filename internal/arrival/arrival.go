// Package arrival is the open-loop arrival profile a scenario names: a constant rate, a ramp,
// steps, spikes or a replayed trace, optionally aligned to the Unix clock. It gives the pacer
// its pieces (Pieces, as load.Piece), the rate at any instant (RateAt), the profile in words
// (String) and in result.json's settings (MarshalJSON).
//
// It is its own leaf, below package scenarios (which loads it from YAML) and package result (which
// records it in result.json's scenario section), so that the result schema can hold the profile
// without linking scenarios' environments (redisenv and the container libraries); it imports
// only internal/load's value types. DESIGN.md's layout has no such package: the profile lived in
// package scenarios before the result schema became a leaf.
package arrival

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/trace"
)

// Kind names the form of an open-loop schedule.
type Kind string

// The arrival forms.
const (
	Constant Kind = "rate"
	RampUp   Kind = "ramp"
	Stepped  Kind = "steps"
	Spiked   Kind = "spike"
	Traced   Kind = "trace"
)

// Arrival is an open-loop schedule: how many requests per second all clients together start, as a
// function of the time since the schedule began (the start of warmup). Exactly one of Rate, Ramp,
// Steps, Spike and Trace is set. Rates are per second, across all clients, and may be fractional.
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
	// Trace, when set, is replayed row by row (see trace.Trace): each row at its own offset, as
	// its client, for its subject and cost. TraceFile is the file it was read from, as the
	// scenario names it (relative to the scenario file's directory).
	Trace     *trace.Trace
	TraceFile string
	// Recorded is the trace as result.json records it (TraceSummary), set on an arrival read back
	// from result.json, whose Trace holds no rows; nil otherwise.
	Recorded *TraceSummary
	// Align places the start of the schedule on the Unix clock; the zero value starts at once.
	Align Align
}

// Ramp goes from From requests per second at the start of the run to To at its end (both ≥ 0, not
// both 0).
type Ramp struct {
	From float64 `json:"from"`
	To   float64 `json:"to"`
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

// stepsPeriod returns the length of one pass of a's steps (0 without steps).
func (a *Arrival) stepsPeriod() time.Duration {
	var period time.Duration
	for _, s := range a.Steps {
		period += s.For
	}
	return period
}

// Kind returns which form a is.
func (a *Arrival) Kind() Kind {
	switch {
	case a.Trace != nil:
		return Traced
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
		period := a.stepsPeriod()
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

// Pieces returns the schedule over [0, span) as consecutive pieces (load.Piece) whose lengths add up to span
// (span is Scenario.TotalDuration): one piece for a constant rate or a ramp, the steps repeated
// as often as span needs (the last copy cut short), and a spike's base and peak pieces in turn.
// RateAt(t, span) equals the rate of the piece that holds t. It returns nil when span <= 0.
func (a *Arrival) Pieces(span time.Duration) []load.Piece {
	if span <= 0 {
		return nil
	}
	var out []load.Piece
	var at time.Duration
	add := func(from, to float64, d time.Duration) {
		if d > span-at {
			// Cut the piece at span; a ramp's end rate is interpolated.
			to = from + (to-from)*float64(span-at)/float64(d)
			d = span - at
		}
		if d > 0 {
			out = append(out, load.Piece{From: from, To: to, Duration: d})
			at += d
		}
	}
	switch a.Kind() {
	case Constant:
		add(a.Rate, a.Rate, span)
	case RampUp:
		add(a.Ramp.From, a.Ramp.To, span)
	case Stepped:
		period := a.stepsPeriod()
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

// PieceBound returns, without building them, a bound on how many pieces Pieces(span) returns:
// at least as many, and at most one period's pieces more (the last period is cut at span);
// math.MaxInt when the count does not fit. a must be valid (every length > 0).
func (a *Arrival) PieceBound(span time.Duration) int {
	if span <= 0 {
		return 0
	}
	// repeats is how many times a period fits in d, rounded up.
	repeats := func(d, period time.Duration) int {
		if d <= 0 {
			return 0
		}
		return int((d-1)/period) + 1
	}
	switch a.Kind() {
	case Stepped:
		period := a.stepsPeriod()
		if period <= 0 {
			return 0
		}
		n := repeats(span, period)
		if n > math.MaxInt/len(a.Steps) {
			return math.MaxInt
		}
		return n * len(a.Steps)
	case Spiked:
		sp := a.Spike
		if sp.Every <= 0 {
			return 3
		}
		per := 2 // the peak, then the base until the next
		if sp.For >= sp.Every {
			per = 1
		}
		n := repeats(span-sp.At, sp.Every)
		if n > math.MaxInt/2-1 {
			return math.MaxInt
		}
		return per*n + 1
	}
	return 1
}

// String describes a in words: "constant 2000/s", "ramp 0/s to 900/s", "steps 100/s for 1s, 300/s
// for 2s", "spike 50/s, 2000/s at 1.9s for 200ms every 2s", with ", aligned to 1s+900ms" when it is
// aligned.
func (a *Arrival) String() string {
	var s string
	switch a.Kind() {
	case RampUp:
		s = fmt.Sprintf("ramp %g/s to %g/s", a.Ramp.From, a.Ramp.To)
	case Stepped:
		var parts []string
		for _, st := range a.Steps {
			parts = append(parts, fmt.Sprintf("%g/s for %s", st.Rate, st.For))
		}
		s = "steps " + strings.Join(parts, ", ")
	case Spiked:
		sp := a.Spike
		s = fmt.Sprintf("spike %g/s, %g/s at %s for %s", sp.Base, sp.Peak, sp.At, sp.For)
		if sp.Every > 0 {
			s += " every " + sp.Every.String()
		}
	case Traced:
		s = "trace " + a.TraceFile
		if t := a.TraceSummary(); t != nil && t.Rows > 0 {
			s += fmt.Sprintf(" (%d requests over %s)", t.Rows, load.Seconds(t.SpanS))
		}
	default:
		s = fmt.Sprintf("constant %g/s", a.Rate)
	}
	if a.Align.Every > 0 {
		s += fmt.Sprintf(", aligned to %s+%s", a.Align.Every, a.Align.Offset)
	}
	return s
}

// arrivalJSON is an Arrival's form in result.json's settings: its kind, the fields of its form,
// durations in seconds.
type arrivalJSON struct {
	Kind  Kind    `json:"kind"`
	Rate  float64 `json:"rate,omitempty"`
	Ramp  *Ramp   `json:"ramp,omitempty"`
	Steps []Step  `json:"steps,omitempty"`
	Spike *Spike  `json:"spike,omitempty"`
	// Trace is the trace file's name and its size (the rows are not repeated).
	Trace *TraceSummary `json:"trace,omitempty"`
	Align *Align        `json:"align,omitempty"`
}

// TraceSummary is what result.json records of a replayed trace: its file, as the scenario names
// it, and its size (rows, distinct clients and subjects, the offset of its last row in seconds),
// not its rows.
type TraceSummary struct {
	File     string  `json:"file"`
	Rows     int     `json:"rows"`
	Clients  int     `json:"clients"`
	Subjects int     `json:"subjects"`
	SpanS    float64 `json:"span_s"`
}

// MarshalJSON writes a as result.json's settings.arrival: {"kind": ..., then the fields of its
// form}, and align when it is aligned.
func (a Arrival) MarshalJSON() ([]byte, error) {
	w := arrivalJSON{Kind: a.Kind(), Rate: a.Rate, Ramp: a.Ramp, Steps: a.Steps, Spike: a.Spike}
	w.Trace = a.TraceSummary()
	if a.Align.Every > 0 {
		w.Align = &a.Align
	}
	return json.Marshal(w)
}

// TraceSummary returns what result.json records of a's trace: counted from its rows, or, on an
// arrival read back from result.json, as recorded; nil without a trace.
func (a *Arrival) TraceSummary() *TraceSummary {
	t := a.Trace
	switch {
	case t == nil:
		return nil
	case len(t.Rows) == 0 && a.Recorded != nil:
		r := *a.Recorded
		return &r
	}
	return &TraceSummary{File: a.TraceFile, Rows: len(t.Rows), Clients: len(t.Clients), Subjects: len(t.Subjects), SpanS: t.Span().Seconds()}
}

// UnmarshalJSON reads what MarshalJSON writes; the kind follows from the fields. A trace's rows
// are not in result.json: its file name is kept (TraceFile), Trace is a trace without rows, and
// Recorded holds its size as recorded, so that the arrival is written and described again as it
// was.
func (a *Arrival) UnmarshalJSON(b []byte) error {
	return fromJSON(b, func(w arrivalJSON) {
		*a = Arrival{Rate: w.Rate, Ramp: w.Ramp, Steps: w.Steps, Spike: w.Spike}
		if w.Trace != nil {
			a.TraceFile, a.Trace, a.Recorded = w.Trace.File, &trace.Trace{}, w.Trace
		}
		if w.Align != nil {
			a.Align = *w.Align
		}
	})
}

// fromJSON decodes b into a W, the JSON form of a type, and gives it to set.
func fromJSON[W any](b []byte, set func(W)) error {
	var w W
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	set(w)
	return nil
}

// stepJSON is a Step in result.json: {"for_s", "rate"}.
type stepJSON struct {
	ForS float64 `json:"for_s"`
	Rate float64 `json:"rate"`
}

// MarshalJSON writes s with its length in seconds.
func (s Step) MarshalJSON() ([]byte, error) { return json.Marshal(stepJSON{s.For.Seconds(), s.Rate}) }

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Step) UnmarshalJSON(b []byte) error {
	return fromJSON(b, func(w stepJSON) { *s = Step{For: load.Seconds(w.ForS), Rate: w.Rate} })
}

// spikeJSON is a Spike in result.json, times in seconds.
type spikeJSON struct {
	Base   float64 `json:"base"`
	Peak   float64 `json:"peak"`
	AtS    float64 `json:"at_s"`
	ForS   float64 `json:"for_s"`
	EveryS float64 `json:"every_s,omitempty"`
}

// MarshalJSON writes s with its times in seconds.
func (s Spike) MarshalJSON() ([]byte, error) {
	return json.Marshal(spikeJSON{s.Base, s.Peak, s.At.Seconds(), s.For.Seconds(), s.Every.Seconds()})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Spike) UnmarshalJSON(b []byte) error {
	return fromJSON(b, func(w spikeJSON) {
		*s = Spike{Base: w.Base, Peak: w.Peak, At: load.Seconds(w.AtS), For: load.Seconds(w.ForS), Every: load.Seconds(w.EveryS)}
	})
}

// alignJSON is an Align in result.json, in seconds.
type alignJSON struct {
	EveryS  float64 `json:"every_s"`
	OffsetS float64 `json:"offset_s"`
}

// MarshalJSON writes a in seconds.
func (a Align) MarshalJSON() ([]byte, error) {
	return json.Marshal(alignJSON{a.Every.Seconds(), a.Offset.Seconds()})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (a *Align) UnmarshalJSON(b []byte) error {
	return fromJSON(b, func(w alignJSON) { *a = Align{Every: load.Seconds(w.EveryS), Offset: load.Seconds(w.OffsetS)} })
}
