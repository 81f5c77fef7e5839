package wire

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"
)

var (
	testDCID  = []byte{0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08}
	testSCID  = []byte{0xf0, 0x67, 0xa5, 0x50, 0x2a, 0x42, 0x62, 0xb5, 0x01}
	testToken = []byte("a token from a previous connection")
)

// longPacket builds a long header packet with payloadLen bytes after the
// packet number.
func longPacket(t PacketType, dcid, scid, token []byte, pn uint64, pnLen, payloadLen int) (pkt []byte, lengthOff, pnOff int) {
	pkt, lengthOff, pnOff = AppendLongHeader(nil, t, Version1, dcid, scid, token, pn, pnLen)
	pkt = append(pkt, bytes.Repeat([]byte{0xab}, payloadLen)...)
	PutLongHeaderLength(pkt, lengthOff, len(pkt)-pnOff)
	return pkt, lengthOff, pnOff
}

func TestLongHeaderRoundTrip(t *testing.T) {
	tests := []struct {
		name  string
		typ   PacketType
		token []byte
		pnLen int
		bits  byte
	}{
		{"initial with token", PacketInitial, testToken, 4, 0x00},
		{"initial without token", PacketInitial, nil, 1, 0x00},
		{"0-RTT", Packet0RTT, nil, 2, 0x10},
		{"handshake", PacketHandshake, nil, 3, 0x20},
		{"handshake ignores token", PacketHandshake, testToken, 3, 0x20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := []byte{9, 9, 9}
			pkt, lengthOff, pnOff := AppendLongHeader(prefix, tt.typ, Version1, testDCID, testSCID, tt.token, 0x01020304, tt.pnLen)
			if !bytes.Equal(pkt[:3], prefix) {
				t.Fatal("prefix overwritten")
			}
			if want := 0xc0 | tt.bits | byte(tt.pnLen-1); pkt[3] != want {
				t.Errorf("first byte %#x, want %#x", pkt[3], want)
			}
			if pnOff != len(pkt)-tt.pnLen || lengthOff != pnOff-2 {
				t.Errorf("offsets length %d pn %d in %d bytes", lengthOff, pnOff, len(pkt))
			}
			if got := pkt[pnOff:]; !bytes.Equal(got, []byte{1, 2, 3, 4}[4-tt.pnLen:]) {
				t.Errorf("packet number bytes %x", got)
			}
			pkt = append(pkt, bytes.Repeat([]byte{0xab}, 100)...)
			if !PutLongHeaderLength(pkt, lengthOff, len(pkt)-pnOff) {
				t.Fatal("PutLongHeaderLength failed")
			}
			// Another packet follows in the datagram.
			next, _, _ := longPacket(PacketHandshake, testDCID, testSCID, nil, 7, 1, 30)
			data := append(slices.Clone(pkt[3:]), next...)
			h, err := ParseHeader(data, 8)
			if err != nil {
				t.Fatal(err)
			}
			wantToken := []byte(nil)
			if tt.typ == PacketInitial {
				wantToken = tt.token
			}
			if h.Type != tt.typ || h.Version != Version1 || !bytes.Equal(h.DstConnID, testDCID) ||
				!bytes.Equal(h.SrcConnID, testSCID) || !bytes.Equal(h.Token, wantToken) ||
				h.Length != len(pkt)-3 || h.PNOffset != pnOff-3 {
				t.Errorf("parsed %+v", h)
			}
			h2, err := ParseHeader(data[h.Length:], 8)
			if err != nil || h2.Type != PacketHandshake || h2.Length != len(next) {
				t.Errorf("coalesced packet parsed as %+v, %v", h2, err)
			}
		})
	}
}

