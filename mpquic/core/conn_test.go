package core

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic/internal/protection"
	"github.com/mpq/mpq/mpquic/internal/wire"
	"github.com/mpq/mpq/mpquic/qerr"
)

func TestHandshake(t *testing.T) {
	cc, sc := testConfigs(t)
	p := newPair(t, cc, sc, EndpointConfig{})
	p.handshake()
	for _, c := range []*Conn{p.client, p.server} {
		if st := c.ConnectionState(); st.NegotiatedProtocol != "test" || st.Version != 0x0304 {
			t.Fatalf("TLS state %+v", st)
		}
		ev := events(c)
		if len(ev) == 0 || ev[0].Kind != EventHandshakeDone {
			t.Fatalf("events %+v, want handshake done first", ev)
		}
		if !c.keys[levelInitial].discarded || !c.keys[levelHandshake].discarded {
			t.Fatal("handshake keys not discarded after confirmation")
		}
	}
	// Both ends issued connection IDs up to the limit.
	p.runUntil(func() bool { return len(p.client.ids.p0().remote) >= 4 && len(p.server.ids.p0().remote) >= 4 }, time.Second)
}

func TestTransferBothDirections(t *testing.T) {
	cc, sc := testConfigs(t)
	p := newPair(t, cc, sc, EndpointConfig{})
	p.handshake()
	p.transfer(p.client, p.server, randomBytes(1<<20, 1), 30*time.Second)
	p.transfer(p.server, p.client, randomBytes(3<<20, 2), 30*time.Second)
}

func TestTransferWithLoss(t *testing.T) {
	cc, sc := testConfigs(t)
	p := newPair(t, cc, sc, EndpointConfig{})
	n := 0
	p.drop = func(toServer bool, d []byte) bool { n++; return n%7 == 0 }
	p.handshake()
	p.transfer(p.server, p.client, randomBytes(2<<20, 3), 120*time.Second)
	st := p.server.Paths()[0]
	if st.PacketsLost == 0 {
		t.Fatal("no loss detected")
	}
	t.Logf("server: %d packets sent, %d lost, cwnd %d", st.PacketsSent, st.PacketsLost, st.CongestionWindow)
}

func TestKeyUpdate(t *testing.T) {
	cc, sc := testConfigs(t)
	sc.KeyUpdateInterval = 100
	p := newPair(t, cc, sc, EndpointConfig{})
	p.handshake()
	p.transfer(p.server, p.client, randomBytes(2<<20, 4), 60*time.Second)
	if p.server.app.generation < 3 || p.client.app.generation != p.server.app.generation {
		t.Fatalf("key generations: server %d, client %d", p.server.app.generation, p.client.app.generation)
	}
}

func TestFlowControlSmallWindows(t *testing.T) {
	cc, sc := testConfigs(t)
	for _, c := range []*Config{cc, sc} {
		c.InitialStreamWindow, c.MaxStreamWindow = 16<<10, 16<<10
		c.InitialConnWindow, c.MaxConnWindow = 24<<10, 24<<10
	}
	p := newPair(t, cc, sc, EndpointConfig{})
	p.handshake()
	p.transfer(p.client, p.server, randomBytes(500<<10, 5), 60*time.Second)
}

