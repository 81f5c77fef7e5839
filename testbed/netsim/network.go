package netsim

import (
	"fmt"
	"net/netip"
)

// Network routes packets between host addresses over links: every
// (source IP, destination IP) pair that can talk has one unidirectional
// link.
type Network struct {
	sim     *Sim
	links   map[[2]netip.Addr]*Link
	order   []*Link
	tracers []*Tracer
	sockets map[netip.AddrPort]func(*Packet)
	// routes and binds cache the first few address pairs' links and
	// addresses' sockets that packets used, so that most packets cost
	// no map lookup (links and sockets are never removed: the caches
	// cannot go stale).
	routes []route
	binds  []bind
	nextID uint64
	// free and freePkts recycle packet buffers and packets.
	free     [][]byte
	freePkts []*Packet
	// Unroutable counts packets with no link or no socket.
	Unroutable uint64
}

// NewNetwork returns an empty network.
func NewNetwork(sim *Sim) *Network {
	return &Network{sim: sim, links: map[[2]netip.Addr]*Link{}, sockets: map[netip.AddrPort]func(*Packet){}}
}

// route and bind are entries of Network.routes and Network.binds.
type route struct {
	src, dst netip.Addr
	l        *Link
}

type bind struct {
	addr netip.AddrPort
	recv func(*Packet)
}

// maxCached bounds Network.routes and Network.binds (a scan of a few
// entries is cheaper than hashing netip addresses).
const maxCached = 8

// link returns the link from src to dst, or nil.
func (n *Network) link(src, dst netip.Addr) *Link {
	for i := range n.routes {
		if r := &n.routes[i]; r.src == src && r.dst == dst {
			return r.l
		}
	}
	l := n.links[[2]netip.Addr{src, dst}]
	if l != nil && len(n.routes) < maxCached {
		n.routes = append(n.routes, route{src, dst, l})
	}
	return l
}

// socket returns the receiver bound to addr, or nil.
func (n *Network) socket(addr netip.AddrPort) func(*Packet) {
	for i := range n.binds {
		if b := &n.binds[i]; b.addr == addr {
			return b.recv
		}
	}
	recv := n.sockets[addr]
	if recv != nil && len(n.binds) < maxCached {
		n.binds = append(n.binds, bind{addr, recv})
	}
	return recv
}

// Sim returns the simulation.
func (n *Network) Sim() *Sim { return n.sim }

// Connect adds the link carrying packets from src to dst.
func (n *Network) Connect(name string, src, dst netip.Addr, cfg LinkConfig) (*Link, error) {
	key := [2]netip.Addr{src, dst}
	if _, dup := n.links[key]; dup {
		return nil, fmt.Errorf("netsim: %v -> %v already connected", src, dst)
	}
	l, err := NewLink(n.sim, name, cfg, n.arrive)
	if err != nil {
		return nil, err
	}
	n.links[key] = l
	n.order = append(n.order, l)
	for _, t := range n.tracers {
		l.AddTracer(t)
	}
	return l, nil
}

// AddLink adds a link that no address pair routes to: a shared link
// that other links hand their packets to (Chain). Its packets arrive at
// their destination address.
func (n *Network) AddLink(name string, cfg LinkConfig) (*Link, error) {
	l, err := NewLink(n.sim, name, cfg, n.arrive)
	if err != nil {
		return nil, err
	}
	n.order = append(n.order, l)
	for _, t := range n.tracers {
		l.AddTracer(t)
	}
	return l, nil
}

// Chain makes the packets that arrive at the end of first pass next
// before they reach their destination (a path's link, then a bottleneck
// it shares with other paths); a packet next drops is recycled.
func (n *Network) Chain(first, next *Link) {
	first.deliver = func(p *Packet) {
		if !next.Send(p) {
			n.release(p)
		}
	}
}

// Link returns the link carrying packets from src to dst, or nil.
func (n *Network) Link(src, dst netip.Addr) *Link { return n.links[[2]netip.Addr{src, dst}] }

