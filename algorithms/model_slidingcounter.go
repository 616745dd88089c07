package algorithms

// slidingCounterModel is the reference model of `sliding-counter` (scripts/sliding_counter.lua):
// per subject, the permits admitted in each of its latest three windows (the script keeps one
// counter per window, in a key named by the window, until the window after it ends). Client is
// ignored.
type slidingCounterModel struct {
	limit, windowUs int64
	state           map[string]*slidingCounterState
}

// slidingCounterState is a subject's latest window with an admission and the permits admitted in
// it and in the two windows before it (counts[0] is the latest).
type slidingCounterState struct {
	window int64
	counts [3]int64
}

// count returns the permits admitted in window idx: 0 for a window the model no longer holds.
func (s *slidingCounterState) count(idx int64) int64 {
	if d := s.window - idx; d >= 0 && d < int64(len(s.counts)) {
		return s.counts[d]
	}
	return 0
}

func newSlidingCounterModel(l Limit) *slidingCounterModel {
	return &slidingCounterModel{limit: l.Limit, windowUs: l.Window.Microseconds(), state: map[string]*slidingCounterState{}}
}

// Decide implements Model: admitted when prev·(W − e) + (cur + cost)·W <= L·W, with cur and prev
// the permits of the current and the previous window and e the time into the current window. A
// time that steps back counts in its own window's counters while the model holds them (the
// script's keys live until the window after ends), else from 0.
func (m *slidingCounterModel) Decide(subject, _ string, cost int64, tMicros int64) bool {
	w := m.windowUs
	idx := floorDiv(tMicros, w)
	e := tMicros - idx*w
	st := m.state[subject]
	if st == nil {
		st = &slidingCounterState{window: idx}
		m.state[subject] = st
	}
	cur, prev := st.count(idx), st.count(idx-1)
	if cur+cost > m.limit || prev*(w-e)+(cur+cost)*w > m.limit*w {
		return false
	}
	if idx > st.window {
		var shifted [3]int64
		for i := range shifted {
			shifted[i] = st.count(idx - int64(i))
		}
		st.window, st.counts = idx, shifted
	}
	if d := st.window - idx; d < int64(len(st.counts)) {
		st.counts[d] += cost
	}
	return true
}
