package core

import (
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic/internal/protection"
	"github.com/mpq/mpq/mpquic/internal/wire"
	"github.com/mpq/mpq/mpquic/qerr"
)

// clientInitial builds a client Initial packet with the given frames,
// protected with the client keys of dcid, padded to a datagram of size
// bytes.
func clientInitial(t testing.TB, dcid, scid, token []byte, pn uint64, frames []byte, size int) []byte {
	t.Helper()
	seal, _ := protection.NewInitialKeys(dcid, true)
	b, lengthOff, pnOff := wire.AppendLongHeader(nil, wire.PacketInitial, wire.Version1, dcid, scid, token, pn, 4)
	hdrLen := len(b)
	b = append(b, frames...)
	if pad := size - len(b) - seal.AEAD.Overhead(); pad > 0 {
		b = append(b, make([]byte, pad)...)
	}
	if !wire.PutLongHeaderLength(b, lengthOff, len(b)-pnOff+seal.AEAD.Overhead()) {
		t.Fatal("length")
	}
	out, err := protection.SealPacket(seal.AEAD, seal.HP, b, hdrLen, pnOff, 4, 0, pn)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// serverClose opens a server Initial sent in reply to a client whose
// first DCID was dcid and returns its CONNECTION_CLOSE frame.
func serverClose(t testing.TB, reply, dcid []byte) *wire.ConnectionCloseFrame {
	t.Helper()
	hdr, err := wire.ParseHeader(reply, ConnIDLen)
	if err != nil || hdr.Type != wire.PacketInitial {
		t.Fatalf("reply is not an Initial packet: %+v, %v", hdr, err)
	}
	_, open := protection.NewInitialKeys(dcid, true)
	pkt := append([]byte(nil), reply[:hdr.Length]...)
	pnLen, trunc, err := protection.UnprotectHeader(open.HP, pkt, hdr.PNOffset)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := protection.OpenPacket(open.AEAD, pkt, hdr.PNOffset+pnLen, 0, wire.DecodePacketNumber(-1, trunc, pnLen))
	if err != nil {
		t.Fatalf("open reply: %v", err)
	}
	f, _, err := wire.ParseFrame(payload)
	if err != nil {
		t.Fatal(err)
	}
	cc, ok := f.(*wire.ConnectionCloseFrame)
	if !ok {
		t.Fatalf("reply carries %T, want CONNECTION_CLOSE", f)
	}
	return cc
}

func serverEndpoint(t testing.TB, ecfg EndpointConfig) *Endpoint {
	t.Helper()
	_, sc := testConfigs(t)
	ecfg.Server = sc
	e, err := NewEndpoint(ecfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

var testNow = time.Unix(1_000_000, 0)

// firstFlight returns the first datagram of a new client connection from
// addr (a genuine ClientHello) and the client.
func firstFlight(t testing.TB, addr netip.AddrPort, seed uint64) (Datagram, *Conn) {
	t.Helper()
	cc, _ := testConfigs(t)
	cc.Rand = randReader{newRand(seed)}
	c, err := NewClientConn(cc, addr, serverAddr, "", testNow)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := c.PollDatagram(testNow, nil)
	if !ok {
		t.Fatal("client has nothing to send")
	}
	return Datagram{Local: serverAddr, Remote: addr, Data: append([]byte(nil), d.Data...)}, c
}

// clientAddrN is the address of client i, each in a /24 of its own (the
// prefix that shares handshake slots).
func clientAddrN(i int) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 7}), uint16(1024+i))
}

// Random bytes behind a plausible Initial header cost the server a
// decryption and no state: no connection, no route, no reply.
func TestGarbageInitialsMakeNoState(t *testing.T) {
	e := serverEndpoint(t, EndpointConfig{})
	for i := range 1000 {
		dcid := randomBytes(8, uint64(i))
		b, lengthOff, _ := wire.AppendLongHeader(nil, wire.PacketInitial, wire.Version1, dcid, []byte{1, 2, 3, 4}, nil, 0, 4)
		b = append(b, randomBytes(1200+i%900, uint64(i)+1e6)...)
		wire.PutLongHeaderLength(b, lengthOff, len(b)-lengthOff-2)
		r := e.Route(testNow, Datagram{Local: serverAddr, Remote: clientAddrN(i), Data: b})
		if r.Conn != nil || r.Reply != nil {
			t.Fatalf("datagram %d: conn %v, reply %v", i, r.Conn != nil, r.Reply != nil)
		}
	}
	st := e.Stats()
	if st.Conns != 0 || st.Accepted != 0 || e.routes() != 0 || st.Dropped != 1000 {
		t.Fatalf("stats %+v, %d routes", st, e.routes())
	}
}

