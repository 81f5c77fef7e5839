package netsim

import (
	"fmt"
	"net/netip"
	"sync"
)

// Network routes packets between host addresses over links: every
// (source IP, destination IP) pair that can talk has one unidirectional
// link.
//
// Each address belongs to a part of the simulation (Assign; the first
// part by default): a link runs in its source's part and delivers in its
// destination's, and each part has its own packet buffers and caches, so
// that parts can run in parallel.
type Network struct {
	sim     *Sim
	links   map[[2]netip.Addr]*Link
	order   []*Link
	tracers []*Tracer
	sockets map[netip.AddrPort]func(*Packet)
	// assigned maps addresses to parts other than the first.
	assigned map[netip.Addr]*Sim
	// parts holds each part's state, by the part's index.
	parts []*netPart
	// spare holds buffers and packets a part recycled beyond its needs,
	// for the parts that use them up (a bulk sender takes them, its
	// receiver recycles them); parts running side by side share it.
	spareMu   sync.Mutex
	spare     [][]byte
	sparePkts []*Packet
	// maxFree is each part's share of the recycled buffers and packets
	// (see the constant).
	maxFree int
}

// netPart is a part's share of the network.
type netPart struct {
	n *Network
	// routes and binds cache the first few address pairs' links and
	// addresses' sockets that packets used, so that most packets cost
	// no map lookup (links and sockets are never removed: the caches
	// cannot go stale).
	routes []route
	binds  []bind
	// nextID numbers the part's packets (see Packet.ID).
	nextID uint64
	// free and freePkts recycle packet buffers and packets.
	free     [][]byte
	freePkts []*Packet
	// unroutable counts packets with no link or no socket.
	unroutable uint64
}

// NewNetwork returns an empty network. Its simulation's parts must all
// exist (Sim.NewPart) before it is made.
func NewNetwork(sim *Sim) *Network {
	n := &Network{sim: sim, links: map[[2]netip.Addr]*Link{}, sockets: map[netip.AddrPort]func(*Packet){},
		assigned: map[netip.Addr]*Sim{}}
	for range sim.g.parts {
		n.parts = append(n.parts, &netPart{n: n})
	}
	n.maxFree = maxFree / len(n.parts)
	return n
}

// route and bind are entries of netPart.routes and netPart.binds.
type route struct {
	src, dst netip.Addr
	l        *Link
}

type bind struct {
	addr netip.AddrPort
	recv func(*Packet)
}

// maxCached bounds netPart.routes and netPart.binds (a scan of a few
// entries is cheaper than hashing netip addresses).
const maxCached = 8

// Assign puts addr in part p of the network's simulation: the hosts bound
// to it run there. Call it before addr is connected or bound.
func (n *Network) Assign(addr netip.Addr, p *Sim) error {
	if p.g != n.sim.g || p.lp >= len(n.parts) {
		return fmt.Errorf("netsim: %v: part of another simulation, or made after the network", addr)
	}
	for key := range n.links {
		if key[0] == addr || key[1] == addr {
			return fmt.Errorf("netsim: %v assigned after it was connected", addr)
		}
	}
	n.assigned[addr] = p
	return nil
}

// PartOf returns the part that addr belongs to.
func (n *Network) PartOf(addr netip.Addr) *Sim {
	if p := n.assigned[addr]; p != nil {
		return p
	}
	return n.sim.g.parts[0]
}

// link returns the link from src to dst, or nil.
func (np *netPart) link(n *Network, src, dst netip.Addr) *Link {
	for i := range np.routes {
		if r := &np.routes[i]; r.src == src && r.dst == dst {
			return r.l
		}
	}
	l := n.links[[2]netip.Addr{src, dst}]
	if l != nil && len(np.routes) < maxCached {
		np.routes = append(np.routes, route{src, dst, l})
	}
	return l
}

// socket returns the receiver bound to addr, or nil.
func (np *netPart) socket(n *Network, addr netip.AddrPort) func(*Packet) {
	for i := range np.binds {
		if b := &np.binds[i]; b.addr == addr {
			return b.recv
		}
	}
	recv := n.sockets[addr]
	if recv != nil && len(np.binds) < maxCached {
		np.binds = append(np.binds, bind{addr, recv})
	}
	return recv
}

