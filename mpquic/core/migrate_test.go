package core

import (
	"bytes"
	"io"
	"net/netip"
	"testing"
	"time"
)

// TestServerFollowsPeerAddressChange: after the handshake the client's
// address changes (a NAT rebinding: new port; a migration: new address)
// and packets to its old address are lost. The server must move the path
// to the address of the client's non-probing packets, validate it with a
// PATH_CHALLENGE and carry data there (RFC 9000 Section 9.3;
// draft-ietf-quic-multipath-21 Section 3.1.3 for a path ID of a multipath
// connection). picoquicdemo -f 1 (interop/picoquic_test.go) does this.
// A client that moves with a new connection ID of the server's (newCID)
// gets packets with a new connection ID of its own as well (RFC 9000
// Section 9.5); after a rebinding, where the client keeps its, the server
// keeps its too.
func TestServerFollowsPeerAddressChange(t *testing.T) {
	for _, tc := range []struct {
		name      string
		multipath bool
		to        netip.AddrPort
		newCID    bool
	}{
		{"rebinding", false, netip.MustParseAddrPort("10.0.0.1:6001"), false},
		{"new address", false, netip.MustParseAddrPort("10.0.0.9:5000"), false},
		{"migration with a new connection ID", false, netip.MustParseAddrPort("10.0.0.9:5000"), true},
		{"multipath rebinding", true, netip.MustParseAddrPort("10.0.0.1:6001"), false},
		{"multipath migration with a new connection ID", true, netip.MustParseAddrPort("10.0.0.1:6001"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc, sc := testConfigs(t)
			cc.DisableMultipath, sc.DisableMultipath = !tc.multipath, !tc.multipath
			trace := &traceBuffer{}
			sc.Qlog = func(string, []byte) io.WriteCloser { return trace }
			p := newPair(t, cc, sc, EndpointConfig{})
			p.handshake()
			p.runUntil(func() bool { return len(p.wire) == 0 }, 5*time.Second)
			if p.server.MultipathEnabled() != tc.multipath {
				t.Fatalf("multipath enabled: %v, want %v", p.server.MultipathEnabled(), tc.multipath)
			}

			before, _ := p.server.ids.dcidFor(0)
			if tc.newCID {
				// The client moves to another connection ID of the
				// server's for path 0.
				s := p.client.ids.p0()
				moved := false
				for i := range s.remote {
					if i != s.active && !s.remote[i].retired {
						s.active, moved = i, true
						break
					}
				}
				if !moved {
					t.Fatal("the server gave the client no spare connection ID")
				}
			}
			p.rewrite = func(toServer bool, d *Datagram) {
				if toServer && d.Local == clientAddr {
					d.Local = tc.to
				}
			}
			// The old mapping is gone: the client no longer gets what the
			// server sends to its old address.
			p.dropPath = func(f flight) bool { return !f.toServer && f.d.Remote == clientAddr }
			p.transfer(p.client, p.server, randomBytes(50_000, 1), 10*time.Second)
			p.transfer(p.server, p.client, randomBytes(300_000, 2), 10*time.Second)

			st := p.server.Paths()[0]
			if st.Remote != tc.to || !st.Validated {
				t.Fatalf("server's path 0: remote %v validated %v, want %v validated", st.Remote, st.Validated, tc.to)
			}
			if !bytes.Contains(trace.Bytes(), []byte(`"path_challenge"`)) {
				t.Fatal("the server did not validate the client's new address with PATH_CHALLENGE")
			}
			after, _ := p.server.ids.dcidFor(0)
			if changed := !bytes.Equal(before, after); changed != tc.newCID {
				t.Fatalf("server's connection ID for the client changed: %v, want %v (%x -> %x)", changed, tc.newCID, before, after)
			}
		})
	}
}

// TestProbeDoesNotMigrate: a packet with only probing frames (PATH_CHALLENGE
// and PADDING) from another address is answered there, but the path keeps
// its address (RFC 9000 Section 9.3).
func TestProbeDoesNotMigrate(t *testing.T) {
	cc, sc := testConfigs(t)
	cc.DisableMultipath, sc.DisableMultipath = true, true
	p := newPair(t, cc, sc, EndpointConfig{})
	p.handshake()
	p.runUntil(func() bool { return len(p.wire) == 0 }, 5*time.Second)
	probe := append([]byte{0x1a, 1, 2, 3, 4, 5, 6, 7, 8}, make([]byte, 1200)...)
	pkt := sealFrames(t, p.client, probe)
	p.server.HandleDatagram(p.now, Datagram{Local: serverAddr, Remote: netip.MustParseAddrPort("10.9.9.9:6000"), Data: pkt})
	if st := p.server.Paths()[0]; st.Remote != clientAddr || !st.Validated {
		t.Fatalf("server's path 0 after a probe from elsewhere: remote %v validated %v, want %v validated", st.Remote, st.Validated, clientAddr)
	}
	p.transfer(p.server, p.client, randomBytes(100_000, 3), 10*time.Second)
}

// TestMigrationValidationFails: the client's packets come from a new
// address that the server cannot reach; when validation gives up, the
// server returns to the last validated address (RFC 9000 Section 9.3.2).
func TestMigrationValidationFails(t *testing.T) {
	cc, sc := testConfigs(t)
	cc.DisableMultipath, sc.DisableMultipath = true, true
	p := newPair(t, cc, sc, EndpointConfig{})
	p.handshake()
	p.runUntil(func() bool { return len(p.wire) == 0 }, 5*time.Second)
	spoofed := netip.MustParseAddrPort("10.9.9.9:6000")
	ping := append([]byte{0x01}, make([]byte, 40)...)
	pkt := sealFrames(t, p.client, ping)
	p.server.HandleDatagram(p.now, Datagram{Local: serverAddr, Remote: spoofed, Data: pkt})
	if st := p.server.Paths()[0]; st.Remote != spoofed || st.Validated {
		t.Fatalf("after a non-probing packet from %v: remote %v validated %v, want it unvalidated there", spoofed, st.Remote, st.Validated)
	}
	// Nothing reaches the spoofed address, and the client stays silent,
	// so that only the end of validation brings the old address back.
	var toSpoofed, sentBytes int
	p.dropPath = func(f flight) bool {
		if !f.toServer && f.d.Remote == spoofed {
			toSpoofed++
			sentBytes += len(f.d.Data)
		}
		return true
	}
	p.runUntil(func() bool { st := p.server.Paths()[0]; return st.Remote == clientAddr && st.Validated }, 10*time.Second)
	if toSpoofed == 0 {
		t.Fatal("no PATH_CHALLENGE went to the new address")
	}
	// Anti-amplification (RFC 9000 Section 9.3.1): at most three times
	// the one datagram received from there.
	if limit := 3 * len(pkt); sentBytes > limit {
		t.Fatalf("sent %d bytes to the unvalidated address, more than 3 x %d", sentBytes, len(pkt))
	}
	p.dropPath = nil
	p.transfer(p.server, p.client, randomBytes(100_000, 4), 10*time.Second)
}