// Initials that decrypt but do not start a handshake are answered with a
// stateless CONNECTION_CLOSE of the right code, and leave no state.
func TestBadFirstInitialIsClosedStatelessly(t *testing.T) {
	crypto := func(off uint64, data []byte) []byte {
		return (&wire.CryptoFrame{Offset: off, Data: data}).Append(nil)
	}
	tests := []struct {
		name   string
		frames []byte
		code   qerr.TransportErrorCode
	}{
		{"TLS record instead of a handshake message", crypto(0, []byte{0x16, 0x03, 0x01, 0x00, 0x40, 1, 2, 3}), qerr.CryptoError(alertUnexpectedMessage)},
		{"ServerHello from a client", crypto(0, []byte{2, 0, 0, 40, 3, 3}), qerr.CryptoError(alertUnexpectedMessage)},
		{"ClientHello of 16 MB", crypto(0, []byte{1, 0xff, 0xff, 0xff, 3, 3}), qerr.CryptoError(alertDecodeError)},
		{"CRYPTO beyond the buffer", crypto(1<<20, []byte{1}), qerr.CryptoBufferExceeded},
		{"STREAM in an Initial", (&wire.StreamFrame{StreamID: 0, Data: []byte("x")}).Append(crypto(0, []byte{1, 0, 0, 4})), qerr.ProtocolViolation},
		{"ACK of nothing", append((&wire.AckFrame{Ranges: []wire.AckRange{{Smallest: 0, Largest: 0}}}).Append(nil), crypto(0, []byte{1, 0, 0, 4})...), qerr.ProtocolViolation},
		{"unknown frame", []byte{0x40, 0x21}, qerr.FrameEncodingError},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := serverEndpoint(t, EndpointConfig{})
			dcid := randomBytes(8, uint64(i))
			pkt := clientInitial(t, dcid, []byte{9, 9, 9, 9}, nil, 0, tt.frames, 1200)
			r := e.Route(testNow, Datagram{Local: serverAddr, Remote: clientAddr, Data: pkt})
			if r.Conn != nil || r.Reply == nil {
				t.Fatalf("conn %v, reply %v", r.Conn != nil, r.Reply != nil)
			}
			if len(r.Reply.Data) >= len(pkt) {
				t.Fatalf("reply of %d bytes to %d", len(r.Reply.Data), len(pkt))
			}
			if f := serverClose(t, r.Reply.Data, dcid); qerr.TransportErrorCode(f.ErrorCode) != tt.code || f.IsApplication {
				t.Fatalf("closed with %v (%q), want %v", qerr.TransportErrorCode(f.ErrorCode), f.Reason, tt.code)
			}
			if st := e.Stats(); st.Rejected != 1 || st.Conns != 0 || e.routes() != 0 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
	// Padding and PING alone are dropped: they are no handshake.
	e := serverEndpoint(t, EndpointConfig{})
	pkt := clientInitial(t, randomBytes(8, 77), []byte{9}, nil, 0, []byte{0x01}, 1200)
	if r := e.Route(testNow, Datagram{Local: serverAddr, Remote: clientAddr, Data: pkt}); r.Conn != nil || r.Reply != nil {
		t.Fatal("answered a PING")
	}
}

// The limits on new connections: up to RetryThreshold connections in
// their handshake new clients are admitted; then they get a Retry, and a
// client that follows it is admitted up to MaxHandshakes; beyond, or
// beyond MaxConns, new connections are refused with CONNECTION_REFUSED.
func TestAdmissionLimits(t *testing.T) {
	const retryAt, maxHS = 3, 5
	e := serverEndpoint(t, EndpointConfig{RetryThreshold: retryAt, MaxHandshakes: maxHS, MaxConns: 6})
	var conns []*Conn
	route := func(d Datagram) Route {
		r := e.Route(testNow, d)
		if r.Conn != nil {
			conns = append(conns, r.Conn)
		}
		return r
	}
	// Admitted while fewer than retryAt connections are in handshake.
	for i := range retryAt {
		d, _ := firstFlight(t, clientAddrN(i), uint64(i))
		if r := route(d); !r.New {
			t.Fatalf("client %d not admitted", i)
		}
	}
	// Then Retry; the client that follows it is admitted.
	for i := retryAt; i < maxHS; i++ {
		d, c := firstFlight(t, clientAddrN(i), uint64(i))
		r := route(d)
		if r.Conn != nil || r.Reply == nil {
			t.Fatalf("client %d: no Retry", i)
		}
		c.HandleDatagram(testNow, Datagram{Local: d.Remote, Remote: serverAddr, Data: r.Reply.Data})
		if !c.gotRetry {
			t.Fatalf("client %d did not take the Retry", i)
		}
		d2, ok := c.PollDatagram(testNow, nil)
		if !ok {
			t.Fatal("nothing after Retry")
		}
		if r := route(Datagram{Local: serverAddr, Remote: d.Remote, Data: append([]byte(nil), d2.Data...)}); !r.New {
			t.Fatalf("client %d not admitted after Retry", i)
		}
	}
	// maxHS in handshake: a new client gets a Retry, and once it followed
	// it (its address validated) it takes the slot of the oldest
	// handshake of the prefix holding the most (each holds one here).
	d, r := retried(t, e, clientAddrN(100), 100)
	r = route(d)
	if !r.New || r.Evicted != conns[0] {
		t.Fatalf("validated client: new %v, evicted %p, want the oldest %p", r.New, r.Evicted, conns[0])
	}
	if next := conns[0].NextTimeout(); next.After(testNow) {
		t.Fatalf("evicted connection's timer at %v, want now", next.Sub(testNow))
	}
	conns[0].HandleTimeout(testNow)
	if done, err := conns[0].Closed(); !done || !errors.Is(err, ErrHandshakeEvicted) {
		t.Fatalf("evicted connection: closed %v with %v", done, err)
	}
	st := e.Stats()
	want := EndpointStats{Accepted: maxHS + 1, Retried: maxHS - retryAt + 1, Evicted: 1, Handshakes: maxHS, Conns: maxHS}
	if st != want {
		t.Fatalf("stats %+v, want %+v", st, want)
	}
	conns = conns[1:]
	// Handshakes that complete free their place in MaxHandshakes but not
	// in MaxConns; connections that end free both.
	e.handshakeDone(conns[0])
	e.handshakeDone(conns[1])
	if st := e.Stats(); st.Handshakes != maxHS-2 || st.Conns != maxHS {
		t.Fatalf("after two handshakes: %+v", st)
	}
	d, _ = firstFlight(t, clientAddrN(101), 101)
	if r := route(d); r.Reply == nil { // still above retryAt: Retry
		t.Fatal("no Retry")
	}
	conns[2].finish()
	conns[3].finish()
	if st := e.Stats(); st.Handshakes != 1 || st.Conns != 3 {
		t.Fatalf("after two ends: %+v", st)
	}
	d, _ = firstFlight(t, clientAddrN(102), 102)
	if r := route(d); !r.New {
		t.Fatal("not admitted below the limits")
	}
	for _, c := range conns {
		c.finish()
	}
	if st := e.Stats(); st.Handshakes != 0 || st.Conns != 0 || e.routes() != 0 || len(e.prefixes) != 0 {
		t.Fatalf("after all ended: %+v, %d routes, %d prefixes", st, e.routes(), len(e.prefixes))
	}
}

// retried sends a new client's first flight from addr to e, which must
// answer with a Retry, and returns the client's next datagram (its
// ClientHello again, with the token) and the Retry's route.
func retried(t testing.TB, e *Endpoint, addr netip.AddrPort, seed uint64) (Datagram, Route) {
	t.Helper()
	d, c := firstFlight(t, addr, seed)
	r := e.Route(testNow, d)
	if r.Conn != nil || r.Reply == nil {
		t.Fatalf("client %v: no Retry (conn %v)", addr, r.Conn != nil)
	}
	c.HandleDatagram(testNow, Datagram{Local: addr, Remote: serverAddr, Data: r.Reply.Data})
	if !c.gotRetry {
		t.Fatalf("client %v did not take the Retry", addr)
	}
	d2, ok := c.PollDatagram(testNow, nil)
	if !ok {
		t.Fatal("nothing after Retry")
	}
	return Datagram{Local: serverAddr, Remote: addr, Data: append([]byte(nil), d2.Data...)}, r
}

// No source prefix (/24, /48) holds more than MaxHandshakesPerPrefix
// handshake slots: its next client is refused with CONNECTION_REFUSED,
// validated or not, while other prefixes are admitted.
func TestHandshakeSlotsPerPrefix(t *testing.T) {
	v4 := func(a, b, c, d byte, port uint16) netip.AddrPort {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{a, b, c, d}), port)
	}
	v6 := func(s string, port uint16) netip.AddrPort { return netip.AddrPortFrom(netip.MustParseAddr(s), port) }
	tests := []struct {
		name  string
		addrs []netip.AddrPort
		want  []bool // admitted
	}{
		{"one address, many ports", []netip.AddrPort{v4(10, 0, 0, 1, 1), v4(10, 0, 0, 1, 2), v4(10, 0, 0, 1, 3), v4(10, 0, 1, 1, 1)},
			[]bool{true, true, false, true}},
		{"one /24", []netip.AddrPort{v4(10, 0, 0, 1, 1), v4(10, 0, 0, 200, 1), v4(10, 0, 0, 3, 1), v4(10, 0, 1, 3, 1)},
			[]bool{true, true, false, true}},
		{"IPv4-mapped IPv6 is IPv4", []netip.AddrPort{v4(10, 0, 0, 1, 1), v6("::ffff:10.0.0.2", 1), v4(10, 0, 0, 3, 1)},
			[]bool{true, true, false}},
		{"one /48", []netip.AddrPort{v6("2001:db8:1:1::1", 1), v6("2001:db8:1:2::1", 1), v6("2001:db8:1:ffff::9", 1), v6("2001:db8:2::1", 1)},
			[]bool{true, true, false, true}},
	}
	for _, validated := range []bool{false, true} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/validated=%v", tt.name, validated), func(t *testing.T) {
				e := serverEndpoint(t, EndpointConfig{RequireRetry: validated, MaxHandshakesPerPrefix: 2})
				refused := 0
				for i, a := range tt.addrs {
					var d Datagram
					var c *Conn
					if validated {
						d, _ = retried(t, e, a, uint64(i))
					} else {
						d, c = firstFlight(t, a, uint64(i))
					}
					r := e.Route(testNow, d)
					if r.New != tt.want[i] {
						t.Fatalf("client %d (%v): admitted %v, want %v", i, a, r.New, tt.want[i])
					}
					if r.New {
						continue
					}
					refused++
					if r.Reply == nil {
						t.Fatalf("client %d (%v): no answer", i, a)
					}
					if c == nil {
						continue
					}
					c.HandleDatagram(testNow, Datagram{Local: a, Remote: serverAddr, Data: r.Reply.Data})
					var te *qerr.TransportError
					if err := c.Err(); !errors.As(err, &te) || te.Code != qerr.ConnectionRefused {
						t.Fatalf("client %d: error %v, want CONNECTION_REFUSED", i, err)
					}
				}
				if st := e.Stats(); st.PrefixRefused != uint64(refused) || st.Refused != uint64(refused) {
					t.Fatalf("stats %+v, want %d refused for their prefix", st, refused)
				}
			})
		}
	}
}

