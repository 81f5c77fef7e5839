package core

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic/internal/protection"
	"github.com/mpq/mpq/mpquic/internal/wire"
	"github.com/mpq/mpq/mpquic/qerr"
)

// earlyConfigs are test configurations with session tickets: the client
// has a session cache, the server a fixed ticket key (so that servers of
// different configurations read each other's tickets).
func earlyConfigs(t *testing.T, allow bool) (client, server *Config) {
	client, server = testConfigs(t)
	client.TLS.ClientSessionCache = tls.NewLRUClientSessionCache(4)
	server.TLS.SessionTicketKey = [32]byte{1, 2, 3}
	client.Allow0RTT, server.Allow0RTT = allow, allow
	server.SessionTickets = true
	return client, server
}

// warmUp runs a first connection until the client stored a ticket.
func warmUp(t *testing.T, ccfg, scfg *Config) *pair {
	t.Helper()
	p := newPair(t, ccfg, scfg, EndpointConfig{})
	p.handshake()
	p.runUntil(func() bool { return p.client.early.ticketsStored > 0 }, 5*time.Second)
	return p
}

// redial starts a new client connection (another port) to the pair's
// server endpoint, or to a new endpoint serving scfg when it is not nil.
func (p *pair) redial(ccfg, scfg *Config, port uint16) {
	p.t.Helper()
	if scfg != nil {
		ep, err := NewEndpoint(EndpointConfig{Server: scfg, Rand: randReader{rand.New(rand.NewPCG(5, 6))}})
		if err != nil {
			p.t.Fatal(err)
		}
		p.sEP = ep
	}
	p.wire, p.server = nil, nil
	ccfg.Rand = randReader{rand.New(rand.NewPCG(7, uint64(port)))}
	c, err := NewClientConn(ccfg, netip.AddrPortFrom(clientAddr.Addr(), port), serverAddr, "", p.now)
	if err != nil {
		p.t.Fatal(err)
	}
	p.client = c
}

// request sends req on a stream opened with OpenEarlyStream when early
// (with OpenStream after the handshake otherwise); the server answers every
// request with its bytes reversed. It returns the time from the start to
// the complete answer, and when the server had the whole request.
func (p *pair) request(req []byte, early bool) (answer, serverGot time.Duration) {
	p.t.Helper()
	start := p.now
	var cs, ss *Stream
	var got, ans []byte
	answered := false
	buf := make([]byte, 4096)
	p.runUntil(func() bool {
		if cs == nil {
			var err error
			if early {
				cs, err = p.client.OpenEarlyStream(true)
			} else {
				cs, err = p.client.OpenStream(true)
			}
			switch {
			case err == nil:
				if _, err := cs.Write(req); err != nil {
					p.t.Fatal(err)
				}
				cs.Close()
			case errors.Is(err, ErrHandshakeIncomplete):
			default:
				p.t.Fatal(err)
			}
		}
		if ss == nil && p.server != nil {
			ss = p.server.AcceptStream()
		}
		for ss != nil && !answered {
			n, err := ss.Read(buf)
			got = append(got, buf[:n]...)
			if err == io.EOF {
				serverGot = p.now.Sub(start)
				rev := make([]byte, len(got))
				for i := range got {
					rev[len(got)-1-i] = got[i]
				}
				ss.Write(rev)
				ss.Close()
				answered = true
			}
			if n == 0 || err != nil {
				break
			}
		}
		for cs != nil {
			n, err := cs.Read(buf)
			ans = append(ans, buf[:n]...)
			if err == io.EOF {
				return true
			}
			if n == 0 || err != nil {
				break
			}
		}
		return false
	}, 10*time.Second)
	if !bytes.Equal(got, req) || len(ans) != len(req) {
		p.t.Fatalf("server got %d bytes (equal %v), client %d, want %d", len(got), bytes.Equal(got, req), len(ans), len(req))
	}
	return p.now.Sub(start), serverGot
}