func TestStreamLimit(t *testing.T) {
	cc, sc := testConfigs(t)
	sc.MaxIncomingStreams = 2
	p := newPair(t, cc, sc, EndpointConfig{})
	p.handshake()
	for i := 0; i < 6; i++ {
		// Each finished stream returns its credit with MAX_STREAMS.
		p.runUntil(func() bool {
			sm := &p.client.streams
			return sm.nextLocal[0] < sm.localLimit[0]
		}, 10*time.Second)
		p.transfer(p.client, p.server, randomBytes(1000, uint64(i)), 10*time.Second)
		// The server's reply direction is unused: close it so the stream
		// can be forgotten and its credit returned.
		for _, s := range p.server.streams.m {
			if s.send != nil && !s.send.Done() {
				s.handle.Close()
			}
		}
	}
	// Once the last two streams are forgotten, exactly two more may open.
	p.runUntil(func() bool { return p.client.streams.localLimit[0] >= 8 }, 10*time.Second)
	s1, err1 := p.client.OpenStream(true)
	s2, err2 := p.client.OpenStream(true)
	_, err3 := p.client.OpenStream(true)
	if err1 != nil || err2 != nil || !errors.Is(err3, ErrStreamLimit) {
		t.Fatalf("opening three streams: %v, %v, %v", err1, err2, err3)
	}
	_, _ = s1, s2
	if got := p.server.streams.peerLimit[0]; got < 8 {
		t.Fatalf("server's stream limit %d after 6 finished streams, want 8", got)
	}
}

func TestIdleTimeout(t *testing.T) {
	cc, sc := testConfigs(t)
	cc.MaxIdleTimeout = 2 * time.Second
	p := newPair(t, cc, sc, EndpointConfig{})
	p.handshake()
	start := p.now
	p.drop = func(bool, []byte) bool { return true }
	p.runUntil(func() bool { done, _ := p.client.Closed(); return done }, 10*time.Second)
	_, err := p.client.Closed()
	var it *qerr.IdleTimeoutError
	if !errors.As(err, &it) || it.Handshake {
		t.Fatalf("closed with %v, want idle timeout", err)
	}
	if el := p.now.Sub(start); el < 2*time.Second || el > 3*time.Second {
		t.Fatalf("idle timeout after %v", el)
	}
}

func TestApplicationClose(t *testing.T) {
	cc, sc := testConfigs(t)
	p := newPair(t, cc, sc, EndpointConfig{})
	p.handshake()
	p.client.Close(42, "bye")
	p.runUntil(func() bool { return p.server.Err() != nil }, time.Second)
	var ae *qerr.ApplicationError
	if err := p.server.Err(); !errors.As(err, &ae) || ae.Code != 42 || ae.Reason != "bye" || !ae.Remote {
		t.Fatalf("server saw %v", err)
	}
	p.runUntil(func() bool {
		a, _ := p.client.Closed()
		b, _ := p.server.Closed()
		return a && b
	}, 10*time.Second)
	if p.sEP.routes() != 0 {
		t.Fatalf("%d routes left after close", p.sEP.routes())
	}
}

func TestRetry(t *testing.T) {
	cc, sc := testConfigs(t)
	p := newPair(t, cc, sc, EndpointConfig{RequireRetry: true})
	p.handshake()
	// A post-quantum key share makes the ClientHello span two Initial
	// datagrams, and each gets a Retry; the client follows the first.
	if !p.client.gotRetry || p.replies < 1 || p.replies > 2 || len(p.accepted) != 1 {
		t.Fatalf("retry %v, stateless replies %d, conns %d", p.client.gotRetry, p.replies, len(p.accepted))
	}
	p.transfer(p.client, p.server, randomBytes(10000, 6), 10*time.Second)
}

func TestStatelessReset(t *testing.T) {
	cc, sc := testConfigs(t)
	p := newPair(t, cc, sc, EndpointConfig{})
	p.handshake()
	// The server forgets the connection without a word.
	p.server.finish()
	p.server = nil
	p.client.ctrl.ping = true
	p.runUntil(func() bool { return p.client.Err() != nil }, 5*time.Second)
	if err := p.client.Err(); !errors.As(err, new(qerr.StatelessResetError)) {
		t.Fatalf("client closed with %v, want stateless reset", err)
	}
}

