package streams

// Arithmetic in GF(2^8) with the polynomial x^8+x^4+x^3+x^2+1 (0x11d),
// whose element 2 generates the multiplicative group: the field of the
// REPAIR_Q parity (mpquic/internal/wire/repair.go).

// gfExp[i] is 2^i for i < 510 (twice the group's order, so that a sum of
// two logarithms needs no reduction); gfLog[x] is i with 2^i = x, x > 0.
var gfExp [510]byte
var gfLog [256]uint8

func init() {
	x := 1
	for i := 0; i < 255; i++ {
		gfExp[i], gfExp[i+255] = byte(x), byte(x)
		gfLog[x] = uint8(i)
		x <<= 1
		if x&0x100 != 0 {
			x ^= 0x11d
		}
	}
}

// gfMul returns a*b.
func gfMul(a, b byte) byte {
	if a == 0 || b == 0 {
		return 0
	}
	return gfExp[int(gfLog[a])+int(gfLog[b])]
}

// gfDiv returns a/b; b must not be 0.
func gfDiv(a, b byte) byte {
	if a == 0 {
		return 0
	}
	return gfExp[int(gfLog[a])+255-int(gfLog[b])]
}

// gfPow2 returns 2^i.
func gfPow2(i uint64) byte { return gfExp[i%255] }
