package load

import (
	"fmt"
	"math"
	"time"
)

// The bounds of a load, in one place. Plan.Validate (and NewProfile for rates) checks them when
// a run is about to start; package scenarios checks a scenario's fields, and through it the
// commands' flags, with the same Check functions before anything starts, so that a value out of
// bounds is reported as bad input naming its field and never found out by a run that cannot
// start, never ends or exhausts the machine.
const (
	// MinDuration is the shortest measured part of a run (50 timeline bins of 2 ms; see BinFor). A
	// shorter run measures too few requests for its figures to mean anything (one request in
	// a nanosecond is a throughput of a billion per second).
	MinDuration = 100 * time.Millisecond
	// MaxSpan is the longest schedule, warmup and measured part together: a day. (The
	// admission log holds a run of up to six days; a longer soak is several runs.)
	MaxSpan = 24 * time.Hour
	// MaxRate is the highest arrival rate, in requests per second across all clients
	// together: ten million, a hundred times what one generator sends to one Redis shard.
	MaxRate = 10_000_000
	// MaxPieces is the most pieces an arrival schedule may have (steps or spikes repeated
	// over the run): a million pieces take about 50 MB.
	MaxPieces = 1_000_000
	// MaxClients is the most concurrent clients: Redis's default maxclients. Each is a
	// goroutine and, in plain and pipeline mode, a connection of its own.
	MaxClients = 10_000
	// MaxPipelineDepth is the most requests one pipeline may carry.
	MaxPipelineDepth = 10_000
	// MaxInFlight bounds clients × pipeline depth, the requests in flight at once (each
	// worker holds room for its pipeline's outcomes and commands).
	MaxInFlight = 100_000
	// MaxKeys is the most subjects: 2^24 (16,777,216). Their names, and the alias table of a
	// zipf distribution, are built before the run starts (about 40 bytes per subject).
	MaxKeys = 1 << 24
	// MaxCost is the most permits one request may ask for (an Outcome holds it in 16 bits).
	MaxCost = 65_535
)

// CheckRate returns why r, in requests per second, is not a rate of an arrival schedule, or
// nil: r must be a finite number in [0, MaxRate], and > 0 when positive is set.
func CheckRate(r float64, positive bool) error {
	switch {
	case math.IsNaN(r) || math.IsInf(r, 0):
		return fmt.Errorf("must be a finite number of requests per second, got %v", r)
	case r < 0:
		return fmt.Errorf("must not be negative, got %g", r)
	case positive && r == 0:
		return fmt.Errorf("must be > 0")
	case r > MaxRate:
		return fmt.Errorf("must be at most %d requests per second (all clients together), got %g", MaxRate, r)
	}
	return nil
}

// CheckDuration returns why d is not the length of a run's measured part, or nil: d must be in
// [MinDuration, MaxSpan].
func CheckDuration(d time.Duration) error {
	switch {
	case d <= 0:
		return fmt.Errorf("must be > 0, got %s", d)
	case d < MinDuration:
		return fmt.Errorf("must be at least %s (shorter runs measure too few requests), got %s", MinDuration, d)
	case d > MaxSpan:
		return fmt.Errorf("must be at most %s, got %s", MaxSpan, d)
	}
	return nil
}

// CheckWarmup returns why w is not a warmup, or nil: w must be in [0, MaxSpan].
func CheckWarmup(w time.Duration) error {
	switch {
	case w < 0:
		return fmt.Errorf("must be >= 0, got %s", w)
	case w > MaxSpan:
		return fmt.Errorf("must be at most %s, got %s", MaxSpan, w)
	}
	return nil
}

// CheckSpan returns why a run of warmup w and measured part d is too long, or nil: w + d must
// be at most MaxSpan. Each of w and d is assumed to have passed its own check.
func CheckSpan(w, d time.Duration) error {
	if w+d > MaxSpan {
		return fmt.Errorf("warmup %s + duration %s is %s; a run may last at most %s", w, d, w+d, MaxSpan)
	}
	return nil
}

// CheckClients returns why n is not a number of clients, or nil: n must be in [1, MaxClients].
func CheckClients(n int) error {
	if n < 1 || n > MaxClients {
		return fmt.Errorf("must be in [1, %d], got %d", MaxClients, n)
	}
	return nil
}

// CheckPipelineDepth returns why depth is not a pipeline depth for clients clients, or nil:
// depth must be in [1, MaxPipelineDepth] and clients × depth at most MaxInFlight.
func CheckPipelineDepth(depth, clients int) error {
	switch {
	case depth < 1 || depth > MaxPipelineDepth:
		return fmt.Errorf("must be in [1, %d], got %d", MaxPipelineDepth, depth)
	case clients > 0 && depth > MaxInFlight/clients:
		return fmt.Errorf("%d clients × depth %d would put %d requests in flight; at most %d may be",
			clients, depth, clients*depth, MaxInFlight)
	}
	return nil
}

// CheckKeyCount returns why n is not a number of subjects, or nil: n must be in [1, MaxKeys].
func CheckKeyCount(n int) error {
	if n < 1 || n > MaxKeys {
		return fmt.Errorf("must be in [1, %d], got %d", MaxKeys, n)
	}
	return nil
}

// CheckCost returns why c is not a request's cost in permits, or nil: c must be in [1,
// MaxCost].
func CheckCost(c int64) error {
	if c < 1 || c > MaxCost {
		return fmt.Errorf("must be in [1, %d], got %d", MaxCost, c)
	}
	return nil
}

// CheckShare returns why x is not a share, or nil: x must be a number in [0, 1].
func CheckShare(x float64) error {
	if !(x >= 0 && x <= 1) {
		return fmt.Errorf("must be in [0, 1], got %v", x)
	}
	return nil
}

// CheckExponent returns why s is not a zipf exponent, or nil: s must be a finite number >= 0.
func CheckExponent(s float64) error {
	if math.IsNaN(s) || math.IsInf(s, 0) || s < 0 {
		return fmt.Errorf("must be a finite number >= 0, got %v", s)
	}
	return nil
}
