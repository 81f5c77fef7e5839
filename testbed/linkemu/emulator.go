package linkemu

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mpq/mpq/experiment"
)

// Config configures an Emulator.
type Config struct {
	// Paths are the experiment's paths: Up carries the client's datagrams
	// to the server, Down the server's to the client.
	Paths []experiment.Path
	// Server is the server's address, where the back sockets forward;
	// they ignore datagrams from any other address (LinkStats.Foreign).
	// The client's address on a path is learnt from the datagrams it
	// sends to the path's front socket.
	Server netip.AddrPort
	// Seed derives every link's random source (see LinkRand; links are
	// named "path<i>/up" and "path<i>/down" as in the simulator).
	Seed uint64
	// FrontAddr and BackAddr give the addresses of path i's front socket
	// (which the client sends to) and back socket (which the server sees
	// the path come from); port 0 picks a free port. Defaults:
	// 127.0.<i+1>.2:0 and 127.0.<i+1>.3:0, which need no configuration on
	// Linux, where all of 127.0.0.0/8 is local.
	FrontAddr, BackAddr func(i int) netip.AddrPort
	// MaxInFlightPackets and MaxInFlightBytes bound what the emulator
	// holds for one link (queued or propagating); beyond them datagrams
	// are dropped as DropOverflow. Defaults 16384 datagrams and 64 MiB
	// (a datagram counts its size plus 64 bytes).
	MaxInFlightPackets int
	MaxInFlightBytes   int64
	// SocketBuffer is the kernel receive and send buffer requested for
	// each socket; default 4 MiB (the kernel may grant less).
	SocketBuffer int
}

// packetCost is what a held datagram costs beyond its bytes, for
// MaxInFlightBytes.
const packetCost = 64

// maxPaths is how many paths the default addresses can number.
const maxPaths = 254

// LinkStats are the counters of one direction of a path. Sent counts
// every datagram offered to the link; once nothing is in flight, Sent =
// Delivered + DroppedLoss + DroppedQueue + DroppedOverflow + Unroutable +
// WriteErrors.
type LinkStats struct {
	Sent, Delivered                            uint64
	BytesSent, BytesDelivered                  uint64
	DroppedLoss, DroppedQueue, DroppedOverflow uint64
	// Unroutable: a downstream datagram arrived before the client had
	// sent anything on the path, so it had nowhere to go.
	Unroutable uint64
	// WriteErrors: the socket refused to send a delivered datagram.
	WriteErrors uint64
	// Foreign counts datagrams the back socket received from another
	// address than the server's; they are ignored (not counted in Sent).
	Foreign uint64
	// InFlight is the datagrams held now, queued or propagating.
	InFlight uint64
	// LateMean and LateMax are how much later than the model's arrival
	// time datagrams were sent on, on average and at most: the timing
	// error of the real-time driver.
	LateMean, LateMax time.Duration
}

// PathStats are the counters of both directions of a path.
type PathStats struct {
	Up, Down LinkStats
}

// Emulator forwards the datagrams of every path through its links. Create
// it with Start; Close stops it.
type Emulator struct {
	paths  []*path
	server netip.AddrPort
	done   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once
}

// path is one path's sockets and links.
type path struct {
	front, back *net.UDPConn
	frontAddr   netip.AddrPort
	backAddr    netip.AddrPort
	up, down    *pipe
	// client is the address the client last sent from on this path.
	client atomic.Pointer[netip.AddrPort]
}

// pipe is one direction of a path: the model, and the datagrams it
// accepted, in arrival order, for the delivery goroutine.
type pipe struct {
	model    *Link // owned by the reader goroutine
	held     chan *packet
	maxBytes int64
	// held and bytes count the datagrams accepted and not yet sent on
	// (in the channel or in the delivery goroutine's hands), and their
	// cost.
	count atomic.Int64
	bytes atomic.Int64
	out   *net.UDPConn
	// dst is where delivered datagrams go (false: nowhere yet).
	dst func() (netip.AddrPort, bool)

	sent, delivered, bytesSent, bytesDelivered atomic.Uint64
	dropLoss, dropQueue, dropOverflow          atomic.Uint64
	unroutable, writeErrors, foreign           atomic.Uint64
	lateSum, lateMax                           atomic.Int64
}

// packet is a datagram held by a pipe.
type packet struct {
	buf []byte // capacity pooledSize, or larger for big datagrams
	n   int
	at  time.Time
}

const pooledSize = 2048

var packetPool = sync.Pool{New: func() any { return &packet{buf: make([]byte, pooledSize)} }}