// Links returns the network's links in the order they were connected.
func (n *Network) Links() []*Link { return n.order }

// AddTracer registers packet-level hooks on every link, present and future.
func (n *Network) AddTracer(t *Tracer) {
	n.tracers = append(n.tracers, t)
	for _, l := range n.order {
		l.AddTracer(t)
	}
}

// Bind delivers packets sent to addr to recv. recv may keep the packet's
// data only until it returns.
func (n *Network) Bind(addr netip.AddrPort, recv func(*Packet)) error {
	if _, dup := n.sockets[addr]; dup {
		return fmt.Errorf("netsim: %v already bound", addr)
	}
	n.sockets[addr] = recv
	return nil
}

// Buffer returns a buffer for a packet's data (recycled after delivery).
func (n *Network) Buffer(size int) []byte {
	for len(n.free) > 0 {
		b := n.free[len(n.free)-1]
		n.free = n.free[:len(n.free)-1]
		if cap(b) >= size {
			return b[:size]
		}
	}
	return make([]byte, size, max(size, 2048))
}

// Send puts a datagram on the link from src to dst; data should come from
// Buffer, and belongs to the network afterwards.
func (n *Network) Send(src, dst netip.AddrPort, data []byte) {
	l := n.link(src.Addr(), dst.Addr())
	if l == nil {
		n.Unroutable++
		n.recycle(data)
		return
	}
	var p *Packet
	if k := len(n.freePkts); k > 0 {
		p = n.freePkts[k-1]
		n.freePkts = n.freePkts[:k-1]
	} else {
		p = new(Packet)
	}
	*p = Packet{Src: src, Dst: dst, Data: data, ID: n.nextID}
	n.nextID++
	if !l.Send(p) {
		n.release(p)
	}
}

func (n *Network) arrive(p *Packet) {
	recv := n.socket(p.Dst)
	if recv == nil {
		n.Unroutable++
	} else {
		recv(p)
	}
	n.release(p)
}

// release recycles a packet and its data.
func (n *Network) release(p *Packet) {
	n.recycle(p.Data)
	*p = Packet{}
	if len(n.freePkts) < 4096 {
		n.freePkts = append(n.freePkts, p)
	}
}

func (n *Network) recycle(b []byte) {
	if len(n.free) < 4096 {
		n.free = append(n.free, b[:0])
	}
}

// PathSpec configures one path of a topology: the client-to-server (Up) and
// server-to-client (Down) links.
type PathSpec struct {
	Up, Down LinkConfig
}

// Symmetric returns a PathSpec with the same configuration both ways.
func Symmetric(cfg LinkConfig) PathSpec { return PathSpec{Up: cfg, Down: cfg} }

// Topology is a client and a server joined by independent paths: path i
// connects client address 10.i.0.1 to server address 10.i.0.2 over its own
// pair of links.
type Topology struct {
	Net    *Network
	Client []netip.Addr
	Server []netip.Addr
	Up     []*Link
	Down   []*Link
}

// NewTopology builds the paths on a fresh network.
func NewTopology(sim *Sim, paths []PathSpec) (*Topology, error) {
	if len(paths) == 0 || len(paths) > 250 {
		return nil, fmt.Errorf("netsim: need 1 to 250 paths, got %d", len(paths))
	}
	t := &Topology{Net: NewNetwork(sim)}
	for i, ps := range paths {
		c := netip.AddrFrom4([4]byte{10, byte(i), 0, 1})
		s := netip.AddrFrom4([4]byte{10, byte(i), 0, 2})
		up, err := t.Net.Connect(fmt.Sprintf("path%d/up", i), c, s, ps.Up)
		if err != nil {
			return nil, err
		}
		down, err := t.Net.Connect(fmt.Sprintf("path%d/down", i), s, c, ps.Down)
		if err != nil {
			return nil, err
		}
		t.Client = append(t.Client, c)
		t.Server = append(t.Server, s)
		t.Up = append(t.Up, up)
		t.Down = append(t.Down, down)
	}
	return t, nil
}