// With every handshake slot taken, a validated client takes the slot of
// the oldest handshake of the prefix holding the most (ties: the prefix
// whose oldest is older); without Retry (not validated), it is refused.
func TestHandshakeEviction(t *testing.T) {
	attacker := func(i int) netip.AddrPort {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}), uint16(4000+i))
	}
	e := serverEndpoint(t, EndpointConfig{RequireRetry: true, MaxHandshakes: 4, MaxHandshakesPerPrefix: 3})
	var conns []*Conn
	admit := func(a netip.AddrPort, seed uint64, at time.Time) Route {
		t.Helper()
		d, _ := retried(t, e, a, seed)
		r := e.Route(at, d)
		if !r.New {
			t.Fatalf("client %v not admitted", a)
		}
		conns = append(conns, r.Conn)
		return r
	}
	ms := func(n int) time.Time { return testNow.Add(time.Duration(n) * time.Millisecond) }
	// The attacker's prefix holds 3 slots, a legitimate client 1.
	for i := range 3 {
		admit(attacker(i), uint64(i), ms(i))
	}
	admit(clientAddrN(1), 10, ms(3))
	// Full: each new validated client evicts the attacker's oldest.
	for i, want := range []int{0, 1} {
		if r := admit(clientAddrN(2+i), uint64(11+i), ms(4+i)); r.Evicted != conns[want] {
			t.Fatalf("new client %d evicted %p, want the attacker's #%d %p", i, r.Evicted, want, conns[want])
		}
	}
	// Every prefix holds one: the oldest of all goes (the attacker's
	// third, admitted before the legitimate client).
	if r := admit(clientAddrN(9), 19, ms(9)); r.Evicted != conns[2] {
		t.Fatalf("evicted %p, want the oldest %p", r.Evicted, conns[2])
	}
	for _, c := range conns[:3] {
		c.HandleTimeout(ms(10))
		if _, err := c.Closed(); !errors.Is(err, ErrHandshakeEvicted) {
			t.Fatalf("evicted connection closed with %v", err)
		}
	}
	st := e.Stats()
	if st.Evicted != 3 || st.Handshakes != 4 || st.Conns != 4 || st.Refused != 0 {
		t.Fatalf("stats %+v", st)
	}

	// Without Retry, a full table refuses: an unvalidated address could
	// be forged.
	e = serverEndpoint(t, EndpointConfig{RetryThreshold: -1, MaxHandshakes: 2})
	for i := range 3 {
		d, _ := firstFlight(t, clientAddrN(i), uint64(i))
		r := e.Route(testNow, d)
		if r.New != (i < 2) || r.Evicted != nil {
			t.Fatalf("unvalidated client %d: admitted %v, evicted %v", i, r.New, r.Evicted != nil)
		}
	}
	if st := e.Stats(); st.Refused != 1 || st.Evicted != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// A server connection whose client goes quiet in the handshake ends