func TestVersionNegotiation(t *testing.T) {
	cc, sc := testConfigs(t)
	p := newPair(t, cc, sc, EndpointConfig{})
	// A datagram of an unknown version is answered with VN.
	pkt := wire.AppendVersionNegotiation(nil, []byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{9}, []uint32{0x1a2a3a4a}, 0)
	pkt[0] = 0xc0
	pkt = append(pkt[:1], 0x6b, 0x33, 0x43, 0xcf) // version 0x6b3343cf
	pkt = append(pkt, 8, 1, 2, 3, 4, 5, 6, 7, 8, 1, 9)
	pkt = append(pkt, make([]byte, 1200-len(pkt))...)
	r := p.sEP.Route(p.now, Datagram{Local: serverAddr, Remote: clientAddr, Data: pkt})
	if r.Reply == nil || r.Conn != nil {
		t.Fatal("no version negotiation for an unknown version")
	}
	h, err := wire.ParseHeader(r.Reply.Data, ConnIDLen)
	if err != nil || h.Type != wire.PacketVersionNegotiation || len(h.SupportedVersions) != 1 || h.SupportedVersions[0] != wire.Version1 {
		t.Fatalf("reply %+v, %v", h, err)
	}
	// A client receiving VN without version 1 gives up.
	vn := wire.AppendVersionNegotiation(nil, p.client.ids.srcCID(), p.client.origDCID, []uint32{0xff00001d}, 0)
	p.client.HandleDatagram(p.now, Datagram{Local: clientAddr, Remote: serverAddr, Data: vn})
	var ve *qerr.VersionNegotiationError
	if _, err := p.client.Closed(); !errors.As(err, &ve) {
		t.Fatalf("client error %v", err)
	}
}

// sealFrames builds a 1-RTT packet from the client with raw frame bytes.
func sealFrames(t *testing.T, c *Conn, frames []byte) []byte {
	t.Helper()
	out, err := sealPayload(c, frames)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sealPayload protects payload as the next 1-RTT packet of c. The packet is
// recorded as sent (neither ack-eliciting nor in flight), so that c accepts
// the peer's acknowledgement of it.
func sealPayload(c *Conn, payload []byte) ([]byte, error) {
	sp := &c.paths[0].app
	pn := sp.nextPN
	sp.nextPN++
	b, pnOff := wire.AppendShortHeader(nil, c.ids.dcid(), pn, 4, c.app.keyPhase())
	hdrLen := len(b)
	b = append(b, payload...)
	out, err := protection.SealPacket(c.app.write, c.app.sealHP, b, hdrLen, pnOff, 4, 0, pn)
	if err != nil {
		return nil, err
	}
	rec := sp.sent.Prepare(pn)
	rec.TimeSent, rec.Size = c.now, len(out)
	sp.sent.OnSent(rec)
	return out, nil
}

func TestBadFramesCloseWithTheRightCode(t *testing.T) {
	tests := []struct {
		name   string
		frames []byte
		code   qerr.TransportErrorCode
	}{
		{"unknown frame type", []byte{0x40, 0x21}, qerr.FrameEncodingError},
		{"truncated stream frame", []byte{0x0a, 0x00, 0x10, 0x01}, qerr.FrameEncodingError},
		{"handshake done from client", []byte{0x1e}, qerr.ProtocolViolation},
		{"stream beyond limit", []byte{0x08, 0x80, 0x00, 0x10, 0x00, 0x41}, qerr.StreamLimitError},
		{"send-only stream of the server", []byte{0x08, 0x03, 0x41}, qerr.StreamStateError},
		{"ack of unsent packet", []byte{0x02, 0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00}, qerr.ProtocolViolation},
		{"max streams above 2^60", []byte{0x12, 0xd0, 0, 0, 0, 0, 0, 0, 1}, qerr.FrameEncodingError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cc, sc := testConfigs(t)
			p := newPair(t, cc, sc, EndpointConfig{})
			p.handshake()
			pkt := sealFrames(t, p.client, tt.frames)
			p.server.HandleDatagram(p.now, Datagram{Local: serverAddr, Remote: clientAddr, Data: pkt})
			var te *qerr.TransportError
			if err := p.server.Err(); !errors.As(err, &te) || te.Code != tt.code {
				t.Fatalf("server error %v, want %v", err, tt.code)
			}
			// The client learns the code from CONNECTION_CLOSE.
			p.runUntil(func() bool { return p.client.Err() != nil }, time.Second)
			if err := p.client.Err(); !errors.As(err, &te) || te.Code != tt.code || !te.Remote {
				t.Fatalf("client error %v", err)
			}
		})
	}
}

