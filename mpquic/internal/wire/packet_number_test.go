package wire

import (
	"bytes"
	"testing"
)

func TestPacketNumberLen(t *testing.T) {
	tests := []struct {
		name         string
		pn           uint64
		largestAcked int64
		want         int
	}{
		// RFC 9000 Section 17.1 and Appendix A.2.
		{"RFC 16 bits", 0xac5c02, 0xabe8b3, 2},
		{"RFC 24 bits", 0xace8fe, 0xabe8b3, 3},
		{"first packet", 0, -1, 1},
		{"127 unacked", 126, -1, 1},
		{"128 unacked", 127, -1, 2},
		{"just acked", 10, 9, 1},
		{"not above largest acked", 5, 9, 1},
		{"32767 unacked", 32767, 0, 2},
		{"32768 unacked", 32768, 0, 3},
		{"2^23-1 unacked", 1<<23 - 1, 0, 3},
		{"2^23 unacked", 1 << 23, 0, 4},
		{"huge gap", 1 << 40, 0, 4},
	}
	for _, tt := range tests {
		if got := PacketNumberLen(tt.pn, tt.largestAcked); got != tt.want {
			t.Errorf("%s: PacketNumberLen(%#x, %#x) = %d, want %d", tt.name, tt.pn, tt.largestAcked, got, tt.want)
		}
	}
}

func TestDecodePacketNumber(t *testing.T) {
	tests := []struct {
		name      string
		largest   int64
		truncated uint64
		pnLen     int
		want      uint64
	}{
		// RFC 9000 Appendix A.3.
		{"RFC example", 0xa82f30ea, 0x9b32, 2, 0xa82f9b32},
		{"none received", -1, 0, 1, 0},
		{"none received 4 bytes", -1, 0x12345678, 4, 0x12345678},
		{"next", 9, 10, 1, 10},
		{"wrap forward", 0xff, 0x00, 1, 0x100},
		{"wrap backward", 0x100, 0xff, 1, 0xff},
		{"half window behind goes forward", 0x17f, 0x00, 1, 0x200},
		{"just inside window behind", 0x17e, 0x00, 1, 0x100},
		{"half window ahead", 0x7f, 0xff, 1, 0xff},
		{"half window ahead at top", 0x17e, 0xff, 1, 0x1ff},
		{"beyond half window ahead", 0x17d, 0xff, 1, 0xff},
		{"top of space", int64(MaxPacketNumber) - 1, 0xff, 1, MaxPacketNumber},
		{"pnLen clamped low", 9, 10, 0, 10},
		{"pnLen clamped high", 9, 10, 9, 10},
		{"truncated masked", 9, 0x10a, 1, 10},
	}
	for _, tt := range tests {
		if got := DecodePacketNumber(tt.largest, tt.truncated, tt.pnLen); got != tt.want {
			t.Errorf("%s: DecodePacketNumber(%#x, %#x, %d) = %#x, want %#x", tt.name, tt.largest, tt.truncated, tt.pnLen, got, tt.want)
		}
	}
}

// TestPacketNumberRoundTrip encodes with the length PacketNumberLen picks
// and decodes at receivers that have seen anything from the largest
// acknowledged packet up to the packet before.
func TestPacketNumberRoundTrip(t *testing.T) {
	acked := []int64{-1, 0, 1, 200, 0xabe8b3, 1<<32 + 5, int64(MaxPacketNumber) - 1<<20}
	gaps := []uint64{1, 2, 127, 128, 129, 255, 256, 1000, 32767, 32768, 40000, 1<<23 - 1, 1 << 23, 1<<31 - 1}
	for _, la := range acked {
		for _, gap := range gaps {
			pn := uint64(la+1) + gap - 1
			if pn > MaxPacketNumber {
				continue
			}
			n := PacketNumberLen(pn, la)
			enc := appendPacketNumber(nil, pn, n)
			var trunc uint64
			for _, c := range enc {
				trunc = trunc<<8 | uint64(c)
			}
			for _, largest := range []int64{la, int64(pn) - 1} {
				if got := DecodePacketNumber(largest, trunc, n); got != pn {
					t.Errorf("pn %#x acked %#x len %d: receiver at %#x decodes %#x", pn, la, n, largest, got)
				}
			}
		}
	}
}

func TestAppendPacketNumber(t *testing.T) {
	tests := []struct {
		n    int
		want []byte
	}{
		{1, []byte{0x04}}, {2, []byte{0x03, 0x04}}, {3, []byte{0x02, 0x03, 0x04}}, {4, []byte{0x01, 0x02, 0x03, 0x04}},
	}
	for _, tt := range tests {
		if got := appendPacketNumber(nil, 0xff01020304, tt.n); !bytes.Equal(got, tt.want) {
			t.Errorf("len %d: %x, want %x", tt.n, got, tt.want)
		}
	}
}