func TestZeroRTTAccepted(t *testing.T) {
	ccfg, scfg := earlyConfigs(t, true)
	p := warmUp(t, ccfg, scfg)
	rtt := 2 * p.delay
	if st := p.client.EarlyData(); st.Offered || st.Resumed || st.PacketsSent != 0 {
		t.Fatalf("first connection: %+v", st)
	}
	req := randomBytes(3000, 1) // more than one packet
	// A resumed connection without 0-RTT: the request waits for the
	// handshake.
	noEarly := *ccfg
	noEarly.Allow0RTT = false
	p.redial(&noEarly, nil, 5002)
	first, _ := p.request(req, true)
	p.redial(ccfg, nil, 5001)
	if !p.client.CanSendEarly() {
		t.Fatal("resumed client has no 0-RTT keys")
	}
	if _, err := p.client.OpenStream(true); !errors.Is(err, ErrHandshakeIncomplete) {
		t.Fatalf("OpenStream before the handshake: %v", err)
	}
	answer, serverGot := p.request(req, true)
	if serverGot > rtt/2+time.Millisecond {
		t.Errorf("server had the 0-RTT request after %v, want one-way %v", serverGot, rtt/2)
	}
	if answer > rtt+time.Millisecond {
		t.Errorf("0-RTT answer after %v, want one RTT (%v)", answer, rtt)
	}
	if first < answer+rtt/2 {
		t.Errorf("1-RTT answer after %v, 0-RTT after %v: less than half an RTT apart", first, answer)
	}
	t.Logf("answer after %v with 0-RTT, %v without (RTT %v)", answer, first, rtt)
	p.handshake()
	cst, sst := p.client.EarlyData(), p.server.EarlyData()
	if !cst.Offered || !cst.Accepted || !cst.Resumed || cst.PacketsSent == 0 {
		t.Errorf("client: %+v", cst)
	}
	if !sst.Accepted || !sst.Resumed || sst.PacketsReceived == 0 {
		t.Errorf("server: %+v", sst)
	}
	// 0-RTT keys are gone on both ends (RFC 9001 Section 4.9.3).
	p.transfer(p.client, p.server, []byte("after"), 5*time.Second)
	if p.client.early.keys.haveSeal || p.server.early.keys.haveOpen {
		t.Error("0-RTT keys kept after the handshake")
	}
	if p.client.CanSendEarly() {
		t.Error("CanSendEarly after the handshake")
	}
}

// TestZeroRTTAfterRetry: a server that asks for a Retry dropped the first
// 0-RTT packets; the client sends their data again in 0-RTT after the
// Retry, so that the answer takes the Retry's round trip and one more.
func TestZeroRTTAfterRetry(t *testing.T) {
	ccfg, scfg := earlyConfigs(t, true)
	p := warmUp(t, ccfg, scfg)
	ep, err := NewEndpoint(EndpointConfig{Server: scfg, RequireRetry: true, Rand: randReader{rand.New(rand.NewPCG(5, 6))}})
	if err != nil {
		t.Fatal(err)
	}
	p.sEP = ep
	p.redial(ccfg, nil, 5001)
	answer, _ := p.request(randomBytes(100, 4), true)
	if rtt := 2 * p.delay; answer > 2*rtt+time.Millisecond {
		t.Errorf("answer after %v, want two RTTs (%v): the Retry's and the 0-RTT request's", answer, 2*rtt)
	}
	p.handshake()
	if st := p.server.EarlyData(); !st.Accepted || st.PacketsReceived == 0 {
		t.Errorf("server %+v", st)
	}
}

func TestZeroRTTNotOffered(t *testing.T) {
	tests := []struct {
		name                 string
		clientNow, serverWas bool // Allow0RTT of the second client, of the first server
	}{
		{"client declines", false, true},
		{"ticket without early data", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ccfg, scfg := earlyConfigs(t, true)
			scfg.Allow0RTT = tt.serverWas
			p := warmUp(t, ccfg, scfg)
			ccfg.Allow0RTT = tt.clientNow
			p.redial(ccfg, nil, 5001)
			if p.client.CanSendEarly() {
				t.Fatal("0-RTT keys without Allow0RTT")
			}
			if _, err := p.client.OpenEarlyStream(true); !errors.Is(err, ErrHandshakeIncomplete) {
				t.Fatalf("OpenEarlyStream: %v", err)
			}
			p.request([]byte("x"), true)
			if st := p.client.EarlyData(); st.Offered || !st.Resumed || st.PacketsSent != 0 {
				t.Fatalf("client: %+v", st)
			}
		})
	}
}

