package algorithms

// slidingLogModel is the reference model of `sliding-log` (scripts/sliding_log.lua): per subject,
// the admission time in µs of every admitted permit still inside the window. Client is ignored.
type slidingLogModel struct {
	limit, windowUs int64
	logs            map[string][]int64
}

func newSlidingLogModel(l Limit) *slidingLogModel {
	return &slidingLogModel{limit: l.Limit, windowUs: l.Window.Microseconds(), logs: map[string][]int64{}}
}

// Decide implements Model: entries at or before t−W leave; the request is admitted when the
// entries left plus cost are at most limit, and then adds cost entries at t.
func (m *slidingLogModel) Decide(subject, _ string, cost int64, tMicros int64) bool {
	log := m.logs[subject]
	cut := tMicros - m.windowUs
	kept := log[:0]
	for _, ts := range log {
		if ts > cut {
			kept = append(kept, ts)
		}
	}
	if int64(len(kept))+cost > m.limit {
		m.logs[subject] = kept
		return false
	}
	for range cost {
		kept = append(kept, tMicros)
	}
	m.logs[subject] = kept
	return true
}
