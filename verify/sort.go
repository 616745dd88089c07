package verify

import (
	"cmp"
	"math"
	"math/bits"
	"slices"

	"github.com/limitbench/limitbench/algorithms"
)

// sortEvents sorts ev by scope, then Lo, then Hi (then Kind), in place: by scope, then the
// packed times t (see Event). It uses an in-place MSD radix sort (American flag sort) on the
// scope in the high bits of a 64-bit key and t − min t below, shifted right by as many bits as
// it takes to fit (a monotone key: ties, rare, are ordered by t among the few events of a leaf),
// which is several times faster than a comparison sort and needs no buffer of events.
func sortEvents(ev []Event, sc algorithms.Scope) {
	var st sorter
	st.sort(ev, sc)
}

// sorter is sortEvents with its digit tables kept for the next call.
type sorter struct {
	// tables holds, per recursion depth, the next and end offsets of each digit.
	tables [][]int
}

// sort is sortEvents.
func (st *sorter) sort(ev []Event, sc algorithms.Scope) {
	if len(ev) < 256 {
		sortByScope(ev, sc)
		return
	}
	lo, hi := uint64(math.MaxUint64), uint64(0)
	var maxSubject uint32
	var maxClient uint16
	for i := range ev {
		e := &ev[i]
		lo, hi = min(lo, e.t), max(hi, e.t)
		maxSubject, maxClient = max(maxSubject, e.Subject), max(maxClient, e.Client)
	}
	tb := uint(bits.Len64(hi - lo))
	var scopeBits uint
	switch sc {
	case algorithms.PerClient:
		scopeBits = uint(bits.Len32(maxSubject)) + uint(bits.Len16(maxClient))
	case algorithms.PerConsumer:
		scopeBits = uint(bits.Len16(maxClient))
	default:
		scopeBits = uint(bits.Len32(maxSubject))
	}
	// The scope takes at most 48 bits; t − lo gives up its lowest bits past 64.
	drop := (scopeBits + tb) - min(scopeBits+tb, 64)
	tb -= drop
	k := keyer{base: lo, drop: drop, tables: st.tables}
	switch sc {
	case algorithms.PerClient:
		k.subMask, k.subShift = math.MaxUint64, tb+uint(bits.Len16(maxClient))
		k.cliMask, k.cliShift = math.MaxUint64, tb
	case algorithms.PerConsumer:
		k.cliMask, k.cliShift = math.MaxUint64, tb
	default:
		k.subMask, k.subShift = math.MaxUint64, tb
	}
	k.radix(ev, int(scopeBits+tb), 0)
	st.tables = k.tables
}

// keyer maps an event to its radix key: the scope in the high bits, (t − base) >> drop below.
// The masks and shifts select the scope's fields without a branch.
type keyer struct {
	base               uint64
	drop               uint
	subMask, cliMask   uint64
	subShift, cliShift uint
	tables             [][]int // see sorter
}

func (k *keyer) key(e *Event) uint64 {
	return (uint64(e.Subject)&k.subMask)<<k.subShift | (uint64(e.Client)&k.cliMask)<<k.cliShift | (e.t-k.base)>>k.drop
}

// radixLeaf is the most events radix leaves to insertion sort.
const radixLeaf = 24

// radix sorts ev, whose keys agree from bit top up, by the next digit below top, then
// recursively by the bits below it; small parts are finished by insertion sort on (key, t), and
// equal keys sorted by t. A digit has up to 9 bits, fewer for fewer events (4 to 8 events per
// digit value), so the parts left to insertion sort are small. k.tables[depth] holds the digit
// offsets at each depth.
func (k *keyer) radix(ev []Event, top, depth int) {
	if len(ev) <= radixLeaf {
		k.insertion(ev)
		return
	}
	if top == 0 {
		// Equal keys: equal t too, unless drop > 0.
		if k.drop > 0 {
			slices.SortFunc(ev, func(a, b Event) int { return cmp.Compare(a.t, b.t) })
		}
		return
	}
	d := min(top, max(bits.Len(uint(len(ev)))-3, 1), 9)
	shift := top - d
	buckets := 1 << d
	for len(k.tables) <= depth {
		k.tables = append(k.tables, nil)
	}
	if len(k.tables[depth]) < 2*buckets {
		k.tables[depth] = make([]int, 2*buckets)
	}
	next, end := k.tables[depth][:buckets], k.tables[depth][buckets:2*buckets]
	clear(next)
	mask := uint64(buckets - 1)
	for i := range ev {
		next[(k.key(&ev[i])>>shift)&mask]++
	}
	s := 0
	for b := range next {
		c := next[b]
		next[b] = s
		s += c
		end[b] = s
	}
	// Each digit's part is [its start, end); its events before next are in place. First one
	// pass over each part as it stands, sending every event to its digit's next place: the swaps
	// do not depend on one another, so the memory accesses overlap (chasing a cycle, each waits
	// for the last). It places most events; the event it takes back is left where it landed.
	for b := range buckets {
		for it, stop := next[b], end[b]; it < stop; it++ {
			bb := (k.key(&ev[it]) >> shift) & mask
			o := next[bb]
			next[bb]++
			ev[it], ev[o] = ev[o], ev[it]
		}
	}
	// Then the rest, cycle by cycle.
	for b := range buckets {
		for next[b] < end[b] {
			e := ev[next[b]]
			bb := int((k.key(&e) >> shift) & mask)
			for bb != b {
				ev[next[bb]], e = e, ev[next[bb]]
				next[bb]++
				bb = int((k.key(&e) >> shift) & mask)
			}
			ev[next[b]] = e
			next[b]++
		}
	}
	s = 0
	for b := range buckets {
		if e := end[b]; e-s > 1 {
			k.radix(ev[s:e], shift, depth+1)
		}
		s = end[b]
	}
}

// insertion sorts ev by (key, t).
func (k *keyer) insertion(ev []Event) {
	for i := 1; i < len(ev); i++ {
		e := ev[i]
		ke := k.key(&e)
		j := i
		for ; j > 0; j-- {
			p := &ev[j-1]
			if kp := k.key(p); kp < ke || (kp == ke && p.t <= e.t) {
				break
			}
			ev[j] = ev[j-1]
		}
		ev[j] = e
	}
}