// TestZeroRTTRejected: the server of the second connection declines the
// early data (0-RTT off, or smaller limits than those of the ticket); the
// 0-RTT data arrives all the same, in 1-RTT packets.
func TestZeroRTTRejected(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
	}{
		{"server without 0-RTT", func(c *Config) { c.Allow0RTT = false }},
		{"smaller connection window", func(c *Config) { c.InitialConnWindow = 100 << 10 }},
		{"fewer streams", func(c *Config) { c.MaxIncomingStreams = 10 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ccfg, scfg := earlyConfigs(t, true)
			p := warmUp(t, ccfg, scfg)
			s2 := *scfg
			s2.TLS = scfg.TLS.Clone()
			tt.change(&s2)
			p.redial(ccfg, &s2, 5001)
			if !p.client.CanSendEarly() {
				t.Fatal("no 0-RTT keys")
			}
			req := randomBytes(2500, 2)
			answer, _ := p.request(req, true)
			// The rejected data goes again as soon as the handshake
			// completes: answer after two RTTs.
			if rtt := 2 * p.delay; answer < 2*rtt || answer > 2*rtt+time.Millisecond {
				t.Errorf("answer after %v, want 2 RTTs (%v)", answer, 2*rtt)
			}
			cst, sst := p.client.EarlyData(), p.server.EarlyData()
			if !cst.Offered || cst.Accepted || cst.PacketsSent == 0 || !cst.Resumed {
				t.Errorf("client: %+v", cst)
			}
			if sst.Accepted || sst.PacketsReceived != 0 {
				t.Errorf("server: %+v", sst)
			}
		})
	}
}

// TestZeroRTTForbiddenFrames: a 0-RTT packet with a frame that 0-RTT must
// not carry closes the connection with PROTOCOL_VIOLATION
// (RFC 9000 Section 12.4).
func TestZeroRTTForbiddenFrames(t *testing.T) {
	frames := map[string]wire.Frame{
		"ACK":            &wire.AckFrame{Ranges: []wire.AckRange{{Smallest: 0, Largest: 0}}},
		"HANDSHAKE_DONE": &wire.HandshakeDoneFrame{},
		"PATH_ACK":       &wire.PathAckFrame{Ranges: []wire.AckRange{{Smallest: 0, Largest: 0}}},
		// Ignored in 1-RTT when unsolicited: only the 0-RTT rule
		// rejects it.
		"PATH_RESPONSE": &wire.PathResponseFrame{Data: [8]byte{1}},
	}
	for name, f := range frames {
		t.Run(name, func(t *testing.T) {
			ccfg, scfg := earlyConfigs(t, true)
			p := warmUp(t, ccfg, scfg)
			p.redial(ccfg, nil, 5001)
			// The client's first flight reaches the server (its
			// 0-RTT keys come with the ClientHello).
			p.runUntil(func() bool { return p.server != nil && p.server.early.keys.haveOpen }, time.Second)
			b := sealEarly(t, p.client, f.Append(make([]byte, 0, 64)))
			p.server.HandleDatagram(p.now, Datagram{Local: serverAddr, Remote: p.client.paths[0].local, Data: b})
			_, err := p.server.Closed()
			if err == nil {
				err = p.server.Err()
			}
			var te *qerr.TransportError
			if !errors.As(err, &te) || te.Code != qerr.ProtocolViolation {
				t.Fatalf("server error %v, want PROTOCOL_VIOLATION", err)
			}
		})
	}
}

// TestZeroRTTRememberedLimits: 0-RTT data stays within the flow control
// limit remembered with the ticket even when the server's new one is larger
// (RFC 9000 Section 7.4.1); the rest goes in 1-RTT.
func TestZeroRTTRememberedLimits(t *testing.T) {
	ccfg, scfg := earlyConfigs(t, true)
	scfg.InitialConnWindow, scfg.InitialStreamWindow = 4000, 4000
	p := warmUp(t, ccfg, scfg)
	s2 := *scfg
	s2.TLS = scfg.TLS.Clone()
	s2.InitialConnWindow, s2.InitialStreamWindow = 1<<20, 1<<20
	p.redial(ccfg, &s2, 5001)
	req := randomBytes(20000, 3)
	p.request(req, true)
	st := p.client.EarlyData()
	if !st.Accepted || st.StreamBytesSent == 0 || st.StreamBytesSent > 4000 {
		t.Fatalf("client: %+v, want at most 4000 stream bytes in 0-RTT", st)
	}
}

