package core

import (
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic/internal/wire"
)

// fuzzSeeds are packet payloads for FuzzServerDatagram: valid frames a
// client may send after the handshake, frames it may not send, and garbage.
func fuzzSeeds() [][]byte {
	var token [16]byte
	frames := []wire.Frame{
		&wire.PingFrame{},
		&wire.PaddingFrame{Length: 20},
		&wire.AckFrame{Ranges: []wire.AckRange{{Smallest: 0, Largest: 0}}, AckDelay: 10},
		&wire.AckFrame{Ranges: []wire.AckRange{{Smallest: 0, Largest: 1}}, AckDelay: 10},
		&wire.AckFrame{Ranges: []wire.AckRange{{Smallest: 0, Largest: 1}}, HasECN: true, ECT0: 2},
		&wire.AckFrame{Ranges: []wire.AckRange{{Smallest: 0, Largest: 0}}, AckDelay: 1<<62 - 1},
		&wire.StreamFrame{StreamID: 0, Data: []byte("GET /\r\n"), DataLenPresent: true, Fin: true},
		&wire.StreamFrame{StreamID: 2, Offset: 100, Data: []byte("uni")},
		&wire.StreamFrame{StreamID: 4, Offset: 1 << 40, Data: []byte("far")},
		&wire.StreamFrame{StreamID: 8, Offset: 1<<62 - 2, Data: []byte("end"), DataLenPresent: true},
		&wire.StreamFrame{StreamID: 1<<62 - 4, Fin: true},
		&wire.CryptoFrame{Offset: 0, Data: []byte{1, 0, 0, 1, 0}},
		&wire.ResetStreamFrame{StreamID: 0, ErrorCode: 7, FinalSize: 10},
		&wire.StopSendingFrame{StreamID: 0, ErrorCode: 8},
		&wire.NewTokenFrame{Token: []byte{1, 2, 3}},
		&wire.MaxDataFrame{Max: 1 << 30},
		&wire.MaxStreamDataFrame{StreamID: 0, Max: 1 << 20},
		&wire.MaxStreamDataFrame{StreamID: 1, Max: 1 << 20},
		&wire.MaxStreamsFrame{Bidi: true, Max: 1000},
		&wire.MaxStreamsFrame{Max: 3},
		&wire.DataBlockedFrame{Limit: 100},
		&wire.StreamDataBlockedFrame{StreamID: 0, Limit: 100},
		&wire.StreamsBlockedFrame{Bidi: true, Limit: 100},
		&wire.NewConnectionIDFrame{Seq: 4, RetirePriorTo: 2, ConnID: []byte{1, 2, 3, 4, 5, 6, 7, 8}, ResetToken: token},
		&wire.NewConnectionIDFrame{Seq: 1 << 40, RetirePriorTo: 1 << 40, ConnID: []byte{9, 9, 9, 9}, ResetToken: token},
		&wire.RetireConnectionIDFrame{Seq: 0},
		&wire.RetireConnectionIDFrame{Seq: 3},
		&wire.PathChallengeFrame{Data: [8]byte{1, 2, 3, 4, 5, 6, 7, 8}},
		&wire.PathResponseFrame{Data: [8]byte{1, 2, 3, 4, 5, 6, 7, 8}},
		&wire.ConnectionCloseFrame{ErrorCode: 0x0a, FrameType: 0x08, Reason: []byte("bye")},
		&wire.ConnectionCloseFrame{IsApplication: true, ErrorCode: 3},
		&wire.HandshakeDoneFrame{},
		&wire.PathAckFrame{PathID: 0, Ranges: []wire.AckRange{{Smallest: 0, Largest: 0}}},
		&wire.MaxPathIDFrame{MaxPathID: 2},
	}
	var seeds [][]byte
	var all []byte
	for _, f := range frames {
		seeds = append(seeds, f.Append(nil))
		all = f.Append(all)
	}
	seeds = append(seeds,
		all,
		nil,
		[]byte{0x40, 0x21}, // unknown frame type
		[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, // huge varint type, truncated
		[]byte{0x08, 0x00},                         // STREAM without data
		randomBytes(64, 1),
		randomBytes(1200, 2),
	)
	return seeds
}

// fuzzMaxSteps and fuzzMaxTime bound the run after each fuzz input: with
// the short idle timeout both ends must have closed well before.
const (
	fuzzMaxSteps = 100_000
	fuzzMaxTime  = 2 * time.Minute
)

// FuzzServerDatagram feeds the input to a server connection after a real
// handshake, as (a) a raw datagram through the endpoint's Route and
// HandleDatagram, as is and with the server's connection ID written over a
// short header's, and (b) the payload of a correctly protected 1-RTT packet
// from the client. The connection may close with an error but must not
// panic or hang: the pair must run down to both ends closed, within bounded
// steps, and leave no routes behind.
//
//	go test ./mpquic/core -run '^$' -fuzz '^FuzzServerDatagram$' -fuzztime 60s -fuzzminimizetime 10s
//
// -fuzzminimizetime bounds the minimisation of each new interesting input
// (60 s by default): without it, FuzzFirstInitial's runs stalled there.
func FuzzServerDatagram(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<14 {
			return
		}
		// (a) A raw datagram.
		p := fuzzPair(t)
		p.routeRaw(data)
		if len(data) >= 1+ConnIDLen && data[0]&0x80 == 0 {
			b := append([]byte(nil), data...)
			copy(b[1:], p.server.ids.srcCID())
			p.routeRaw(b)
		}
		p.runDown()

		// (b) A protected 1-RTT packet.
		p = fuzzPair(t)
		pkt, err := sealPayload(p.client, data)
		if err != nil {
			t.Fatalf("seal: %v", err)
		}
		p.routeRaw(pkt)
		p.runDown()
	})
}

