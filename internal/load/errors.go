package load

import (
	"cmp"
	"context"
	"errors"
	"io"
	"math"
	"net"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
)

// Error kinds that are not Redis error codes (see ErrorKindOf).
const (
	// KindTimeout: no reply within the client's timeout (the server may be paused, slow or cut
	// off). The request may have run.
	KindTimeout = "timeout"
	// KindRefused: the connection could not be opened: nothing listens at the address (the
	// server is down or restarting).
	KindRefused = "connection refused"
	// KindDial: the connection could not be opened for another reason than a refusal (a dial
	// timeout, no route).
	KindDial = "dial failed"
	// KindConnLost: the server closed or reset the connection (killed, restarted, CLIENT KILL,
	// a proxy's reset). A request in flight may have run.
	KindConnLost = "connection lost"
	// KindPoolTimeout: no connection of the client's pool came free in time.
	KindPoolTimeout = "pool timeout"
	// KindClosed: the client was closed (the run ended).
	KindClosed = "client closed"
	// KindBadReply: the reply could not be read as a decision (algorithms.ErrBadReply).
	KindBadReply = "bad reply"
	// KindCost: the algorithm cannot charge the cost asked (algorithms.ErrCostUnsupported).
	KindCost = "cost unsupported"
	// KindErrorReply: an error reply that starts with no error code.
	KindErrorReply = "error reply"
	// KindOther: anything else.
	KindOther = "other"
	// KindNoPerm: Redis refused the user a command or a key (see Refused), in whichever words:
	// NOPERM for a command sent, an ERR for one a script called.
	KindNoPerm = "NOPERM"
)

// ErrorKindOf names what kind of error err is, in a few words: for an error reply, Redis's error
// code, its first word ("OOM", "NOSCRIPT", "ERR" for a script that raised an error, "BUSY",
// "LOADING", "MOVED", "CLUSTERDOWN", ...), except that every ACL refusal, a command a script
// called included, is KindNoPerm (see Refused); otherwise what happened to the connection
// (KindTimeout, KindRefused, KindDial, KindConnLost, KindPoolTimeout, KindClosed) or to the
// reply (KindBadReply), KindCost, or KindOther. "" for nil.
func ErrorKindOf(err error) string {
	if err == nil {
		return ""
	}
	var re redis.Error
	if errors.As(err, &re) {
		if Refused(err) {
			return KindNoPerm
		}
		return replyCode(re.Error())
	}
	var ne net.Error
	var op *net.OpError
	switch {
	case errors.Is(err, algorithms.ErrBadReply):
		return KindBadReply
	case errors.Is(err, algorithms.ErrCostUnsupported):
		return KindCost
	case errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrPoolExhausted):
		return KindPoolTimeout
	case errors.Is(err, redis.ErrClosed):
		return KindClosed
	case errors.Is(err, syscall.ECONNREFUSED):
		return KindRefused
	case errors.As(err, &op) && op.Op == "dial":
		return KindDial
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return KindTimeout
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED), errors.Is(err, net.ErrClosed):
		return KindConnLost
	}
	return KindOther
}

// Refused reports whether err holds Redis refusing the user a command or a key, in each of its
// wordings: a NOPERM reply to a command sent, and for a command a script called, which Redis checks
// against the caller's ACL too, "ERR The user executing the script can't run this command or
// subcommand" and "... can't access at least one of the keys mentioned in the command arguments"
// (Redis 7.0), and "ERR ACL failure in script: User u has no permissions to run the 'incr'
// command" (7.2 and later; "... to access the 'k' key").
func Refused(err error) bool {
	var re redis.Error
	if err == nil || !errors.As(err, &re) {
		return false
	}
	s := re.Error()
	return strings.HasPrefix(s, "NOPERM") || strings.HasPrefix(s, "ERR ACL failure in script") ||
		strings.HasPrefix(s, "ERR The user executing the script can't")
}

// Unreachable reports whether kind (an ErrorKindOf) says the request could not reach Redis at all:
// a refused or failed dial, or a connection the server closed. A timeout is not: a paused or
// slow server is still there.
func Unreachable(kind string) bool {
	return kind == KindRefused || kind == KindDial || kind == KindConnLost
}

// replyCode returns the error code of a Redis error reply: its first word when that is made of
// upper-case letters, digits and underscores and starts with a letter, else KindErrorReply.
func replyCode(msg string) string {
	word, _, _ := strings.Cut(msg, " ")
	if word == "" || word[0] < 'A' || word[0] > 'Z' {
		return KindErrorReply
	}
	for _, r := range word {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '_' {
			return KindErrorReply
		}
	}
	return word
}

// ErrorClass is one kind of error a run met, as result.json's error_classes lists it.
type ErrorClass struct {
	// Kind is ErrorKindOf the errors: Redis's error code, or what happened to the connection.
	Kind string `json:"kind"`
	// Outcome is "failed" (the request did not run) or "unknown" (it may have run: see Class).
	Outcome string `json:"outcome"`
	// Count is the number of requests that ended so.
	Count uint64 `json:"count"`
	// First is the text of the first of them, Redis's own words for an error reply.
	First string `json:"first"`
	// FirstAtS is when the first of them came back, seconds from the start of the measured part.
	FirstAtS float64 `json:"first_at_s"`
}