// HandshakeQuietPTOs PTOs after the client's last packet (about 3 s with
// the initial RTT), long before HandshakeTimeout; a client that keeps
// sending is bounded by HandshakeTimeout only.
func TestQuietHandshakeTimesOut(t *testing.T) {
	tests := []struct {
		name      string
		every     time.Duration // client's packets; 0: none after the first
		min, max  time.Duration // when the server connection ends
		quietOnes uint64
	}{
		{"quiet client", 0, 2 * time.Second, 4 * time.Second, 1},
		{"client sending every 500 ms", 500 * time.Millisecond, 10 * time.Second, 10*time.Second + time.Millisecond, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := serverEndpoint(t, EndpointConfig{})
			d, client := firstFlight(t, clientAddr, 1)
			r := e.Route(testNow, d)
			if !r.New {
				t.Fatal("not admitted")
			}
			s := r.Conn
			s.HandleDatagram(testNow, d)
			now, nextPing := testNow, testNow.Add(tt.every)
			for i := 0; ; i++ {
				for {
					if _, ok := s.PollDatagram(now, nil); !ok {
						break
					}
				}
				if done, _ := s.Closed(); done {
					break
				}
				if now.Sub(testNow) > tt.max {
					t.Fatalf("server connection open %v after the first packet", now.Sub(testNow))
				}
				next := s.NextTimeout()
				if tt.every == 0 || next.Before(nextPing) {
					now = next
					s.HandleTimeout(now)
					continue
				}
				now = nextPing
				nextPing = nextPing.Add(tt.every)
				ping := clientInitial(t, client.origDCID, client.ids.srcCID(), nil, uint64(10+i), []byte{0x01}, 1200)
				s.HandleDatagram(now, Datagram{Local: serverAddr, Remote: clientAddr, Data: ping})
			}
			if took := now.Sub(testNow); took < tt.min || took > tt.max {
				t.Fatalf("server connection ended after %v, want %v to %v", took, tt.min, tt.max)
			}
			var it *qerr.IdleTimeoutError
			if _, err := s.Closed(); !errors.As(err, &it) || !it.Handshake {
				t.Fatalf("closed with %v", err)
			}
			if st := e.Stats(); st.QuietTimeouts != tt.quietOnes || st.Conns != 0 || st.Handshakes != 0 {
				t.Fatalf("stats %+v, want %d quiet timeouts", st, tt.quietOnes)
			}
		})
	}
}

