package load

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"
)

// ErrBadPacer means a pacer was built from invalid rates or durations.
var ErrBadPacer = errors.New("invalid pacer")

// Pacer is an arrival schedule: it decides when each hit is due. Rates are global, in hits per
// second across all workers together, never per worker. A Pacer is a pure function of its
// arguments and is safe for concurrent use.
type Pacer interface {
	// At returns the intended send time of hit n (0-based), as an offset from the start of the
	// run, and false when the schedule has no hit n (the rate has dropped to zero for good).
	// At is non-decreasing in n.
	At(n uint64) (time.Duration, bool)
	// Pace returns, vegeta style, how long to wait at elapsed (since the start) before sending
	// the next hit when hits hits have been sent so far: zero when that hit is already due,
	// and stop = true when no hit remains.
	Pace(elapsed time.Duration, hits uint64) (wait time.Duration, stop bool)
	// Rate returns the intended rate at elapsed, in hits per second.
	Rate(elapsed time.Duration) float64
}

// ClosedLoop is the arrival of a closed loop: every client sends its next request as soon as
// its previous one returned, so at most Plan.Clients requests (times the pipeline depth in
// pipeline mode) are in flight. There is no schedule: a request's intended time is its send
// time, so latency equals service time and nothing is ever late. Its Pacer methods describe
// "always due": At(n) = 0, Pace = (0, false), Rate = +Inf.
type ClosedLoop struct{}

// At implements Pacer: every hit is due at once.
func (ClosedLoop) At(uint64) (time.Duration, bool) { return 0, true }

// Pace implements Pacer: never wait, never stop.
func (ClosedLoop) Pace(time.Duration, uint64) (time.Duration, bool) { return 0, false }

// Rate implements Pacer: unbounded.
func (ClosedLoop) Rate(time.Duration) float64 { return math.Inf(1) }

// Piece is one piece of a Profile (of an arrival profile; a generator's share of a run is a
// segment, Plan.Share): over Duration the rate goes linearly from From to To hits per second
// (From == To for a constant piece).
type Piece struct {
	From, To float64
	Duration time.Duration
}

// Profile is a piecewise-linear rate: its pieces in order, then the last piece's To rate
// for ever (the schedule stops there when that rate is 0). The number of hits due by time t is
// the integral of the rate, H(t); hit n is intended at the t where H(t) = n, so hit 0 is due at
// once and, at a constant rate r, hit n is due at n/r seconds.
//
// The zero value is invalid; build profiles with NewProfile, Constant, Ramp, Steps or Spike.
// Constructors never panic: an invalid profile reports its problem from Validate (Plan.Validate
// calls it) and schedules nothing.
type Profile struct {
	pieces []piece
	tail   float64 // rate after the last piece, hits per second
	err    error
}

// piece is a Piece with its start time and the hits due before it.
type piece struct {
	start  float64 // seconds from the run's start
	hits   float64 // H(start)
	from   float64 // hits per second at start
	to     float64
	length float64 // seconds
	end    float64 // H(start + length)
}

// NewProfile returns the piecewise-linear Profile of pieces. Rates must pass CheckRate (finite,
// in [0, MaxRate]) and durations be > 0; at least one piece and at most MaxPieces are
// required.
func NewProfile(pieces ...Piece) *Profile {
	p := &Profile{}
	var errs []error
	switch {
	case len(pieces) == 0:
		errs = append(errs, fmt.Errorf("%w: no pieces", ErrBadPacer))
	case len(pieces) > MaxPieces:
		return &Profile{err: fmt.Errorf("%w: %d pieces; at most %d", ErrBadPacer, len(pieces), MaxPieces)}
	}
	var start, hits float64
	for i, s := range pieces {
		for _, r := range []float64{s.From, s.To} {
			if err := CheckRate(r, false); err != nil {
				errs = append(errs, fmt.Errorf("%w: piece %d: rate %w", ErrBadPacer, i, err))
			}
		}
		if s.Duration <= 0 {
			errs = append(errs, fmt.Errorf("%w: piece %d: duration %s must be > 0", ErrBadPacer, i, s.Duration))
		}
		length := s.Duration.Seconds()
		g := piece{start: start, hits: hits, from: s.From, to: s.To, length: length}
		g.end = hits + (s.From+s.To)/2*length
		p.pieces = append(p.pieces, g)
		start += length
		hits = g.end
		p.tail = s.To
	}
	if len(errs) > 0 {
		return &Profile{err: errors.Join(errs...)}
	}
	return p
}

// Constant returns a Profile of rate hits per second from the start for ever.
func Constant(rate float64) *Profile {
	return NewProfile(Piece{From: rate, To: rate, Duration: time.Second})
}

