package wire

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/mpq/mpq/mpquic/qerr"
)

var (
	testCID   = []byte{1, 2, 3, 4, 5, 6, 7, 8}
	testReset = [16]byte{0xa, 0xb, 0xc, 0xd, 0xe, 0xf, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	testData  = bytes.Repeat([]byte("stream data "), 30)
)

// frameCase is a frame and whether its encoding stays valid when cut
// short (padding and STREAM frames without a Length field do).
type frameCase struct {
	name        string
	f           Frame
	prefixValid bool
}

// frameCases covers every frame type; the fuzz targets use them as seeds.
func frameCases() []frameCase {
	return []frameCase{
		{"padding 1", &PaddingFrame{Length: 1}, true},
		{"padding 37", &PaddingFrame{Length: 37}, true},
		{"ping", &PingFrame{}, false},
		{"ack single", &AckFrame{Ranges: []AckRange{{Smallest: 0, Largest: 0}}, AckDelay: 0}, false},
		{"ack one range", &AckFrame{Ranges: []AckRange{{Smallest: 90, Largest: 100}}, AckDelay: 1234}, false},
		{"ack several ranges", &AckFrame{Ranges: []AckRange{
			{Smallest: 1 << 40, Largest: 1<<40 + 5},
			{Smallest: 900, Largest: 1000},
			{Smallest: 50, Largest: 60},
			{Smallest: 10, Largest: 47},
			{Smallest: 5, Largest: 7},
			{Smallest: 0, Largest: 0},
		}, AckDelay: 7}, false},
		{"ack ECN", &AckFrame{Ranges: []AckRange{{Smallest: 70, Largest: 80}, {Smallest: 2, Largest: 3}},
			AckDelay: 20, HasECN: true, ECT0: 100, ECT1: 1 << 20, CE: 3}, false},
		{"reset stream", &ResetStreamFrame{StreamID: 4, ErrorCode: 0x1234, FinalSize: 1 << 35}, false},
		{"stop sending", &StopSendingFrame{StreamID: 1<<62 - 1, ErrorCode: 0}, false},
		{"crypto", &CryptoFrame{Offset: 300, Data: testData[:100]}, false},
		{"crypto offset 0", &CryptoFrame{Offset: 0, Data: testData[:5]}, false},
		{"crypto empty", &CryptoFrame{Offset: 5}, false},
		{"new token", &NewTokenFrame{Token: testToken}, false},
		{"stream bare", &StreamFrame{StreamID: 0, Data: testData[:10]}, true},
		{"stream fin only", &StreamFrame{StreamID: 3, Fin: true}, true},
		{"stream offset", &StreamFrame{StreamID: 8, Offset: 1000, Data: testData}, true},
		{"stream offset fin", &StreamFrame{StreamID: 8, Offset: 1 << 30, Data: testData[:3], Fin: true}, true},
		{"stream length", &StreamFrame{StreamID: 1 << 20, Data: testData, DataLenPresent: true}, false},
		{"stream length fin", &StreamFrame{StreamID: 5, Data: testData[:70], DataLenPresent: true, Fin: true}, false},
		{"stream offset length", &StreamFrame{StreamID: 12, Offset: 64, Data: testData[:1], DataLenPresent: true}, false},
		{"stream offset length fin", &StreamFrame{StreamID: 12, Offset: 99, Data: testData[:2], DataLenPresent: true, Fin: true}, false},
		{"stream empty length fin", &StreamFrame{StreamID: 12, Offset: 99, DataLenPresent: true, Fin: true}, false},
		{"max data", &MaxDataFrame{Max: 1 << 40}, false},
		{"max stream data", &MaxStreamDataFrame{StreamID: 7, Max: 65536}, false},
		{"max streams bidi", &MaxStreamsFrame{Bidi: true, Max: 100}, false},
		{"max streams uni", &MaxStreamsFrame{Max: MaxStreamCount}, false},
		{"data blocked", &DataBlockedFrame{Limit: 12345}, false},
		{"stream data blocked", &StreamDataBlockedFrame{StreamID: 9, Limit: 1}, false},
		{"streams blocked bidi", &StreamsBlockedFrame{Bidi: true, Limit: 3}, false},
		{"streams blocked uni", &StreamsBlockedFrame{Limit: MaxStreamCount}, false},
		{"new connection ID", &NewConnectionIDFrame{Seq: 3, RetirePriorTo: 1, ConnID: testCID, ResetToken: testReset}, false},
		{"new connection ID 20 bytes", &NewConnectionIDFrame{Seq: 70, RetirePriorTo: 70, ConnID: bytes.Repeat([]byte{9}, 20), ResetToken: testReset}, false},
		{"retire connection ID", &RetireConnectionIDFrame{Seq: 64}, false},
		{"path challenge", &PathChallengeFrame{Data: [8]byte{1, 2, 3, 4, 5, 6, 7, 8}}, false},
		{"path response", &PathResponseFrame{Data: [8]byte{8, 7, 6, 5, 4, 3, 2, 1}}, false},
		{"connection close", &ConnectionCloseFrame{ErrorCode: uint64(qerr.ProtocolViolation), FrameType: 0x3e75, Reason: []byte("bad frame")}, false},
		{"connection close no reason", &ConnectionCloseFrame{ErrorCode: uint64(qerr.CryptoError(42))}, false},
		{"application close", &ConnectionCloseFrame{IsApplication: true, ErrorCode: 0x100, Reason: []byte("bye")}, false},
		{"handshake done", &HandshakeDoneFrame{}, false},
		{"path ack", &PathAckFrame{PathID: 3, Ranges: []AckRange{{Smallest: 10, Largest: 20}, {Smallest: 1, Largest: 5}}, AckDelay: 99}, false},
		{"path ack ECN", &PathAckFrame{PathID: MaxPathIDLimit, Ranges: []AckRange{{Smallest: 0, Largest: 1 << 33}},
			HasECN: true, ECT0: 1, ECT1: 2, CE: 3}, false},
		{"path abandon", &PathAbandonFrame{PathID: 2, ErrorCode: uint64(qerr.PathUnstableOrPoor)}, false},
		{"path status backup", &PathStatusFrame{Backup: true, PathID: 1, StatusSeq: 5}, false},
		{"path status available", &PathStatusFrame{PathID: 1, StatusSeq: 6}, false},
		{"path new connection ID", &PathNewConnectionIDFrame{PathID: 4, Seq: 2, RetirePriorTo: 1, ConnID: testCID, ResetToken: testReset}, false},
		{"path retire connection ID", &PathRetireConnectionIDFrame{PathID: 4, Seq: 1}, false},
		{"max path ID", &MaxPathIDFrame{MaxPathID: 16}, false},
		{"paths blocked", &PathsBlockedFrame{MaxPathID: MaxPathIDLimit}, false},
		{"path CIDs blocked", &PathCIDsBlockedFrame{PathID: 7, NextSeq: 3}, false},
		{"repair", &RepairFrame{StreamID: 4, Offset: 0, ChunkLen: 3, End: 7, Column: 0, Parity: []byte{1, 2, 3}}, false},
		{"repair fin fragment", &RepairFrame{StreamID: 1 << 40, Offset: 1 << 30, ChunkLen: 1300, End: 1<<30 + 10000, Fin: true, Column: 1290, Parity: bytes.Repeat([]byte{7}, 10)}, false},
		{"repair q", &RepairFrame{StreamID: 4, Offset: 0, ChunkLen: 3, End: 7, Q: true, Column: 0, Parity: []byte{1, 2, 3}}, false},
	}
}

// normalizeFrame returns a copy of f with empty slices set to nil, so that
// frames compare equal whether their empty fields were nil or not.
func normalizeFrame(f Frame) Frame {
	nilEmpty := func(b []byte) []byte {
		if len(b) == 0 {
			return nil
		}
		return b
	}
	switch f := f.(type) {
	case *CryptoFrame:
		c := *f
		c.Data = nilEmpty(c.Data)
		return &c
	case *StreamFrame:
		c := *f
		c.Data = nilEmpty(c.Data)
		return &c
	case *NewTokenFrame:
		c := *f
		c.Token = nilEmpty(c.Token)
		return &c
	case *ConnectionCloseFrame:
		c := *f
		c.Reason = nilEmpty(c.Reason)
		return &c
	}
	return f
}

func framesEqual(a, b Frame) bool {
	return reflect.DeepEqual(normalizeFrame(a), normalizeFrame(b))
}

func TestFrameRoundTrip(t *testing.T) {
	var parser FrameParser
	for _, tt := range frameCases() {
		t.Run(tt.name, func(t *testing.T) {
			prefix := []byte{0xde, 0xad}
			b := tt.f.Append(prefix)
			if !bytes.Equal(b[:2], prefix) {
				t.Fatal("prefix overwritten")
			}
			enc := b[2:]
			if len(enc) != tt.f.Len() {
				t.Fatalf("Append wrote %d bytes, Len says %d", len(enc), tt.f.Len())
			}
			typ, _, err := ParseVarint(enc)
			if err != nil || typ != tt.f.Type() {
				t.Errorf("encoded type %#x, Type() %#x", typ, tt.f.Type())
			}
			// A PING follows, except after frames that run to the end.
			data := enc
			if !tt.prefixValid {
				data = append(enc[:len(enc):len(enc)], byte(FrameTypePing))
			}
			f, n, err := ParseFrame(data)
			if err != nil {
				t.Fatal(err)
			}
			if n != len(enc) {
				t.Errorf("consumed %d bytes of %d", n, len(enc))
			}
			if !framesEqual(f, tt.f) {
				t.Errorf("parsed %#v, want %#v", f, tt.f)
			}
			if f.Type() != tt.f.Type() || f.Len() != tt.f.Len() {
				t.Errorf("parsed frame type %#x len %d", f.Type(), f.Len())
			}
			// A FrameParser that parsed other frames before parses
			// the same, and without allocating for STREAM, ACK and
			// PATH_ACK frames.
			for _, prev := range frameCases() {
				parser.Parse(prev.f.Append(nil))
			}
			pf, pn, err := parser.Parse(data)
			if err != nil || pn != n || !framesEqual(pf, tt.f) {
				t.Errorf("FrameParser parsed %#v, %d bytes, %v", pf, pn, err)
			}
			switch tt.f.(type) {
			case *StreamFrame, *AckFrame, *PathAckFrame:
				if a := testing.AllocsPerRun(10, func() { parser.Parse(data) }); a != 0 {
					t.Errorf("FrameParser allocates %v times", a)
				}
			}
		})
	}
}

func TestFrameTruncated(t *testing.T) {
	for _, tt := range frameCases() {
		if tt.prefixValid {
			continue
		}
		enc := tt.f.Append(nil)
		for i := range len(enc) {
			f, _, err := ParseFrame(enc[:i:i])
			var te *qerr.TransportError
			if !errors.As(err, &te) || te.Code != qerr.FrameEncodingError {
				t.Errorf("%s cut to %d bytes: %#v, %v", tt.name, i, f, err)
				continue
			}
			if i >= VarintLen(tt.f.Type()) && te.FrameType != tt.f.Type() {
				t.Errorf("%s cut to %d bytes: error frame type %#x", tt.name, i, te.FrameType)
			}
		}
	}
	// Frames that may run to the end parse shorter.
	enc := (&StreamFrame{StreamID: 4, Offset: 5, Data: []byte("abc")}).Append(nil)
	if f, n, err := ParseFrame(enc[:len(enc)-1]); err != nil || n != len(enc)-1 || string(f.(*StreamFrame).Data) != "ab" {
		t.Errorf("short STREAM: %#v, %d, %v", f, n, err)
	}
	if _, _, err := ParseFrame(enc[:1]); err == nil {
		t.Error("STREAM without stream ID parsed")
	}
}

func TestParsePadding(t *testing.T) {
	tests := []struct {
		data []byte
		n    int
	}{
		{[]byte{0}, 1},
		{[]byte{0, 0, 0, 1, 0}, 3},
		{make([]byte, 1500), 1500},
	}
	for _, tt := range tests {
		f, n, err := ParseFrame(tt.data)
		if err != nil || n != tt.n || f.(*PaddingFrame).Length != tt.n {
			t.Errorf("%x: %#v, %d, %v", tt.data, f, n, err)
		}
	}
}

func TestStreamFrameType(t *testing.T) {
	tests := []struct {
		f    StreamFrame
		want uint64
	}{
		{StreamFrame{}, 0x08},
		{StreamFrame{Fin: true}, 0x09},
		{StreamFrame{DataLenPresent: true}, 0x0a},
		{StreamFrame{DataLenPresent: true, Fin: true}, 0x0b},
		{StreamFrame{Offset: 1}, 0x0c},
		{StreamFrame{Offset: 1, Fin: true}, 0x0d},
		{StreamFrame{Offset: 1, DataLenPresent: true}, 0x0e},
		{StreamFrame{Offset: 1, DataLenPresent: true, Fin: true}, 0x0f},
	}
	for _, tt := range tests {
		if got := tt.f.Type(); got != tt.want {
			t.Errorf("%+v: type %#x, want %#x", tt.f, got, tt.want)
		}
	}
	// An explicit zero offset parses like an absent one.
	f, n, err := ParseFrame([]byte{0x0e, 4, 0, 1, 'x'})
	if err != nil || n != 5 || !framesEqual(f, &StreamFrame{StreamID: 4, Data: []byte("x"), DataLenPresent: true}) {
		t.Errorf("zero offset: %#v, %d, %v", f, n, err)
	}
}

func TestParseFrameErrors(t *testing.T) {
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	v := func(x uint64) []byte { return AppendVarint(nil, x) }
	token := make([]byte, 16)
	tests := []struct {
		name string
		data []byte
		code qerr.TransportErrorCode
		typ  uint64
	}{
		{"empty", nil, qerr.FrameEncodingError, 0},
		{"unknown type", []byte{0x21}, qerr.FrameEncodingError, 0x21},
		{"unknown type DATAGRAM", []byte{0x30, 1}, qerr.FrameEncodingError, 0x30},
		{"unknown two-byte type", v(0x3e7d), qerr.FrameEncodingError, 0x3e7d},
		{"unknown large type", v(1 << 40), qerr.FrameEncodingError, 1 << 40},
		{"truncated type", []byte{0x7e}, qerr.FrameEncodingError, 0},
		{"non-minimal PING", []byte{0x40, 0x01}, qerr.FrameEncodingError, 0x01},
		{"non-minimal PATH_ABANDON", cat(appendVarintN(nil, 0x3e75, 4), v(1), v(0)), qerr.FrameEncodingError, 0x3e75},
		{"ACK first range below 0", cat([]byte{0x02}, v(5), v(0), v(0), v(6)), qerr.FrameEncodingError, 0x02},
		{"ACK gap below 0", cat([]byte{0x02}, v(5), v(0), v(1), v(2), v(2), v(0)), qerr.FrameEncodingError, 0x02},
		{"ACK gap to exactly -1", cat([]byte{0x02}, v(5), v(0), v(1), v(3), v(1), v(0)), qerr.FrameEncodingError, 0x02},
		{"ACK range length below 0", cat([]byte{0x02}, v(10), v(0), v(1), v(0), v(0), v(9)), qerr.FrameEncodingError, 0x02},
		{"ACK huge range count", cat([]byte{0x02}, v(10), v(0), v(MaxVarint), v(0), v(0), v(0)), qerr.FrameEncodingError, 0x02},
		{"ACK ECN without counts", cat([]byte{0x03}, v(10), v(0), v(0), v(0)), qerr.FrameEncodingError, 0x03},
		{"PATH_ACK range below 0", cat([]byte{0x3e}, v(1), v(5), v(0), v(0), v(6)), qerr.FrameEncodingError, 0x3e},
		{"CRYPTO beyond 2^62-1", cat([]byte{0x06}, v(MaxVarint), v(1), []byte{0}), qerr.FrameEncodingError, 0x06},
		{"CRYPTO length beyond data", cat([]byte{0x06}, v(0), v(5), []byte{1, 2}), qerr.FrameEncodingError, 0x06},
		{"NEW_TOKEN empty", []byte{0x07, 0}, qerr.FrameEncodingError, 0x07},
		{"STREAM beyond 2^62-1", cat([]byte{0x0e}, v(0), v(MaxVarint-1), v(2), []byte{1, 2}), qerr.FrameEncodingError, 0x0e},
		{"STREAM without length beyond 2^62-1", cat([]byte{0x0c}, v(0), v(MaxVarint), []byte{1}), qerr.FrameEncodingError, 0x0c},
		{"STREAM length beyond data", cat([]byte{0x0a}, v(0), v(3), []byte{1}), qerr.FrameEncodingError, 0x0a},
		{"MAX_STREAMS bidi above 2^60", cat([]byte{0x12}, v(MaxStreamCount+1)), qerr.FrameEncodingError, 0x12},
		{"MAX_STREAMS uni above 2^60", cat([]byte{0x13}, v(MaxStreamCount+1)), qerr.FrameEncodingError, 0x13},
		{"STREAMS_BLOCKED bidi above 2^60", cat([]byte{0x16}, v(MaxStreamCount+1)), qerr.FrameEncodingError, 0x16},
		{"STREAMS_BLOCKED uni above 2^60", cat([]byte{0x17}, v(MaxStreamCount+1)), qerr.FrameEncodingError, 0x17},
		{"NEW_CONNECTION_ID length 0", cat([]byte{0x18}, v(1), v(0), []byte{0}, token), qerr.FrameEncodingError, 0x18},
		{"NEW_CONNECTION_ID length 21", cat([]byte{0x18}, v(1), v(0), []byte{21}, make([]byte, 21), token), qerr.FrameEncodingError, 0x18},
		{"NEW_CONNECTION_ID retire prior to above seq", cat([]byte{0x18}, v(1), v(2), []byte{4, 1, 2, 3, 4}, token), qerr.FrameEncodingError, 0x18},
		{"NEW_CONNECTION_ID short token", cat([]byte{0x18}, v(1), v(0), []byte{4, 1, 2, 3, 4}, token[:15]), qerr.FrameEncodingError, 0x18},
		{"PATH_NEW_CONNECTION_ID length 0", cat(v(0x3e78), v(1), v(1), v(0), []byte{0}, token), qerr.FrameEncodingError, 0x3e78},
		{"PATH_NEW_CONNECTION_ID retire prior to above seq", cat(v(0x3e78), v(1), v(1), v(2), []byte{1, 1}, token), qerr.FrameEncodingError, 0x3e78},
		{"CONNECTION_CLOSE reason beyond data", cat([]byte{0x1c}, v(1), v(0), v(10), []byte("abc")), qerr.FrameEncodingError, 0x1c},
		{"PATH_CHALLENGE short", []byte{0x1a, 1, 2, 3, 4, 5, 6, 7}, qerr.FrameEncodingError, 0x1a},
		{"PATH_ACK path ID above 2^32-1", cat([]byte{0x3e}, v(1<<32), v(0), v(0), v(0), v(0)), qerr.ProtocolViolation, 0x3e},
		{"PATH_ABANDON path ID above 2^32-1", cat(v(0x3e75), v(1<<32), v(0)), qerr.ProtocolViolation, 0x3e75},
		{"PATH_STATUS_BACKUP path ID above 2^32-1", cat(v(0x3e76), v(1<<32), v(0)), qerr.ProtocolViolation, 0x3e76},
		{"PATH_STATUS_AVAILABLE path ID above 2^32-1", cat(v(0x3e77), v(1<<32), v(0)), qerr.ProtocolViolation, 0x3e77},
		{"PATH_NEW_CONNECTION_ID path ID above 2^32-1", cat(v(0x3e78), v(1<<32), v(1), v(0), []byte{1, 1}, token), qerr.ProtocolViolation, 0x3e78},
		{"PATH_RETIRE_CONNECTION_ID path ID above 2^32-1", cat(v(0x3e79), v(1<<32), v(0)), qerr.ProtocolViolation, 0x3e79},
		{"MAX_PATH_ID above 2^32-1", cat(v(0x3e7a), v(1<<32)), qerr.ProtocolViolation, 0x3e7a},
		{"PATHS_BLOCKED above 2^32-1", cat(v(0x3e7b), v(1<<32)), qerr.ProtocolViolation, 0x3e7b},
		{"PATH_CIDS_BLOCKED path ID above 2^32-1", cat(v(0x3e7c), v(1<<32), v(0)), qerr.ProtocolViolation, 0x3e7c},
	}
	for _, tt := range tests {
		f, n, err := ParseFrame(tt.data)
		var te *qerr.TransportError
		if !errors.As(err, &te) || te.Code != tt.code || te.FrameType != tt.typ {
			t.Errorf("%s: got %#v, %d, %v; want %v for frame %#x", tt.name, f, n, err, tt.code, tt.typ)
		}
		if f != nil || n != 0 {
			t.Errorf("%s: frame %#v and %d bytes returned with the error", tt.name, f, n)
		}
	}
}

func TestParseFrameLimitsAccepted(t *testing.T) {
	v := func(x uint64) []byte { return AppendVarint(nil, x) }
	tests := []struct {
		name string
		data []byte
	}{
		{"STREAM ending at 2^62-1", bytes.Join([][]byte{{0x0e}, v(0), v(MaxVarint - 2), v(2), {1, 2}}, nil)},
		{"CRYPTO ending at 2^62-1", bytes.Join([][]byte{{0x06}, v(MaxVarint - 1), v(1), {1}}, nil)},
		{"ACK down to 0", bytes.Join([][]byte{{0x02}, v(10), v(0), v(1), v(2), v(0), v(6)}, nil)},
		{"MAX_PATH_ID 2^32-1", bytes.Join([][]byte{v(0x3e7a), v(MaxPathIDLimit)}, nil)},
	}
	for _, tt := range tests {
		if _, n, err := ParseFrame(tt.data); err != nil || n != len(tt.data) {
			t.Errorf("%s: %d, %v", tt.name, n, err)
		}
	}
}

func TestAckEliciting(t *testing.T) {
	notEliciting := map[uint64]bool{FrameTypePadding: true, FrameTypeAck: true, FrameTypeAckECN: true,
		FrameTypePathAck: true, FrameTypePathAckECN: true, FrameTypeConnectionClose: true, FrameTypeConnectionCloseApp: true}
	probing := map[uint64]bool{FrameTypePadding: true, FrameTypePathChallenge: true, FrameTypePathResponse: true, FrameTypeNewConnectionID: true}
	for _, tt := range frameCases() {
		if got := AckEliciting(tt.f); got == notEliciting[tt.f.Type()] {
			t.Errorf("%s: AckEliciting %v", tt.name, got)
		}
		if got := IsProbing(tt.f); got != probing[tt.f.Type()] {
			t.Errorf("%s: IsProbing %v", tt.name, got)
		}
	}
}

func TestEmptyAckHasNoEncoding(t *testing.T) {
	for _, f := range []Frame{&AckFrame{}, &PathAckFrame{PathID: 1}} {
		if f.Len() != 0 || len(f.Append(nil)) != 0 {
			t.Errorf("%T without ranges: Len %d", f, f.Len())
		}
	}
	if (&PaddingFrame{Length: -3}).Len() != 0 || len((&PaddingFrame{Length: -3}).Append(nil)) != 0 {
		t.Error("negative padding")
	}
}

// zeros backs the data of the frames whose length tests measure.
var zeros = make([]byte, 20010)

func TestMaxStreamDataLen(t *testing.T) {
	ids := []uint64{0, 63, 64, 16383, 16384, 1 << 30, MaxVarint}
	offsets := []uint64{0, 1, 63, 64, 16384, 1 << 30, 1 << 40}
	for _, id := range ids {
		for _, off := range offsets {
			for room := -2; room <= 20000; room++ {
				n := MaxStreamDataLen(id, off, room)
				frameLen := func(n int) int {
					return (&StreamFrame{StreamID: id, Offset: off, Data: zeros[:n], DataLenPresent: true}).Len()
				}
				if n < 0 {
					if n != -1 || frameLen(0) <= room {
						t.Fatalf("id %d off %d room %d: %d but an empty frame takes %d", id, off, room, n, frameLen(0))
					}
					continue
				}
				if frameLen(n) > room || frameLen(n+1) <= room {
					t.Fatalf("id %d off %d room %d: %d takes %d, one more %d", id, off, room, n, frameLen(n), frameLen(n+1))
				}
			}
		}
	}
	// The data may not go beyond 2^62-1.
	if n := MaxStreamDataLen(0, MaxVarint-10, 1000); n != 10 {
		t.Errorf("near the end of the stream: %d", n)
	}
	if n := MaxStreamDataLen(0, MaxVarint, 1000); n != 0 {
		t.Errorf("at the end of the stream: %d", n)
	}
}

func TestMaxCryptoDataLen(t *testing.T) {
	for _, off := range []uint64{0, 1, 63, 64, 16383, 16384, 1 << 30} {
		for room := -2; room <= 20000; room++ {
			n := MaxCryptoDataLen(off, room)
			frameLen := func(n int) int { return (&CryptoFrame{Offset: off, Data: zeros[:n]}).Len() }
			if n < 0 {
				if frameLen(0) <= room {
					t.Fatalf("off %d room %d: %d but an empty frame takes %d", off, room, n, frameLen(0))
				}
				continue
			}
			if frameLen(n) > room || frameLen(n+1) <= room {
				t.Fatalf("off %d room %d: %d takes %d, one more %d", off, room, n, frameLen(n), frameLen(n+1))
			}
		}
	}
	if n := MaxCryptoDataLen(MaxVarint-1, 100); n != 1 {
		t.Errorf("near the end: %d", n)
	}
}

func BenchmarkParseStreamFrame(b *testing.B) {
	enc := (&StreamFrame{StreamID: 4, Offset: 1 << 20, Data: make([]byte, 1200), DataLenPresent: true}).Append(nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ParseFrame(enc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseAckFrame(b *testing.B) {
	f := &AckFrame{Ranges: []AckRange{{Smallest: 900, Largest: 1000}, {Smallest: 50, Largest: 60}, {Smallest: 10, Largest: 47}}, AckDelay: 7}
	enc := f.Append(nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ParseFrame(enc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendStreamFrame(b *testing.B) {
	f := &StreamFrame{StreamID: 4, Offset: 1 << 20, Data: make([]byte, 1200), DataLenPresent: true}
	buf := make([]byte, 0, 1500)
	b.ReportAllocs()
	for b.Loop() {
		buf = f.Append(buf[:0])
	}
}