// errorKey identifies one class of errors: its kind and the outcome.
type errorKey struct {
	kind  string
	class Class
}

// errorTally is what Errors keeps of one class.
type errorTally struct {
	count uint64
	first string
	at    time.Duration // run offset of the first's reply
}

// Errors is the aggregator of a run's errors by class (kind and outcome): how many requests met
// each, and the first of each, its text and when its reply came back. Decisions are not counted.
// The first of a class is the one whose reply came back earliest (the smaller text on a tie), so
// that merging shards gives what one aggregator of the whole run gives. Not safe for concurrent
// use; the zero value is an empty tally.
type Errors struct {
	classes map[errorKey]*errorTally
}

var _ Aggregator = (*Errors)(nil)

// NewErrors returns an empty tally.
func NewErrors() *Errors { return &Errors{} }

// Add counts o when it is an error.
func (e *Errors) Add(o *Outcome) {
	if o.Class == ClassOK {
		return
	}
	text := "no error text"
	if o.Err != nil {
		text = o.Err.Error()
	}
	e.add(errorKey{ErrorKindOf(o.Err), o.Class}, 1, text, o.Received)
}

func (e *Errors) add(k errorKey, n uint64, first string, at time.Duration) {
	if e.classes == nil {
		e.classes = map[errorKey]*errorTally{}
	}
	t := e.classes[k]
	if t == nil {
		e.classes[k] = &errorTally{count: n, first: first, at: at}
		return
	}
	t.count += n
	if at < t.at || at == t.at && first < t.first {
		t.first, t.at = first, at
	}
}

// Merge implements Aggregator.
func (e *Errors) Merge(other Aggregator) error {
	o, ok := other.(*Errors)
	if !ok {
		return ErrMismatch
	}
	for k, t := range o.classes {
		e.add(k, t.count, t.first, t.at)
	}
	o.classes = nil
	return nil
}

// Fresh implements Aggregator.
func (e *Errors) Fresh() Aggregator { return NewErrors() }

// Finish implements Aggregator: it adds nothing to the counts.
func (e *Errors) Finish() Counts { return Counts{} }

// Total returns the number of errors counted.
func (e *Errors) Total() uint64 {
	var n uint64
	for _, t := range e.classes {
		n += t.count
	}
	return n
}

// Classes returns the classes counted, the most frequent first (then by kind and outcome), with
// the times of their first errors in seconds from from (a run offset: the start of the measured
// part), rounded to the ms.
func (e *Errors) Classes(from time.Duration) []ErrorClass {
	out := make([]ErrorClass, 0, len(e.classes))
	for k, t := range e.classes {
		out = append(out, ErrorClass{Kind: k.kind, Outcome: k.class.String(), Count: t.count, First: t.first,
			FirstAtS: math.Round((t.at-from).Seconds()*1000) / 1000})
	}
	slices.SortFunc(out, func(a, b ErrorClass) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Outcome, b.Outcome))
	})
	return out
}

// The encoding of Errors (see Encoder).
const errorsKind, errorsVersion = "lber", 1

// MarshalBinary encodes e: the number of classes, then each class in a fixed order (kind,
// outcome), as its kind, outcome, count, first error's reply offset in ns and text.
func (e *Errors) MarshalBinary() ([]byte, error) {
	enc := NewEncoder(errorsKind, errorsVersion)
	keys := make([]errorKey, 0, len(e.classes))
	for k := range e.classes {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b errorKey) int { return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(a.class, b.class)) })
	enc.Uvarint(uint64(len(keys)))
	for _, k := range keys {
		t := e.classes[k]
		enc.Bytes([]byte(k.kind))
		enc.Uvarint(uint64(k.class))
		enc.Uvarint(t.count)
		enc.Varint(int64(t.at))
		enc.Bytes([]byte(t.first))
	}
	return enc.Encoding(), nil
}

// UnmarshalBinary decodes what MarshalBinary encoded into e, replacing what e held. Errors wrap
// ErrEncoding.
func (e *Errors) UnmarshalBinary(b []byte) error {
	return Decode(e, b, errorsKind, errorsVersion, func(d *Decoder) (Errors, error) {
		var out Errors
		n := d.Count(4)
		for range n {
			kind := string(d.Bytes())
			class := Class(d.Uvarint())
			count := d.Uvarint()
			at := time.Duration(d.Varint())
			first := string(d.Bytes())
			if d.err != nil {
				break // Decode reports it
			}
			if class != ClassFailed && class != ClassUnknown {
				return out, d.Errorf("error class of outcome %d", class)
			}
			if count == 0 {
				return out, d.Errorf("class %q counts no error", kind)
			}
			k := errorKey{kind, class}
			if out.classes != nil && out.classes[k] != nil {
				return out, d.Errorf("class %q (%s) twice", kind, class)
			}
			out.add(k, count, first, at)
		}
		return out, nil
	})
}