// FuzzEarlyPayload: any payload in a 0-RTT packet that decrypts, at a
// server that accepted 0-RTT, ends in a clean close, never a panic.
func FuzzEarlyPayload(f *testing.F) {
	f.Add((&wire.StreamFrame{StreamID: 0, Data: []byte("x"), Fin: true, DataLenPresent: true}).Append(nil))
	f.Add((&wire.AckFrame{Ranges: []wire.AckRange{{Smallest: 0, Largest: 0}}}).Append(nil))
	f.Add((&wire.CryptoFrame{Data: []byte{1, 0, 0, 4}}).Append(nil))
	f.Add((&wire.PathResponseFrame{}).Append(nil))
	f.Add([]byte{0x1c, 0x00, 0x00, 0x00})
	f.Fuzz(func(t *testing.T, payload []byte) {
		if len(payload) > 1100 {
			return
		}
		cc, sc := earlyConfigs(t, true)
		cc.MaxIdleTimeout, sc.MaxIdleTimeout = 5*time.Second, 5*time.Second
		p := warmUp(t, cc, sc)
		// The warm-up connection ends first: the fuzzed one is the
		// only one left to run down.
		p.client.Close(0, "")
		p.runUntil(func() bool {
			cd, _ := p.client.Closed()
			sd, _ := p.server.Closed()
			return cd && sd
		}, 10*time.Second)
		p.redial(cc, nil, 5001)
		p.runUntil(func() bool { return p.server != nil && p.server.early.keys.haveOpen }, time.Second)
		p.routeRaw(sealEarly(t, p.client, payload))
		p.runDown()
	})
}

// fuzzPair returns a pair after the handshake, with a short idle timeout.
func fuzzPair(t *testing.T) *pair {
	t.Helper()
	cc, sc := testConfigs(t)
	cc.MaxIdleTimeout, sc.MaxIdleTimeout = 5*time.Second, 5*time.Second
	p := newPair(t, cc, sc, EndpointConfig{})
	p.handshake()
	// Let the post-handshake exchange (NEW_CONNECTION_ID, ACKs) settle.
	p.runUntil(func() bool { return len(p.wire) == 0 }, time.Second)
	return p
}

// routeRaw delivers a datagram from the client's address to the server
// endpoint. A connection the datagram creates is driven to its end on the
// spot.
func (p *pair) routeRaw(b []byte) {
	p.t.Helper()
	d := Datagram{Local: serverAddr, Remote: clientAddr, Data: b}
	r := p.sEP.Route(p.now, d)
	if r.Reply != nil {
		p.push(false, Datagram{Local: r.Reply.Local, Remote: r.Reply.Remote, Data: r.Reply.Data})
	}
	if r.Conn == nil {
		return
	}
	r.Conn.HandleDatagram(p.now, d)
	if !r.New {
		return
	}
	c, now := r.Conn, p.now
	for i := 0; ; i++ {
		if i > fuzzMaxSteps {
			p.t.Fatal("connection created by the input does not end")
		}
		for j := 0; ; j++ {
			if j > 10000 {
				p.t.Fatal("connection created by the input sends without end")
			}
			if _, ok := c.PollDatagram(now, p.buf[:0]); !ok {
				break
			}
		}
		if done, _ := c.Closed(); done {
			return
		}
		next := c.NextTimeout()
		if next.IsZero() {
			p.t.Fatal("connection created by the input is open without a timer")
		}
		if next.After(now) {
			now = next
		}
		c.HandleTimeout(now)
	}
}

