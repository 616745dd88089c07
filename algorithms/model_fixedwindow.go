package algorithms

// fixedWindowModel is the reference model of `fixed-window` (scripts/fixed_window.lua): per
// subject, the permits counted in its latest window with a count and in the window before it (the
// script keeps one counter per subject until its window ends on the server's clock; with fixed
// times, in tests, one per window, in a key named by the window). Client is ignored.
type fixedWindowModel struct {
	limit, windowUs int64
	state           map[string]fixedWindowState
}

// fixedWindowState is a subject's latest window with a count, its count, and the count of the
// window before it.
type fixedWindowState struct{ window, count, prev int64 }

func newFixedWindowModel(l Limit) *fixedWindowModel {
	return &fixedWindowModel{limit: l.Limit, windowUs: l.Window.Microseconds(), state: map[string]fixedWindowState{}}
}

// Decide implements Model: admitted when count + cost <= limit in window ⌊t/W⌋. A time that steps
// back into the window before the latest counts in that window, as the script does while its key
// lives; one further back starts from 0, as the script does once the key of that window is gone
// (with decision times that never decrease, the case that replays have, neither happens).
func (m *fixedWindowModel) Decide(subject, _ string, cost int64, tMicros int64) bool {
	idx := floorDiv(tMicros, m.windowUs)
	st, ok := m.state[subject]
	var n int64
	switch {
	case !ok || idx > st.window+1:
	case idx == st.window+1:
		st.prev = st.count
	case idx == st.window:
		n = st.count
	case idx == st.window-1:
		n = st.prev
	}
	if n+cost > m.limit {
		return false
	}
	switch {
	case ok && idx == st.window-1:
		st.prev = n + cost
	case ok && idx < st.window-1:
	default:
		if !ok || idx > st.window+1 {
			st.prev = 0
		}
		st.window, st.count = idx, n+cost
	}
	m.state[subject] = st
	return true
}

// floorDiv is ⌊a/b⌋ for b > 0, also for negative a.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
