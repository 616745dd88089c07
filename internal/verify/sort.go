package verify

import (
	"cmp"
	"math"
	"math/bits"
	"slices"

	"github.com/limitbench/limitbench/algorithms"
)

// sortEvents sorts ev by scope, then Lo, then Hi, in place. When the scope and Lo − min Lo fit
// together in 64 bits (they do unless a log spans centuries or has millions of subjects and
// clients at once) it uses an in-place MSD radix sort (American flag sort) on that key, which is
// several times faster than a comparison sort and needs no buffer; otherwise sortByScope.
func sortEvents(ev []Event, sc algorithms.Scope) {
	if len(ev) < 256 {
		sortByScope(ev, sc)
		return
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	var maxSubject uint32
	var maxClient uint16
	for i := range ev {
		e := &ev[i]
		lo, hi = min(lo, e.Lo), max(hi, e.Lo)
		maxSubject, maxClient = max(maxSubject, e.Subject), max(maxClient, e.Client)
	}
	k := keyer{sc: sc, base: lo, tb: uint(bits.Len64(uint64(hi - lo)))}
	var scopeBits uint
	switch sc {
	case algorithms.PerClient:
		k.cb = uint(bits.Len16(maxClient))
		scopeBits = uint(bits.Len32(maxSubject)) + k.cb
	case algorithms.PerConsumer:
		scopeBits = uint(bits.Len16(maxClient))
	default:
		scopeBits = uint(bits.Len32(maxSubject))
	}
	total := scopeBits + k.tb
	if total > 64 || hi-lo < 0 {
		sortByScope(ev, sc)
		return
	}
	k.radix(ev, max(int(total)-8, 0))
}

// keyer maps an event to its radix key: the scope in the high bits, Lo − base below.
type keyer struct {
	sc     algorithms.Scope
	base   int64
	tb, cb uint // bits of Lo − base, bits of a client index (PerClient)
}

func (k *keyer) key(e *Event) uint64 {
	t := uint64(e.Lo - k.base)
	switch k.sc {
	case algorithms.PerClient:
		return (uint64(e.Subject)<<k.cb|uint64(e.Client))<<k.tb | t
	case algorithms.PerConsumer:
		return uint64(e.Client)<<k.tb | t
	}
	return uint64(e.Subject)<<k.tb | t
}

// radix sorts ev, whose keys agree above bit shift+8, by the byte of the key at shift, then
// recursively by the bits below it; small parts and equal keys are finished by insertion sort on
// (key, Hi).
func (k *keyer) radix(ev []Event, shift int) {
	if len(ev) <= 48 {
		k.insertion(ev)
		return
	}
	var count [256]int
	for i := range ev {
		count[(k.key(&ev[i])>>shift)&0xff]++
	}
	var next, end [256]int
	s := 0
	for d := range 256 {
		next[d] = s
		s += count[d]
		end[d] = s
	}
	for d := range 256 {
		for next[d] < end[d] {
			e := ev[next[d]]
			dd := int(k.key(&e)>>shift) & 0xff
			for dd != d {
				ev[next[dd]], e = e, ev[next[dd]]
				next[dd]++
				dd = int(k.key(&e)>>shift) & 0xff
			}
			ev[next[d]] = e
			next[d]++
		}
	}
	if shift == 0 {
		// Equal keys in each bucket: order by Hi.
		s = 0
		for d := range 256 {
			if part := ev[s : s+count[d]]; len(part) > 1 {
				if len(part) <= 48 {
					k.insertion(part)
				} else {
					slices.SortFunc(part, func(a, b Event) int { return cmp.Compare(a.Hi, b.Hi) })
				}
			}
			s += count[d]
		}
		return
	}
	lower := max(shift-8, 0)
	s = 0
	for d := range 256 {
		if count[d] > 1 {
			k.radix(ev[s:s+count[d]], lower)
		}
		s += count[d]
	}
}

// insertion sorts ev by (key, Hi).
func (k *keyer) insertion(ev []Event) {
	for i := 1; i < len(ev); i++ {
		e := ev[i]
		ke := k.key(&e)
		j := i
		for ; j > 0; j-- {
			p := &ev[j-1]
			if kp := k.key(p); kp < ke || (kp == ke && p.Hi <= e.Hi) {
				break
			}
			ev[j] = ev[j-1]
		}
		ev[j] = e
	}
}
