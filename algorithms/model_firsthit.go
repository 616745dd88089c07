package algorithms

// firstHitModel is the reference model of an exact first-hit window limiter, the contract
// first-hit-window(L, W) kept exactly: per subject, the start s of the current window and the
// permits admitted in it. Client is ignored.
type firstHitModel struct {
	limit, windowUs int64
	state           map[string]firstHitState
}

type firstHitState struct{ start, used int64 }

// NewFirstHitModel returns a fresh reference model of an exact first-hit window limiter for
// l.Limit permits per window of l.Window (l.Burst and l.ConsumerLimit are ignored), keyed by
// subject. A request at t µs opens a window [t, t+W) when its subject has none or t ≥ s + W
// (the previous window ended), whether it is then admitted or not, and is admitted when the
// window's admitted permits plus its cost are at most L. A window starts with nothing used: a
// key created by the request, as INCR makes it. Decision times must not decrease.
//
// It is exact at the µs and admits only what fits, so it differs from the common script
// (INCRBY the cost, PEXPIRE the window on the first hit, admit while the count is at most L) in
// two ways that never make the script over-admit: the script counts denied costs too (with
// costs above 1 it can then deny what this model admits), and Redis expires a key once its
// millisecond clock has passed the expiry, so the script's window lasts up to a millisecond
// longer (first-hit-window with a granularity of 1ms covers it; see package verify).
func NewFirstHitModel(l Limit) Model {
	return &firstHitModel{limit: l.Limit, windowUs: l.Window.Microseconds(), state: map[string]firstHitState{}}
}

// Decide implements Model.
func (m *firstHitModel) Decide(subject, _ string, cost int64, tMicros int64) bool {
	st, ok := m.state[subject]
	if !ok || tMicros >= st.start+m.windowUs {
		st = firstHitState{start: tMicros}
	}
	admitted := st.used+cost <= m.limit
	if admitted {
		st.used += cost
	}
	m.state[subject] = st
	return admitted
}