// MaxConns counts established connections too.
func TestMaxConnsRefuses(t *testing.T) {
	e := serverEndpoint(t, EndpointConfig{MaxConns: 2})
	for i := range 2 {
		d, _ := firstFlight(t, clientAddrN(i), uint64(i))
		r := e.Route(testNow, d)
		if !r.New {
			t.Fatal("not admitted")
		}
		e.handshakeDone(r.Conn)
	}
	d, _ := firstFlight(t, clientAddrN(2), 2)
	r := e.Route(testNow, d)
	if r.Conn != nil || r.Reply == nil {
		t.Fatal("not refused")
	}
	if f := serverClose(t, r.Reply.Data, d.Data[6:14]); f.ErrorCode != uint64(qerr.ConnectionRefused) {
		t.Fatalf("code %v", f.ErrorCode)
	}
}

// A token the server cannot validate is answered with INVALID_TOKEN: the
// client will not accept another Retry (RFC 9000 Section 8.1.2).
func TestInvalidTokenIsClosedStatelessly(t *testing.T) {
	e := serverEndpoint(t, EndpointConfig{})
	dcid := randomBytes(8, 5)
	ch := (&wire.CryptoFrame{Data: []byte{1, 0, 1, 0, 3, 3}}).Append(nil)
	pkt := clientInitial(t, dcid, []byte{7}, randomBytes(60, 6), 0, ch, 1200)
	r := e.Route(testNow, Datagram{Local: serverAddr, Remote: clientAddr, Data: pkt})
	if r.Conn != nil || r.Reply == nil {
		t.Fatal("no answer")
	}
	if f := serverClose(t, r.Reply.Data, dcid); f.ErrorCode != uint64(qerr.InvalidToken) {
		t.Fatalf("code %v", qerr.TransportErrorCode(f.ErrorCode))
	}
}

