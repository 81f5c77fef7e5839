package mpquic

import (
	"encoding/binary"
	"syscall"
	"testing"
	"unsafe"
)

// cmsg returns a control message of level and type lvl, typ with a
// 32-bit value.
func cmsg(lvl, typ int32, v uint32) []byte {
	b := make([]byte, syscall.CmsgSpace(4))
	h := (*syscall.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = lvl, typ
	h.SetLen(syscall.CmsgLen(4))
	binary.NativeEndian.PutUint32(b[syscall.CmsgLen(0):], v)
	return b
}

func TestGROSegment(t *testing.T) {
	gro := cmsg(solUDP, udpGRO, 1452)
	other := cmsg(syscall.IPPROTO_IP, syscall.IP_TOS, 7)
	truncated := cmsg(solUDP, udpGRO, 1452)
	binary.NativeEndian.PutUint64(truncated, 1000) // a length past the end
	tests := []struct {
		name string
		oob  []byte
		want int
	}{
		{"none", nil, 0},
		{"gro", gro, 1452},
		{"after another", append(append([]byte(nil), other...), gro...), 1452},
		{"other only", other, 0},
		{"bad length", truncated, 0},
		{"short", gro[:8], 0},
	}
	for _, tt := range tests {
		if got := groSegment(tt.oob); got != tt.want {
			t.Errorf("%s: groSegment = %d, want %d", tt.name, got, tt.want)
		}
	}
}