func TestShortHeaderRoundTrip(t *testing.T) {
	for _, keyPhase := range []bool{false, true} {
		for pnLen := 1; pnLen <= 4; pnLen++ {
			pkt, pnOff := AppendShortHeader([]byte{1}, testDCID, 0xa1b2c3d4, pnLen, keyPhase)
			pkt = pkt[1:]
			pnOff--
			want := 0x40 | byte(pnLen-1)
			if keyPhase {
				want |= 0x04
			}
			if pkt[0] != want || pnOff != 1+len(testDCID) || len(pkt) != pnOff+pnLen {
				t.Errorf("key phase %v len %d: %x pnOff %d", keyPhase, pnLen, pkt, pnOff)
			}
			pkt = append(pkt, make([]byte, 20)...)
			h, err := ParseHeader(pkt, len(testDCID))
			if err != nil || h.Type != Packet1RTT || !bytes.Equal(h.DstConnID, testDCID) ||
				h.SrcConnID != nil || h.PNOffset != pnOff || h.Length != len(pkt) {
				t.Errorf("parsed %+v, %v", h, err)
			}
			dcid, isLong, err := ParseConnIDs(pkt, len(testDCID))
			if err != nil || isLong || !bytes.Equal(dcid, testDCID) {
				t.Errorf("ParseConnIDs = %x, %v, %v", dcid, isLong, err)
			}
		}
	}
}

func TestVersionNegotiation(t *testing.T) {
	versions := []uint32{Version1, 0x6b3343cf, 0x1a2a3a4a}
	longCID := bytes.Repeat([]byte{7}, 200) // any length up to 255 (RFC 8999)
	pkt := AppendVersionNegotiation(nil, longCID, testSCID, versions, 0xff)
	if pkt[0]&0xc0 != 0xc0 || binary.BigEndian.Uint32(pkt[1:5]) != 0 {
		t.Fatalf("header %x", pkt[:5])
	}
	h, err := ParseHeader(pkt, 8)
	if err != nil || h.Type != PacketVersionNegotiation || h.Version != 0 ||
		!bytes.Equal(h.DstConnID, longCID) || !bytes.Equal(h.SrcConnID, testSCID) ||
		!slices.Equal(h.SupportedVersions, versions) || h.Length != len(pkt) {
		t.Fatalf("parsed %+v, %v", h, err)
	}
	dcid, isLong, err := ParseConnIDs(pkt, 8)
	if err != nil || !isLong || !bytes.Equal(dcid, longCID) {
		t.Errorf("ParseConnIDs = %x, %v, %v", dcid, isLong, err)
	}
	// The fixed bit is not required.
	pkt[0] = 0x80
	if _, err := ParseHeader(pkt, 8); err != nil {
		t.Errorf("fixed bit 0: %v", err)
	}
	if _, err := ParseHeader(pkt[:len(pkt)-1], 8); err == nil {
		t.Error("version list of 11 bytes accepted")
	}
}

func TestRetry(t *testing.T) {
	tag := bytes.Repeat([]byte{0xee}, 16)
	for _, token := range [][]byte{testToken, nil} {
		pkt := AppendRetry(nil, Version1, testDCID, testSCID, token)
		if pkt[0]&0xf0 != 0xf0 {
			t.Errorf("first byte %#x", pkt[0])
		}
		pkt = append(pkt, tag...)
		h, err := ParseHeader(pkt, 8)
		if err != nil || h.Type != PacketRetry || h.Version != Version1 ||
			!bytes.Equal(h.DstConnID, testDCID) || !bytes.Equal(h.SrcConnID, testSCID) ||
			!bytes.Equal(h.Token, token) || h.Length != len(pkt) {
			t.Errorf("parsed %+v, %v", h, err)
		}
	}
}

