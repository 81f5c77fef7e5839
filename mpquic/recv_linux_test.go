package mpquic

import (
	"bytes"
	"encoding/binary"
	"net/netip"
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

// FuzzGROSplit: any control message bytes and message give datagrams that
// are, in order, the message's bytes, each of the segment size groSegment
// found (the last possibly shorter), without a panic.
func FuzzGROSplit(f *testing.F) {
	f.Add(cmsg(solUDP, udpGRO, 3), []byte("0123456789"))
	f.Add(append(cmsg(syscall.IPPROTO_IP, syscall.IP_TOS, 7), cmsg(solUDP, udpGRO, 1)...), []byte("ab"))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0, 0, 0, 0, 0}, []byte("x"))
	f.Fuzz(func(t *testing.T, oob, data []byte) {
		// The kernel's control messages start aligned.
		al := make([]byte, len(oob)+8)
		off := int(uintptr(unsafe.Pointer(&al[0]))) & 7
		if off != 0 {
			off = 8 - off
		}
		oob = append(al[off:off], oob...)
		seg := groSegment(oob)
		if seg < 0 || seg > 1<<32-1 {
			t.Fatalf("segment size %d", seg)
		}
		var r batchReader
		r.split(data, netip.MustParseAddrPort("[::ffff:10.0.0.1]:443"), seg)
		var joined []byte
		for i, d := range r.out {
			if len(d.data) == 0 || seg > 0 && (len(d.data) > seg || i < len(r.out)-1 && len(d.data) != seg) {
				t.Fatalf("datagram %d of %d bytes, segment size %d", i, len(d.data), seg)
			}
			if d.from != netip.MustParseAddrPort("10.0.0.1:443") {
				t.Fatalf("from %v", d.from)
			}
			joined = append(joined, d.data...)
		}
		if !bytes.Equal(joined, data) {
			t.Fatal("datagrams do not make up the message")
		}
	})
}
