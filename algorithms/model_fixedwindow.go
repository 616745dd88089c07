package algorithms

// fixedWindowModel is the reference model of `fixed-window` (scripts/fixed_window.lua): per
// subject, the index of the latest aligned window with an admission and the permits admitted in
// it (the script keeps the same in a hash field named by the index). Client is ignored.
type fixedWindowModel struct {
	limit, windowUs int64
	state           map[string]fixedWindowState
}

type fixedWindowState struct{ window, count int64 }

func newFixedWindowModel(l Limit) *fixedWindowModel {
	return &fixedWindowModel{limit: l.Limit, windowUs: l.Window.Microseconds(), state: map[string]fixedWindowState{}}
}

// Decide implements Model: admitted when count + cost <= limit in floor(t/W); a time in a window
// before the stored one is denied, as the script does.
func (m *fixedWindowModel) Decide(subject, _ string, cost int64, tMicros int64) bool {
	idx := floorDiv(tMicros, m.windowUs)
	st, ok := m.state[subject]
	var n int64
	if ok {
		if st.window > idx {
			return false
		}
		if st.window == idx {
			n = st.count
		}
	}
	if n+cost > m.limit {
		return false
	}
	m.state[subject] = fixedWindowState{window: idx, count: n + cost}
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
