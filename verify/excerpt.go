package verify

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/limitbench/limitbench/algorithms"
)

// MaxExcerpt is the most requests an Excerpt holds by default: about what a browser draws
// smoothly, and Jepsen's timeline's cap.
const MaxExcerpt = 10_000

// Excerpt is a bounded part of an admission log around its worst violation: the requests of the
// scope that broke the contract (and, for a per-client scope, the other clients of its subject)
// from about one window before the worst violating set to one window after it, for the report's
// violation explorer. result.json's entry "excerpt". Times are µs from the start of the measured
// part, on the log's clock: the clock the algorithm decided by (a client-clock algorithm's
// times are each client's own, skew included; see AdmissionLog).
type Excerpt struct {
	// Violation is "definite" when the worst set breaks the contract in every placement of its
	// decision times, "possible" when in some.
	Violation string `json:"violation"`
	// Contract is the limit that was broken (one of the contract's limits, without its Also).
	Contract string `json:"contract"`
	// Kind, Limit, WindowUS, Capacity, RefillPermits, RefillPerUS and GranularityUS are that
	// limit's parameters, for the explorer's allowance line: L per window, or C + r·Δt with r =
	// RefillPermits / RefillPerUS permits per µs.
	Kind          algorithms.ContractKind `json:"kind"`
	Limit         int64                   `json:"limit,omitempty"`
	WindowUS      int64                   `json:"window_us,omitempty"`
	Capacity      int64                   `json:"capacity,omitempty"`
	RefillPermits int64                   `json:"refill_permits,omitempty"`
	RefillPerUS   int64                   `json:"refill_per_us,omitempty"`
	GranularityUS int64                   `json:"granularity_us,omitempty"`
	// Scope is what the limit counts over ("subject", "subject+client" or "consumer"); Subject
	// and Client name the scope that broke it (a name not part of the scope is empty).
	Scope   string `json:"scope"`
	Subject string `json:"subject,omitempty"`
	Client  string `json:"client,omitempty"`
	// FromUS and ToUS bound the worst violating set (its earliest widened Lo, its latest widened
	// Hi); Permits is what it holds, Allowed what the contract allows it.
	FromUS  int64 `json:"from_us"`
	ToUS    int64 `json:"to_us"`
	Permits int64 `json:"permits"`
	Allowed int64 `json:"allowed"`
	// FirstUS is where the first definite violation of that limit ends (see Violation.At), when
	// there is one.
	FirstUS *int64 `json:"first_us,omitempty"`
	// SpanFromUS and SpanToUS are the time span the excerpt covers.
	SpanFromUS int64 `json:"span_from_us"`
	SpanToUS   int64 `json:"span_to_us"`
	// Lanes names the explorer's lanes: the clients (by Log.Clients name) for a subject or
	// subject+client scope, the subjects for a consumer scope. LaneClients holds, for each lane,
	// the client's index in Log.Clients, or -1 for a subject's lane.
	Lanes       []string `json:"lanes"`
	LaneClients []int    `json:"lane_clients"`
	// Requests are the excerpt's requests, by Lo.
	Requests []ExcerptRequest `json:"requests"`
	// Omitted counts the requests of the lanes within the span that the cap left out, the
	// farthest from the violating set first. CountPartial says that some of them were admissions
	// of the scope inside the set's span, so the running count the explorer draws is short of
	// the checker's.
	Omitted      int64 `json:"omitted,omitempty"`
	CountPartial bool  `json:"count_partial,omitempty"`
}

// ExcerptRequest is one request of an Excerpt: its lane, its decision interval [Lo, Hi] in µs
// from the start of the measured part (Lo == Hi: the server's decision time, exactly), what
// happened to it (K: "a" admitted, "d" denied, "u" unknown, "f" failed), its permits, and
// whether it counts against the broken limit's scope (S).
type ExcerptRequest struct {
	Lane    int    `json:"l"`
	Lo      int64  `json:"lo"`
	Hi      int64  `json:"hi"`
	K       string `json:"k"`
	Permits int    `json:"p"`
	S       bool   `json:"s,omitempty"`
}

// kindLetter is an ExcerptRequest's K for k.
func kindLetter(k Kind) string {
	switch k {
	case Admitted:
		return "a"
	case Denied:
		return "d"
	case Unknown:
		return "u"
	}
	return "f"
}

// NewExcerpt checks log against c (on a copy of its events: log is not changed) and returns an
// excerpt of at most most requests (MaxExcerpt when most <= 0) around its worst violation: the
// definite one with the largest excess over c's limits, else the possible one with the largest
// excess. start is where the measured part starts on the log's clock, µs since the Unix epoch.
// It returns nil, nil when c is no contract or nothing was violated, and Check's error when the
// log cannot be checked.
func NewExcerpt(c algorithms.Contract, log *Log, start int64, most int) (*Excerpt, error) {
	if log == nil || c.Kind == algorithms.NoContract {
		return nil, nil
	}
	if most <= 0 {
		most = MaxExcerpt
	}
	cp := *log
	cp.Events = slices.Clone(log.Events)
	rep, err := Check(c, &cp)
	if err != nil {
		return nil, fmt.Errorf("excerpt: %w", err)
	}
	li, definite := worstLimit(rep)
	if li < 0 {
		return nil, nil
	}
	lr := rep.Limits[li]
	w := lr.Worst
	x := &Excerpt{Violation: "definite", Scope: lr.Contract.Scope.String()}
	if !definite {
		w, x.Violation = lr.WorstPossible, "possible"
	}
	x.setLimit(lr.Contract)
	x.Subject, x.Client = w.Subject, w.Client
	x.FromUS, x.ToUS, x.Permits, x.Allowed = w.Lo-start, w.Hi-start, w.Permits, w.Allowed
	if first, ok := firstViolation(lr.Violations); ok {
		at := first - start
		x.FirstUS = &at
	}
	pad := max(x.WindowUS, x.refillTime(), (w.Hi-w.Lo)/2)
	x.SpanFromUS, x.SpanToUS = x.FromUS-pad, x.ToUS+pad
	x.collect(log, start, lr.Contract.Scope, most)
	return x, nil
}

