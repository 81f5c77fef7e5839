package wire

import (
	"bytes"
	"errors"
	"testing"
)

func TestVarintRFCExamples(t *testing.T) {
	// RFC 9000 Appendix A.1.
	tests := []struct {
		name    string
		enc     []byte
		value   uint64
		minimal bool
	}{
		{"8 bytes", []byte{0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c}, 151288809941952652, true},
		{"4 bytes", []byte{0x9d, 0x7f, 0x3e, 0x7d}, 494878333, true},
		{"2 bytes", []byte{0x7b, 0xbd}, 15293, true},
		{"1 byte", []byte{0x25}, 37, true},
		{"non-minimal 2 bytes", []byte{0x40, 0x25}, 37, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, n, err := ParseVarint(append(tt.enc, 0xff)) // trailing byte ignored
			if err != nil || v != tt.value || n != len(tt.enc) {
				t.Fatalf("ParseVarint(%x) = %d, %d, %v; want %d, %d", tt.enc, v, n, err, tt.value, len(tt.enc))
			}
			if !tt.minimal {
				return
			}
			if got := AppendVarint(nil, tt.value); !bytes.Equal(got, tt.enc) {
				t.Errorf("AppendVarint(%d) = %x, want %x", tt.value, got, tt.enc)
			}
			if got := VarintLen(tt.value); got != len(tt.enc) {
				t.Errorf("VarintLen(%d) = %d, want %d", tt.value, got, len(tt.enc))
			}
		})
	}
}

func TestVarintBoundaries(t *testing.T) {
	tests := []struct {
		v   uint64
		len int
	}{
		{0, 1}, {63, 1}, {64, 2}, {16383, 2}, {16384, 4}, {1<<30 - 1, 4},
		{1 << 30, 8}, {MaxVarint, 8},
	}
	for _, tt := range tests {
		b := AppendVarint([]byte{0xaa}, tt.v)
		if len(b)-1 != tt.len || VarintLen(tt.v) != tt.len || b[0] != 0xaa {
			t.Errorf("value %d: encoded %x, VarintLen %d, want %d bytes", tt.v, b, VarintLen(tt.v), tt.len)
		}
		v, n, err := ParseVarint(b[1:])
		if err != nil || v != tt.v || n != tt.len {
			t.Errorf("value %d: parsed %d, %d, %v", tt.v, v, n, err)
		}
		for i := 1; i < len(b)-1; i++ {
			if _, _, err := ParseVarint(b[1:i]); !errors.Is(err, ErrTruncated) {
				t.Errorf("value %d truncated to %d bytes: err %v", tt.v, i-1, err)
			}
		}
		for _, n := range []int{1, 2, 4, 8} {
			if n < tt.len {
				continue
			}
			enc := appendVarintN(nil, tt.v, n)
			if v, m, err := ParseVarint(enc); err != nil || v != tt.v || m != n {
				t.Errorf("value %d on %d bytes: %x parsed as %d, %d, %v", tt.v, n, enc, v, m, err)
			}
		}
	}
	if _, _, err := ParseVarint(nil); !errors.Is(err, ErrTruncated) {
		t.Errorf("ParseVarint(nil) error %v", err)
	}
}

func TestVarintAboveMax(t *testing.T) {
	for _, v := range []uint64{MaxVarint + 1, 1<<64 - 1} {
		b := AppendVarint(nil, v)
		got, _, err := ParseVarint(b)
		if err != nil || got != MaxVarint || VarintLen(v) != 8 {
			t.Errorf("AppendVarint(%d) = %x, parsed %d, %v; want MaxVarint", v, b, got, err)
		}
	}
}

func BenchmarkParseVarint(b *testing.B) {
	buf := AppendVarint(nil, 494878333)
	for b.Loop() {
		if _, _, err := ParseVarint(buf); err != nil {
			b.Fatal(err)
		}
	}
}
