package algorithms

// twoLevelModel is the reference model of resource-consumer: a sliding-window log of admitted
// permits per subject (limit Limit) and per (subject, client) (limit Consumer()), over the
// half-open window (t−W, t] in µs. A request of cost n at t is admitted when, after dropping
// entries at or before t−W, the subject's log holds at most Limit−n permits and the pair's log at
// most Consumer()−n; it is then recorded in both. This is exactly what resource_consumer.lua
// decides when given the times the script returned.
type twoLevelModel struct {
	rlimit, climit int64
	window         int64 // µs
	resources      map[string]*twoLevelLog
	consumers      map[twoLevelPair]*twoLevelLog
}

type twoLevelPair struct{ subject, client string }

// twoLevelLog is the admissions of one key in time order, with the sum of their costs.
type twoLevelLog struct {
	times, costs []int64
	head         int
	sum          int64
}

// trim drops the entries at or before cutoff.
func (g *twoLevelLog) trim(cutoff int64) {
	for g.head < len(g.times) && g.times[g.head] <= cutoff {
		g.sum -= g.costs[g.head]
		g.head++
	}
	if g.head > 1024 && g.head*2 > len(g.times) {
		g.times = append(g.times[:0], g.times[g.head:]...)
		g.costs = append(g.costs[:0], g.costs[g.head:]...)
		g.head = 0
	}
}

func (g *twoLevelLog) add(t, cost int64) {
	g.times = append(g.times, t)
	g.costs = append(g.costs, cost)
	g.sum += cost
}

// newTwoLevelModel returns an empty model for l; l must be valid.
func newTwoLevelModel(l Limit) *twoLevelModel {
	return &twoLevelModel{
		rlimit:    l.Limit,
		climit:    l.Consumer(),
		window:    l.Window.Microseconds(),
		resources: map[string]*twoLevelLog{},
		consumers: map[twoLevelPair]*twoLevelLog{},
	}
}

// Decide implements Model.
func (m *twoLevelModel) Decide(subject, client string, cost int64, tMicros int64) bool {
	if cost < 1 {
		cost = 1
	}
	r := m.resources[subject]
	if r == nil {
		r = &twoLevelLog{}
		m.resources[subject] = r
	}
	p := twoLevelPair{subject, client}
	c := m.consumers[p]
	if c == nil {
		c = &twoLevelLog{}
		m.consumers[p] = c
	}
	r.trim(tMicros - m.window)
	c.trim(tMicros - m.window)
	if r.sum+cost > m.rlimit || c.sum+cost > m.climit {
		return false
	}
	r.add(tMicros, cost)
	c.add(tMicros, cost)
	return true
}
