package wire

import "unsafe"

// boxes gives interface values holding int64s and []anys, as replies hold them, without an
// allocation for each: Go boxes an int64 of 256 or more, and every slice, in an allocation of its
// own when it makes an interface of it, and a reply of a few integers would otherwise cost as many
// allocations (about 3 per request in BenchmarkLoadgen, a tenth of the generator's CPU at
// pipeline depth 16). boxes keeps the values in chunks instead and makes each interface point at
// its slot, as Go's own boxes point at theirs; a slot is written once, before its interface is
// made, and never again, so the interface holds its value as a boxed copy would. A chunk lives
// as long as any interface into it. Not safe for concurrent use.
//
// It relies on the layout of an empty interface in the gc toolchain (a type word, then a pointer
// to the value), which reflect and the runtime share and which has not changed since Go 1.0;
// TestBoxes checks it, and that the values survive garbage collection.
type boxes struct {
	ints   []int64
	slices [][]any
}

// boxChunk is the number of slots of a chunk.
const boxChunk = 256

// eface is the layout of an empty interface.
type eface struct {
	typ, data unsafe.Pointer
}

// typeOf returns the type word of v.
func typeOf(v any) unsafe.Pointer { return (*eface)(unsafe.Pointer(&v)).typ }

var (
	int64Type = typeOf(int64(0))
	sliceType = typeOf([]any(nil))
)

// int64 returns n as an interface value.
func (b *boxes) int64(n int64) any {
	if n >= 0 && n < 256 {
		return n // Go boxes these without allocating
	}
	if len(b.ints) == 0 {
		b.ints = make([]int64, boxChunk)
	}
	p := &b.ints[0]
	b.ints = b.ints[1:]
	*p = n
	var v any
	*(*eface)(unsafe.Pointer(&v)) = eface{typ: int64Type, data: unsafe.Pointer(p)}
	return v
}

// slice returns s as an interface value.
func (b *boxes) slice(s []any) any {
	if len(b.slices) == 0 {
		b.slices = make([][]any, boxChunk/4)
	}
	p := &b.slices[0]
	b.slices = b.slices[1:]
	*p = s
	var v any
	*(*eface)(unsafe.Pointer(&v)) = eface{typ: sliceType, data: unsafe.Pointer(p)}
	return v
}
