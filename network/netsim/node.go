package netsim

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/mpq/mpq/mpquic/core"
)

// Node is a host running mpquic on the simulated network: it owns a
// sans-IO endpoint bound to some addresses and drives its connections on
// the virtual clock.
type Node struct {
	net *Network
	// sim is the part the node's addresses belong to, out its access to
	// the network there.
	sim    *Sim
	out    Sender
	ep     *core.Endpoint
	addrs  []netip.AddrPort
	conns  map[*core.Conn]*Conn
	last   *Conn // of conns, the last one a datagram went to
	accept func(*Conn)
	dials  int
}

// sendBufSize is the capacity of the buffers connections build their
// datagrams in: room for the default 1350-byte packets; a connection with
// larger ones grows it (and its datagram is then copied).
const sendBufSize = 2048

// Conn is a connection driven by a Node.
type Conn struct {
	*core.Conn
	node    *Node
	timer   Timer
	timerAt time.Time
	kicked  bool
	// kickFn and timerFn are the scheduled callbacks, made once.
	kickFn, timerFn func()
	// OnEvent, if set, receives the connection's events (handshake done,
	// streams readable or writable, closed) on the virtual clock.
	OnEvent func(core.Event)
}

// NewNode creates a host bound to addrs. With server set it accepts
// connections and hands each to accept once created, before the
// connection processes its first datagram (so that accept can install
// OnEvent).
//
// The node ties the connections' randomness and time to the simulation
// (see SimConfig): server is used as SimConfig(sim, "server/"+addrs[0])
// returns it.
func NewNode(n *Network, addrs []netip.AddrPort, server *core.Config, accept func(*Conn)) (*Node, error) {
	if len(addrs) == 0 {
		return nil, fmt.Errorf("netsim: node without addresses")
	}
	sim := n.PartOf(addrs[0].Addr())
	for _, a := range addrs[1:] {
		if n.PartOf(a.Addr()) != sim {
			return nil, fmt.Errorf("netsim: node's addresses %v and %v in different parts", addrs[0], a)
		}
	}
	if server != nil {
		server = SimConfig(sim, server, "server/"+addrs[0].String())
	}
	ep, err := core.NewEndpoint(core.EndpointConfig{Server: server, Rand: RandReader{sim.Rand("endpoint/" + addrs[0].String())}})
	if err != nil {
		return nil, err
	}
	nd := &Node{net: n, sim: sim, out: n.Sender(addrs[0].Addr()), ep: ep, addrs: addrs, conns: map[*core.Conn]*Conn{}, accept: accept}
	for _, a := range addrs {
		if err := n.Bind(a, nd.receive); err != nil {
			return nil, err
		}
	}
	return nd, nil
}

// SetQlogReferenceTime sets the qlog reference time of the server
// connections the node accepts from now on.
func (nd *Node) SetQlogReferenceTime(t time.Time) { nd.ep.SetQlogReferenceTime(t) }

// Dial starts a client connection from local to remote. cfg is used as
// SimConfig returns it, so that the connection's randomness derives from
// the seed and TLS reads the virtual clock.
func (nd *Node) Dial(cfg *core.Config, local, remote netip.AddrPort) (*Conn, error) {
	nd.dials++
	cfg = SimConfig(nd.sim, cfg, fmt.Sprintf("client/%v/%d", local, nd.dials))
	cc, err := nd.ep.Dial(cfg, local, remote, "", nd.sim.Now())
	if err != nil {
		return nil, err
	}
	c := nd.adopt(cc)
	c.Kick()
	return c, nil
}

func (nd *Node) adopt(cc *core.Conn) *Conn {
	c := &Conn{Conn: cc, node: nd}
	c.kickFn = func() {
		c.kicked = false
		c.service()
	}
	c.timerFn = func() {
		c.timerAt = time.Time{}
		c.HandleTimeout(nd.sim.Now())
		c.service()
	}
	nd.conns[cc] = c
	return c
}

func (nd *Node) receive(p *Packet) {
	now := nd.sim.Now()
	d := core.Datagram{Local: p.Dst, Remote: p.Src, Data: p.Data}
	r := nd.ep.Route(now, d)
	if r.Reply != nil {
		b := nd.out.Buffer(len(r.Reply.Data))
		copy(b, r.Reply.Data)
		nd.out.Send(r.Reply.Local, r.Reply.Remote, b)
	}
	if r.Evicted != nil {
		if v := nd.conns[r.Evicted]; v != nil {
			v.Kick() // its slot went to r.Conn: it ends
		}
	}
	if r.Conn == nil {
		return
	}
	c := nd.last
	if c == nil || c.Conn != r.Conn {
		c = nd.conns[r.Conn]
		nd.last = c
	}
	if c == nil {
		if !r.New {
			return
		}
		c = nd.adopt(r.Conn)
		if nd.accept != nil {
			nd.accept(c)
		}
	}
	c.HandleDatagram(now, d)
	c.service()
}