func getPacket(data []byte) *packet {
	p := packetPool.Get().(*packet)
	if len(data) > cap(p.buf) {
		p.buf = make([]byte, len(data))
	}
	p.n = copy(p.buf[:cap(p.buf)], data)
	return p
}

func putPacket(p *packet) {
	if cap(p.buf) == pooledSize {
		packetPool.Put(p)
	}
}

// Start opens the sockets of every path and starts forwarding.
func Start(cfg Config) (*Emulator, error) {
	if len(cfg.Paths) == 0 || len(cfg.Paths) > maxPaths {
		return nil, fmt.Errorf("linkemu: need 1 to %d paths, got %d", maxPaths, len(cfg.Paths))
	}
	if !cfg.Server.IsValid() {
		return nil, errors.New("linkemu: no server address")
	}
	if cfg.FrontAddr == nil {
		cfg.FrontAddr = func(i int) netip.AddrPort {
			return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, byte(i + 1), 2}), 0)
		}
	}
	if cfg.BackAddr == nil {
		cfg.BackAddr = func(i int) netip.AddrPort {
			return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, byte(i + 1), 3}), 0)
		}
	}
	if cfg.MaxInFlightPackets <= 0 {
		cfg.MaxInFlightPackets = 16384
	}
	if cfg.MaxInFlightBytes <= 0 {
		cfg.MaxInFlightBytes = 64 << 20
	}
	if cfg.SocketBuffer <= 0 {
		cfg.SocketBuffer = 4 << 20
	}
	e := &Emulator{server: unmap(cfg.Server), done: make(chan struct{})}
	fail := func(err error) (*Emulator, error) {
		for _, p := range e.paths {
			p.close()
		}
		return nil, err
	}
	for i, pc := range cfg.Paths {
		p := &path{}
		e.paths = append(e.paths, p)
		var err error
		if p.front, p.frontAddr, err = listen(cfg.FrontAddr(i), cfg.SocketBuffer); err != nil {
			return fail(fmt.Errorf("linkemu: path %d front: %w", i, err))
		}
		if p.back, p.backAddr, err = listen(cfg.BackAddr(i), cfg.SocketBuffer); err != nil {
			return fail(fmt.Errorf("linkemu: path %d back: %w", i, err))
		}
		up, err := NewLink(pc.Up, pc.RTT(), LinkRand(cfg.Seed, fmt.Sprintf("path%d/up", i)))
		if err != nil {
			return fail(fmt.Errorf("linkemu: path %d up: %w", i, err))
		}
		down, err := NewLink(pc.Down, pc.RTT(), LinkRand(cfg.Seed, fmt.Sprintf("path%d/down", i)))
		if err != nil {
			return fail(fmt.Errorf("linkemu: path %d down: %w", i, err))
		}
		server := e.server
		p.up = &pipe{model: up, held: make(chan *packet, cfg.MaxInFlightPackets), maxBytes: cfg.MaxInFlightBytes, out: p.back,
			dst: func() (netip.AddrPort, bool) { return server, true }}
		p.down = &pipe{model: down, held: make(chan *packet, cfg.MaxInFlightPackets), maxBytes: cfg.MaxInFlightBytes, out: p.front,
			dst: func() (netip.AddrPort, bool) {
				if a := p.client.Load(); a != nil {
					return *a, true
				}
				return netip.AddrPort{}, false
			}}
	}
	for _, p := range e.paths {
		e.wg.Add(4)
		go e.read(p.front, p.up, func(from netip.AddrPort) bool {
			if a := p.client.Load(); a == nil || *a != from {
				p.client.Store(&from)
			}
			return true
		})
		go e.read(p.back, p.down, func(from netip.AddrPort) bool { return from == e.server })
		go e.deliver(p.up)
		go e.deliver(p.down)
	}
	return e, nil
}

func unmap(a netip.AddrPort) netip.AddrPort { return netip.AddrPortFrom(a.Addr().Unmap(), a.Port()) }

func listen(a netip.AddrPort, buf int) (*net.UDPConn, netip.AddrPort, error) {
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(a))
	if err != nil {
		return nil, netip.AddrPort{}, err
	}
	_ = c.SetReadBuffer(buf)
	_ = c.SetWriteBuffer(buf)
	return c, unmap(c.LocalAddr().(*net.UDPAddr).AddrPort()), nil
}

func (p *path) close() {
	if p.front != nil {
		p.front.Close()
	}
	if p.back != nil {
		p.back.Close()
	}
}