func TestUnknownVersion(t *testing.T) {
	// What a client of another version might send: only the invariant
	// fields are parsed, with connection IDs of any length.
	longCID := bytes.Repeat([]byte{5}, 40)
	pkt := []byte{0x80, 0x6b, 0x33, 0x43, 0xcf, byte(len(longCID))}
	pkt = append(pkt, longCID...)
	pkt = append(pkt, 1, 9)
	pkt = append(pkt, make([]byte, 100)...)
	h, err := ParseHeader(pkt, 8)
	if err != nil || h.Type != PacketUnknown || h.Version != 0x6b3343cf ||
		!bytes.Equal(h.DstConnID, longCID) || !bytes.Equal(h.SrcConnID, []byte{9}) || h.Length != len(pkt) {
		t.Fatalf("parsed %+v, %v", h, err)
	}
	dcid, isLong, err := ParseConnIDs(pkt, 8)
	if err != nil || !isLong || !bytes.Equal(dcid, longCID) {
		t.Errorf("ParseConnIDs = %x, %v, %v", dcid, isLong, err)
	}
}

func TestParseHeaderErrors(t *testing.T) {
	initial, _, _ := longPacket(PacketInitial, testDCID, testSCID, testToken, 1, 2, 40)
	withByte := func(b []byte, i int, v byte) []byte {
		b = slices.Clone(b)
		b[i] = v
		return b
	}
	longV1 := func(b0 byte, dcidLen, scidLen int, rest ...byte) []byte {
		b := []byte{b0, 0, 0, 0, 1, byte(dcidLen)}
		b = append(b, make([]byte, dcidLen)...)
		b = append(b, byte(scidLen))
		b = append(b, make([]byte, scidLen)...)
		return append(b, rest...)
	}
	tests := []struct {
		name     string
		data     []byte
		shortLen int
	}{
		{"empty", nil, 8},
		{"long header cut in version", []byte{0xc0, 0, 0, 1}, 8},
		{"long header cut in DCID", []byte{0xc0, 0, 0, 0, 1, 8, 1, 2}, 8},
		{"long header without SCID length", []byte{0xc0, 0, 0, 0, 1, 1, 1}, 8},
		{"DCID of 21 bytes in v1", longV1(0xc0, 21, 0, 0, 1, 0), 8},
		{"SCID of 21 bytes in v1", longV1(0xc0, 0, 21, 0, 1, 0), 8},
		{"fixed bit 0 in v1 long header", withByte(initial, 0, initial[0]&^0x40), 8},
		{"Length beyond data", initial[:len(initial)-1], 8},
		{"token beyond packet", longV1(0xc0, 8, 8, 0x10, 1), 8},
		{"no Length field", longV1(0xe0, 8, 8), 8},
		{"truncated Length field", longV1(0xe0, 8, 8, 0x40), 8},
		{"retry shorter than its tag", longV1(0xf0, 8, 8, make([]byte, 15)...), 8},
		{"short header fixed bit 0", append([]byte{0x00}, make([]byte, 30)...), 8},
		{"short header cut in DCID", []byte{0x40, 1, 2, 3}, 8},
		{"short header without packet number", []byte{0x40, 1, 2, 3, 4, 5, 6, 7, 8}, 8},
		{"short DCID length negative", []byte{0x40, 1, 2, 3}, -1},
		{"short DCID length 21", make([]byte, 40), 21},
		{"unknown version cut in SCID", []byte{0xc0, 0xff, 0, 0, 0x1d, 0, 5, 1}, 8},
		{"VN cut in SCID", []byte{0x80, 0, 0, 0, 0, 0, 5, 1}, 8},
	}
	for _, tt := range tests {
		if h, err := ParseHeader(tt.data, tt.shortLen); err == nil {
			t.Errorf("%s: parsed %+v", tt.name, h)
		}
	}
	// Every proper prefix of an Initial packet fails.
	for i := range len(initial) {
		if h, err := ParseHeader(initial[:i], 8); err == nil {
			t.Errorf("prefix of %d bytes parsed as %+v", i, h)
		}
	}
}

