package core

import (
	"bytes"
	"io"
	"net/netip"
	"testing"
	"time"
)

// TestPathResponseOnArrivalTuple: a PATH_RESPONSE leaves on the network
// path its PATH_CHALLENGE arrived on (RFC 9000 Section 8.2.2), with a
// connection ID of the same path ID (draft-ietf-quic-multipath-21 Section
// 3.1), also when the challenge came from an address the path does not
// use (a NAT rebinding, or a peer probing a new address on an existing
// path ID).
func TestPathResponseOnArrivalTuple(t *testing.T) {
	for _, tc := range []struct {
		name      string
		multipath bool
	}{{"multipath", true}, {"single path", false}} {
		t.Run(tc.name, func(t *testing.T) {
			cc, sc := testConfigs(t)
			cc.DisableMultipath, sc.DisableMultipath = !tc.multipath, !tc.multipath
			trace := &traceBuffer{}
			cc.Qlog = func(string, []byte) io.WriteCloser { return trace }
			p := newPair(t, cc, sc, EndpointConfig{})
			p.handshake()
			p.runUntil(func() bool { return len(p.wire) == 0 }, 5*time.Second)

			rebound := netip.MustParseAddrPort("10.9.9.9:6000")
			challenge := append([]byte{0x1a, 1, 2, 3, 4, 5, 6, 7, 8}, make([]byte, 1200)...)
			pkt := sealFrames(t, p.client, challenge)
			p.server.HandleDatagram(p.now, Datagram{Local: serverAddr, Remote: rebound, Data: pkt})

			var to []netip.AddrPort
			for {
				d, ok := p.server.PollDatagram(p.now, make([]byte, 0, 1500))
				if !ok {
					break
				}
				before := bytes.Count(trace.Bytes(), []byte(`"path_response"`))
				p.client.HandleDatagram(p.now, Datagram{Local: d.Remote, Remote: d.Local, Data: d.Data})
				if bytes.Count(trace.Bytes(), []byte(`"path_response"`)) > before {
					to = append(to, d.Remote)
				}
			}
			if len(to) != 1 || to[0] != rebound {
				t.Fatalf("PATH_RESPONSE sent to %v, want once to %v (the challenge's source)", to, rebound)
			}
		})
	}
}
