package core

import (
	"errors"
	"io"
	"testing"

	"github.com/mpq/mpq/mpquic/internal/wire"
	"github.com/mpq/mpq/mpquic/qerr"
)

// TestRepairNegotiation sends the server a REPAIR frame for the client's
// stream 0 of "ABCDEFG" (parity 0x42 0x07 0x05 in chunks of 3, see
// streams/repair_test.go) followed by STREAM frames with "ABC" and "G"
// and the FIN: a server that did not offer the extension fails with
// FRAME_ENCODING_ERROR (an unknown frame type), one whose client did not
// offer it with PROTOCOL_VIOLATION, and with both offering it the server
// rebuilds "DEF" and reads the whole stream.
func TestRepairNegotiation(t *testing.T) {
	tests := []struct {
		name           string
		client, server bool
		code           qerr.TransportErrorCode
	}{
		{"neither", false, false, qerr.FrameEncodingError},
		{"client only", true, false, qerr.FrameEncodingError},
		{"server only", false, true, qerr.ProtocolViolation},
		{"both", true, true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cc, sc := testConfigs(t)
			cc.Repair, sc.Repair = tc.client, tc.server
			p := newPair(t, cc, sc, EndpointConfig{})
			p.handshake()
			if got := p.client.repairNegotiated(); got != (tc.client && tc.server) {
				t.Fatalf("negotiated %v", got)
			}
			var b []byte
			b = (&wire.RepairFrame{StreamID: 0, Offset: 0, ChunkLen: 3, End: 7, Fin: true, Parity: []byte{0x42, 0x07, 0x05}}).Append(b)
			b = (&wire.StreamFrame{StreamID: 0, Data: []byte("ABC"), DataLenPresent: true}).Append(b)
			b = (&wire.StreamFrame{StreamID: 0, Offset: 6, Data: []byte("G"), Fin: true, DataLenPresent: true}).Append(b)
			p.server.HandleDatagram(p.now, Datagram{Local: serverAddr, Remote: clientAddr, Data: sealFrames(t, p.client, b)})
			var te *qerr.TransportError
			err := p.server.Err()
			if tc.code != 0 {
				if !errors.As(err, &te) || te.Code != tc.code || te.FrameType != wire.FrameTypeRepairFin {
					t.Fatalf("server error %v, want %v for frame 0x%x", err, tc.code, wire.FrameTypeRepairFin)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := p.server.AcceptStream()
			if s == nil {
				t.Fatal("no stream")
			}
			buf := make([]byte, 16)
			n, _ := s.Read(buf)
			if string(buf[:n]) != "ABCDEFG" {
				t.Fatalf("read %q", buf[:n])
			}
			if _, err := s.Read(buf); err != io.EOF {
				t.Fatalf("after the data: %v, want EOF", err)
			}
		})
	}
}
