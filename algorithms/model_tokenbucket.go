package algorithms

// tokenBucketModel is the reference model of `token-bucket` (scripts/token_bucket.lua): per
// subject, tokens in units of 1/unit permit and the time they were counted at. Refill is rate
// units per µs, capped at capacity units. Client is ignored.
type tokenBucketModel struct {
	unit, rate, capacity int64
	state                map[string]tokenBucketState
}

type tokenBucketState struct{ tokens, ts int64 }

// tokenBucketUnits returns, for l, the units per permit U = W/g and the refill R = L/g units per µs,
// with g = gcd(L, W in µs), so that R/U = L/W exactly.
func tokenBucketUnits(l Limit) (unit, rate int64) {
	w := l.Window.Microseconds()
	g := gcd(l.Limit, w)
	return w / g, l.Limit / g
}

// refill returns min(capacity, tokens + rate·elapsed) units for elapsed >= 0 µs, without forming
// a product that could overflow: the bucket is full once elapsed >= ⌈(capacity − tokens)/rate⌉.
func refill(tokens, elapsed, rate, capacity int64) int64 {
	if elapsed >= (capacity-tokens+rate-1)/rate {
		return capacity
	}
	return tokens + elapsed*rate
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func newTokenBucketModel(l Limit) *tokenBucketModel {
	unit, rate := tokenBucketUnits(l)
	return &tokenBucketModel{unit: unit, rate: rate, capacity: l.Capacity() * unit, state: map[string]tokenBucketState{}}
}

// Decide implements Model.
func (m *tokenBucketModel) Decide(subject, _ string, cost int64, tMicros int64) bool {
	st, ok := m.state[subject]
	if !ok {
		st = tokenBucketState{tokens: m.capacity, ts: tMicros}
	} else if tMicros > st.ts {
		st = tokenBucketState{tokens: refill(st.tokens, tMicros-st.ts, m.rate, m.capacity), ts: tMicros}
	}
	need := cost * m.unit
	if st.tokens < need {
		return false
	}
	st.tokens -= need
	m.state[subject] = st
	return true
}

// gcraModel is the reference model of `gcra` (scripts/gcra.lua): per subject, the theoretical
// arrival time in µs. Client is ignored.
type gcraModel struct {
	interval, tolerance int64
	tat                 map[string]int64
}

// gcraParams returns the emission interval T = ⌈W/L⌉ µs and the burst tolerance C·T µs for l.
func gcraParams(l Limit) (interval, tolerance int64) {
	w := l.Window.Microseconds()
	interval = (w + l.Limit - 1) / l.Limit
	return interval, l.Capacity() * interval
}

func newGCRAModel(l Limit) *gcraModel {
	interval, tolerance := gcraParams(l)
	return &gcraModel{interval: interval, tolerance: tolerance, tat: map[string]int64{}}
}

// Decide implements Model: admitted when max(TAT, t) + cost·T − t <= C·T.
func (m *gcraModel) Decide(subject, _ string, cost int64, tMicros int64) bool {
	tat, ok := m.tat[subject]
	if !ok || tat < tMicros {
		tat = tMicros
	}
	next := tat + cost*m.interval
	if next-m.tolerance > tMicros {
		return false
	}
	m.tat[subject] = next
	return true
}
