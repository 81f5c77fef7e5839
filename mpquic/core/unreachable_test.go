package core

import (
	"errors"
	"testing"
	"time"
)

// ICMP errors: ignored unless they quote a packet of ours; in the
// handshake one closes the connection at once; on the only established
// path it takes unreachableLimit in a row, and a packet received in between
// starts the count again.
func TestHandleUnreachable(t *testing.T) {
	cc, sc := testConfigs(t)
	p := newPair(t, cc, sc, EndpointConfig{})
	first, ok := p.client.PollDatagram(p.now, nil)
	if !ok {
		t.Fatal("no first flight")
	}
	forged := append([]byte(nil), first.Data...)
	forged[7] ^= 0xff // another DCID
	p.client.HandleUnreachable(p.now, clientAddr, serverAddr, forged, "port unreachable")
	p.client.HandleUnreachable(p.now, clientAddr, serverAddr, first.Data[:5], "port unreachable")
	p.client.HandleUnreachable(p.now, clientAddr, clientAddr, first.Data, "port unreachable") // another path
	if err := p.client.Err(); err != nil {
		t.Fatalf("closed on a forged error: %v", err)
	}
	// The genuine error, quoting only the header, ends the attempt.
	p.client.HandleUnreachable(p.now, clientAddr, serverAddr, first.Data[:30], "port unreachable")
	if done, err := p.client.Closed(); !done || !errors.Is(err, ErrUnreachable) {
		t.Fatalf("client closed %v with %v", done, err)
	}
	if _, ok := p.client.PollDatagram(p.now, nil); ok {
		t.Fatal("the client still sends")
	}

	// Established, one path.
	cc, sc = testConfigs(t)
	p = newPair(t, cc, sc, EndpointConfig{})
	p.handshake()
	pkt := sealFrames(t, p.client, []byte{0x01})
	for range unreachableLimit - 1 {
		p.client.HandleUnreachable(p.now, clientAddr, serverAddr, pkt, "port unreachable")
	}
	// A packet from the server: the path works after all.
	p.server.ctrl.ping = true
	p.runUntil(func() bool { return p.client.paths[0].unreachable == 0 }, time.Second)
	for range unreachableLimit - 1 {
		p.client.HandleUnreachable(p.now, clientAddr, serverAddr, pkt, "port unreachable")
	}
	if err := p.client.Err(); err != nil {
		t.Fatalf("closed after %d errors with a packet in between: %v", 2*(unreachableLimit-1), err)
	}
	p.client.HandleUnreachable(p.now, clientAddr, serverAddr, pkt, "host unreachable")
	if done, err := p.client.Closed(); !done || !errors.Is(err, ErrUnreachable) {
		t.Fatalf("client closed %v with %v", done, err)
	}
}
