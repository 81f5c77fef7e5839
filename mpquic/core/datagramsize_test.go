package core

import (
	"crypto/tls"
	"fmt"
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic/internal/wire"
)

// No datagram exceeds the largest UDP payload the sender may send
// (Config.MaxPacketSize, and the peer's max_udp_payload_size), also when
// it coalesces Initial, Handshake and 1-RTT packets: every packet's AEAD
// tag counts against the datagram's room, the earlier packets' included.
// The server's first flight is cut across several datagrams by a
// longer certificate chain; the transfer after it fills
// packets to the limit.
func TestDatagramsWithinMaxPacketSize(t *testing.T) {
	for _, size := range []int{1200, 1280, 1350, 1452, 1500} {
		for _, extra := range []int{0, 3, 8} {
			t.Run(fmt.Sprintf("%d-bytes/%d-more-certificates", size, extra), func(t *testing.T) {
				cc, sc := testConfigs(t)
				cc.MaxPacketSize, sc.MaxPacketSize = size, size
				if extra > 0 {
					// Copies of the leaf as intermediates: the client
					// parses and ignores them, the flight grows.
					crt := sc.TLS.Certificates[0]
					chain := append([][]byte(nil), crt.Certificate...)
					for range extra {
						chain = append(chain, crt.Certificate[0])
					}
					crt.Certificate = chain
					sc.TLS.Certificates = []tls.Certificate{crt}
				}
				p := newPair(t, cc, sc, EndpointConfig{})
				largest := [2]int{}
				coalesced, withShort := 0, 0
				p.drop = func(toServer bool, d []byte) bool {
					largest[b2i(toServer)] = max(largest[b2i(toServer)], len(d))
					if len(d) > size {
						t.Errorf("a datagram of %d bytes to the %s, more than %d", len(d), map[bool]string{true: "server", false: "client"}[toServer], size)
					}
					if n, short := countPackets(d); d[0]&0x80 != 0 && n > 1 {
						coalesced++
						if short {
							withShort++
						}
					}
					return false
				}
				// Each end writes as soon as its handshake is complete,
				// so that its 1-RTT packets follow Handshake packets in
				// datagrams (the client's Finished, the server's ACK).
				wrote := [2]bool{}
				p.runUntil(func() bool {
					for i, c := range []*Conn{p.client, p.server} {
						if c == nil || wrote[i] || !c.HandshakeComplete() {
							continue
						}
						st, err := c.OpenStream(true)
						if err != nil {
							t.Fatal(err)
						}
						if n, err := st.Write(randomBytes(30000, uint64(3+i))); err != nil || n != 30000 {
							t.Fatalf("wrote %d bytes: %v", n, err)
						}
						st.Close()
						wrote[i] = true
					}
					return wrote[0] && wrote[1]
				}, 10*time.Second)
				// Then until each end has read the other's stream.
				var got [2]int
				var rs [2]*Stream
				buf := make([]byte, 64<<10)
				p.runUntil(func() bool {
					for i, c := range []*Conn{p.client, p.server} {
						if rs[i] == nil {
							rs[i] = c.AcceptStream()
						}
						for rs[i] != nil {
							n, err := rs[i].Read(buf)
							got[i] += n
							if n == 0 || err != nil {
								break
							}
						}
					}
					return got[0] == 30000 && got[1] == 30000
				}, 10*time.Second)
				if coalesced == 0 || withShort == 0 {
					t.Fatalf("%d coalesced datagrams, %d with a 1-RTT packet: the test does not test coalescing", coalesced, withShort)
				}
				if largest[0] < size-64 || largest[1] < size-64 {
					t.Fatalf("largest datagrams %v: the transfers never came near %d bytes", largest, size)
				}
			})
		}
	}
}

// countPackets counts the QUIC packets coalesced in datagram d (split by
// wire.ParseHeader's Length), and whether the last is a 1-RTT packet.
func countPackets(d []byte) (n int, short bool) {
	for len(d) > 0 {
		h, err := wire.ParseHeader(d, ConnIDLen)
		if err != nil {
			return n, false
		}
		n++
		short = h.Type == wire.Packet1RTT
		d = d[h.Length:]
	}
	return n, short
}
