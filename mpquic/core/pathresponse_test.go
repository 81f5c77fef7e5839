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

// sealWithDCID seals frames as c's next 1-RTT packet on path 0 with the
// peer's connection ID of index i (c's set of path ID 0) instead of the
// one in use.
func sealWithDCID(t *testing.T, c *Conn, i int, frames []byte) []byte {
	t.Helper()
	s := c.ids.set(0)
	active := s.active
	s.active = i
	defer func() { s.active = active }()
	return sealFrames(t, c, frames)
}

// responseDCIDs lets server answer everything it has to send and returns
// the destination connection IDs of the datagrams it sent to addr that
// carried a PATH_RESPONSE (seen in the client's qlog), in order.
func responseDCIDs(t *testing.T, p *pair, trace *traceBuffer, addr netip.AddrPort) [][]byte {
	t.Helper()
	var got [][]byte
	for {
		d, ok := p.server.PollDatagram(p.now, make([]byte, 0, 1500))
		if !ok {
			return got
		}
		before := bytes.Count(trace.Bytes(), []byte(`"path_response"`))
		p.client.HandleDatagram(p.now, Datagram{Local: d.Remote, Remote: d.Local, Data: d.Data})
		if bytes.Count(trace.Bytes(), []byte(`"path_response"`)) > before && d.Remote == addr {
			got = append(got, bytes.Clone(d.Data[1:1+ConnIDLen]))
		}
	}
}

// TestPathResponseNewConnectionID: a PATH_CHALLENGE that comes from a new
// address with a connection ID of ours the peer had not used on the path
// (a peer probing a new address, RFC 9000 Section 9.1) is answered with
// another of the peer's connection IDs of the same path ID than the one
// used at the path's address: an endpoint "MUST NOT reuse a connection ID
// when sending to more than one destination address" (RFC 9000 Section
// 9.5; draft-ietf-quic-multipath-21 Section 3.1.2: the IDs of the same path
// ID). When the peer then moves there (a non-probing packet), the path
// takes that connection ID and retires the old one. A challenge from a new
// address with the same connection ID (a NAT rebinding) is answered with
// the connection ID in use, which RFC 9000 Section 9.5 allows.
func TestPathResponseNewConnectionID(t *testing.T) {
	for _, tc := range []struct {
		name    string
		newDCID bool
	}{{"new connection ID", true}, {"same connection ID", false}} {
		t.Run(tc.name, func(t *testing.T) {
			cc, sc := testConfigs(t)
			trace := &traceBuffer{}
			cc.Qlog = func(string, []byte) io.WriteCloser { return trace }
			p := newPair(t, cc, sc, EndpointConfig{})
			p.handshake()
			p.runUntil(func() bool { return len(p.wire) == 0 }, 5*time.Second)
			// The client's connection IDs of the server, the one in use
			// and another.
			cs := p.client.ids.set(0)
			other := -1
			for i, r := range cs.remote {
				if i != cs.active && !r.retired {
					other = i
					break
				}
			}
			if other < 0 {
				t.Fatal("the client has no spare connection ID of the server")
			}
			use := cs.active
			if tc.newDCID {
				use = other
			}
			old, ok := p.server.ids.dcidFor(0)
			if !ok {
				t.Fatal("the server has no connection ID of the client")
			}
			old = bytes.Clone(old)

			moved := netip.MustParseAddrPort("10.9.9.9:6000")
			challenge := append([]byte{0x1a, 1, 2, 3, 4, 5, 6, 7, 8}, make([]byte, 1200)...)
			pkt := sealWithDCID(t, p.client, use, challenge)
			p.server.HandleDatagram(p.now, Datagram{Local: serverAddr, Remote: moved, Data: pkt})
			got := responseDCIDs(t, p, trace, moved)
			if len(got) != 1 {
				t.Fatalf("%d PATH_RESPONSEs to %v, want 1", len(got), moved)
			}
			if tc.newDCID == bytes.Equal(got[0], old) {
				t.Fatalf("PATH_RESPONSE to the new address with connection ID %x, the one in use at the path's address is %x (new: %v)", got[0], old, tc.newDCID)
			}
			if now, _ := p.server.ids.dcidFor(0); !bytes.Equal(now, old) {
				t.Fatalf("a probe moved the path's connection ID from %x to %x", old, now)
			}
			if !tc.newDCID {
				return
			}
			// The client moves: a PING from the new address.
			ping := append([]byte{0x01}, make([]byte, 1200)...)
			pkt = sealWithDCID(t, p.client, use, ping)
			p.server.HandleDatagram(p.now, Datagram{Local: serverAddr, Remote: moved, Data: pkt})
			if now, _ := p.server.ids.dcidFor(0); !bytes.Equal(now, got[0]) {
				t.Fatalf("after the move the path uses connection ID %x, want %x (the probe's answer's)", now, got[0])
			}
		})
	}
}
