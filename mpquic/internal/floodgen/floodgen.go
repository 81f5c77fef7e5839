// Package floodgen makes the datagrams of connection floods for the tests
// and the load tool (mpquic/testdata/flood) that check how a server holds
// under them. Nothing in the mpq binary imports it.
package floodgen

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/mpq/mpq/mpquic/core"
	"github.com/mpq/mpq/mpquic/internal/wire"
)

// GarbageInitial returns a version 1 Initial packet of 1,200 to 1,499
// bytes whose header is sound (an 8-byte DCID, a Length that fits the
// datagram) and whose protected part is random: what costs a server the
// most to tell from a client's.
func GarbageInitial(r *rand.Rand) []byte {
	dcid := Random(r, 8)
	b, lengthOff, pnOff := wire.AppendLongHeader(nil, wire.PacketInitial, wire.Version1, dcid, dcid[:4], nil, 0, 4)
	b = append(b[:pnOff], Random(r, 1200+r.IntN(300)-pnOff)...)
	wire.PutLongHeaderLength(b, lengthOff, len(b)-pnOff)
	return b
}

// ClientHello returns the first flight of a new client connection with
// configuration cfg: a genuine ClientHello in Initial packets (two
// datagrams with the post-quantum key share), each of a new connection
// the server can decrypt. The client is then ended, so that it holds no
// memory.
func ClientHello(cfg *core.Config) ([][]byte, error) {
	now := time.Now()
	c, err := core.NewClientConn(cfg, netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("127.0.0.1:2"), "", now)
	if err != nil {
		return nil, fmt.Errorf("floodgen: client: %w", err)
	}
	var out [][]byte
	for {
		d, ok := c.PollDatagram(now, nil)
		if !ok {
			break
		}
		out = append(out, append([]byte(nil), d.Data...))
	}
	c.Close(0, "")
	c.HandleTimeout(now.Add(time.Hour)) // ends its TLS goroutine
	return out, nil
}

// Random returns n bytes from r.
func Random(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}