// The server bounds the whole handshake: a client that keeps sending
// Initial packets without completing it is dropped HandshakeTimeout after
// its first, and the endpoint forgets it.
func TestServerHandshakeTimeoutIsAbsolute(t *testing.T) {
	_, sc := testConfigs(t)
	sc.HandshakeTimeout = 2 * time.Second
	e, err := NewEndpoint(EndpointConfig{Server: sc})
	if err != nil {
		t.Fatal(err)
	}
	d, client := firstFlight(t, clientAddr, 1)
	r := e.Route(testNow, d)
	if !r.New {
		t.Fatal("not admitted")
	}
	s := r.Conn
	s.HandleDatagram(testNow, d)
	now := testNow
	for i := 0; ; i++ {
		for {
			if _, ok := s.PollDatagram(now, nil); !ok {
				break
			}
		}
		if done, _ := s.Closed(); done {
			break
		}
		if now.Sub(testNow) > 2*time.Second {
			t.Fatalf("server connection open %v after the first packet", now.Sub(testNow))
		}
		// Every 100 ms a new Initial packet (a PING) from the client.
		now = now.Add(100 * time.Millisecond)
		if next := s.NextTimeout(); !next.IsZero() && next.Before(now) {
			now = next
			s.HandleTimeout(now)
			continue
		}
		ping := clientInitial(t, client.origDCID, client.ids.srcCID(), nil, uint64(10+i), []byte{0x01}, 1200)
		s.HandleDatagram(now, Datagram{Local: serverAddr, Remote: clientAddr, Data: ping})
	}
	var it *qerr.IdleTimeoutError
	if _, err := s.Closed(); !errors.As(err, &it) || !it.Handshake {
		t.Fatalf("closed with %v", err)
	}
	if st := e.Stats(); st.Conns != 0 || st.Handshakes != 0 || e.routes() != 0 {
		t.Fatalf("stats %+v, %d routes", st, e.routes())
	}
}

// Stateless resets are rate-limited: a burst of ResetRate, then ResetRate
// per second.
func TestStatelessResetRateLimit(t *testing.T) {
	e := serverEndpoint(t, EndpointConfig{ResetRate: 50})
	send := func(now time.Time, n int) (resets int) {
		for i := range n {
			b := randomBytes(100, uint64(i))
			b[0] = 0x40
			if r := e.Route(now, Datagram{Local: serverAddr, Remote: clientAddr, Data: b}); r.Reply != nil {
				resets++
			}
		}
		return resets
	}
	if n := send(testNow, 1000); n != 50 {
		t.Fatalf("%d resets in a burst, want 50", n)
	}
	if n := send(testNow.Add(100*time.Millisecond), 1000); n != 5 {
		t.Fatalf("%d resets 100 ms later, want 5", n)
	}
	if st := e.Stats(); st.Resets != 55 || st.Dropped != 1945 {
		t.Fatalf("stats %+v", st)
	}
}