// Front is the address of path i's front socket, where the client sends.
func (e *Emulator) Front(i int) netip.AddrPort { return e.paths[i].frontAddr }

// Back is the address of path i's back socket, from which the server
// receives the path's datagrams.
func (e *Emulator) Back(i int) netip.AddrPort { return e.paths[i].backAddr }

// Paths is the number of paths.
func (e *Emulator) Paths() int { return len(e.paths) }

// Stats returns the counters of every path.
func (e *Emulator) Stats() []PathStats {
	out := make([]PathStats, len(e.paths))
	for i, p := range e.paths {
		out[i] = PathStats{Up: p.up.stats(), Down: p.down.stats()}
	}
	return out
}

func (p *pipe) stats() LinkStats {
	s := LinkStats{
		Sent: p.sent.Load(), Delivered: p.delivered.Load(),
		BytesSent: p.bytesSent.Load(), BytesDelivered: p.bytesDelivered.Load(),
		DroppedLoss: p.dropLoss.Load(), DroppedQueue: p.dropQueue.Load(), DroppedOverflow: p.dropOverflow.Load(),
		Unroutable: p.unroutable.Load(), WriteErrors: p.writeErrors.Load(), Foreign: p.foreign.Load(),
		InFlight: uint64(p.count.Load()),
		LateMax:  time.Duration(p.lateMax.Load()),
	}
	if n := s.Delivered + s.Unroutable + s.WriteErrors; n > 0 {
		s.LateMean = time.Duration(p.lateSum.Load() / int64(n))
	}
	return s
}

// Close stops forwarding, closes the sockets and waits for the emulator's
// goroutines to end; datagrams still held are dropped.
func (e *Emulator) Close() error {
	e.once.Do(func() {
		close(e.done)
		for _, p := range e.paths {
			p.close()
		}
		e.wg.Wait()
		for _, p := range e.paths {
			for _, q := range []*pipe{p.up, p.down} {
				for len(q.held) > 0 {
					putPacket(<-q.held)
				}
			}
		}
	})
	return nil
}

// read offers the datagrams a socket receives to a pipe, until the socket
// closes. accept filters (and notes) their sources.
func (e *Emulator) read(c *net.UDPConn, p *pipe, accept func(from netip.AddrPort) bool) {
	defer e.wg.Done()
	buf := make([]byte, 1<<16)
	for {
		n, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case <-e.done:
				return
			default:
				continue
			}
		}
		if !accept(unmap(from)) {
			p.foreign.Add(1)
			continue
		}
		p.offer(time.Now(), buf[:n])
	}
}

// offer runs the datagram through the model and holds it for delivery if
// it is accepted.
func (p *pipe) offer(now time.Time, data []byte) {
	p.sent.Add(1)
	p.bytesSent.Add(uint64(len(data)))
	cost := int64(len(data) + packetCost)
	// Only this goroutine adds to held, and count >= len(held), so a free
	// slot stays free.
	if p.count.Load() >= int64(cap(p.held)) || p.bytes.Load()+cost > p.maxBytes {
		p.dropOverflow.Add(1)
		return
	}
	v := p.model.Offer(now, len(data))
	if !v.Accepted {
		if v.Drop == DropLoss {
			p.dropLoss.Add(1)
		} else {
			p.dropQueue.Add(1)
		}
		return
	}
	pk := getPacket(data)
	pk.at = v.Deliver
	p.count.Add(1)
	p.bytes.Add(cost)
	p.held <- pk
}

// deliver sends a pipe's datagrams on at their arrival times, until the
// emulator closes.
func (e *Emulator) deliver(p *pipe) {
	defer e.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var pk *packet
		select {
		case pk = <-p.held:
		case <-e.done:
			return
		}
		if d := time.Until(pk.at); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-e.done:
				putPacket(pk)
				return
			}
		}
		late := int64(time.Since(pk.at))
		p.lateSum.Add(late)
		if late > p.lateMax.Load() {
			p.lateMax.Store(late) // only this goroutine stores
		}
		p.bytes.Add(-int64(pk.n + packetCost))
		p.count.Add(-1)
		switch to, ok := p.dst(); {
		case !ok:
			p.unroutable.Add(1)
		default:
			if _, err := p.out.WriteToUDPAddrPort(pk.buf[:pk.n], to); err != nil {
				p.writeErrors.Add(1)
			} else {
				p.delivered.Add(1)
				p.bytesDelivered.Add(uint64(pk.n))
			}
		}
		putPacket(pk)
	}
}
