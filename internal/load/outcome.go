package load

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
)

// Class is what the harness knows about a request's effect.
type Class uint8

// Classes.
const (
	// ClassOK: a decision came back (allowed or denied).
	ClassOK Class = iota
	// ClassFailed: an error that means the request did not run: no connection from the pool in
	// time, the dial was refused, the client was closed, or Redis answered with an error reply
	// (NOSCRIPT, WRONGTYPE, MOVED, a script error, ...). Never an admission.
	ClassFailed
	// ClassUnknown: an error after the request may have reached Redis (a read timeout, EOF, a
	// reset connection, a reply that could not be decoded): it may have run and may have
	// admitted. The verifier treats it as a possible admission.
	ClassUnknown
)

func (c Class) String() string {
	switch c {
	case ClassOK:
		return "ok"
	case ClassFailed:
		return "failed"
	case ClassUnknown:
		return "unknown"
	}
	return "invalid"
}

// Classify returns the Class of a request that returned err. Anything it does not recognise as
// "did not run" is ClassUnknown, never ClassFailed: an unknown outcome can only weaken a pass,
// never hide a violation.
func Classify(err error) Class {
	if err == nil {
		return ClassOK
	}
	if errors.Is(err, algorithms.ErrBadReply) {
		// The script ran; its reply could not be read, so it may have admitted.
		return ClassUnknown
	}
	if errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrPoolExhausted) || errors.Is(err, algorithms.ErrNotSent) ||
		errors.Is(err, redis.ErrClosed) || errors.Is(err, algorithms.ErrCostUnsupported) ||
		errors.Is(err, algorithms.ErrTemplate) {
		return ClassFailed
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return ClassFailed
	}
	var rErr redis.Error
	if errors.As(err, &rErr) {
		return ClassFailed
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return ClassUnknown
	}
	return ClassUnknown
}

// Outcome is the record of one request. Times are offsets from the run's start on the monotonic
// clock (Result.Start is the wall time of offset 0).
type Outcome struct {
	// Tick is the request's index in the schedule (open loop) or its index in the closed loop's
	// interleaving of clients; subject and client are pure functions of it and the seed.
	Tick uint64
	// Subject is the index of the subject in Result.Log.Subjects.
	Subject uint32
	// Client is the index of the logical client in Result.Log.Clients.
	Client uint16
	// Cost is the number of permits asked for.
	Cost uint16
	// Intended is when the schedule wanted the request sent; Sent is when the worker handed it
	// to its connection; Received is when its reply (or error) came back. Intended == Sent in a
	// closed loop.
	Intended, Sent, Received time.Duration
	// Decision is the decoded reply; meaningful only when Class is ClassOK.
	Decision algorithms.Decision
	Class    Class
	// Err is the request's error, nil for ClassOK.
	Err error
	// WaitShort, in a run whose plan has a Wait, says the WAIT after the request came back with
	// fewer replicas than it asked for (its timeout passed), or with an error; false otherwise.
	WaitShort bool
}

// Latency returns Received − Intended: the latency a caller of an open-loop schedule saw,
// including any time the request waited to be sent.
func (o *Outcome) Latency() time.Duration { return o.Received - o.Intended }

// Service returns Received − Sent: the round trip alone.
func (o *Outcome) Service() time.Duration { return o.Received - o.Sent }