// With a static reset key, a server restarted without the connection's
// state still resets the client's connection; with another key the client
// does not recognise the reset.
func TestStatelessResetAfterRestart(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	for _, sameKey := range []bool{true, false} {
		t.Run(fmt.Sprintf("same key %v", sameKey), func(t *testing.T) {
			cc, sc := testConfigs(t)
			p := newPair(t, cc, sc, EndpointConfig{ResetKey: key})
			p.handshake()
			// The server restarts: a new endpoint, no connections.
			k2 := key
			if !sameKey {
				k2 = []byte("another key, another server......")
			}
			var err error
			p.sEP, err = NewEndpoint(EndpointConfig{Server: sc, ResetKey: k2, Rand: randReader{newRand(42)}})
			if err != nil {
				t.Fatal(err)
			}
			p.server = nil
			p.client.ctrl.ping = true
			p.runUntil(func() bool { return p.client.Err() != nil }, time.Minute)
			isReset := errors.As(p.client.Err(), new(qerr.StatelessResetError))
			if isReset != sameKey {
				t.Fatalf("client closed with %v", p.client.Err())
			}
		})
	}
}

func TestResetKeyTooShort(t *testing.T) {
	if _, err := NewEndpoint(EndpointConfig{ResetKey: []byte("short")}); err == nil {
		t.Fatal("accepted a 5-byte reset key")
	}
}

// TLS data that crypto/tls would reject with internal_error closes with
// the alert that names the problem.
func TestHandshakeFramingAlerts(t *testing.T) {
	tests := []struct {
		name   string
		chunks [][]byte
		alert  uint8
	}{
		{"TLS record", [][]byte{{0x16, 0x03, 0x01, 0x00, 0x10}}, alertUnexpectedMessage},
		{"message too large", [][]byte{{1, 0xff, 0xff, 0xff}}, alertDecodeError},
		{"header split, too large", [][]byte{{1, 0x01}, {0x00, 0x01}}, alertDecodeError},
		{"certificate of 200 kB is fine, then garbage", [][]byte{{11, 0x03, 0x0d, 0x40}, make([]byte, 200_000), {0x99, 0, 0, 0}}, alertUnexpectedMessage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f hsFramer
			var err error
			for _, c := range tt.chunks {
				if err = f.check(c); err != nil {
					break
				}
			}
			var te *qerr.TransportError
			if !errors.As(err, &te) || te.Code != qerr.CryptoError(tt.alert) {
				t.Fatalf("error %v, want alert %d", err, tt.alert)
			}
		})
	}
	var f hsFramer
	if err := f.check([]byte{1, 0, 0, 2, 3, 3, 20, 0, 0, 1, 9, 2, 0}); err != nil {
		t.Fatalf("sound framing rejected: %v", err)
	}
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 17)) }

// The endpoint's counts follow a real connection: in handshake, then
// established, then gone.
func TestStatsFollowTheConnection(t *testing.T) {
	cc, sc := testConfigs(t)
	p := newPair(t, cc, sc, EndpointConfig{})
	p.runUntil(func() bool { return p.server != nil }, time.Second)
	if st := p.sEP.Stats(); st.Handshakes != 1 || st.Conns != 1 || st.Accepted != 1 {
		t.Fatalf("in handshake: %+v", st)
	}
	p.handshake()
	if st := p.sEP.Stats(); st.Handshakes != 0 || st.Conns != 1 {
		t.Fatalf("established: %+v", st)
	}
	p.client.Close(0, "")
	p.runUntil(func() bool {
		a, _ := p.client.Closed()
		b, _ := p.server.Closed()
		return a && b
	}, 10*time.Second)
	if st := p.sEP.Stats(); st.Handshakes != 0 || st.Conns != 0 {
		t.Fatalf("closed: %+v", st)
	}
}

// A stateless reset carries none of our connection IDs: the client's
// endpoint finds the connection by the peer's reset token.
func TestEndpointRoutesResetByToken(t *testing.T) {
	cc, sc := testConfigs(t)
	p := newPair(t, cc, sc, EndpointConfig{})
	cEP, err := NewEndpoint(EndpointConfig{Rand: randReader{newRand(8)}})
	if err != nil {
		t.Fatal(err)
	}
	cc.Rand = randReader{newRand(9)}
	if p.client, err = cEP.Dial(cc, clientAddr, serverAddr, "", p.now); err != nil {
		t.Fatal(err)
	}
	p.handshake()
	reset := append(randomBytes(30, 3), make([]byte, 16)...)
	reset[0] = 0x40
	tok := p.sEP.resetToken(p.client.ids.dcid())
	copy(reset[len(reset)-16:], tok[:])
	d := Datagram{Local: clientAddr, Remote: serverAddr, Data: reset}
	r := cEP.Route(p.now, d)
	if r.Conn != p.client {
		t.Fatalf("reset routed to %p (reply %v), want the client %p", r.Conn, r.Reply != nil, p.client)
	}
	p.client.HandleDatagram(p.now, d)
	if !errors.As(p.client.Err(), new(qerr.StatelessResetError)) {
		t.Fatalf("client error %v", p.client.Err())
	}
	p.client.finish()
	if len(cEP.peerTokens) != 0 {
		t.Fatalf("%d peer tokens left after the connection ended", len(cEP.peerTokens))
	}
}

