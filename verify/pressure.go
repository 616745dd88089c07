package verify

import (
	"github.com/limitbench/limitbench/algorithms"
)

// Pressure is how hard a run pressed its contract, in the measured part (result.json's
// "verification.pressure"; see the package doc, "Pressure"): counted over the contract's limits
// and their scopes, from the algorithm's own decisions at the requests' midpoints, as Accuracy
// meters them. A run that never pressed its contract passes vacuously: nothing in it could
// have shown an over-admission.
type Pressure struct {
	// Windows counts the windows of the limits' scopes that held a decided request: aligned
	// windows of W for sliding-window and fixed-window, the windows the algorithm's own
	// requests opened for first-hit-window, and aligned refill periods (RefillPer) for
	// token-bucket.
	Windows int64 `json:"windows"`
	// Full counts those that reached their allowance: at some request in it, the algorithm's
	// own admissions met the limit (L permits in the window, or an empty bucket), or the
	// request would not have fitted on top of them.
	Full int64 `json:"full"`
	// FullShare is Full / Windows, rounded to three decimals (0 without windows).
	FullShare float64 `json:"full_share"`
	// Denials counts the denied requests.
	Denials int64 `json:"denials"`
	// Crossings counts the boundaries crossed under pressure: a window that reached its
	// allowance followed by a window of the same scope that held a request (the next aligned
	// window or refill period, or a first-hit window opened less than W after the last ended).
	Crossings int64 `json:"crossings"`
	// Pressed is Full + Denials + Crossings > 0: some window reached its allowance or some
	// request was denied.
	Pressed bool `json:"pressed"`
}

// pressing follows one scope of one limit for Pressure: the window its last request fell in,
// whether that window reached its allowance, and whether a request was seen at all.
type pressing struct {
	win              int64
	started, reached bool
}

// pressWindow returns the window of the request at t (absolute µs) for Pressure, given the
// algorithm's own meter m after it took the request: an aligned window of W or RefillPer, or the
// start of m's first-hit window.
func (lim *limit) pressWindow(m *meter, t int64) int64 {
	switch lim.kind {
	case algorithms.FirstHitWindow:
		return m.k
	case algorithms.TokenBucket:
		return floorDiv(t, micros(lim.c.RefillPer))
	}
	return floorDiv(t, lim.w)
}

// consecutive reports whether window b follows window a with no window between (see
// Pressure.Crossings).
func (lim *limit) consecutive(a, b int64) bool {
	if lim.kind == algorithms.FirstHitWindow {
		return b < a+2*lim.w
	}
	return b == a+1
}

// press counts, into p, the request at t (absolute µs) of the scope followed by ps, which fitted
// on top of the algorithm's own admissions (fits) and left its meter m in use ratio r.
func (lim *limit) press(p *Pressure, ps *pressing, m *meter, t int64, fits bool, r float64) {
	w := lim.pressWindow(m, t)
	if !ps.started || w != ps.win {
		if ps.started && ps.reached && lim.consecutive(ps.win, w) {
			p.Crossings++
		}
		p.Windows++
		ps.win, ps.started, ps.reached = w, true, false
	}
	if !ps.reached && (!fits || r >= 1) {
		ps.reached = true
		p.Full++
	}
}

// finish sets the figures derived from the counts.
func (p *Pressure) finish() {
	if p.Windows > 0 {
		p.FullShare = round3(float64(p.Full) / float64(p.Windows))
	}
	p.Pressed = p.Full+p.Denials+p.Crossings > 0
}
