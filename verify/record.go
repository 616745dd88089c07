package verify

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/limitbench/limitbench/algorithms"
)

// SlidingWindow returns the contract sliding-window(limit, window): every half-open interval
// (t−window, t] holds at most limit permits of one subject (see the package doc). Set its
// Granularity to the clock resolution the limiter is known to have, its Scope to count per
// subject and client, or its Also to add limits that hold at the same time.
func SlidingWindow(limit int64, window time.Duration) algorithms.Contract {
	return algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: limit, Window: window}
}

// FixedWindow returns the contract fixed-window(limit, window): every window [k·window,
// (k+1)·window) aligned on the Unix epoch holds at most limit permits of one subject.
func FixedWindow(limit int64, window time.Duration) algorithms.Contract {
	return algorithms.Contract{Kind: algorithms.FixedWindow, Limit: limit, Window: window}
}

// FirstHitWindow returns the contract first-hit-window(limit, window): a window opens at the
// first request that reaches the limiter after the previous window ended, lasts window, and
// holds at most limit permits.
func FirstHitWindow(limit int64, window time.Duration) algorithms.Contract {
	return algorithms.Contract{Kind: algorithms.FirstHitWindow, Limit: limit, Window: window}
}

// TokenBucket returns the contract token-bucket(capacity, permits/per): every closed interval
// [t1, t2] holds at most capacity + (permits/per)·(t2 − t1) permits of one subject.
func TokenBucket(capacity, permits int64, per time.Duration) algorithms.Contract {
	return algorithms.Contract{Kind: algorithms.TokenBucket, Capacity: capacity, RefillPermits: permits, RefillPer: per}
}

// GCRA returns the contract a generic cell rate algorithm with burst burst and rate permits per
// per keeps: it is token-bucket(burst, permits/per), which is what GCRA's theoretical arrival
// time enforces (go-redis/redis_rate's Limit{Rate, Burst, Period} keeps GCRA(Burst, Rate,
// Period)).
func GCRA(burst, permits int64, per time.Duration) algorithms.Contract {
	return TokenBucket(burst, permits, per)
}

// Recorder builds a Log from plain values: one call of Record per request, from any number of
// goroutines. It names subjects and clients by their strings, takes times as time.Time and
// converts them to the Log's µs, widening never narrowing: a send time is rounded down and a
// receive time up to the µs. The zero Recorder is ready to use; its Log's Base is the first
// send time recorded, rounded down to the µs, and every time must lie within ±6.36 days of it.
//
// Log.Fresh is left false: set it on the returned Log when the limiter held no state before
// the first request recorded (only first-hit-window uses it).
type Recorder struct {
	mu       sync.Mutex
	log      Log
	based    bool
	subjects map[string]uint32
	clients  map[string]uint16
}

// Record adds one request of permits for subject from client whose decision happened somewhere
// between sent and received (sent == received when the exact decision time is known), with
// outcome k: Admitted, Denied, Unknown (it may or may not have been admitted, and may have run
// at any instant from sent on) or Failed (an error known not to have admitted anything). It
// returns an error wrapping ErrBadLog, and records nothing, when received is before sent, k is
// not a kind, permits is outside [1, 65535], or the log already holds 65536 clients or 2^32
// subjects.
func (r *Recorder) Record(subject, client string, permits int64, sent, received time.Time, k Kind) error {
	if permits < 1 || permits > math.MaxUint16 {
		return fmt.Errorf("%w: permits %d outside [1, %d]", ErrBadLog, permits, math.MaxUint16)
	}
	if received.Before(sent) {
		return fmt.Errorf("%w: received %s before sent %s", ErrBadLog, received, sent)
	}
	lo := sent.UnixMicro() // Nanosecond() is never negative: this rounds down
	hi := received.Unix()*1_000_000 + ceilMicros(time.Duration(received.Nanosecond()))
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.based {
		r.log.Base, r.based = lo, true
		r.subjects, r.clients = map[string]uint32{}, map[string]uint16{}
	}
	s, knownSubject := r.subjects[subject]
	if !knownSubject {
		if int64(len(r.log.Subjects)) > math.MaxUint32 {
			return fmt.Errorf("%w: more than 2^32 subjects", ErrBadLog)
		}
		s = uint32(len(r.log.Subjects))
	}
	c, knownClient := r.clients[client]
	if !knownClient {
		if len(r.log.Clients) > math.MaxUint16 {
			return fmt.Errorf("%w: more than %d clients", ErrBadLog, math.MaxUint16+1)
		}
		c = uint16(len(r.log.Clients))
	}
	e, err := NewEvent(lo-r.log.Base, hi-r.log.Base, s, c, uint16(permits), k)
	if err != nil {
		return fmt.Errorf("record %s for subject %q: %w", k, subject, err)
	}
	if !knownSubject {
		r.subjects[subject] = s
		r.log.Subjects = append(r.log.Subjects, subject)
	}
	if !knownClient {
		r.clients[client] = c
		r.log.Clients = append(r.log.Clients, client)
	}
	r.log.Events = append(r.log.Events, e)
	return nil
}

// Log returns a copy of what was recorded so far, for Check, Accuracy, Replay and the rest of
// the package (which reorder its events in place); recording may go on.
func (r *Recorder) Log() *Log {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.log
	l.Subjects = append([]string(nil), r.log.Subjects...)
	l.Clients = append([]string(nil), r.log.Clients...)
	l.Events = append([]Event(nil), r.log.Events...)
	return &l
}
