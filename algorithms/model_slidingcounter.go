package algorithms

// slidingCounterModel is the reference model of `sliding-counter` (scripts/sliding_counter.lua):
// per subject, the current aligned window's index and the permits admitted in it and in the
// window before. Client is ignored.
type slidingCounterModel struct {
	limit, windowUs int64
	state           map[string]slidingCounterState
}

type slidingCounterState struct{ window, cur, prev int64 }

func newSlidingCounterModel(l Limit) *slidingCounterModel {
	return &slidingCounterModel{limit: l.Limit, windowUs: l.Window.Microseconds(), state: map[string]slidingCounterState{}}
}

// Decide implements Model: admitted when prev·(W − e) + (cur + cost)·W <= L·W, with e the time
// into the current window.
func (m *slidingCounterModel) Decide(subject, _ string, cost int64, tMicros int64) bool {
	w := m.windowUs
	idx := floorDiv(tMicros, w)
	e := tMicros - idx*w
	var cur, prev int64
	if st, ok := m.state[subject]; ok {
		switch {
		case st.window > idx:
			return false
		case st.window == idx:
			cur, prev = st.cur, st.prev
		case st.window == idx-1:
			prev = st.cur
		}
	}
	if prev*(w-e)+(cur+cost)*w > m.limit*w {
		return false
	}
	m.state[subject] = slidingCounterState{window: idx, cur: cur + cost, prev: prev}
	return true
}
