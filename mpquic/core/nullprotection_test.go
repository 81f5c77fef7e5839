package core

import (
	"bytes"
	"slices"
	"testing"
	"time"
)

// With SimNullProtection on both ends a lossy transfer with key updates
// completes, the 1-RTT payload is in clear on the wire, every datagram
// has the size it has with AES-GCM, and the transport parameters are those
// of a connection without it: nothing announces it to the peer.
func TestSimNullProtection(t *testing.T) {
	type wireLog struct {
		sizes [2][]int
		clear bool
	}
	data := randomBytes(1<<20, 5)
	marker := data[300_000 : 300_000+64]
	run := func(null bool) (*pair, *wireLog) {
		cc, sc := testConfigs(t)
		cc.SimNullProtection, sc.SimNullProtection = null, null
		sc.KeyUpdateInterval = 100
		p := newPair(t, cc, sc, EndpointConfig{})
		w := &wireLog{}
		n := 0
		p.drop = func(toServer bool, d []byte) bool {
			i := 0
			if toServer {
				i = 1
			}
			w.sizes[i] = append(w.sizes[i], len(d))
			if bytes.Contains(d, marker) {
				w.clear = true
			}
			n++
			return n%9 == 0
		}
		p.handshake()
		p.transfer(p.server, p.client, data, 120*time.Second)
		return p, w
	}
	pn, wn := run(true)
	pr, wr := run(false)
	if !wn.clear || wr.clear {
		t.Fatalf("payload in clear: null %v, AES-GCM %v", wn.clear, wr.clear)
	}
	for _, c := range []*Conn{pn.client, pn.server} {
		if !c.app.write.IsNull() || !c.app.read.IsNull() || !c.app.nextRead.IsNull() {
			t.Fatal("a 1-RTT key is not null")
		}
	}
	if pr.server.app.write.IsNull() {
		t.Fatal("null protection without the option")
	}
	if g := pn.server.app.generation; g < 3 || pn.client.app.generation != g {
		t.Fatalf("key generations: server %d, client %d", g, pn.client.app.generation)
	}
	for i := range wn.sizes {
		if !slices.Equal(wn.sizes[i], wr.sizes[i]) {
			t.Errorf("direction %d: datagram sizes differ with the null protection (%d vs %d datagrams)", i, len(wn.sizes[i]), len(wr.sizes[i]))
		}
	}
	params := func(c *Conn) []byte {
		p := c.localParams
		p.InitialSourceConnectionID, p.OriginalDestinationConnectionID, p.StatelessResetToken = nil, nil, nil
		return p.Append(nil)
	}
	for _, pair := range [][2]*Conn{{pn.client, pr.client}, {pn.server, pr.server}} {
		if a, b := params(pair[0]), params(pair[1]); !bytes.Equal(a, b) {
			t.Errorf("transport parameters differ: %x vs %x", a, b)
		}
	}
}