// Kick makes the node service the connection at the current virtual time:
// call it after application writes so that the data goes out.
func (c *Conn) Kick() {
	if c.kicked {
		return
	}
	c.kicked = true
	c.node.sim.After(0, c.kickFn)
}

// service sends what the connection has to send, delivers its events and
// re-arms its timer.
func (c *Conn) service() {
	sim := c.node.sim
	out := c.node.out
	now := sim.Now()
	// Event handlers may write, open paths or close: poll again after
	// them until neither datagrams nor events remain.
	for {
		for {
			// The datagram is built in a buffer of the network's,
			// which the packet takes without a copy.
			buf := out.Buffer(sendBufSize)
			d, ok := c.PollDatagram(now, buf[:0])
			if !ok {
				out.np.recycle(buf)
				break
			}
			if len(d.Data) > 0 && &d.Data[:1][0] == &buf[:1][0] {
				out.Send(d.Local, d.Remote, d.Data)
				continue
			}
			// Built elsewhere (buf was too small).
			out.np.recycle(buf)
			b := out.Buffer(len(d.Data))
			copy(b, d.Data)
			out.Send(d.Local, d.Remote, b)
		}
		events := 0
		for {
			e, ok := c.PollEvent()
			if !ok {
				break
			}
			events++
			if c.OnEvent != nil {
				c.OnEvent(e)
			}
		}
		if events == 0 {
			break
		}
	}
	if done, _ := c.Closed(); done {
		c.timer.Stop()
		delete(c.node.conns, c.Conn)
		if c.node.last == c {
			c.node.last = nil
		}
		return
	}
	next := c.NextTimeout()
	if next.Equal(c.timerAt) && !next.IsZero() {
		return
	}
	c.timerAt = next
	if next.IsZero() {
		c.timer.Stop()
		return
	}
	if !c.timer.Reset(next) {
		c.timer = sim.At(next, c.timerFn)
	}
}

// RandReader adapts a seeded math/rand source to io.Reader, so that
// connection IDs, tokens and path challenges derive from the simulation's
// seed. Not for cryptographic use outside the simulator.
type RandReader struct{ R *rand.Rand }

// Read fills b with pseudo-random bytes; it never fails.
func (r RandReader) Read(b []byte) (int, error) {
	n := len(b)
	for len(b) >= 8 {
		binary.LittleEndian.PutUint64(b, r.R.Uint64())
		b = b[8:]
	}
	if len(b) > 0 {
		var t [8]byte
		binary.LittleEndian.PutUint64(t[:], r.R.Uint64())
		copy(b, t[:])
	}
	return n, nil
}

// SimConfig returns a copy of cfg whose unset sources of randomness and
// time belong to the simulation: Rand (connection IDs, tokens, path
// challenges) and TLS.Rand (client and server randoms, the ML-KEM seed of
// the client's key share, session ticket keys) derive from the seed and
// name, and TLS.Time is the virtual clock, so that certificate validity and
// session tickets are judged in virtual time and no wall clock is read.
// Certificates must therefore be valid at Epoch (see TLSConfigs).
//
// Since Go 1.26 crypto/tls ignores TLS.Rand for X25519 keys, ML-KEM
// encapsulation and ECDSA signatures, which always use crypto/rand; tests
// that want byte-identical packets call testing/cryptotest.SetGlobalRandom.
// Without it the contents differ between runs, but not their sizes nor
// anything the simulation does with them.
func SimConfig(sim *Sim, cfg *core.Config, name string) *core.Config {
	if cfg == nil {
		return nil
	}
	n := *cfg
	if n.Rand == nil {
		n.Rand = RandReader{sim.Rand("conn/" + name)}
	}
	if n.TLS != nil && (n.TLS.Rand == nil || n.TLS.Time == nil) {
		n.TLS = n.TLS.Clone()
		if n.TLS.Rand == nil {
			n.TLS.Rand = RandReader{sim.Rand("tls/" + name)}
		}
		if n.TLS.Time == nil {
			n.TLS.Time = sim.Now
		}
	}
	return &n
}

// Sim returns the part of the simulation the node runs in.
func (nd *Node) Sim() *Sim { return nd.sim }