// TestZeroRTTNewParamsAfterHandshake: the server's transport parameters
// that arrive while the client sends 0-RTT apply only when the handshake
// completes (RFC 9000 Section 7.4.1); a server that accepted 0-RTT and
// reduced a limit is a PROTOCOL_VIOLATION.
func TestZeroRTTNewParamsAfterHandshake(t *testing.T) {
	for _, tt := range []struct {
		name    string
		factor  uint64 // of the remembered initial_max_data
		wantErr bool
	}{
		{"larger", 2, false},
		{"reduced", 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ccfg, scfg := earlyConfigs(t, true)
			p := warmUp(t, ccfg, scfg)
			p.redial(ccfg, nil, 5001)
			c := p.client
			remembered := c.early.remembered
			credit := c.streams.connSend.Credit()
			pp := wire.DefaultTransportParameters()
			r := remembered
			r.InitialMaxData *= tt.factor
			r.Apply(&pp)
			pp.InitialSourceConnectionID, pp.HasInitialSourceConnectionID = c.ids.p0().remote[0].cid, true
			pp.OriginalDestinationConnectionID, pp.HasOriginalDestinationConnectionID = c.origDCID, true
			if err := c.handlePeerParams(pp.Append(nil)); err != nil {
				t.Fatal(err)
			}
			if got := c.streams.connSend.Credit(); got != credit || !c.early.deferredLimits {
				t.Fatalf("credit %d after the new parameters, want the remembered %d until the handshake completes", got, credit)
			}
			err := c.finishEarly()
			if tt.wantErr {
				var te *qerr.TransportError
				if !errors.As(err, &te) || te.Code != qerr.ProtocolViolation {
					t.Fatalf("finishEarly = %v, want PROTOCOL_VIOLATION", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.streams.connSend.Credit(); got != 2*remembered.InitialMaxData {
				t.Fatalf("credit %d after the handshake, want %d", got, 2*remembered.InitialMaxData)
			}
		})
	}
}

// sealEarly returns a 0-RTT packet of the client c with payload (padded
// for the header protection sample), as c would send it next.
func sealEarly(t testing.TB, c *Conn, payload []byte) []byte {
	t.Helper()
	k := c.early.keys.seal
	pn := c.paths[0].app.nextPN
	b, lengthOff, pnOff := wire.AppendLongHeader(nil, wire.Packet0RTT, wire.Version1, c.ids.dcid(), c.ids.srcCID(), nil, pn, 2)
	hdrLen := len(b)
	b = append(b, payload...)
	b = append(b, make([]byte, 20)...) // PADDING
	b = append(b, make([]byte, aeadTag)...)
	wire.PutLongHeaderLength(b, lengthOff, len(b)-pnOff)
	if _, err := protection.SealPacket(k.AEAD, k.HP, b[:len(b)-aeadTag], hdrLen, pnOff, 2, 0, pn); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestZeroRTTRejectedLimits: after the server rejected 0-RTT, the client's
// limits are the server's new transport parameters, not the larger ones
// remembered with the ticket (RFC 9000 Section 7.4.1: a rejected client
// must not assume the remembered ones); then a transfer larger than the
// server's new connection window stays within it.
func TestZeroRTTRejectedLimits(t *testing.T) {
	ccfg, scfg := earlyConfigs(t, true)
	p := warmUp(t, ccfg, scfg)
	s2 := *scfg
	s2.TLS = scfg.TLS.Clone()
	s2.InitialConnWindow, s2.MaxIncomingStreams = 100<<10, 3
	p.redial(ccfg, &s2, 5001)
	req := randomBytes(500, 2)
	p.request(req, true)
	p.handshake()
	c := p.client
	if st := c.EarlyData(); st.Accepted || st.PacketsSent == 0 {
		t.Fatalf("client: %+v", st)
	}
	sm := &c.streams
	// The server may have raised it with MAX_STREAMS by the one stream
	// closed, never beyond.
	if sm.localLimit[0] > 4 {
		t.Errorf("bidi stream limit %d, the server allows 3 (+1 closed)", sm.localLimit[0])
	}
	p.transfer(c, p.server, randomBytes(300<<10, 3), 10*time.Second)
	if err := p.server.Err(); err != nil {
		t.Fatalf("server: %v", err)
	}
}

// TestZeroRTTRejectedBelowSent: a server that rejects 0-RTT with a
// connection window below the data the client already sent in 0-RTT: the
// client ends the connection naming the limit (its 0-RTT data would go
// again beyond the server's limit).
func TestZeroRTTRejectedBelowSent(t *testing.T) {
	ccfg, scfg := earlyConfigs(t, true)
	p := warmUp(t, ccfg, scfg)
	s2 := *scfg
	s2.TLS = scfg.TLS.Clone()
	s2.InitialConnWindow = 1000
	p.redial(ccfg, &s2, 5001)
	s, err := p.client.OpenEarlyStream(true)
	if err != nil {
		t.Fatal(err)
	}
	s.Write(randomBytes(2500, 2))
	p.runUntil(func() bool { return p.client.Err() != nil }, 5*time.Second)
	if st := p.client.EarlyData(); st.StreamBytesSent < 2500 {
		t.Fatalf("client: %+v, want the 2500 bytes sent in 0-RTT", st)
	}
	if err := p.client.Err(); !strings.Contains(err.Error(), "initial_max_data 1000") {
		t.Fatalf("client error %v, want one naming initial_max_data", err)
	}
}