// worstLimit returns the index of the limit of rep with the worst definite violation, or, when
// none has one, with the worst possible one, and whether it is definite; -1 when none has either.
func worstLimit(rep Report) (int, bool) {
	best, bestPossible := -1, -1
	for i, l := range rep.Limits {
		if l.Definite > 0 && (best < 0 || l.Worst.Excess > rep.Limits[best].Worst.Excess) {
			best = i
		}
		if l.Possible > 0 && l.WorstPossible.Excess > 0 &&
			(bestPossible < 0 || l.WorstPossible.Excess > rep.Limits[bestPossible].WorstPossible.Excess) {
			bestPossible = i
		}
	}
	if best >= 0 {
		return best, true
	}
	return bestPossible, false
}

// firstViolation returns the earliest At of vs.
func firstViolation(vs []Violation) (int64, bool) {
	if len(vs) == 0 {
		return 0, false
	}
	return slices.MinFunc(vs, func(a, b Violation) int { return cmp.Compare(a.At, b.At) }).At, true
}

// setLimit records c's parameters (c has no Also).
func (x *Excerpt) setLimit(c algorithms.Contract) {
	x.Contract, x.Kind = c.String(), c.Kind
	x.GranularityUS = micros(c.Granularity)
	switch c.Kind {
	case algorithms.TokenBucket:
		x.Capacity, x.RefillPermits, x.RefillPerUS = c.Capacity, c.RefillPermits, micros(c.RefillPer)
	default:
		x.Limit, x.WindowUS = c.Limit, micros(c.Window)
	}
}

// refillTime is the µs a token bucket takes to refill from empty (0 for the other kinds), at
// most an hour: the context the explorer shows on each side of a token bucket's violation.
func (x *Excerpt) refillTime() int64 {
	if x.RefillPermits <= 0 {
		return 0
	}
	const hour = 3600 * 1_000_000
	return min(hour, x.Capacity*x.RefillPerUS/x.RefillPermits)
}

// collect fills the lanes and requests of x from log: the events of x's subject (for a subject
// or subject+client scope) or of x's client (consumer scope) whose intervals meet the span, at
// most most of them, those nearest the violating set kept.
func (x *Excerpt) collect(log *Log, start int64, scope algorithms.Scope, most int) {
	subject, client := index(log.Subjects, x.Subject), index(log.Clients, x.Client)
	var picked []Event
	for _, e := range log.Events {
		switch {
		case scope == algorithms.PerConsumer && int(e.Client) != client,
			scope != algorithms.PerConsumer && int(e.Subject) != subject:
			continue
		}
		lo, hi := log.Base+e.Lo()-start, log.Base+e.Hi()-start
		if hi >= x.SpanFromUS && lo <= x.SpanToUS {
			picked = append(picked, e)
		}
	}
	inScope := func(e *Event) bool { return scope != algorithms.PerClient || int(e.Client) == client }
	if len(picked) > most {
		// Nearest the set first; among those as near, the admissions of the scope, which make
		// the running count.
		dist := func(e *Event) int64 {
			lo, hi := log.Base+e.Lo()-start, log.Base+e.Hi()-start
			return max(0, x.FromUS-hi, lo-x.ToUS)
		}
		slices.SortStableFunc(picked, func(a, b Event) int {
			if c := cmp.Compare(dist(&a), dist(&b)); c != 0 {
				return c
			}
			return cmp.Compare(rank(&b, inScope), rank(&a, inScope))
		})
		for _, e := range picked[most:] {
			if dist(&e) == 0 && e.Kind() == Admitted && inScope(&e) {
				x.CountPartial = true
			}
		}
		x.Omitted = int64(len(picked) - most)
		picked = picked[:most]
	}
	slices.SortFunc(picked, func(a, b Event) int { return cmpTime(&a, &b) })
	lanes := map[int]int{}
	for _, e := range picked {
		key := int(e.Client)
		if scope == algorithms.PerConsumer {
			key = -1 - int(e.Subject)
		}
		lane, ok := lanes[key]
		if !ok {
			lane = len(x.Lanes)
			lanes[key] = lane
			if key >= 0 {
				x.Lanes, x.LaneClients = append(x.Lanes, log.Clients[key]), append(x.LaneClients, key)
			} else {
				x.Lanes, x.LaneClients = append(x.Lanes, log.Subjects[e.Subject]), append(x.LaneClients, -1)
			}
		}
		x.Requests = append(x.Requests, ExcerptRequest{Lane: lane, Lo: log.Base + e.Lo() - start, Hi: log.Base + e.Hi() - start,
			K: kindLetter(e.Kind()), Permits: int(e.Permits), S: inScope(&e)})
	}
}

// rank orders events of one distance: the scope's admissions first.
func rank(e *Event, inScope func(*Event) bool) int {
	if e.Kind() == Admitted && inScope(e) {
		return 1
	}
	return 0
}

// index returns the index of name in names, or -1 (an empty name: not part of the scope).
func index(names []string, name string) int {
	if name == "" {
		return -1
	}
	return slices.Index(names, name)
}
