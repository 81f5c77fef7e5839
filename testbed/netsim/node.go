package netsim

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/mpq/mpq/mpquic/core"
)

// Node is a host running mpquic on the simulated network: it owns a
// sans-IO endpoint bound to some addresses and drives its connections on
// the virtual clock.
type Node struct {
	net    *Network
	ep     *core.Endpoint
	addrs  []netip.AddrPort
	conns  map[*core.Conn]*Conn
	buf    []byte
	accept func(*Conn)
}

// Conn is a connection driven by a Node.
type Conn struct {
	*core.Conn
	node    *Node
	timer   Timer
	timerAt time.Time
	kicked  bool
	// OnEvent, if set, receives the connection's events (handshake done,
	// streams readable or writable, closed) on the virtual clock.
	OnEvent func(core.Event)
}

// NewNode creates a host bound to addrs. With server set it accepts
// connections and hands each to accept once created.
func NewNode(n *Network, addrs []netip.AddrPort, server *core.Config, accept func(*Conn)) (*Node, error) {
	ep, err := core.NewEndpoint(core.EndpointConfig{Server: server, Rand: RandReader{n.sim.Rand("endpoint/" + addrs[0].String())}})
	if err != nil {
		return nil, err
	}
	nd := &Node{net: n, ep: ep, addrs: addrs, conns: map[*core.Conn]*Conn{}, buf: make([]byte, 0, 65536), accept: accept}
	for _, a := range addrs {
		if err := n.Bind(a, nd.receive); err != nil {
			return nil, err
		}
	}
	return nd, nil
}

// Dial starts a client connection from local to remote.
func (nd *Node) Dial(cfg *core.Config, local, remote netip.AddrPort) (*Conn, error) {
	cc, err := nd.ep.Dial(cfg, local, remote, "", nd.net.sim.Now())
	if err != nil {
		return nil, err
	}
	c := nd.adopt(cc)
	c.Kick()
	return c, nil
}

func (nd *Node) adopt(cc *core.Conn) *Conn {
	c := &Conn{Conn: cc, node: nd}
	nd.conns[cc] = c
	return c
}

func (nd *Node) receive(p *Packet) {
	now := nd.net.sim.Now()
	d := core.Datagram{Local: p.Dst, Remote: p.Src, Data: p.Data}
	r := nd.ep.Route(now, d)
	if r.Reply != nil {
		b := nd.net.Buffer(len(r.Reply.Data))
		copy(b, r.Reply.Data)
		nd.net.Send(r.Reply.Local, r.Reply.Remote, b)
	}
	if r.Conn == nil {
		return
	}
	c := nd.conns[r.Conn]
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
	c.node.net.sim.After(0, func() {
		c.kicked = false
		c.service()
	})
}

// service sends what the connection has to send, delivers its events and
// re-arms its timer.
func (c *Conn) service() {
	sim := c.node.net.sim
	now := sim.Now()
	for {
		d, ok := c.PollDatagram(now, c.node.buf[:0])
		if !ok {
			break
		}
		b := c.node.net.Buffer(len(d.Data))
		copy(b, d.Data)
		c.node.net.Send(d.Local, d.Remote, b)
	}
	for {
		e, ok := c.PollEvent()
		if !ok {
			break
		}
		if c.OnEvent != nil {
			c.OnEvent(e)
		}
	}
	if done, _ := c.Closed(); done {
		c.timer.Stop()
		delete(c.node.conns, c.Conn)
		return
	}
	next := c.NextTimeout()
	if next.Equal(c.timerAt) && !next.IsZero() {
		return
	}
	c.timer.Stop()
	c.timerAt = next
	if next.IsZero() {
		return
	}
	c.timer = sim.At(next, func() {
		c.timerAt = time.Time{}
		c.HandleTimeout(sim.Now())
		c.service()
	})
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
