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
//	go test ./mpquic/core -run '^$' -fuzz '^FuzzServerDatagram$' -fuzztime 60s
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