func TestParseConnIDsErrors(t *testing.T) {
	tests := []struct {
		name     string
		data     []byte
		shortLen int
	}{
		{"empty", nil, 8},
		{"short cut", []byte{0x40, 1, 2}, 8},
		{"short bad length", []byte{0x40, 1, 2}, -3},
		{"long cut in version", []byte{0xc0, 0, 0}, 8},
		{"long cut in DCID", []byte{0xc0, 0, 0, 0, 1, 4, 1, 2}, 8},
		{"v1 DCID of 21 bytes", append([]byte{0xc0, 0, 0, 0, 1, 21}, make([]byte, 30)...), 8},
	}
	for _, tt := range tests {
		if dcid, _, err := ParseConnIDs(tt.data, tt.shortLen); err == nil {
			t.Errorf("%s: parsed %x", tt.name, dcid)
		}
	}
}

func TestAppendLongHeaderInvalidType(t *testing.T) {
	for _, typ := range []PacketType{PacketRetry, PacketVersionNegotiation, Packet1RTT, PacketUnknown, 42} {
		b, lengthOff, pnOff := AppendLongHeader([]byte{1}, typ, Version1, testDCID, testSCID, nil, 1, 1)
		if len(b) != 1 || lengthOff != -1 || pnOff != -1 {
			t.Errorf("type %v: %x %d %d", typ, b, lengthOff, pnOff)
		}
	}
	// Out-of-range packet number lengths are clamped.
	b, _, pnOff := AppendLongHeader(nil, PacketHandshake, Version1, nil, nil, nil, 0x0102030405, 7)
	if len(b)-pnOff != 4 || b[0]&3 != 3 {
		t.Errorf("pnLen 7: %x", b)
	}
	b, pnOff = AppendShortHeader(nil, nil, 5, 0, false)
	if len(b)-pnOff != 1 || b[0]&3 != 0 {
		t.Errorf("pnLen 0: %x", b)
	}
}

func TestPutLongHeaderLength(t *testing.T) {
	tests := []struct {
		name          string
		size, off, ln int
		ok            bool
		want          []byte
	}{
		{"zero", 4, 1, 0, true, []byte{0, 0x40, 0x00, 0}},
		{"max", 4, 1, 16383, true, []byte{0, 0x7f, 0xff, 0}},
		{"at end", 4, 2, 300, true, []byte{0, 0, 0x41, 0x2c}},
		{"too large", 4, 1, 16384, false, []byte{0, 0, 0, 0}},
		{"negative", 4, 1, -1, false, []byte{0, 0, 0, 0}},
		{"offset past end", 4, 3, 1, false, []byte{0, 0, 0, 0}},
		{"negative offset", 4, -1, 1, false, []byte{0, 0, 0, 0}},
	}
	for _, tt := range tests {
		b := make([]byte, tt.size)
		if ok := PutLongHeaderLength(b, tt.off, tt.ln); ok != tt.ok || !bytes.Equal(b, tt.want) {
			t.Errorf("%s: %v %x", tt.name, ok, b)
		}
	}
}

func TestPacketTypeString(t *testing.T) {
	tests := []struct {
		t    PacketType
		want string
	}{
		{PacketInitial, "initial"}, {Packet0RTT, "0RTT"}, {PacketHandshake, "handshake"},
		{PacketRetry, "retry"}, {PacketVersionNegotiation, "version_negotiation"},
		{Packet1RTT, "1RTT"}, {PacketUnknown, "unknown"}, {200, "unknown"},
	}
	for _, tt := range tests {
		if got := tt.t.String(); got != tt.want {
			t.Errorf("%d: %q, want %q", tt.t, got, tt.want)
		}
	}
}

func BenchmarkParseHeaderShort(b *testing.B) {
	pkt, _ := AppendShortHeader(nil, testDCID, 1234, 2, false)
	pkt = append(pkt, make([]byte, 1200)...)
	for b.Loop() {
		if _, err := ParseHeader(pkt, len(testDCID)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseHeaderInitial(b *testing.B) {
	pkt, _, _ := longPacket(PacketInitial, testDCID, testSCID, testToken, 1, 2, 1100)
	for b.Loop() {
		if _, err := ParseHeader(pkt, len(testDCID)); err != nil {
			b.Fatal(err)
		}
	}
}
