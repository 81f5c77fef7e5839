package streams

import (
	"bytes"
	"testing"
)

// TestGF256 checks the field against values computed by hand: 2 x 0x80
// is x^8, which the polynomial 0x11d reduces to 0x1d; 3 x 7 is
// (x+1)(x^2+x+1) = x^3+1 = 9; and every nonzero element's quotient by
// itself is 1 and by 1 itself.
func TestGF256(t *testing.T) {
	for _, tt := range []struct{ a, b, want byte }{
		{2, 0x80, 0x1d}, {3, 7, 9}, {0, 9, 0}, {1, 0xab, 0xab}, {0x1d, 1, 0x1d},
	} {
		if got := gfMul(tt.a, tt.b); got != tt.want {
			t.Errorf("gfMul(%#x, %#x) = %#x, want %#x", tt.a, tt.b, got, tt.want)
		}
	}
	if gfPow2(8) != 0x1d || gfPow2(255) != 1 || gfPow2(0) != 1 {
		t.Errorf("2^8 = %#x, 2^255 = %#x, 2^0 = %#x; want 0x1d, 1, 1", gfPow2(8), gfPow2(255), gfPow2(0))
	}
	for a := 1; a < 256; a++ {
		if gfDiv(byte(a), byte(a)) != 1 || gfDiv(byte(a), 1) != byte(a) || gfDiv(gfMul(byte(a), 0x53), 0x53) != byte(a) {
			t.Fatalf("division by %#x", a)
		}
	}
}

// TestSendStreamParityQ checks a REPAIR_Q parity computed by hand: the
// bytes 01 02 03 | 04 05 06 | 07 in chunks of 3 give column 0
// 01 ^ 2*04 ^ 4*07 = 01 ^ 08 ^ 1c = 15, column 1 02 ^ 2*05 = 02 ^ 0a =
// 08, column 2 03 ^ 2*06 = 03 ^ 0c = 0f.
func TestSendStreamParityQ(t *testing.T) {
	s := NewSendStream(0, 1<<20, 1<<20)
	s.Write([]byte{1, 2, 3, 4, 5, 6, 7})
	dst := make([]byte, 3)
	if !s.Parity(0, 7, dst, true) || !bytes.Equal(dst, []byte{0x15, 0x08, 0x0f}) {
		t.Fatalf("Parity(0, 7, q) = %x, want 15080f", dst)
	}
}

// TestRecvStreamRepairQ loses packets of a 9-packet message (packets of
// 1,000 bytes, a parity in chunks of 1,000): two lost packets come back
// with both parities and not with one; one lost packet comes back with
// the REPAIR_Q parity alone; three lost packets do not come back.
func TestRecvStreamRepairQ(t *testing.T) {
	const size, chunk = 9000, 1000
	s, content := closedStream(size, func(i int) byte { return byte(i*131 + i>>7) })
	p, q := make([]byte, chunk), make([]byte, chunk)
	if !s.Parity(0, size, p, false) || !s.Parity(0, size, q, true) {
		t.Fatal("Parity")
	}
	for _, tt := range []struct {
		name        string
		lost        []int
		usep, useq  bool
		wantRebuilt bool
	}{
		{"two lost, both parities", []int{2, 7}, true, true, true},
		{"first and last lost, both parities", []int{0, 8}, true, true, true},
		{"two lost, REPAIR only", []int{2, 7}, true, false, false},
		{"two lost, REPAIR_Q only", []int{2, 7}, false, true, false},
		{"one lost, REPAIR_Q only", []int{4}, false, true, true},
		{"three lost, both parities", []int{1, 3, 5}, true, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRecvStream(0, 1<<20)
			r.EnableRepair()
			for k := 0; k < size/chunk; k++ {
				if !contains(tt.lost, k) {
					if _, err := r.Push(uint64(k*chunk), content[k*chunk:(k+1)*chunk], k == size/chunk-1); err != nil {
						t.Fatal(err)
					}
				}
			}
			if tt.useq { // the second parity first: it waits for the first
				if _, err := r.AddRepair(0, size, chunk, true, true, 0, q); err != nil {
					t.Fatal(err)
				}
			}
			if tt.usep {
				if _, err := r.AddRepair(0, size, chunk, true, false, 0, p); err != nil {
					t.Fatal(err)
				}
			}
			got := make([]byte, size+1)
			n, _ := r.Read(got)
			if rebuilt := n == size; rebuilt != tt.wantRebuilt {
				t.Fatalf("read %d of %d bytes; rebuilt %v, want %v", n, size, rebuilt, tt.wantRebuilt)
			}
			if !bytes.Equal(got[:n], content[:n]) {
				t.Fatal("read bytes that are not the stream's")
			}
		})
	}
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