// runDown runs the pair until nothing is left to do, which the idle
// timeout guarantees, and checks that both ends closed.
func (p *pair) runDown() {
	p.t.Helper()
	deadline := p.now.Add(fuzzMaxTime)
	for steps := 0; p.step(); steps++ {
		if steps > fuzzMaxSteps || p.now.After(deadline) {
			p.t.Fatalf("still running after %d steps and %v", steps, p.now.Sub(deadline.Add(-fuzzMaxTime)))
		}
	}
	for _, c := range []*Conn{p.client, p.server} {
		if done, err := c.Closed(); !done {
			p.t.Fatalf("connection open (%v) with nothing to do", err)
		}
	}
	if n := p.sEP.routes(); n != 0 {
		p.t.Fatalf("%d routes left after both ends closed", n)
	}
}

// FuzzFirstInitial protects the input as the payload of a client's first
// Initial packet, padded to 1,200 bytes, and routes it to a server
// endpoint: the endpoint's check of the frames (admit.go) and the TLS
// framing must not panic; what it answers must be a stateless packet
// smaller than the input, and a connection it creates must run to its end
// and leave no state behind.
//
//	go test ./mpquic/core -run '^$' -fuzz '^FuzzFirstInitial$' -fuzztime 60s -fuzzminimizetime 10s
func FuzzFirstInitial(f *testing.F) {
	crypto := func(off uint64, data []byte) []byte {
		return (&wire.CryptoFrame{Offset: off, Data: data}).Append(nil)
	}
	f.Add(crypto(0, []byte{1, 0, 0, 40, 3, 3}))
	f.Add(crypto(0, []byte{0x16, 3, 1, 0, 40}))
	f.Add(crypto(700, []byte{1, 2, 3}))
	f.Add(append(crypto(0, []byte{1, 0}), crypto(2, []byte{0, 4, 3, 3, 0, 0})...))
	f.Add([]byte{0x01})
	f.Add([]byte{0x1c, 0x00, 0x00, 0x00})
	f.Add((&wire.AckFrame{Ranges: []wire.AckRange{{Smallest: 0, Largest: 0}}}).Append(nil))
	f.Fuzz(func(t *testing.T, payload []byte) {
		if len(payload) > 1100 {
			return
		}
		e := serverEndpoint(t, EndpointConfig{})
		dcid := []byte{1, 2, 3, 4, 5, 6, 7, 8}
		pkt := clientInitial(t, dcid, []byte{9, 9, 9, 9}, nil, 0, payload, 1200)
		r := e.Route(testNow, Datagram{Local: serverAddr, Remote: clientAddr, Data: pkt})
		if r.Reply != nil && len(r.Reply.Data) >= len(pkt) {
			t.Fatalf("reply of %d bytes to %d", len(r.Reply.Data), len(pkt))
		}
		if r.Conn == nil {
			if e.routes() != 0 || e.Stats().Conns != 0 {
				t.Fatal("state without a connection")
			}
			return
		}
		c, now := r.Conn, testNow
		c.HandleDatagram(now, Datagram{Local: serverAddr, Remote: clientAddr, Data: pkt})
		for i := 0; ; i++ {
			if i > fuzzMaxSteps {
				t.Fatal("connection does not end")
			}
			for {
				if _, ok := c.PollDatagram(now, nil); !ok {
					break
				}
			}
			if done, _ := c.Closed(); done {
				break
			}
			now = c.NextTimeout()
			c.HandleTimeout(now)
		}
		if st := e.Stats(); e.routes() != 0 || st.Conns != 0 || st.Handshakes != 0 {
			t.Fatalf("%d routes, stats %+v after the connection ended", e.routes(), st)
		}
	})
}

// FuzzUnreachable hands the input to an established client connection
// as the quote of an ICMP error, and to the endpoint to find its
// connection: neither may panic, and an error that quotes none of the
// connection's IDs changes nothing.
//
//	go test ./mpquic/core -run '^$' -fuzz '^FuzzUnreachable$' -fuzztime 60s -fuzzminimizetime 10s
func FuzzUnreachable(f *testing.F) {
	f.Add([]byte{0x40, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{0xc0, 0, 0, 0, 1, 8, 1, 2, 3, 4, 5, 6, 7, 8, 8, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{0xc0, 0, 0, 0, 1, 20})
	f.Fuzz(func(t *testing.T, quoted []byte) {
		p := fuzzPair(t)
		p.sEP.UnreachableConn(quoted)
		ours := p.client.quotesOurPacket(quoted)
		for range unreachableLimit {
			p.client.HandleUnreachable(p.now, clientAddr, serverAddr, quoted, "port unreachable")
		}
		if done, _ := p.client.Closed(); done != ours {
			t.Fatalf("closed %v after errors quoting our packet: %v", done, ours)
		}
	})
}