// Sim returns the simulation (its first part).
func (n *Network) Sim() *Sim { return n.sim }

// Connect adds the link carrying packets from src to dst.
func (n *Network) Connect(name string, src, dst netip.Addr, cfg LinkConfig) (*Link, error) {
	key := [2]netip.Addr{src, dst}
	if _, dup := n.links[key]; dup {
		return nil, fmt.Errorf("netsim: %v -> %v already connected", src, dst)
	}
	from, to := n.PartOf(src), n.PartOf(dst)
	np := n.parts[to.lp]
	l, err := NewLink(from, name, cfg, func(p *Packet) { n.arrive(np, p) })
	if err != nil {
		return nil, err
	}
	if l.to = to; to != from {
		n.sim.g.cross = append(n.sim.g.cross, l)
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
// their destination address. A network of several parts has none.
func (n *Network) AddLink(name string, cfg LinkConfig) (*Link, error) {
	if len(n.parts) > 1 {
		return nil, fmt.Errorf("netsim: link %s: shared links need a simulation of one part", name)
	}
	np := n.parts[0]
	l, err := NewLink(n.sim, name, cfg, func(p *Packet) { n.arrive(np, p) })
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
	np := n.parts[0]
	first.deliver = func(p *Packet) {
		if !next.Send(p) {
			np.release(p)
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
	n.sim.g.serial = true
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

// Unroutable counts the packets that had no link or no socket.
func (n *Network) Unroutable() uint64 {
	var u uint64
	for _, np := range n.parts {
		u += np.unroutable
	}
	return u
}

// Buffer returns a buffer for a packet's data (recycled after delivery),
// for code running in the first part; Sender gives other parts theirs.
func (n *Network) Buffer(size int) []byte { return n.parts[0].buffer(size) }

// Send puts a datagram on the link from src to dst, for code running in
// the first part (see Sender); data should come from Buffer, and belongs
// to the network afterwards.
func (n *Network) Send(src, dst netip.AddrPort, data []byte) { n.send(n.parts[0], src, dst, data) }

// Sender is a part's access to the network: the Buffer and Send of the
// code that runs in that part.
type Sender struct {
	n  *Network
	np *netPart
}

// Sender returns the access of the part that addr belongs to.
func (n *Network) Sender(addr netip.Addr) Sender {
	return Sender{n, n.parts[n.PartOf(addr).lp]}
}

// Buffer is Network.Buffer in the sender's part.
func (s Sender) Buffer(size int) []byte { return s.np.buffer(size) }

// Send is Network.Send in the sender's part.
func (s Sender) Send(src, dst netip.AddrPort, data []byte) { s.n.send(s.np, src, dst, data) }

func (np *netPart) buffer(size int) []byte {
	if len(np.free) == 0 && len(np.n.parts) > 1 {
		np.takeSpare()
	}
	for len(np.free) > 0 {
		b := np.free[len(np.free)-1]
		np.free = np.free[:len(np.free)-1]
		if cap(b) >= size {
			return b[:size]
		}
	}
	return make([]byte, size, max(size, 2048))
}

func (n *Network) send(np *netPart, src, dst netip.AddrPort, data []byte) {
	l := np.link(n, src.Addr(), dst.Addr())
	if l == nil {
		np.unroutable++
		np.recycle(data)
		return
	}
	var p *Packet
	if len(np.freePkts) == 0 && len(n.parts) > 1 {
		np.takeSpare()
	}
	if k := len(np.freePkts); k > 0 {
		p = np.freePkts[k-1]
		np.freePkts = np.freePkts[:k-1]
	} else {
		p = new(Packet)
	}
	id := np.nextID
	if k := uint64(len(n.parts)); k > 1 {
		id = id*k + uint64(l.sim.lp)
	}
	*p = Packet{Src: src, Dst: dst, Data: data, ID: id}
	np.nextID++
	if !l.Send(p) {
		np.release(p)
	}
}

// arrive delivers a packet in part np.
func (n *Network) arrive(np *netPart, p *Packet) {
	recv := np.socket(n, p.Dst)
	if recv == nil {
		np.unroutable++
	} else {
		recv(p)
	}
	np.release(p)
}

// release recycles a packet and its data.
func (np *netPart) release(p *Packet) {
	np.recycle(p.Data)
	*p = Packet{}
	if len(np.freePkts) < np.n.maxFree {
		np.freePkts = append(np.freePkts, p)
		if len(np.freePkts) >= giveAt && len(np.n.parts) > 1 {
			np.giveSpare()
		}
	} else if len(np.n.parts) > 1 {
		np.giveSpare()
	}
}

func (np *netPart) recycle(b []byte) {
	if len(np.free) < np.n.maxFree {
		np.free = append(np.free, b[:0])
		if len(np.free) >= giveAt && len(np.n.parts) > 1 {
			np.giveSpare()
		}
	} else if len(np.n.parts) > 1 {
		np.giveSpare()
	}
}

// maxFree bounds the recycled buffers and packets a network keeps: a
// part's share is maxFree divided by the parts, and the spare ones at
// most as many; spareBatch is what a part gives to or takes from the
// spare ones at a time. With several parts, a part that holds giveAt
// recycled buffers (or packets) gives the spare ones its newest batch:
// buffers move to the part that sends soon after another part recycled
// them, while their memory is still in the CPU's caches (a bulk
// sender's data comes back to it through its receiver's part).
const (
	maxFree    = 4096
	spareBatch = 64
	giveAt     = 2 * spareBatch
)

// giveSpare moves the newest batch of the part's recycled buffers and
// packets to the network's spare ones (when the part has more than it
// needs).
func (np *netPart) giveSpare() {
	n := np.n
	n.spareMu.Lock()
	defer n.spareMu.Unlock()
	if len(n.spare) < n.maxFree && len(np.free) > spareBatch {
		moveTail(&n.spare, &np.free, len(np.free)-spareBatch)
	}
	if len(n.sparePkts) < n.maxFree && len(np.freePkts) > spareBatch {
		moveTail(&n.sparePkts, &np.freePkts, len(np.freePkts)-spareBatch)
	}
}

// takeSpare moves a batch of the network's spare buffers and packets to
// the part (which has run out of its own).
func (np *netPart) takeSpare() {
	n := np.n
	n.spareMu.Lock()
	defer n.spareMu.Unlock()
	if len(np.free) == 0 {
		moveTail(&np.free, &n.spare, max(0, len(n.spare)-spareBatch))
	}
	if len(np.freePkts) == 0 {
		moveTail(&np.freePkts, &n.sparePkts, max(0, len(n.sparePkts)-spareBatch))
	}
}

// moveTail moves the elements of *from from index k on to the end of
// *to, leaving no reference to them behind in *from's array.
func moveTail[T any](to, from *[]T, k int) {
	*to = append(*to, (*from)[k:]...)
	clear((*from)[k:])
	*from = (*from)[:k]
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
	return NewSplitTopology(sim, sim, paths)
}

// NewSplitTopology is NewTopology with the client's addresses in part
// client of the simulation and the server's in part server (see Sim):
// with two parts, the ends can run in parallel.
func NewSplitTopology(client, server *Sim, paths []PathSpec) (*Topology, error) {
	if len(paths) == 0 || len(paths) > 250 {
		return nil, fmt.Errorf("netsim: need 1 to 250 paths, got %d", len(paths))
	}
	t := &Topology{Net: NewNetwork(client.g.parts[0])}
	for i, ps := range paths {
		c := netip.AddrFrom4([4]byte{10, byte(i), 0, 1})
		s := netip.AddrFrom4([4]byte{10, byte(i), 0, 2})
		if err := t.Net.Assign(c, client); err != nil {
			return nil, err
		}
		if err := t.Net.Assign(s, server); err != nil {
			return nil, err
		}
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
