package load

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrEncoding means bytes are not the encoding of the aggregator they were decoded into: another
// kind, a version this build does not read, or a truncated or corrupt encoding.
var ErrEncoding = errors.New("bad aggregator encoding")

// Aggregators encode themselves (encoding.BinaryMarshaler) as a frame that a partial result of a
// segmented run can carry in a file of its own: a header of four bytes naming the kind and a
// version byte, then the kind's fields, integers as unsigned or zig-zag varints and byte strings
// length-prefixed. A decoder refuses another kind, an unknown version and trailing bytes, so a
// file can never be read as something it is not. Encoder and Decoder are the frame's two halves,
// shared by every aggregator (load's and the verifier's).

// Encoder appends the encoding of one aggregator.
type Encoder struct{ b []byte }

// NewEncoder starts an encoding of kind (four bytes, such as "lbhg") at version.
func NewEncoder(kind string, version byte) *Encoder {
	if len(kind) != 4 {
		panic("load: an aggregator kind is four bytes, got " + kind)
	}
	return &Encoder{b: append([]byte(kind), version)}
}

// Uvarint appends v as an unsigned varint.
func (e *Encoder) Uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }

// Varint appends v as a zig-zag varint.
func (e *Encoder) Varint(v int64) { e.b = binary.AppendVarint(e.b, v) }

// Bytes appends p with its length.
func (e *Encoder) Bytes(p []byte) {
	e.Uvarint(uint64(len(p)))
	e.b = append(e.b, p...)
}

// Raw appends p as it is (the decoder must know its length).
func (e *Encoder) Raw(p []byte) { e.b = append(e.b, p...) }

// Grow makes room for n more bytes.
func (e *Encoder) Grow(n int) {
	if cap(e.b)-len(e.b) < n {
		b := make([]byte, len(e.b), len(e.b)+n)
		copy(b, e.b)
		e.b = b
	}
}

// Encoding returns the bytes appended so far.
func (e *Encoder) Encoding() []byte { return e.b }

// Decoder reads the fields of one aggregator's encoding. The first read that fails sets Err,
// and every read after it returns zero.
type Decoder struct {
	b    []byte
	kind string
	err  error
}

// NewDecoder checks that b is an encoding of kind at version and returns a Decoder of its fields.
func NewDecoder(b []byte, kind string, version byte) (*Decoder, error) {
	if len(b) < 5 || string(b[:4]) != kind {
		head := b[:min(len(b), 4)]
		return nil, fmt.Errorf("%w: want kind %q, got %q", ErrEncoding, kind, head)
	}
	if b[4] != version {
		return nil, fmt.Errorf("%w: %s version %d, this build reads version %d", ErrEncoding, kind, b[4], version)
	}
	return &Decoder{b: b[5:], kind: kind}, nil
}

func (d *Decoder) fail(what string) {
	if d.err == nil {
		d.err = d.Errorf("%s", what)
	}
}

// Errorf returns an error wrapping ErrEncoding that names the kind being decoded: for a value
// that decoded but cannot be (an unknown flag, an impossible width).
func (d *Decoder) Errorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrEncoding, d.kind, fmt.Sprintf(format, args...))
}

// Decode decodes b, an encoding of kind at version, into *dst with read, which reads the fields
// and returns the value (or an error from Errorf). *dst changes only when all of b decoded, no
// byte left over: a failed decode leaves it as it was. Errors wrap ErrEncoding.
func Decode[T any](dst *T, b []byte, kind string, version byte, read func(d *Decoder) (T, error)) error {
	d, err := NewDecoder(b, kind, version)
	if err != nil {
		return err
	}
	v, err := read(d)
	if err == nil {
		err = d.Close()
	}
	if err != nil {
		return err
	}
	*dst = v
	return nil
}

// Uvarint reads an unsigned varint.
func (d *Decoder) Uvarint() uint64 { return readVarint(d, binary.Uvarint) }

// Varint reads a zig-zag varint.
func (d *Decoder) Varint() int64 { return readVarint(d, binary.Varint) }

// readVarint reads a varint of d with read (binary.Uvarint or binary.Varint).
func readVarint[T uint64 | int64](d *Decoder, read func([]byte) (T, int)) T {
	if d.err != nil {
		return 0
	}
	v, n := read(d.b)
	if n <= 0 {
		d.fail("truncated or overlong varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// Bytes reads a length-prefixed byte string.
func (d *Decoder) Bytes() []byte {
	return d.Raw(d.Uvarint())
}

// Raw reads the next n bytes.
func (d *Decoder) Raw(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail(fmt.Sprintf("%d bytes wanted, %d left", n, len(d.b)))
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

// Count reads a number of items of size bytes each that must still fit in what is left, so that
// a corrupt count cannot make the caller allocate more than the encoding holds.
func (d *Decoder) Count(size int) int {
	n := d.Uvarint()
	if d.err == nil && n > uint64(len(d.b)/max(size, 1)) {
		d.fail(fmt.Sprintf("%d items of %d bytes in %d bytes", n, size, len(d.b)))
		return 0
	}
	return int(n)
}

// Close returns the first error, or an error when bytes are left over.
func (d *Decoder) Close() error {
	if d.err == nil && len(d.b) > 0 {
		d.fail(fmt.Sprintf("%d bytes left over", len(d.b)))
	}
	return d.err
}