func TestGarbageDoesNotHurt(t *testing.T) {
	cc, sc := testConfigs(t)
	p := newPair(t, cc, sc, EndpointConfig{})
	p.handshake()
	for i := 0; i < 2000; i++ {
		b := randomBytes(1+i%1400, uint64(i))
		if i%3 == 0 && len(b) > 9 {
			b[0] = 0x40 | b[0]&0x3f
			copy(b[1:], p.server.ids.srcCID())
		}
		p.server.HandleDatagram(p.now, Datagram{Local: serverAddr, Remote: clientAddr, Data: b})
		p.client.HandleDatagram(p.now, Datagram{Local: clientAddr, Remote: serverAddr, Data: b})
		p.sEP.Route(p.now, Datagram{Local: serverAddr, Remote: clientAddr, Data: b})
	}
	if p.server.Err() != nil || p.client.Err() != nil {
		t.Fatalf("garbage closed the connection: %v / %v", p.server.Err(), p.client.Err())
	}
	p.transfer(p.client, p.server, randomBytes(50000, 7), 10*time.Second)
}

func TestAckDelayDuration(t *testing.T) {
	const maxMicros = uint64(math.MaxInt64 / int64(time.Microsecond))
	tests := []struct {
		raw, exp uint64
		want     time.Duration
	}{
		{0, 3, 0},
		{1, 3, 8 * time.Microsecond},
		{1000, 0, time.Millisecond},
		{maxMicros >> 3, 3, time.Duration(maxMicros>>3<<3) * time.Microsecond},
		{maxMicros>>3 + 1, 3, math.MaxInt64},
		{1<<62 - 1, 3, math.MaxInt64},
		{1<<62 - 1, 20, math.MaxInt64},
		{1, 64, math.MaxInt64},
	}
	for _, tt := range tests {
		if got := ackDelayDuration(tt.raw, tt.exp); got != tt.want {
			t.Errorf("ackDelayDuration(%d, %d) = %v, want %v", tt.raw, tt.exp, got, tt.want)
		}
	}
}

// TestHugeAckDelay sends ACKs whose ACK Delay field overflows a Duration
// once multiplied out. Some used to wrap into a negative delay that
// inflated the smoothed RTT to decades, and with it the PTO, the idle
// timeout and the closing period (found by FuzzServerDatagram).
func TestHugeAckDelay(t *testing.T) {
	for _, raw := range []uint64{1<<62 - 1, 0x2632303030303030, 1 << 60, 1<<61 + 12345} {
		t.Run(fmt.Sprintf("%#x", raw), func(t *testing.T) {
			p := fuzzPair(t)
			ack := &wire.AckFrame{Ranges: []wire.AckRange{{Smallest: 0, Largest: 0}}, AckDelay: raw}
			p.routeRaw(sealFrames(t, p.client, ack.Append(nil)))
			if err := p.server.Err(); err != nil {
				t.Fatalf("server closed: %v", err)
			}
			if srtt := p.server.paths[0].rtt.Smoothed(); srtt <= 0 || srtt > time.Second {
				t.Fatalf("smoothed RTT %v after the ACK", srtt)
			}
			if next := p.server.NextTimeout(); next.Sub(p.now) > 5*time.Second {
				t.Fatalf("next timeout in %v", next.Sub(p.now))
			}
			p.runDown()
		})
	}
}
