package verify

// The streaming checker's storage: queues addressed by absolute position (a position keeps its
// number when the front is dropped), the Hi order of a queue's events, and bit queues.

// queue holds elements at absolute positions: position i is v[head+i−off]. Elements are
// pushed at the back and dropped from the front; once the dropped front is at least half the
// slice, what is left moves down to its start, so the memory held follows what is kept and a
// steady queue allocates nothing. T holds no pointers (dropped elements are not cleared).
type queue[T any] struct {
	v    []T
	head int // v[head] is at position off
	off  int
}

func (q *queue[T]) at(i int) *T { return &q.v[q.head+i-q.off] }
func (q *queue[T]) end() int    { return q.off + len(q.v) - q.head }
func (q *queue[T]) push(x T)    { q.v = append(q.v, x) }
func (q *queue[T]) empty() bool { return len(q.v) == q.head }
func (q *queue[T]) live() []T   { return q.v[q.head:] }
func (q *queue[T]) size() int   { return len(q.v) - q.head }

// dropTo drops the positions before i (none when i is at or before the front).
func (q *queue[T]) dropTo(i int) {
	k := min(i-q.off, len(q.v)-q.head)
	if k <= 0 {
		return
	}
	q.head += k
	q.off += k
	if q.head == len(q.v) {
		q.v, q.head = q.v[:0], 0
	} else if q.head >= 64 && 2*q.head >= len(q.v) {
		n := copy(q.v, q.v[q.head:])
		q.v, q.head = q.v[:n], 0
	}
}

// hiEntry is one admission in the Hi order, or waiting for it: its Hi, its position and its
// permits (copied, so that a sweep in Hi order need not read the admission itself).
type hiEntry struct {
	hi      int64
	pos     int
	permits uint16
}

// hiHeap is a min-heap of admissions by Hi, then position: those whose Hi is not yet final (an
// admission still to come may have a smaller one) wait in it, and pop into the Hi order once
// the frontier passes their Hi. Nested intervals cost O(log depth) each, where inserting into
// a sorted list would cost the depth.
type hiHeap []hiEntry

func (h hiEntry) less(o hiEntry) bool { return h.hi < o.hi || (h.hi == o.hi && h.pos < o.pos) }

func (h *hiHeap) push(x hiEntry) {
	*h = append(*h, x)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s[i].less(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *hiHeap) pop() hiEntry {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && s[l].less(s[m]) {
			m = l
		}
		if l+1 < n && s[l+1].less(s[m]) {
			m = l + 1
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

// flags is a queue of bits at absolute positions, 64 to a word; positions before off read as
// set (they were dropped once done).
type flags struct {
	w   []uint64
	off int // a multiple of 64
}

func (b *flags) get(i int) bool {
	if i < b.off {
		return true
	}
	k := (i - b.off) >> 6
	return k < len(b.w) && b.w[k]&(1<<(i&63)) != 0
}

func (b *flags) set(i int) {
	if i < b.off {
		return
	}
	k := (i - b.off) >> 6
	for k >= len(b.w) {
		b.w = append(b.w, 0)
	}
	b.w[k] |= 1 << (i & 63)
}

// dropTo drops the whole words before position i.
func (b *flags) dropTo(i int) {
	k := min((i-b.off)>>6, len(b.w))
	if k <= 0 {
		return
	}
	b.w = b.w[k:]
	b.off += k << 6
}