// Ramp returns a Profile whose rate rises (or falls) linearly from `from` to `to` hits per second
// over `over`, then stays at `to`.
func Ramp(from, to float64, over time.Duration) *Profile {
	return NewProfile(Piece{From: from, To: to, Duration: over})
}

// Steps returns a Profile that holds each of rates (hits per second) for `every`, in order, and
// stays at the last one.
func Steps(every time.Duration, rates ...float64) *Profile {
	pieces := make([]Piece, len(rates))
	for i, r := range rates {
		pieces[i] = Piece{From: r, To: r, Duration: every}
	}
	return NewProfile(pieces...)
}

// Spike returns a Profile at base hits per second, jumping to peak from `at` for `width`, then
// back to base for ever. at == 0 starts with the spike.
func Spike(base, peak float64, at, width time.Duration) *Profile {
	var pieces []Piece
	if at > 0 {
		pieces = append(pieces, Piece{From: base, To: base, Duration: at})
	}
	pieces = append(pieces,
		Piece{From: peak, To: peak, Duration: width},
		Piece{From: base, To: base, Duration: time.Second})
	return NewProfile(pieces...)
}

// Validate returns the construction error of p, or nil.
func (p *Profile) Validate() error {
	if p == nil {
		return fmt.Errorf("%w: nil profile", ErrBadPacer)
	}
	return p.err
}

// Hits returns H(elapsed), the number of hits due by elapsed, as a real number.
func (p *Profile) Hits(elapsed time.Duration) float64 {
	if p.err != nil || elapsed <= 0 {
		return 0
	}
	t := elapsed.Seconds()
	i := sort.Search(len(p.pieces), func(i int) bool { return p.pieces[i].start+p.pieces[i].length > t })
	if i == len(p.pieces) {
		last := p.pieces[len(p.pieces)-1]
		return last.end + p.tail*(t-last.start-last.length)
	}
	g := p.pieces[i]
	tau := t - g.start
	return g.hits + g.from*tau + (g.to-g.from)*tau*tau/(2*g.length)
}

// At implements Pacer. Within a piece that starts at hit count C with rate a rising to b over
// D seconds, hit n is due τ seconds into it, where a·τ + (b−a)·τ²/(2D) = n − C; the stable
// root is τ = 2k / (a + sqrt(a² + 2(b−a)k/D)) with k = n − C.
func (p *Profile) At(n uint64) (time.Duration, bool) {
	if p.err != nil {
		return 0, false
	}
	x := float64(n)
	i := sort.Search(len(p.pieces), func(i int) bool { return p.pieces[i].end > x })
	var t float64
	if i == len(p.pieces) {
		if p.tail <= 0 {
			return 0, false
		}
		last := p.pieces[len(p.pieces)-1]
		t = last.start + last.length + (x-last.end)/p.tail
	} else {
		g := p.pieces[i]
		k := x - g.hits
		if k <= 0 {
			t = g.start
		} else {
			// Clamped: rounding could take the radicand a hair below 0 near the end of a falling
			// ramp (a NaN time would become a nonsense Duration).
			t = g.start + 2*k/(g.from+math.Sqrt(max(0, g.from*g.from+2*(g.to-g.from)*k/g.length)))
		}
	}
	ns := math.Round(t * 1e9)
	if ns >= math.MaxInt64 {
		return 0, false
	}
	return time.Duration(ns), true
}

// Pace implements Pacer.
func (p *Profile) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	return paceFromAt(p, elapsed, hits)
}

// Rate implements Pacer.
func (p *Profile) Rate(elapsed time.Duration) float64 {
	if p.err != nil || elapsed < 0 {
		return 0
	}
	t := elapsed.Seconds()
	for _, g := range p.pieces {
		if t < g.start+g.length {
			return g.from + (g.to-g.from)*(t-g.start)/g.length
		}
	}
	return p.tail
}

// paceFromAt derives Pace from At.
func paceFromAt(p Pacer, elapsed time.Duration, hits uint64) (time.Duration, bool) {
	at, ok := p.At(hits)
	if !ok {
		return 0, true
	}
	if at <= elapsed {
		return 0, false
	}
	return at - elapsed, false
}

// Scheduled returns the number of hits p schedules strictly before until: the smallest n with
// At(n) >= until or with no hit n. It calls At O(log n) times.
func Scheduled(p Pacer, until time.Duration) uint64 {
	due := func(n uint64) bool {
		at, ok := p.At(n)
		return ok && at < until
	}
	if !due(0) {
		return 0
	}
	hi := uint64(1)
	for due(hi) {
		if hi >= 1<<62 {
			return hi
		}
		hi *= 2
	}
	lo := hi / 2 // due(lo), !due(hi)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if due(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}