// Until the client's address is validated the server sends no more than
// three times what it received (RFC 9000 Section 8.1), and with a flight
// larger than that to send, exactly three times.
func TestAntiAmplificationExactlyThreeTimes(t *testing.T) {
	p, received, sent := unvalidatedPair(t)
	p.runUntil(func() bool {
		if p.server == nil {
			return false
		}
		done, _ := p.server.Closed()
		return done
	}, time.Minute)
	if *received < 1200 || *sent != 3**received {
		t.Fatalf("server received %d bytes and sent %d, want exactly %d", *received, *sent, 3**received)
	}
}

// unvalidatedPair returns a pair whose server never sees the client's
// address validated (the client's datagrams after its first flight are
// dropped) and has a first flight larger than three times the
// ClientHello, with counters of the bytes the server received and sent.
func unvalidatedPair(t *testing.T) (p *pair, received, sent *int) {
	cc, sc := testConfigs(t)
	// A certificate chain large enough that the server's first flight
	// exceeds three times the ClientHello.
	crt := sc.TLS.Certificates[0]
	crt.Certificate = append(append([][]byte(nil), crt.Certificate...), make([]byte, 6000))
	sc.TLS.Certificates = []tls.Certificate{crt}
	p = newPair(t, cc, sc, EndpointConfig{})
	received, sent = new(int), new(int)
	p.drop = func(toServer bool, d []byte) bool {
		if toServer {
			if p.server != nil {
				return true // the client's address is never validated
			}
			*received += len(d)
			return false
		}
		*sent += len(d)
		return false
	}
	return p, received, sent
}

// A connection whose client follows its ClientHello with data that is not
// a TLS handshake message closes with the alert that says so, not with
// internal_error (crypto/tls's answer to bytes after the ClientHello at
// the Initial level).
func TestTLSGarbageAfterClientHelloClosesWithAlert(t *testing.T) {
	e := serverEndpoint(t, EndpointConfig{})
	cc, _ := testConfigs(t)
	client, err := NewClientConn(cc, clientAddr, serverAddr, "", testNow)
	if err != nil {
		t.Fatal(err)
	}
	var s *Conn
	for {
		d, ok := client.PollDatagram(testNow, nil)
		if !ok {
			break
		}
		in := Datagram{Local: serverAddr, Remote: clientAddr, Data: append([]byte(nil), d.Data...)}
		r := e.Route(testNow, in)
		if r.New {
			s = r.Conn
		}
		if r.Conn != nil {
			r.Conn.HandleDatagram(testNow, in)
		}
	}
	if s == nil || s.Err() != nil {
		t.Fatalf("no server connection (%v)", s)
	}
	end := client.crypto[levelInitial].send.NextOffset()
	record := (&wire.CryptoFrame{Offset: end, Data: []byte{0x16, 0x03, 0x01, 0x00, 0x10, 1, 2, 3}}).Append(nil)
	pkt := clientInitial(t, client.origDCID, client.ids.srcCID(), nil, 10, record, 1200)
	s.HandleDatagram(testNow, Datagram{Local: serverAddr, Remote: clientAddr, Data: pkt})
	var te *qerr.TransportError
	if err := s.Err(); !errors.As(err, &te) || te.Code != qerr.CryptoError(alertUnexpectedMessage) {
		t.Fatalf("server closed with %v, want CRYPTO_ERROR unexpected_message", err)
	}
}

// A server that closes before the client's address is validated sends its
// CONNECTION_CLOSE within the anti-amplification limit too (RFC 9000
// Section 8.1): with the limit used up by its first flight, it sends
// nothing more.
func TestAntiAmplificationCoversClose(t *testing.T) {
	p, received, sent := unvalidatedPair(t)
	p.runUntil(func() bool { return p.server != nil && *sent == 3**received }, time.Second)
	p.server.Close(0, "closing before validation")
	p.runUntil(func() bool {
		done, _ := p.server.Closed()
		return done
	}, time.Minute)
	if *sent > 3**received {
		t.Fatalf("server received %d bytes and sent %d, more than %d", *received, *sent, 3**received)
	}
}
