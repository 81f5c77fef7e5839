package wire

import (
	"encoding/binary"
	"errors"
)

// MaxVarint is the largest value a variable-length integer can carry,
// 2^62-1 (RFC 9000 Section 16).
const MaxVarint uint64 = 1<<62 - 1

// ErrTruncated is returned by ParseVarint when the input ends inside the
// integer.
var ErrTruncated = errors.New("wire: truncated variable-length integer")

// VarintLen returns the number of bytes of the shortest encoding of v: 1, 2,
// 4 or 8. Values above MaxVarint are counted as MaxVarint, like AppendVarint
// writes them.
func VarintLen(v uint64) int {
	switch {
	case v < 1<<6:
		return 1
	case v < 1<<14:
		return 2
	case v < 1<<30:
		return 4
	default:
		return 8
	}
}

// AppendVarint appends the shortest encoding of v to b. Values above
// MaxVarint cannot be encoded; they are written as MaxVarint.
func AppendVarint(b []byte, v uint64) []byte {
	switch {
	case v < 1<<6:
		return append(b, byte(v))
	case v < 1<<14:
		return binary.BigEndian.AppendUint16(b, uint16(v)|0x4000)
	case v < 1<<30:
		return binary.BigEndian.AppendUint32(b, uint32(v)|0x80000000)
	case v > MaxVarint:
		v = MaxVarint
	}
	return binary.BigEndian.AppendUint64(b, v|0xc000000000000000)
}

// appendVarintN appends v encoded on exactly n bytes (1, 2, 4 or 8); v must
// fit.
func appendVarintN(b []byte, v uint64, n int) []byte {
	switch n {
	case 1:
		return append(b, byte(v&0x3f))
	case 2:
		return binary.BigEndian.AppendUint16(b, uint16(v&0x3fff)|0x4000)
	case 4:
		return binary.BigEndian.AppendUint32(b, uint32(v&0x3fffffff)|0x80000000)
	default:
		return binary.BigEndian.AppendUint64(b, v&MaxVarint|0xc000000000000000)
	}
}

// ParseVarint decodes the variable-length integer at the start of b and
// returns its value and encoded length. Non-minimal encodings are accepted
// (RFC 9000 Section 16 does not forbid them outside frame types). The error
// is ErrTruncated if b ends inside the integer.
func ParseVarint(b []byte) (v uint64, n int, err error) {
	v, n = decodeVarint(b)
	if n == 0 {
		return 0, 0, ErrTruncated
	}
	return v, n, nil
}

// decodeVarint is ParseVarint without the error value: n is 0 if b is too
// short.
func decodeVarint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	switch b[0] >> 6 {
	case 0:
		return uint64(b[0]), 1
	case 1:
		if len(b) < 2 {
			return 0, 0
		}
		return uint64(b[0]&0x3f)<<8 | uint64(b[1]), 2
	case 2:
		if len(b) < 4 {
			return 0, 0
		}
		return uint64(binary.BigEndian.Uint32(b) & 0x3fffffff), 4
	default:
		if len(b) < 8 {
			return 0, 0
		}
		return binary.BigEndian.Uint64(b) & MaxVarint, 8
	}
}

// reader walks a byte slice; after the first failure every read returns
// zero values and bad stays set, so that a parser checks once at the end.
type reader struct {
	b   []byte
	i   int
	bad bool
}

// varint reads a variable-length integer.
func (r *reader) varint() uint64 {
	if r.bad {
		return 0
	}
	v, n := decodeVarint(r.b[r.i:])
	if n == 0 {
		r.bad = true
		return 0
	}
	r.i += n
	return v
}

// byte1 reads one byte.
func (r *reader) byte1() byte {
	if r.bad || r.i >= len(r.b) {
		r.bad = true
		return 0
	}
	c := r.b[r.i]
	r.i++
	return c
}

// bytes returns the next n bytes, aliasing the input with the capacity
// capped so that appending to the result cannot overwrite what follows.
func (r *reader) bytes(n uint64) []byte {
	if r.bad || n > uint64(len(r.b)-r.i) {
		r.bad = true
		return nil
	}
	end := r.i + int(n)
	s := r.b[r.i:end:end]
	r.i = end
	return s
}

// copyTo fills dst from the input.
func (r *reader) copyTo(dst []byte) {
	if r.bad || len(dst) > len(r.b)-r.i {
		r.bad = true
		return
	}
	r.i += copy(dst, r.b[r.i:])
}

// left is the number of unread bytes.
func (r *reader) left() int { return len(r.b) - r.i }
