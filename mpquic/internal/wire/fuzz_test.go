package wire

import (
	"bytes"
	"reflect"
	"testing"
)

// headerSeeds returns packets of every kind, alone and coalesced.
func headerSeeds() [][]byte {
	initial, _, _ := longPacket(PacketInitial, testDCID, testSCID, testToken, 1, 2, 40)
	zeroRTT, _, _ := longPacket(Packet0RTT, testDCID, testSCID, nil, 2, 1, 30)
	handshake, _, _ := longPacket(PacketHandshake, testDCID, testSCID, nil, 3, 4, 30)
	short, _ := AppendShortHeader(nil, testDCID, 77, 2, true)
	short = append(short, make([]byte, 30)...)
	retry := append(AppendRetry(nil, Version1, testDCID, testSCID, testToken), make([]byte, 16)...)
	vn := AppendVersionNegotiation(nil, testDCID, testSCID, []uint32{Version1, 0x6b3343cf}, 3)
	unknown := append([]byte{0xc0, 0xff, 0, 0, 0x1d, 4, 1, 2, 3, 4, 2, 5, 6}, make([]byte, 20)...)
	coalesced := bytes.Join([][]byte{initial, handshake, short}, nil)
	return [][]byte{initial, zeroRTT, handshake, short, retry, vn, unknown, coalesced}
}

func FuzzParseHeader(f *testing.F) {
	for _, s := range headerSeeds() {
		f.Add(s, 8)
		f.Add(s, 0)
	}
	f.Fuzz(func(t *testing.T, data []byte, shortLen int) {
		// Walk the datagram like a connection does.
		for len(data) > 0 {
			h, err := ParseHeader(data, shortLen)
			if err != nil {
				return
			}
			if h.Length <= 0 || h.Length > len(data) || h.PNOffset < 0 || h.PNOffset > h.Length {
				t.Fatalf("header %+v of %d bytes", h, len(data))
			}
			switch h.Type {
			case PacketInitial, Packet0RTT, PacketHandshake, Packet1RTT:
				if h.PNOffset == 0 {
					t.Fatalf("no packet number offset in %+v", h)
				}
			}
			if h.Type == Packet1RTT && h.Length != len(data) {
				t.Fatalf("short header packet not running to the end: %+v", h)
			}
			if h.Version == Version1 && (len(h.DstConnID) > MaxConnIDLen || len(h.SrcConnID) > MaxConnIDLen) {
				t.Fatalf("long connection ID in %+v", h)
			}
			dcid, isLong, err := ParseConnIDs(data, shortLen)
			if err != nil || isLong != (h.Type != Packet1RTT) || !bytes.Equal(dcid, h.DstConnID) {
				t.Fatalf("ParseConnIDs = %x, %v, %v for %+v", dcid, isLong, err, h)
			}
			data = data[h.Length:]
		}
	})
}

func FuzzParseConnIDs(f *testing.F) {
	for _, s := range headerSeeds() {
		f.Add(s, 8)
	}
	f.Add([]byte{0x40}, 0)
	f.Fuzz(func(t *testing.T, data []byte, shortLen int) {
		dcid, isLong, err := ParseConnIDs(data, shortLen)
		if err != nil {
			return
		}
		if isLong != (data[0]&0x80 != 0) {
			t.Fatalf("isLong %v for first byte %#x", isLong, data[0])
		}
		if !isLong && len(dcid) != shortLen {
			t.Fatalf("short header DCID of %d bytes, want %d", len(dcid), shortLen)
		}
		if isLong && (len(data) < 6 || len(dcid) != int(data[5])) {
			t.Fatalf("long header DCID of %d bytes", len(dcid))
		}
		if cap(dcid) != len(dcid) {
			t.Fatalf("DCID capacity %d exceeds its length %d", cap(dcid), len(dcid))
		}
	})
}

func FuzzParseFrame(f *testing.F) {
	for _, tt := range frameCases() {
		f.Add(tt.f.Append(nil))
	}
	f.Add([]byte{0x01, 0x00, 0x00, 0x1e})
	f.Fuzz(func(t *testing.T, data []byte) {
		// A FrameParser, reused across the frames, parses what
		// ParseFrame parses.
		var p FrameParser
		for len(data) > 0 {
			fr, n, err := ParseFrame(data)
			pf, pn, perr := p.Parse(data)
			if (err == nil) != (perr == nil) || pn != n || err == nil && !framesEqual(fr, pf) {
				t.Fatalf("FrameParser: %#v, %d, %v; ParseFrame: %#v, %d, %v", pf, pn, perr, fr, n, err)
			}
			if err != nil {
				if fr != nil || n != 0 {
					t.Fatalf("frame %#v and %d bytes with error %v", fr, n, err)
				}
				return
			}
			if n <= 0 || n > len(data) {
				t.Fatalf("consumed %d of %d bytes", n, len(data))
			}
			enc := fr.Append(nil)
			if len(enc) != fr.Len() {
				t.Fatalf("%#v: Append wrote %d bytes, Len says %d", fr, len(enc), fr.Len())
			}
			if len(enc) > n {
				t.Fatalf("%#v: re-encoded in %d bytes, parsed from %d", fr, len(enc), n)
			}
			fr2, n2, err := ParseFrame(enc)
			if err != nil || n2 != len(enc) {
				t.Fatalf("%#v: re-parse of %x: %d, %v", fr, enc, n2, err)
			}
			if !framesEqual(fr, fr2) {
				t.Fatalf("round trip changed %#v into %#v", fr, fr2)
			}
			data = data[n:]
		}
	})
}

func FuzzParseTransportParameters(f *testing.F) {
	for _, tt := range tpCases() {
		f.Add(tt.p.Append(nil), tt.fromServer)
	}
	f.Fuzz(func(t *testing.T, data []byte, fromServer bool) {
		p, err := ParseTransportParameters(data, fromServer)
		if err != nil {
			return
		}
		enc := p.Append(nil)
		p2, err := ParseTransportParameters(enc, fromServer)
		if err != nil {
			t.Fatalf("re-parse of %x from %+v: %v", enc, p, err)
		}
		if !reflect.DeepEqual(p, p2) {
			t.Fatalf("round trip changed\n%+v\ninto\n%+v", p, p2)
		}
	})
}
